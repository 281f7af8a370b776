/* COLL_ITERS calls (default 100) of one collective on the world team, COLL_OP = barrier,
 * broadcast (8 bytes from PE 0), reduce (a sum of one long) or fcollect (one long per PE),
 * back to back, every result checked. Nothing else runs between the first and the last
 * barrier, so with SHMEM_MCA_spml_ucx_traffic=1 the difference between two runs that differ
 * only in COLL_ITERS is what those calls handed to the network (tests/tests/launchers.rs).
 * Every call alternates between two destinations, so a PE a call ahead never writes the one
 * its peers still read (a reduction or fcollect needs every PE's contribution, so no PE gets
 * two calls ahead; a broadcast's root may). */
#include "check.h"
#include <string.h>

#define MAXN 256

static long src, dst[2], all[2][MAXN];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    const char *op = getenv("COLL_OP") ? getenv("COLL_OP") : "barrier";
    long iters = getenv("COLL_ITERS") ? atol(getenv("COLL_ITERS")) : 100;
    CHECK(n <= MAXN);
    shmem_barrier_all();
    for (long i = 0; i < iters; i++) {
        int b = (int)(i & 1);
        src = me + i;
        if (!strcmp(op, "barrier")) {
            shmem_barrier_all();
        } else if (!strcmp(op, "broadcast")) {
            CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, &dst[b], &src, 1, 0) == 0);
            /* The root waits for no one, so it may be calls ahead and have written a later
             * call of the same parity here already. */
            CHECK(dst[b] >= i && (dst[b] - i) % 2 == 0 && dst[b] < iters);
        } else if (!strcmp(op, "reduce")) {
            CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &dst[b], &src, 1) == 0);
            CHECK(dst[b] == (long)n * (n - 1) / 2 + (long)n * i);
        } else if (!strcmp(op, "fcollect")) {
            CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, all[b], &src, 1) == 0);
            for (int p = 0; p < n; p++) CHECK(all[b][p] == p + i);
        } else {
            fprintf(stderr, "coll_traffic: unknown COLL_OP %s\n", op);
            shmem_global_exit(2);
        }
    }
    shmem_barrier_all();
    REPORT_OK("coll_traffic");
    shmem_finalize();
    return 0;
}
