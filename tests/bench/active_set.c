/* Latency of the active-set (pSync) collectives on an active set that is not the world: the
 * even PEs (PE_start 0, logPE_stride 1), which needs at least 3 PEs. Each iteration is one
 * shmem_barrier, or one 8-byte shmem_broadcast64, or one 8-float shmem_float_sum_to_all, each
 * followed by nothing: the routines leave pSync ready for the next call (the broadcast and the
 * reduction use two pSync arrays alternately, as the spec asks of back-to-back calls).
 * Where the library offers teams (OpenSHMEM >= 1.5), the same PEs as a split team run the
 * team forms too, for comparison. PEs outside the active set wait at the closing barrier. */
#include "bench.h"

static long psync[2][SHMEM_REDUCE_SYNC_SIZE];
static long bsync[SHMEM_BARRIER_SYNC_SIZE];
static float pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (n < 3) {
        if (me == 0) fprintf(stderr, "active_set: needs at least 3 PEs\n");
        shmem_finalize();
        return 0;
    }
    int size = (n + 1) / 2;
    long iters = 10000;
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[b][i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) bsync[i] = SHMEM_SYNC_VALUE;
    long *lsrc = shmem_malloc(8), *ldst = shmem_malloc(8);
    float *fsrc = shmem_malloc(8 * sizeof(float)), *fdst = shmem_malloc(8 * sizeof(float));
    *lsrc = me;
    for (int i = 0; i < 8; i++) fsrc[i] = (float)(me + i);
    shmem_barrier_all();
    if (me % 2 == 0) {
        for (int op = 0; op < 3; op++) {
            double t0 = 0;
            for (long i = 0; i < iters + 100; i++) {
                if (i == 100) t0 = now_us();
                long *ps = psync[i & 1];
                if (op == 0) shmem_barrier(0, 1, size, bsync);
                else if (op == 1) shmem_broadcast64(ldst, lsrc, 1, 0, 0, 1, size, ps);
                else shmem_float_sum_to_all(fdst, fsrc, 8, 0, 1, size, pwrk, ps);
            }
            const char *names[] = {"as_barrier", "as_broadcast_8B", "as_float_sum_8"};
            result(names[op], op == 0 ? 0 : op == 1 ? 8 : 32, (now_us() - t0) / iters, "us");
        }
        for (int i = 0; i < 8; i++) {
            float want = 0;
            for (int p = 0; p < n; p += 2) want += (float)(p + i);
            if (fdst[i] != want || *ldst != 0) {
                fprintf(stderr, "active_set: PE %d: wrong result\n", me);
                shmem_global_exit(1);
            }
        }
    }
#if SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION >= 105
    shmem_team_t even;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, size, NULL, 0, &even);
    if (even != SHMEM_TEAM_INVALID) {
        for (int op = 0; op < 3; op++) {
            double t0 = 0;
            for (long i = 0; i < iters + 100; i++) {
                if (i == 100) t0 = now_us();
                if (op == 0) shmem_team_sync(even);
                else if (op == 1) shmem_long_broadcast(even, ldst, lsrc, 1, 0);
                else shmem_float_sum_reduce(even, fdst, fsrc, 8);
            }
            const char *names[] = {"team_sync", "team_broadcast_8B", "team_float_sum_8"};
            result(names[op], op == 0 ? 0 : op == 1 ? 8 : 32, (now_us() - t0) / iters, "us");
        }
        shmem_team_destroy(even);
    }
#endif
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
