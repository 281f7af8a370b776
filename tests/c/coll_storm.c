/* Collectives back to back without barriers (issue 49's stress harness): every round a
 * broadcast from a moving root, a sum to all, an fcollect and an alltoall, of sizes that take
 * every path of scoll shm (pushed and pulled broadcasts, staged and direct reductions), on the
 * world and on a strided team of every other PE, each result checked exactly. Destinations are
 * reused every round: between two uses of one every member has called a collective that needs
 * every member's contribution (the spec's "dest is ready" precondition, kept by the program),
 * so a member still reading round r's result cannot be overwritten by round r+1. A staging
 * buffer reused too early, a signal read before its data, or a member running a call ahead
 * shows as a wrong value or a hang. ROUNDS sets the rounds (default 2000). */
#include "check.h"
#include <string.h>

#define MAXN 8192 /* longs per buffer: 64 KiB, past the staged and pushed sizes */

static const int sizes[] = {1, 3, 16, 100, 128, 1000, 4096, MAXN / 8};

static void check_round(shmem_team_t team, long round, long *src, long *a, long *b, long *c,
                        long *d, long *s) {
    int me = shmem_team_my_pe(team), n = shmem_team_n_pes(team);
    int k = (int)(round % (long)(sizeof sizes / sizeof sizes[0]));
    int len = sizes[k], root = (int)(round % n);

    /* Broadcast from a moving root. */
    for (int i = 0; i < len; i++) src[i] = round * 1000003L + (long)root * 101 + i;
    shmem_long_broadcast(team, a, src, (size_t)len, root);
    for (int i = 0; i < len; i++) CHECK(a[i] == round * 1000003L + (long)root * 101 + i);

    /* Sum: member m contributes m + round + i at index i. */
    for (int i = 0; i < len; i++) s[i] = me + round + i;
    shmem_long_sum_reduce(team, b, s, (size_t)len);
    for (int i = 0; i < len; i++) CHECK(b[i] == (long)n * (n - 1) / 2 + (long)n * (round + i));

    /* fcollect: member m's block holds m, round and the index. */
    int blk = len * n <= MAXN ? len : MAXN / n;
    for (int i = 0; i < blk; i++) s[i] = ((long)me << 40) + (round << 16) + i;
    shmem_long_fcollect(team, c, s, (size_t)blk);
    for (int m = 0; m < n; m++)
        for (int i = 0; i < blk; i++) CHECK(c[m * blk + i] == ((long)m << 40) + (round << 16) + i);

    /* alltoall: what member m sends member j names both. */
    for (int j = 0; j < n; j++)
        for (int i = 0; i < blk; i++) s[j * blk + i] = ((long)me << 48) + ((long)j << 32) + round * 7 + i;
    shmem_long_alltoall(team, d, s, (size_t)blk);
    for (int m = 0; m < n; m++)
        for (int i = 0; i < blk; i++) CHECK(d[m * blk + i] == ((long)m << 48) + ((long)me << 32) + round * 7 + i);
}

int main(void) {
    shmem_init();
    int n = shmem_n_pes();
    long rounds = getenv("ROUNDS") ? atol(getenv("ROUNDS")) : 2000;
    long *src = shmem_malloc(MAXN * sizeof(long));
    long *a = shmem_malloc(MAXN * sizeof(long)), *b = shmem_malloc(MAXN * sizeof(long));
    long *c = shmem_malloc(MAXN * sizeof(long)), *d = shmem_malloc(MAXN * sizeof(long));
    long *s = shmem_malloc(MAXN * sizeof(long));
    /* The strided team's own destinations: its members may still be in its round while the
     * others already push the next world round's results. */
    long *a2 = shmem_malloc(MAXN * sizeof(long)), *b2 = shmem_malloc(MAXN * sizeof(long));
    long *c2 = shmem_malloc(MAXN * sizeof(long)), *d2 = shmem_malloc(MAXN * sizeof(long));
    CHECK(src && a && b && c && d && s && a2 && b2 && c2 && d2);

    shmem_team_t evens = SHMEM_TEAM_INVALID;
    if (n > 2) shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &evens);

    for (long r = 0; r < rounds; r++) {
        check_round(SHMEM_TEAM_WORLD, r, src, a, b, c, d, s);
        /* The even PEs go on to a round of their own while the odd ones start the next world
         * round: the teams' calls interleave. */
        if (evens != SHMEM_TEAM_INVALID) check_round(evens, r, src, a2, b2, c2, d2, s);
    }
    shmem_barrier_all();
    REPORT_OK("coll_storm");
    shmem_finalize();
    return 0;
}
