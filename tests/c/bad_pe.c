/* Bad input: a put to a PE that does not exist must end the job with a clear error. */
#include <shmem.h>
#include <stdio.h>

static long x;

int main(void) {
    shmem_init();
    shmem_barrier_all();
    if (shmem_my_pe() == 0) shmem_long_p(&x, 1, shmem_n_pes() + 3);
    shmem_barrier_all();
    printf("bad_pe: not reached\n");
    shmem_finalize();
    return 0;
}
