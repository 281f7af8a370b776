/* Scans across hosts whose PEs interleave in the team: run with mpirun --map-by node over 2
 * emulated hosts, so that PEs 0, 2, ... share one host and 1, 3, ... the other, which scoll
 * hier serves by trading, between the hosts' leaders, each host's combination of its members
 * before each member of the other host. The placement is checked first (shmem_ptr maps the
 * PEs of this host only); then inclusive and exclusive sums of three types, in place and
 * not, at sizes on either side of hier's staging pieces, back to back. */
#include "check.h"

#define MAXE 20000

static long lsrc[MAXE], ldst[2][MAXE];
static int idst[2][MAXE];
static double ddst[2][MAXE];
static int probe;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n >= 4 && n % 2 == 0);
    CHECK(shmem_ptr(&probe, (me + 1) % n) == NULL);
    CHECK(shmem_ptr(&probe, (me + 2) % n) != NULL);
    static const size_t sizes[] = {0, 1, 7, 300, 600, MAXE};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t ne = sizes[s];
        for (int r = 0; r < 4; r++) {
            int b = r & 1;
            /* inclusive sum of p * 3 + i + r over p <= me */
            for (size_t i = 0; i < ne; i++) lsrc[i] = me * 3 + (long)i + r;
            CHECK(shmem_long_sum_inscan(SHMEM_TEAM_WORLD, ldst[b], lsrc, ne) == 0);
            for (size_t i = 0; i < ne; i++)
                CHECK(ldst[b][i] == 3L * me * (me + 1) / 2 + (me + 1) * ((long)i + r));
            /* exclusive, in place, of (p + 1) * (i % 3 + 1) over p < me (PE 0's result is
             * not defined) */
            for (size_t i = 0; i < ne; i++) idst[b][i] = (me + 1) * (int)(i % 3 + 1);
            CHECK(shmem_int_sum_exscan(SHMEM_TEAM_WORLD, idst[b], idst[b], ne) == 0);
            for (size_t i = 0; me > 0 && i < ne; i++) CHECK(idst[b][i] == me * (me + 1) / 2 * (int)(i % 3 + 1));
            /* inclusive, in place, of halves and quarters (exact in binary) over p <= me */
            for (size_t i = 0; i < ne; i++) ddst[b][i] = (me + 1) * 0.5 + (double)(i % 4) * 0.25;
            CHECK(shmem_double_sum_inscan(SHMEM_TEAM_WORLD, ddst[b], ddst[b], ne) == 0);
            for (size_t i = 0; i < ne; i++)
                CHECK(ddst[b][i] == (me + 1) * (me + 2) * 0.25 + (me + 1) * (double)(i % 4) * 0.25);
        }
    }
    REPORT_OK("interleaved_scans");
    shmem_finalize();
    return 0;
}
