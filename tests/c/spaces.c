/* Memory spaces and shmem_malloc_with_hints: the predefined handles and teams, a created CPU
 * space (allocation, RMA, atomics and collectives on its memory, queries), the rules of
 * destroy, and spaces coming and going. */
#include "check.h"
#include <stdint.h>

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), next = (me + 1) % n;

    /* predefined */
    CHECK(SHMEM_SPACE_DEFAULT != SHMEM_SPACE_INVALID && SHMEM_SPACE_CPU == SHMEM_SPACE_DEFAULT);
    CHECK(SHMEM_SPACE_GPU == SHMEM_SPACE_INVALID);
    CHECK(shmem_space_is_available(SHMEM_SPACE_DEFAULT) == 0);
    CHECK(shmem_space_is_available(SHMEM_SPACE_GPU) != 0);
    CHECK(shmem_team_is_valid(SHMEM_TEAM_CPU) && !shmem_team_is_valid(SHMEM_TEAM_GPU));
    CHECK(shmem_team_is_valid(SHMEM_TEAM_WORLD) && !shmem_team_is_valid(SHMEM_TEAM_INVALID));
    shmem_team_t t;
    CHECK(shmem_space_get_team(SHMEM_SPACE_DEFAULT, &t) == 0 && t == SHMEM_TEAM_WORLD);
    shmem_device_type_t dt = SHMEM_DEVICE_GPU;
    CHECK(shmem_space_get_device_type(SHMEM_SPACE_CPU, &dt) == 0 && dt == SHMEM_DEVICE_CPU);
    shmem_space_cap_t caps = 0;
    CHECK(shmem_space_get_caps(SHMEM_SPACE_DEFAULT, &caps) == 0);
    CHECK((caps & (SHMEM_SPACE_CAP_RMA | SHMEM_SPACE_CAP_ATOMICS | SHMEM_SPACE_CAP_WORLD_ACCESS)) ==
          (SHMEM_SPACE_CAP_RMA | SHMEM_SPACE_CAP_ATOMICS | SHMEM_SPACE_CAP_WORLD_ACCESS));
    CHECK(shmem_space_get_caps(SHMEM_SPACE_INVALID, &caps) != 0);
    CHECK(shmem_space_malloc(SHMEM_SPACE_INVALID, 64) == NULL);
    int *d = shmem_space_calloc(SHMEM_SPACE_DEFAULT, 4, sizeof(int));
    CHECK(d != NULL && d[3] == 0);
    shmem_int_p(&d[0], me, next);
    shmem_barrier_all();
    CHECK(d[0] == (me + n - 1) % n);
    shmem_space_free(SHMEM_SPACE_DEFAULT, d);

    /* hints */
    long *h = shmem_malloc_with_hints(8 * sizeof(long), SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
    CHECK(h != NULL && shmem_malloc_with_hints(0, 0) == NULL);
    h[0] = 0;
    shmem_barrier_all();
    shmem_long_atomic_inc(&h[0], 0);
    shmem_barrier_all();
    if (me == 0) CHECK(h[0] == n);
    shmem_free(h);
    /* a hinted block owns its cache lines: 128-byte aligned, and nothing allocated next to it
     * lands within them */
    for (int i = 0; i < 3; i++) {
        char *before = shmem_malloc(8);
        char *hinted = shmem_malloc_with_hints(8 + 100 * i, SHMEM_MALLOC_SIGNAL_REMOTE);
        char *after = shmem_malloc(8);
        size_t span = ((8 + 100 * i) + 127) / 128 * 128;
        CHECK(hinted != NULL && (uintptr_t)hinted % 128 == 0);
        CHECK(after >= hinted + span || after + 8 <= hinted);
        CHECK(before + 8 <= hinted || before >= hinted + span);
        uint64_t *sig = (uint64_t *)hinted;
        *sig = 0;
        CHECK(shmem_signal_fetch(sig) == 0); /* a signal word like any other */
        shmem_barrier_all();
        shmem_putmem_signal(after, before, 8, sig, 1, SHMEM_SIGNAL_ADD, next);
        shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 1);
        shmem_barrier_all();
        shmem_free(after);
        shmem_free(hinted);
        shmem_free(before);
    }

    /* created spaces, several times over (their segments are reused) */
    shmem_space_config_t gpu = {.device_type = SHMEM_DEVICE_GPU, .size = 1 << 20, .flags = SHMEM_SPACE_FLAG_DEFAULT};
    shmem_space_t s;
    shmem_team_t st;
    CHECK(shmem_space_create(&gpu, &s, &st) != 0 && s == SHMEM_SPACE_INVALID && st == SHMEM_TEAM_INVALID);
    for (int round = 0; round < 20; round++) {
        shmem_space_config_t cfg = {.device_type = SHMEM_DEVICE_CPU, .size = (size_t)(1 + round % 3) << 20,
                                    .flags = SHMEM_SPACE_FLAG_DEFAULT};
        CHECK(shmem_space_create(&cfg, &s, &st) == 0 && s != SHMEM_SPACE_INVALID && shmem_team_is_valid(st));
        CHECK(shmem_team_n_pes(st) == n && shmem_team_my_pe(st) == me);
        shmem_team_t got;
        CHECK(shmem_space_get_team(s, &got) == 0 && got == st);
        CHECK(shmem_space_get_caps(s, &caps) == 0 && (caps & SHMEM_SPACE_CAP_COLLECTIVES));
        long *a = shmem_space_malloc(s, 16 * sizeof(long));
        long *b = shmem_space_calloc(s, 16, sizeof(long));
        CHECK(a != NULL && b != NULL && b[15] == 0);
        for (int i = 0; i < 16; i++) a[i] = me * 100 + i + round;
        shmem_team_sync(st);
        shmem_long_put(b, a, 16, next); /* RMA into space memory */
        shmem_long_atomic_add(&b[0], 1000, next);
        shmem_barrier_all();
        int prev = (me + n - 1) % n;
        CHECK(b[0] == prev * 100 + round + 1000 && b[15] == prev * 100 + 15 + round);
        CHECK(shmem_long_sum_reduce(st, a, a, 1) == 0); /* a collective on space memory */
        CHECK(a[0] == 100L * n * (n - 1) / 2 + (long)n * round);
        CHECK(shmem_space_destroy(s) != 0); /* its team still exists: nothing happens */
        shmem_space_free(s, a);
        shmem_space_free(s, b);
        shmem_team_destroy(st);
        CHECK(shmem_space_destroy(s) == 0);
    }
    CHECK(shmem_space_destroy(SHMEM_SPACE_INVALID) == 0);
    shmem_barrier_all();
    REPORT_OK("spaces");
    shmem_finalize();
    return 0;
}
