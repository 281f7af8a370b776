/* Active-set collectives on more (active set, pSync) pairs than rshmem keeps teams for (16):
 * the active set of PEs 0 .. n-2 with 20 pSync arrays for reductions and broadcasts and one
 * more for barriers, twice over (the second round finds every pair known), then two
 * overlapping active sets (0 .. n-2 and 1 .. n-1) called one after the other. Every result
 * is checked, the broadcast root's dest is left alone, and every pSync is clean at the end.
 * OPT_OUT_RANK=r sets SHMEM_ACTIVE_SET_TEAMS=0 on oshrun's rank r only (the members must then
 * all run on the pSync). */
#include "check.h"
#include <string.h>

#define PAIRS 20
static long ps[PAIRS][SHMEM_REDUCE_SYNC_SIZE];
static long bar[SHMEM_BARRIER_SYNC_SIZE], lo[SHMEM_REDUCE_SYNC_SIZE], hi[SHMEM_REDUCE_SYNC_SIZE];
static long src[2], dst[2], wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

static void clean(long *p, int len) {
    for (int i = 0; i < len; i++) CHECK(p[i] == SHMEM_SYNC_VALUE);
}

int main(void) {
    const char *rank = getenv("RSHMEM_RANK"), *out = getenv("OPT_OUT_RANK");
    if (rank && out && strcmp(rank, out) == 0) setenv("SHMEM_ACTIVE_SET_TEAMS", "0", 1);
    for (int k = 0; k < PAIRS; k++)
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) ps[k][i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) lo[i] = hi[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) bar[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int size = n - 1;
    if (n >= 2 && me < size) {
        for (int round = 0; round < 2; round++) {
            for (int k = 0; k < PAIRS; k++) {
                src[0] = me * 100 + k + round;
                shmem_long_sum_to_all(dst, src, 1, 0, 0, size, wrk, ps[k]);
                long want = 0;
                for (int p = 0; p < size; p++) want += p * 100 + k + round;
                CHECK(dst[0] == want);
                /* ps[k] is reused only once every member has left the reduction, and dest
                 * must be ready on every member before any calls the broadcast */
                dst[0] = -7;
                shmem_barrier(0, 0, size, bar);
                int root = k % size;
                shmem_broadcast64(dst, src, 1, root, 0, 0, size, ps[k]);
                CHECK(dst[0] == (me == root ? -7 : root * 100 + k + round));
                shmem_barrier(0, 0, size, bar);
            }
        }
        for (int k = 0; k < PAIRS; k++) clean(ps[k], SHMEM_REDUCE_SYNC_SIZE);
        clean(bar, SHMEM_BARRIER_SYNC_SIZE);
    }
    shmem_barrier_all();
    /* two active sets sharing PEs 1 .. n-2, each on its own pSync, called back to back */
    if (n >= 3) {
        for (int r = 0; r < 10; r++) {
            if (me < n - 1) {
                src[0] = me + r;
                shmem_long_sum_to_all(dst, src, 1, 0, 0, n - 1, wrk, lo);
                CHECK(dst[0] == (long)(n - 1) * (n - 2) / 2 + (long)(n - 1) * r);
            }
            if (me > 0) {
                src[1] = me * 2 + r;
                shmem_long_max_to_all(dst + 1, src + 1, 1, 1, 0, n - 1, wrk, hi);
                CHECK(dst[1] == (n - 1) * 2 + r);
            }
            /* lo and hi are reused in the next round only once everyone has left them */
            shmem_barrier_all();
        }
        clean(lo, SHMEM_REDUCE_SYNC_SIZE);
        clean(hi, SHMEM_REDUCE_SYNC_SIZE);
    }
    shmem_barrier_all();
    REPORT_OK("active_sets");
    shmem_finalize();
    return 0;
}
