/* Teams: strided (also reversed and nested) and 2-D splits, queries, translation, contexts on
 * teams, team_ptr, sync and broadcast on sub-teams, destroy, and slot reuse over many splits. */
#include "check.h"

static long bcast_src[4], bcast_dst[4];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == n);
    CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1 && shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1);

    /* even PEs */
    shmem_team_config_t cfg = {.num_contexts = 2};
    shmem_team_t even;
    int neven = (n + 1) / 2;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, neven, &cfg, SHMEM_TEAM_NUM_CONTEXTS, &even) == 0);
    if (me % 2 == 0) {
        CHECK(even != SHMEM_TEAM_INVALID);
        CHECK(shmem_team_my_pe(even) == me / 2 && shmem_team_n_pes(even) == neven);
        CHECK(shmem_team_translate_pe(even, shmem_team_my_pe(even), SHMEM_TEAM_WORLD) == me);
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, even) == me / 2);
        if (n > 1) CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 1, even) == -1);
        shmem_team_config_t got = {0};
        CHECK(shmem_team_get_config(even, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 2);
        shmem_ctx_t ctx;
        CHECK(shmem_team_create_ctx(even, 0, &ctx) == 0);
        shmem_team_t t;
        CHECK(shmem_ctx_get_team(ctx, &t) == 0 && t == even);
        /* RMA on a team context addresses the team's PEs (its index 1 is world PE 2) */
        static long slot;
        int right = (shmem_team_my_pe(even) + 1) % neven;
        shmem_ctx_long_p(ctx, &slot, me + 1000, right);
        shmem_ctx_quiet(ctx);
        shmem_ctx_destroy(ctx);
        CHECK(shmem_team_sync(even) == 0);
        int left = ((me / 2 + neven - 1) % neven) * 2;
        CHECK(slot == left + 1000);
        CHECK(shmem_team_ptr(even, &slot, shmem_team_my_pe(even)) == (void *)&slot);
        /* broadcast from the team's last PE */
        for (int i = 0; i < 4; i++) bcast_src[i] = me * 10 + i;
        CHECK(shmem_long_broadcast(even, bcast_dst, bcast_src, 4, neven - 1) == 0);
        for (int i = 0; i < 4; i++) CHECK(bcast_dst[i] == (neven - 1) * 2 * 10 + i);
        /* a team of a team: every other PE of the even ones, in reverse order */
        shmem_team_t sub;
        int nsub = (neven + 1) / 2, last = (nsub - 1) * 2;
        CHECK(shmem_team_split_strided(even, last, -2, nsub, NULL, 0, &sub) == 0);
        if ((me / 2) % 2 == 0) {
            CHECK(shmem_team_my_pe(sub) == (last - me / 2) / 2 && shmem_team_n_pes(sub) == nsub);
            CHECK(shmem_team_translate_pe(sub, 0, SHMEM_TEAM_WORLD) == last * 2);
            shmem_team_sync(sub);
            shmem_team_destroy(sub);
        } else {
            CHECK(sub == SHMEM_TEAM_INVALID);
        }
        shmem_team_destroy(even);
    } else {
        CHECK(even == SHMEM_TEAM_INVALID);
    }

    /* 2-D: rows of 2 */
    shmem_team_t xt, yt;
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &xt, NULL, 0, &yt) == 0);
    CHECK(shmem_team_my_pe(xt) == me % 2 && shmem_team_n_pes(xt) == (me / 2 * 2 + 1 < n ? 2 : 1));
    CHECK(shmem_team_my_pe(yt) == me / 2 && shmem_team_n_pes(yt) == (n - me % 2 + 1) / 2);
    CHECK(shmem_team_translate_pe(xt, 0, SHMEM_TEAM_WORLD) == me / 2 * 2);
    CHECK(shmem_team_translate_pe(yt, 0, SHMEM_TEAM_WORLD) == me % 2);
    shmem_team_sync(xt);
    shmem_team_sync(yt);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);

    /* slots are reused: far more splits than teams can exist at once */
    for (int i = 0; i < 200; i++) {
        shmem_team_t t;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, i % n, 1, 1, NULL, 0, &t) == 0);
        CHECK((t != SHMEM_TEAM_INVALID) == (me == i % n));
        if (t != SHMEM_TEAM_INVALID) {
            CHECK(shmem_team_n_pes(t) == 1 && shmem_team_my_pe(t) == 0);
            shmem_team_destroy(t);
        }
    }
    shmem_barrier_all();
    REPORT_OK("teams");
    shmem_finalize();
    return 0;
}
