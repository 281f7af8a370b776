/* The core operations on a job of many PEs (issue 51: nothing had run beyond 16 PEs): a put
 * around the ring, a fetch-add from every PE into one word, a point-to-point token passed
 * around the whole ring with put + wait_until, team collectives (barrier, broadcast, sum,
 * fcollect, alltoall) on the world and on a strided split, with every result checked. */
#include "check.h"

static long from_prev;
static long counter;
static long token;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;

    shmem_long_p(&from_prev, 1000L * me, next);
    shmem_long_atomic_fetch_add(&counter, me + 1, 0);
    shmem_barrier_all();
    CHECK(from_prev == 1000L * prev);
    if (me == 0) CHECK(counter == (long)n * (n + 1) / 2);

    /* One token around the whole ring: every PE waits for it, adds itself, passes it on. */
    if (me == 0) shmem_long_p(&token, 1, next);
    shmem_long_wait_until(&token, SHMEM_CMP_NE, 0);
    if (me != 0) shmem_long_p(&token, token + me, next);
    shmem_barrier_all();
    if (me == 0) CHECK(token == 1 + (long)n * (n - 1) / 2);

    long *src = shmem_malloc((size_t)n * sizeof(long));
    long *dst = shmem_malloc((size_t)n * sizeof(long));
    long *one = shmem_malloc(sizeof(long));
    long *sum = shmem_malloc(sizeof(long));
    CHECK(src && dst && one && sum);

    /* World: broadcast from the last PE, a sum, fcollect and alltoall. A team collective does
     * not synchronise on entry: a destination is ready on every PE (a barrier) before a PE
     * whose collective may push into it calls it. */
    *one = me == n - 1 ? 77 : -1;
    *sum = -1;
    shmem_barrier_all();
    shmem_long_broadcast(SHMEM_TEAM_WORLD, sum, one, 1, n - 1);
    CHECK(*sum == 77);
    *one = me;
    shmem_barrier_all();
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, sum, one, 1);
    CHECK(*sum == (long)n * (n - 1) / 2);
    shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, one, 1);
    for (int i = 0; i < n; i++) {
        if (dst[i] != i) fprintf(stderr, "PE %d: dst[%d] = %ld\n", me, i, dst[i]);
        CHECK(dst[i] == i);
    }
    for (int i = 0; i < n; i++) src[i] = 100000L * me + i;
    shmem_barrier_all();
    shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, 1);
    for (int i = 0; i < n; i++) CHECK(dst[i] == 100000L * i + me);

    /* Every third PE from PE 1: a team of odd size, its sum and a barrier on it. */
    shmem_team_t third = SHMEM_TEAM_INVALID;
    int members = (n - 1 + 2) / 3;
    if (n > 1) shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 3, members, NULL, 0, &third);
    if (third != SHMEM_TEAM_INVALID) {
        CHECK(shmem_team_n_pes(third) == members);
        shmem_long_sum_reduce(third, sum, one, 1);
        long want = 0;
        for (int k = 0; k < members; k++) want += 1 + 3L * k;
        CHECK(*sum == want);
        shmem_team_sync(third);
        shmem_team_destroy(third);
    } else {
        CHECK(n == 1 || me % 3 != 1);
    }
    shmem_barrier_all();
    shmem_free(sum);
    shmem_free(one);
    shmem_free(dst);
    shmem_free(src);
    REPORT_OK("many");
    shmem_finalize();
    return 0;
}
