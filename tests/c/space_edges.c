/* The memory-space rules at their edges, each of which must give the same answer on every PE:
 * destroy refuses (nonzero, space intact and usable) while the space's team or any team split
 * from it exists, even a sub-team that only some PEs belong to; a size the machine cannot back
 * makes creation return nonzero with invalid handles everywhere; running out of segment slots
 * returns nonzero and destroying spaces frees the slots again. */
#include "check.h"
#include <string.h>

static shmem_space_config_t cpu(size_t size) {
    shmem_space_config_t c = {.device_type = SHMEM_DEVICE_CPU, .size = size, .flags = SHMEM_SPACE_FLAG_DEFAULT};
    return c;
}

/* A put around the ring and a sum on space memory: the space works. */
static void use(shmem_space_t s, shmem_team_t t, int round) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *a = shmem_space_calloc(s, 4, sizeof(long));
    CHECK(a != NULL);
    a[1] = me + round;
    shmem_team_sync(t);
    shmem_long_p(&a[0], me + round, (me + 1) % n);
    shmem_barrier_all();
    CHECK(a[0] == (me + n - 1) % n + round);
    CHECK(shmem_long_sum_reduce(t, &a[2], &a[1], 1) == 0);
    long want = 0;
    for (int i = 0; i < shmem_team_n_pes(t); i++) want += shmem_team_translate_pe(t, i, SHMEM_TEAM_WORLD) + round;
    CHECK(a[2] == want);
    shmem_space_free(s, a);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_space_t s, big;
    shmem_team_t st, sub, big_team;

    /* 1. destroy with derived teams */
    shmem_space_config_t c = cpu(1 << 20);
    CHECK(shmem_space_create(&c, &s, &st) == 0);
    /* a sub-team of PE 0 only: the others hold no team derived from the space */
    CHECK(shmem_team_split_strided(st, 0, 1, 1, NULL, 0, &sub) == 0);
    CHECK((me == 0) == (sub != SHMEM_TEAM_INVALID));
    CHECK(shmem_space_destroy(s) != 0); /* st and sub exist */
    shmem_team_destroy(st);
    CHECK(shmem_space_destroy(s) != 0); /* sub still exists on PE 0: refused on every PE */
    use(s, SHMEM_TEAM_WORLD, 1);        /* intact */
    if (sub != SHMEM_TEAM_INVALID) shmem_team_destroy(sub);
    CHECK(shmem_space_destroy(s) == 0);

    /* a 2-D split of the space team, then its children */
    CHECK(shmem_space_create(&c, &s, &st) == 0);
    shmem_team_t xt, yt;
    CHECK(shmem_team_split_2d(st, 2, NULL, 0, &xt, NULL, 0, &yt) == 0);
    shmem_team_destroy(st);
    CHECK(shmem_space_destroy(s) != 0);
    use(s, xt, 2);
    shmem_team_destroy(xt);
    CHECK(shmem_space_destroy(s) != 0); /* yt */
    shmem_team_destroy(yt);
    CHECK(shmem_space_destroy(s) == 0);
    /* teams split from SHMEM_TEAM_WORLD do not hold spaces */
    shmem_team_t wt;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &wt) == 0);
    CHECK(shmem_space_create(&c, &s, &st) == 0);
    shmem_team_destroy(st);
    CHECK(shmem_space_destroy(s) == 0);
    shmem_team_destroy(wt);

    /* 2. sizes the machine cannot back: nonzero and invalid handles on every PE */
    size_t huge[] = {(size_t)1 << 50 /* 1 PiB */, (size_t)64 << 40 /* 64 TiB */, (size_t)-1};
    for (int i = 0; i < 3; i++) {
        c = cpu(huge[i]);
        s = (shmem_space_t)&c;
        st = SHMEM_TEAM_WORLD;
        CHECK(shmem_space_create(&c, &s, &st) != 0);
        CHECK(s == SHMEM_SPACE_INVALID && st == SHMEM_TEAM_INVALID);
    }

    /* 3. out of segment slots: nonzero, not an abort; destroying frees the slots */
    enum { MAX = 64 };
    shmem_space_t made[MAX];
    shmem_team_t teams[MAX];
    int count = 0;
    c = cpu(64 << 10);
    for (; count < MAX; count++) {
        if (shmem_space_create(&c, &made[count], &teams[count]) != 0) break;
        shmem_team_destroy(teams[count]); /* teams are scarcer than segments */
    }
    CHECK(count > 0 && count < MAX);
    CHECK(shmem_space_create(&c, &big, &big_team) != 0 && big == SHMEM_SPACE_INVALID);
    for (int i = 0; i < count; i++) CHECK(shmem_space_destroy(made[i]) == 0);
    c = cpu(1 << 20);
    CHECK(shmem_space_create(&c, &s, &st) == 0);
    use(s, st, 3);
    shmem_team_destroy(st);
    CHECK(shmem_space_destroy(s) == 0);
    if (me == 0) printf("space_edges: %d spaces fit at once\n", count);

    shmem_barrier_all();
    REPORT_OK("space_edges");
    shmem_finalize();
    return 0;
}
