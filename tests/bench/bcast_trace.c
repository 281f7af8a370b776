/* Where the time of a small broadcast goes when PEs outnumber cores: each PE times
 * `shmem_broadcast32` (root 0, one buffer into itself, a shmem_barrier_all after each, as
 * OSU's osu_oshm_broadcast does) and, for TRACE_SHOW iterations from the middle of the run,
 * prints when it entered the broadcast, left it and left the barrier after it, and the CPU it
 * ran on, against one clock (CLOCK_MONOTONIC is the same in every process of the host).
 *
 *   TRACE <iteration> <pe> <enter µs> <leave µs> <barrier left µs> <cpu>
 *   AVG <pe> <mean µs in the broadcast> <µs per iteration>
 *
 * Sort the TRACE lines by iteration and entry time to see which PE waited for whom
 * (docs/performance.md, "Broadcasts on a crowded node"). TRACE_ITERS (default 2000) sets the
 * length of the run. */
#define _GNU_SOURCE
#include <sched.h>
#include "bench.h"

static long psync[2][SHMEM_BCAST_SYNC_SIZE];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long iters = getenv("TRACE_ITERS") ? atol(getenv("TRACE_ITERS")) : 2000;
    long show = getenv("TRACE_SHOW") ? atol(getenv("TRACE_SHOW")) : 10;
    if (iters < 200) iters = 200;
    if (show > 100) show = 100;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) psync[k][i] = SHMEM_SYNC_VALUE;
    int *buf = shmem_malloc(sizeof(int));
    double enter[100], leave[100], out[100];
    int cpu[100];
    long first = iters / 2, warm = 100;
    double in_call = 0, start = 0;
    shmem_barrier_all();
    for (long i = 0; i < iters; i++) {
        if (i == warm) start = now_us();
        double t0 = now_us();
        shmem_broadcast32(buf, buf, 1, 0, 0, 0, n, psync[i & 1]);
        double t1 = now_us();
        shmem_barrier_all();
        if (i >= warm) in_call += t1 - t0;
        if (i >= first && i < first + show) {
            long k = i - first;
            enter[k] = t0;
            leave[k] = t1;
            out[k] = now_us();
            cpu[k] = sched_getcpu();
        }
    }
    double per_iter = (now_us() - start) / (double)(iters - warm);
    for (long k = 0; k < show; k++)
        printf("TRACE %ld %d %.3f %.3f %.3f %d\n", first + k, me, enter[k], leave[k], out[k], cpu[k]);
    printf("AVG %d %.3f %.3f\n", me, in_call / (double)(iters - warm), per_iter);
    fflush(stdout);
    shmem_finalize();
    return 0;
}
