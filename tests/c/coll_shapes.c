/* Collectives at the sizes where algorithms change (empty, one element, either side of the
 * small-message staging limit, tens of KiB, past the broadcast push limit), called back to back
 * with no synchronisation between calls. Each kind of collective has its own pair of result
 * buffers, used in alternate rounds: a member that runs ahead writes the one its slower peers
 * are not reading (it cannot be two rounds ahead, since each round's first reduction needs
 * everyone's contribution). Runs on the world team and
 * on a strided sub-team (every other PE, from the last one down), in place and not. */
#include "check.h"
#include <string.h>

#define MAXN 8
#define MAXE 40000 /* elements: 160 KB of ints, 320 KB of longs */
#define ROUNDS 3

static int isrc[MAXE], idst[2][MAXE], inplace[MAXE];
static long lsrc[MAXE], ldst[2][MAXE], bdst[2][MAXE];
static int fsrc[MAXE / MAXN], fdst[2][MAXE];
static int asrc[MAXE], adst[2][MAXE];

static const size_t sizes[] = {0, 1, 255, 256, 257, 4099, MAXE};

static void on_team(shmem_team_t team) {
    int me = shmem_team_my_pe(team), n = shmem_team_n_pes(team);
    if (me < 0) return;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t ne = sizes[s];
        for (int r = 0; r < ROUNDS; r++) {
            int b = r & 1, root = (r + 1) % n;
            /* sum over PEs p of (p * 7 + i + r) */
            for (size_t i = 0; i < ne; i++) isrc[i] = me * 7 + (int)i + r;
            CHECK(shmem_int_sum_reduce(team, idst[b], isrc, ne) == 0);
            for (size_t i = 0; i < ne; i++) CHECK(idst[b][i] == 7 * n * (n - 1) / 2 + n * ((int)i + r));

            /* in place: max over PEs of (p + i) */
            for (size_t i = 0; i < ne; i++) inplace[i] = me + (int)i;
            CHECK(shmem_int_max_reduce(team, inplace, inplace, ne) == 0);
            for (size_t i = 0; i < ne; i++) CHECK(inplace[i] == n - 1 + (int)i);

            /* scans of (p + 1): inclusive 1..me+1, exclusive 1..me */
            for (size_t i = 0; i < ne; i++) lsrc[i] = me + 1 + (long)i;
            CHECK(shmem_long_sum_inscan(team, ldst[b], lsrc, ne) == 0);
            for (size_t i = 0; i < ne; i++)
                CHECK(ldst[b][i] == (long)(me + 1) * (me + 2) / 2 + (long)(me + 1) * (long)i);
            if (me > 0) {
                CHECK(shmem_long_sum_exscan(team, ldst[b], lsrc, ne) == 0);
                for (size_t i = 0; i < ne; i++) CHECK(ldst[b][i] == (long)me * (me + 1) / 2 + (long)me * (long)i);
            } else {
                CHECK(shmem_long_sum_exscan(team, ldst[b], lsrc, ne) == 0);
                for (size_t i = 0; i < ne; i++) CHECK(ldst[b][i] == 0); /* the spec's 0 */
            }

            /* broadcast from a different root each round */
            for (size_t i = 0; i < ne; i++) lsrc[i] = me * 1000003L + (long)i + r;
            CHECK(shmem_long_broadcast(team, bdst[b], lsrc, ne, root) == 0);
            for (size_t i = 0; i < ne; i++) CHECK(bdst[b][i] == root * 1000003L + (long)i + r);

            /* fcollect and alltoall of ne / n elements per PE */
            size_t per = ne / (size_t)n;
            for (size_t i = 0; i < per; i++) fsrc[i] = me * 100000 + (int)i + r;
            CHECK(shmem_int_fcollect(team, fdst[b], fsrc, per) == 0);
            for (int p = 0; p < n; p++)
                for (size_t i = 0; i < per; i++) CHECK(fdst[b][p * per + i] == p * 100000 + (int)i + r);
            for (int j = 0; j < n; j++)
                for (size_t i = 0; i < per; i++) asrc[j * per + i] = me * 100000 + j * 1000 + (int)(i % 1000) + r;
            CHECK(shmem_int_alltoall(team, adst[b], asrc, per) == 0);
            for (int p = 0; p < n; p++)
                for (size_t i = 0; i < per; i++)
                    CHECK(adst[b][p * per + i] == p * 100000 + me * 1000 + (int)(i % 1000) + r);
        }
        /* the next size reuses both buffers: let every member finish checking them */
        shmem_team_sync(team);
    }
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n <= MAXN);
    on_team(SHMEM_TEAM_WORLD);
    shmem_team_t odd = SHMEM_TEAM_INVALID;
    if (n >= 2) {
        int nodd = n / 2, last = 1 + 2 * (nodd - 1);
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, last, -2, nodd, NULL, 0, &odd) == 0);
        on_team(odd);
        if (odd != SHMEM_TEAM_INVALID) shmem_team_destroy(odd);
    }
    shmem_barrier_all();
    (void)me;
    REPORT_OK("coll_shapes");
    shmem_finalize();
    return 0;
}
