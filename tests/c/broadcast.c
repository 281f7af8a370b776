/* Team broadcast from every root, for several sizes and types (dest updated on all PEs,
 * root included). */
#include "check.h"
#include <string.h>

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    const size_t sizes[] = {1, 2, 7, 64, 1000, 70000};
    long *src = shmem_malloc(70000 * sizeof(long));
    long *dst = shmem_malloc(70000 * sizeof(long));
    CHECK(src && dst);
    for (int root = 0; root < n; root++) {
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t cnt = sizes[k];
            for (size_t i = 0; i < cnt; i++) src[i] = (long)(me * 1000003 + i * 7 + k);
            for (size_t i = 0; i < cnt; i++) dst[i] = -1;
            shmem_barrier_all();
            CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, cnt, root) == 0);
            for (size_t i = 0; i < cnt; i++) CHECK(dst[i] == (long)(root * 1000003 + i * 7 + k));
        }
    }
    /* untyped and generic forms */
    char *cs = shmem_malloc(13), *cd = shmem_malloc(13);
    strcpy(cs, me == n - 1 ? "from the end" : "wrong source");
    shmem_barrier_all();
    CHECK(shmem_broadcastmem(SHMEM_TEAM_WORLD, cd, cs, 13, n - 1) == 0);
    CHECK(strcmp(cd, "from the end") == 0);
    int *is = shmem_malloc(sizeof(int)), *id = shmem_malloc(sizeof(int));
    *is = 77 + me;
    shmem_barrier_all();
    CHECK(shmem_broadcast(SHMEM_TEAM_WORLD, id, is, 1, 0) == 0);
    CHECK(*id == 77);
    CHECK(shmem_broadcastmem(SHMEM_TEAM_INVALID, cd, cs, 13, 0) != 0);
    shmem_barrier_all();
    REPORT_OK("broadcast");
    shmem_finalize();
    return 0;
}
