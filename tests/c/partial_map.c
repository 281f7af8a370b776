/* One PE of the host does not map its peers (UNMAP_RANK=r sets SHMEM_LOCAL_MAP=0 on oshrun's
 * rank r only, as a transport that cannot map would): every PE of the host must then agree to
 * reach the others through the spml, in the heap, the global data and a space created later.
 * Checked on every PE: shmem_ptr to another PE is NULL, SHMEM_TEAM_SHARED is the PE alone, the
 * space offers no load/store access, and atomics from every PE on one word stay exact. */
#include "check.h"
#include <string.h>

static long counter, word;

int main(void) {
    const char *rank = getenv("RSHMEM_RANK"), *r = getenv("UNMAP_RANK");
    if (rank && r && strcmp(rank, r) == 0) setenv("SHMEM_LOCAL_MAP", "0", 1);
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *heap = shmem_malloc(sizeof(long));
    for (int p = 0; p < n; p++) {
        if (p == me) continue;
        CHECK(shmem_ptr(&word, p) == NULL);
        CHECK(shmem_ptr(heap, p) == NULL);
    }
    CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) == 1);
    for (int i = 0; i < 2000; i++) {
        shmem_long_atomic_fetch_add(&counter, 1, 0);
        shmem_long_atomic_add(heap, 1, (me + 1) % n);
    }
    shmem_barrier_all();
    if (me == 0) CHECK(counter == 2000L * n);
    CHECK(*heap == 2000);
    shmem_free(heap);

    shmem_space_config_t cfg = {.device_type = SHMEM_DEVICE_CPU, .size = 1 << 20, .flags = SHMEM_SPACE_FLAG_DEFAULT};
    shmem_space_t sp;
    shmem_team_t st;
    CHECK(shmem_space_create(&cfg, &sp, &st) == 0);
    shmem_space_cap_t caps = 0;
    CHECK(shmem_space_get_caps(sp, &caps) == 0 && !(caps & SHMEM_SPACE_CAP_DIRECT_ACCESS));
    long *w = shmem_space_calloc(sp, 1, sizeof(long));
    CHECK(w != NULL);
    for (int p = 0; p < n; p++)
        if (p != me) CHECK(shmem_ptr(w, p) == NULL);
    shmem_barrier_all();
    for (int i = 0; i < 2000; i++) shmem_long_atomic_add(w, 1, 0);
    shmem_barrier_all();
    if (me == 0) CHECK(*w == 2000L * n);
    shmem_space_free(sp, w);
    shmem_team_destroy(st);
    CHECK(shmem_space_destroy(sp) == 0);
    REPORT_OK("partial_map");
    shmem_finalize();
    return 0;
}
