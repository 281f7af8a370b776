/* The stall warning: the last PE reaches a barrier (then a reduction) STALL_LATE_MS later than
 * the others (and PE 1 shmem_init STALL_INIT_MS later), which must wait without failing; with
 * SHMEM_COLL_STALL_WARN=1 and a delay above a second they say so on stderr. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long src = 1, dst;

static void late(void) {
    if (shmem_my_pe() != shmem_n_pes() - 1) return;
    long ms = getenv("STALL_LATE_MS") ? atol(getenv("STALL_LATE_MS")) : 1500;
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

int main(void) {
    /* STALL_INIT_MS: PE 1 (its rank from oshrun or a PMIx launcher) starts shmem_init that
     * much later than the others, which wait in the launcher's fence. */
    const char *rank = getenv("RSHMEM_RANK") ? getenv("RSHMEM_RANK") : getenv("PMIX_RANK");
    if (getenv("STALL_INIT_MS") && rank && atoi(rank) == 1) {
        long ms = atol(getenv("STALL_INIT_MS"));
        struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&t, NULL);
    }
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    late();
    shmem_barrier_all();
    late();
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &dst, &src, 1);
    if (dst != n) {
        fprintf(stderr, "stall: PE %d: sum %ld, expected %d\n", me, dst, n);
        return 1;
    }
    printf("stall: PE %d ok\n", me);
    shmem_finalize();
    return 0;
}
