/* A small OpenSHMEM program: each PE says hello, then a value travels around the ring of PEs
 * through one-sided puts into a symmetric global variable, with a barrier per hop. */
#include <shmem.h>
#include <stdio.h>

static long token = -1;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    printf("Hello from PE %d of %d\n", me, npes);
    fflush(stdout);
    shmem_barrier_all();
    long *hops = shmem_calloc(1, sizeof(long));
    for (int hop = 0; hop < npes; hop++) {
        if (me == hop) shmem_long_p(&token, hop == 0 ? 1 : token * 2, (me + 1) % npes);
        shmem_barrier_all();
        if (me == (hop + 1) % npes) (*hops)++;
    }
    long total = 0;
    for (int pe = 0; pe < npes; pe++) total += shmem_long_g(hops, pe);
    shmem_barrier_all();
    if (me == 0)
        printf("PE 0: token came back around %d PEs as %ld (expected %ld), %ld hops counted\n", npes, token,
               1L << (npes - 1), total);
    shmem_free(hops);
    shmem_finalize();
    return 0;
}
