/* Team collectives: fcollect, collect (different sizes per PE), alltoall, alltoalls, every
 * reduction operation (integers, floating point, long double, complex), inclusive and exclusive
 * scans, in place and not, on the world and on a strided sub-team, through the C11 generics and
 * the typed names.
 *
 * A collective may write any member's dest as soon as that member's peers call it (the spec
 * makes "dest ready on all PEs" a precondition), so before reusing dst for the next
 * collective, the team synchronises after its local preparation: its members may still be
 * checking the last result, and a fast member's data may arrive as soon as the sync ends. */
#include "check.h"
#include <complex.h>
#include <string.h>

#define MAXN 8
#define K 5

static long src[K * MAXN], dst[K * MAXN * MAXN];
static int isrc[K], idst[K];
static double dsrc[K], ddst[K];
static long double ldsrc[K], lddst[K];
static double _Complex csrc[K], cdst[K];
static unsigned int usrc[K], udst[K];
static long inplace[K];
#define BIG 1100 /* longs per block: 8800 bytes, more than one packing chunk of scoll basic */
static long bsrc[2 * BIG * MAXN], bdst[BIG * MAXN + 1];

static void on_team(shmem_team_t team) {
    int me = shmem_team_my_pe(team), n = shmem_team_n_pes(team);
    if (me < 0) return;
    int w = shmem_team_translate_pe(team, me, SHMEM_TEAM_WORLD);

    /* fcollect */
    for (int i = 0; i < K; i++) src[i] = w * 100 + i;
    CHECK(shmem_fcollect(team, dst, src, K) == 0);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < K; i++)
            CHECK(dst[p * K + i] == shmem_team_translate_pe(team, p, SHMEM_TEAM_WORLD) * 100 + i);

    /* collect: team PE p gives p + 1 elements (PE 0 of a large team gives none: p % 3) */
    memset(dst, 0xff, sizeof dst);
    int mine = me % 3;
    for (int i = 0; i < mine; i++) src[i] = me * 10 + i;
    shmem_team_sync(team);
    CHECK(shmem_long_collect(team, dst, src, (size_t)mine) == 0);
    int at = 0;
    for (int p = 0; p < n; p++)
        for (int i = 0; i < p % 3; i++) CHECK(dst[at++] == p * 10 + i);
    CHECK(dst[at] == -1); /* nothing written past the end */

    /* alltoall: block j of my source goes to PE j */
    shmem_team_sync(team);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < 2; i++) src[j * 2 + i] = me * 1000 + j * 10 + i;
    CHECK(shmem_alltoall(team, dst, src, 2) == 0);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < 2; i++) CHECK(dst[p * 2 + i] == p * 1000 + me * 10 + i);

    /* alltoalls: source stride 2, dest stride 3 */
    memset(dst, 0, sizeof dst);
    for (int j = 0; j < n * 2; j++) src[j * 2] = me * 1000 + j;
    shmem_team_sync(team);
    CHECK(shmem_long_alltoalls(team, dst, src, 3, 2, 2) == 0);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < 2; i++) {
            CHECK(dst[(p * 2 + i) * 3] == p * 1000 + me * 2 + i);
            CHECK(dst[(p * 2 + i) * 3 + 1] == 0);
        }

    /* alltoalls strided in the source only: packed into one transfer per block */
    memset(dst, 0, sizeof dst);
    shmem_team_sync(team);
    CHECK(shmem_long_alltoalls(team, dst, src, 1, 2, 2) == 0);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < 2; i++) CHECK(dst[p * 2 + i] == p * 1000 + me * 2 + i);
    CHECK(dst[n * 2] == 0);
    memset(bdst, 0xff, sizeof bdst); /* every byte of a lost element would read 0xff */
    for (int j = 0; j < n * BIG; j++) bsrc[j * 2] = me * 100000 + j;
    shmem_team_sync(team);
    CHECK(shmem_long_alltoalls(team, bdst, bsrc, 1, 2, BIG) == 0);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < BIG; i++) CHECK(bdst[p * BIG + i] == p * 100000 + me * BIG + i);
    CHECK(bdst[n * BIG] == -1);

    /* reductions */
    long sum = 0;
    for (int p = 0; p < n; p++) sum += p + 1;
    for (int i = 0; i < K; i++) {
        isrc[i] = (me + 1) * (i + 1);
        dsrc[i] = (me + 1) * 0.5;
        ldsrc[i] = (me + 1) * 0.25L;
        csrc[i] = (me + 1) + 1.0 * I;
        usrc[i] = 1u << me;
    }
    CHECK(shmem_sum_reduce(team, idst, isrc, K) == 0);
    for (int i = 0; i < K; i++) CHECK(idst[i] == sum * (i + 1));
    CHECK(shmem_int_max_reduce(team, idst, isrc, K) == 0);
    CHECK(idst[K - 1] == n * K);
    CHECK(shmem_min_reduce(team, ddst, dsrc, K) == 0 && ddst[0] == 0.5);
    CHECK(shmem_prod_reduce(team, ddst, dsrc, K) == 0);
    double prod = 1;
    for (int p = 0; p < n; p++) prod *= (p + 1) * 0.5;
    CHECK(ddst[2] == prod);
    CHECK(shmem_longdouble_sum_reduce(team, lddst, ldsrc, K) == 0 && lddst[4] == sum * 0.25L);
    CHECK(shmem_longdouble_max_reduce(team, lddst, ldsrc, K) == 0 && lddst[1] == n * 0.25L);
    CHECK(shmem_complexd_sum_reduce(team, cdst, csrc, K) == 0);
    CHECK(creal(cdst[3]) == sum && cimag(cdst[3]) == n);
    CHECK(shmem_or_reduce(team, udst, usrc, K) == 0 && udst[0] == (n >= 32 ? ~0u : (1u << n) - 1));
    CHECK(shmem_uint_and_reduce(team, udst, usrc, K) == 0 && udst[1] == (n == 1 ? 1u : 0u));
    CHECK(shmem_xor_reduce(team, udst, usrc, K) == 0 && udst[2] == (n >= 32 ? ~0u : (1u << n) - 1));
    /* in place */
    for (int i = 0; i < K; i++) inplace[i] = me + i;
    CHECK(shmem_long_sum_reduce(team, inplace, inplace, K) == 0);
    for (int i = 0; i < K; i++) CHECK(inplace[i] == (long)n * (n - 1) / 2 + (long)n * i);

    /* scans */
    long pre = 0;
    for (int p = 0; p <= me; p++) pre += p + 1;
    CHECK(shmem_sum_inscan(team, idst, isrc, K) == 0 && idst[1] == pre * 2);
    idst[0] = -7;
    CHECK(shmem_int_sum_exscan(team, idst, isrc, K) == 0);
    if (me == 0)
        CHECK(idst[0] == 0 && idst[K - 1] == 0); /* the spec: 0 on the first PE */
    else
        CHECK(idst[0] == pre - (me + 1));
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n <= MAXN);
    on_team(SHMEM_TEAM_WORLD);
    /* odd PEs, in reverse order */
    shmem_team_t odd = SHMEM_TEAM_INVALID;
    int nodd = n / 2;
    if (nodd > 0) {
        int last = 1 + 2 * (nodd - 1);
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, last, -2, nodd, NULL, 0, &odd) == 0);
        CHECK((odd != SHMEM_TEAM_INVALID) == (me % 2 == 1));
        on_team(odd);
        if (odd != SHMEM_TEAM_INVALID) shmem_team_destroy(odd);
    }
    CHECK(shmem_int_sum_reduce(SHMEM_TEAM_INVALID, idst, isrc, 1) != 0);
    shmem_barrier_all();
    REPORT_OK("collectives");
    shmem_finalize();
    return 0;
}
