/* Spec corner cases: shmem_align with large alignments; team splits that cannot be made
 * (empty or invalid triplet, no team slot left) return nonzero and SHMEM_TEAM_INVALID on every
 * PE; many short-lived teams; test_any / wait_until_any fairness; no descriptor left open
 * after shmem_finalize (run with SHMEM_REINIT=0: by default the library keeps its connections
 * for a later shmem_init until the process exits). */
#include "check.h"
#include <stdint.h>

static long flags[8];

int main(void) {
    int fds_before = open_fds();
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();

    /* Alignment: every power of two up to 256 MiB gives an address aligned to it. */
    for (size_t a = 1 << 20; a <= (size_t)256 << 20; a <<= 1) {
        char *p = shmem_align(a, 64);
        CHECK(p != NULL);
        CHECK(((uintptr_t)p & (a - 1)) == 0);
        shmem_free(p);
    }

    /* Splits that cannot be made. */
    shmem_team_t t = (shmem_team_t)&me; /* anything but SHMEM_TEAM_INVALID */
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 0, NULL, 0, &t) != 0);
    CHECK(t == SHMEM_TEAM_INVALID);
    t = (shmem_team_t)&me;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n + 1, NULL, 0, &t) != 0);
    CHECK(t == SHMEM_TEAM_INVALID);

    /* Many short-lived teams work while each is destroyed. */
    for (int i = 0; i < 300; i++) {
        shmem_team_t s;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &s) == 0);
        CHECK(shmem_team_n_pes(s) == n);
        shmem_team_destroy(s);
    }

    /* Without destroying, the team limit is reached: then nonzero and INVALID everywhere,
     * and after destroying them, splitting works again. */
    shmem_team_t kept[200];
    int made = 0, rc = 0;
    while (made < 200) {
        rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &kept[made]);
        if (rc != 0) break;
        made++;
    }
    CHECK(rc != 0 && made > 8 && made < 200);
    CHECK(kept[made] == SHMEM_TEAM_INVALID);
    for (int i = 0; i < made; i++) shmem_team_destroy(kept[i]);
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t) == 0);
    shmem_team_destroy(t);

    /* Fairness: with flags 1, 4 and 6 set, repeated test_any / wait_until_any calls return
     * each of them, not only the lowest. */
    flags[1] = flags[4] = flags[6] = 1;
    int seen[8] = {0};
    for (int i = 0; i < 9; i++) {
        size_t k = shmem_long_test_any(flags, 8, NULL, SHMEM_CMP_EQ, 1);
        CHECK(k == 1 || k == 4 || k == 6);
        seen[k]++;
        k = shmem_long_wait_until_any(flags, 8, NULL, SHMEM_CMP_EQ, 1);
        CHECK(k == 1 || k == 4 || k == 6);
        seen[k]++;
    }
    CHECK(seen[1] > 0 && seen[4] > 0 && seen[6] > 0);

    shmem_barrier_all();
    shmem_finalize();
    int fds_after = open_fds();
    if (fds_after != fds_before)
        fprintf(stderr, "PE %d: %d descriptors open before shmem_init, %d after shmem_finalize\n", me,
                fds_before, fds_after);
    if (fds_after > fds_before) return 1;
    printf("corners: PE %d ok\n", me);
    return 0;
}
