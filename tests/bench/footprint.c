/* Memory per PE as the job grows (issue 51): each PE reads its own Private_Dirty and
 * Private_Clean from /proc/self/smaps_rollup after shmem_init and a barrier ("init"), then after
 * an 8-byte put to every other PE, one at a time, and a barrier ("every peer contacted"). PE 0
 * reports the largest of each over the PEs, in KiB. Linux only; builds with either library's
 * oshcc. Comparing two job sizes gives the bytes a PE holds per added peer. */
#include "bench.h"

static long sink;
static double mine[2], most[2];
static double pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long psync[SHMEM_REDUCE_SYNC_SIZE];

/* Private_Dirty + Private_Clean of this process, KiB. */
static double private_kib(void) {
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    double kib = 0, v;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Private_Dirty: %lf", &v) == 1 || sscanf(line, "Private_Clean: %lf", &v) == 1) kib += v;
    fclose(f);
    return kib;
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    mine[0] = private_kib();
    for (int k = 1; k < n; k++) {
        shmem_long_p(&sink, me, (me + k) % n);
        shmem_quiet();
    }
    shmem_barrier_all();
    mine[1] = private_kib();
    shmem_double_max_to_all(most, mine, 2, 0, 0, n, pwrk, psync);
    result("footprint_private_kib_after_init", (size_t)n, most[0], "KiB");
    result("footprint_private_kib_every_peer_contacted", (size_t)n, most[1], "KiB");
    shmem_finalize();
    return 0;
}
