/* The active-set collectives with pSync: barrier/sync reused back to back on one pSync,
 * broadcast (the root's dest untouched), collect, fcollect, alltoall(s), *_to_all over an
 * active set of every other PE, and pSync restored to SHMEM_SYNC_VALUE after every call. */
#include "check.h"
#include <complex.h>

static long psync[SHMEM_REDUCE_SYNC_SIZE], psync2[SHMEM_BARRIER_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static int counter;
static long lsrc[16], ldst[64];
static int isrc[16], idst[64];
static double dsrc[4], ddst[4], dwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long double ldsrc[2], lddst[2], ldwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static float _Complex csrc[2], cdst[2], cwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

static void psync_is_clean(void) {
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) CHECK(psync[i] == SHMEM_SYNC_VALUE);
}

int main(void) {
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) psync2[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();

    /* every PE, barriers back to back on one pSync: each round's increments are all visible */
    for (int r = 1; r <= 100; r++) {
        shmem_int_atomic_inc(&counter, (me + r) % n);
        shmem_barrier(0, 0, n, psync2);
        CHECK(counter == r);
        shmem_sync(0, 0, n, psync2);
    }
    shmem_barrier_all();
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) CHECK(psync2[i] == SHMEM_SYNC_VALUE);

    /* the even PEs: start 0, stride 2 */
    int ne = (n + 1) / 2;
    if (me % 2 == 0) {
        int idx = me / 2;
        for (int i = 0; i < 4; i++) lsrc[i] = me * 10 + i;
        for (int i = 0; i < 4; i++) ldst[i] = -1;
        int root = ne - 1;
        shmem_broadcast64(ldst, lsrc, 4, root, 0, 1, ne, psync);
        for (int i = 0; i < 4; i++) CHECK(ldst[i] == (idx == root ? -1 : root * 2 * 10 + i));
        /* once every PE has left the calls on psync (a barrier on another pSync says so), it is
         * clean everywhere; a second one keeps PEs from starting the next call on it meanwhile */
        shmem_barrier(0, 1, ne, psync2);
        psync_is_clean();
        shmem_barrier(0, 1, ne, psync2);

        for (int i = 0; i < idx + 1; i++) isrc[i] = me * 100 + i;
        shmem_collect32(idst, isrc, (size_t)idx + 1, 0, 1, ne, psync);
        int at = 0;
        for (int p = 0; p < ne; p++)
            for (int i = 0; i < p + 1; i++) CHECK(idst[at++] == p * 2 * 100 + i);
        shmem_fcollect64(ldst, lsrc, 2, 0, 1, ne, psync);
        for (int p = 0; p < ne; p++) CHECK(ldst[p * 2 + 1] == p * 2 * 10 + 1);
        for (int j = 0; j < ne; j++) isrc[j] = me * 1000 + j;
        shmem_alltoall32(idst, isrc, 1, 0, 1, ne, psync);
        for (int p = 0; p < ne; p++) CHECK(idst[p] == p * 2 * 1000 + idx);
        for (int j = 0; j < ne; j++) lsrc[j * 3] = me * 1000 + j;
        shmem_alltoalls64(ldst, lsrc, 2, 3, 1, 0, 1, ne, psync);
        for (int p = 0; p < ne; p++) CHECK(ldst[p * 2] == p * 2 * 1000 + idx);
        /* once every PE has left the calls on psync (a barrier on another pSync says so), it is
         * clean everywhere; a second one keeps PEs from starting the next call on it meanwhile */
        shmem_barrier(0, 1, ne, psync2);
        psync_is_clean();
        shmem_barrier(0, 1, ne, psync2);

        /* reductions; the same pSync throughout (each call restores it) */
        long want = 0;
        for (int p = 0; p < ne; p++) want += p * 2;
        lsrc[0] = me;
        shmem_long_sum_to_all(ldst, lsrc, 1, 0, 1, ne, pwrk, psync);
        CHECK(ldst[0] == want);
        shmem_long_max_to_all(ldst, lsrc, 1, 0, 1, ne, pwrk, psync);
        CHECK(ldst[0] == (ne - 1) * 2);
        isrc[0] = 1 << idx;
        shmem_int_or_to_all(idst, isrc, 1, 0, 1, ne, (int *)pwrk, psync);
        CHECK(idst[0] == (1 << ne) - 1);
        dsrc[0] = 1.5;
        shmem_double_prod_to_all(ddst, dsrc, 1, 0, 1, ne, dwrk, psync);
        double p15 = 1;
        for (int p = 0; p < ne; p++) p15 *= 1.5;
        CHECK(ddst[0] == p15);
        ldsrc[0] = me + 0.5L;
        shmem_longdouble_min_to_all(lddst, ldsrc, 1, 0, 1, ne, ldwrk, psync);
        CHECK(lddst[0] == 0.5L);
        csrc[0] = 1.0f + 2.0f * I;
        shmem_complexf_sum_to_all(cdst, csrc, 1, 0, 1, ne, cwrk, psync);
        CHECK(crealf(cdst[0]) == ne && cimagf(cdst[0]) == 2.0f * ne);
        /* once every PE has left the calls on psync (a barrier on another pSync says so), it is
         * clean everywhere; a second one keeps PEs from starting the next call on it meanwhile */
        shmem_barrier(0, 1, ne, psync2);
        psync_is_clean();
        shmem_barrier(0, 1, ne, psync2);
    }
    shmem_barrier_all();
    REPORT_OK("legacy_coll");
    shmem_finalize();
    return 0;
}
