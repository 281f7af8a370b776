/* Latency of shmem_barrier_all, shmem_sync_all and an 8-byte broadcast over all PEs.
 * Broadcast uses the team API where the library offers it (OpenSHMEM >= 1.5) and the
 * active-set shmem_broadcast64 otherwise (Open MPI 4.1's OSHMEM implements 1.4). */
#include "bench.h"

#if SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION < 105
static long psync[SHMEM_BCAST_SYNC_SIZE];
#endif

int main(void) {
    shmem_init();
    long iters = 20000;
    for (int b = 0; b < 2; b++) {
        shmem_barrier_all();
        double t0 = 0;
        for (long i = 0; i < iters + 100; i++) {
            if (i == 100) t0 = now_us();
            if (b == 0) shmem_barrier_all();
            else shmem_sync_all();
        }
        result(b == 0 ? "barrier_all" : "sync_all", 0, (now_us() - t0) / iters, "us");
    }
    long *src = shmem_malloc(8), *dst = shmem_malloc(8);
    *src = shmem_my_pe();
#if SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION < 105
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
#endif
    shmem_barrier_all();
    double t0 = 0;
    long biters = 10000;
    for (long i = 0; i < biters + 100; i++) {
        if (i == 100) t0 = now_us();
#if SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION >= 105
        shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 1, 0);
#else
        /* the active-set form needs a barrier before pSync is reused */
        shmem_broadcast64(dst, src, 1, 0, 0, 0, shmem_n_pes(), psync);
        shmem_barrier_all();
#endif
    }
    result("broadcast_8B", 8, (now_us() - t0) / biters, "us");
    shmem_finalize();
    return 0;
}
