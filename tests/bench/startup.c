/* Start-up as the job grows: every PE times its shmem_init, then one barrier and the
 * finalize. PE 0 reports the slowest PE's shmem_init; the whole job's wall time is what
 * docs/performance.md ("Start-up as the job grows") compares, timed from outside. */
#include "bench.h"

static double init_us;
static double slowest;
static double pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long psync[SHMEM_REDUCE_SYNC_SIZE];

int main(void) {
    double t0 = now_us();
    shmem_init();
    init_us = now_us() - t0;
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    shmem_double_max_to_all(&slowest, &init_us, 1, 0, 0, shmem_n_pes(), pwrk, psync);
    result("startup_init_slowest_pe", (size_t)shmem_n_pes(), slowest, "us");
    shmem_finalize();
    return 0;
}
