/* Every team collective and reduction with nelems 0 and NULL buffers (issue 49): the spec
 * allows it, and nothing is moved. The mapped path (scoll shm) used to abort the job. */
#include "check.h"

int main(void) {
    shmem_init();
    shmem_team_t w = SHMEM_TEAM_WORLD, s = SHMEM_TEAM_SHARED;
    for (int k = 0; k < 2; k++) {
        shmem_team_t t = k ? s : w;
        CHECK(shmem_broadcastmem(t, NULL, NULL, 0, 0) == 0);
        CHECK(shmem_long_broadcast(t, NULL, NULL, 0, 0) == 0);
        CHECK(shmem_fcollectmem(t, NULL, NULL, 0) == 0);
        CHECK(shmem_int_fcollect(t, NULL, NULL, 0) == 0);
        CHECK(shmem_alltoallmem(t, NULL, NULL, 0) == 0);
        CHECK(shmem_double_alltoall(t, NULL, NULL, 0) == 0);
        CHECK(shmem_alltoallsmem(t, NULL, NULL, 1, 1, 0) == 0);
        CHECK(shmem_long_alltoalls(t, NULL, NULL, 2, 3, 0) == 0);
        CHECK(shmem_long_sum_reduce(t, NULL, NULL, 0) == 0);
        CHECK(shmem_int_max_reduce(t, NULL, NULL, 0) == 0);
        CHECK(shmem_double_prod_reduce(t, NULL, NULL, 0) == 0);
        CHECK(shmem_uint_xor_reduce(t, NULL, NULL, 0) == 0);
        CHECK(shmem_long_sum_inscan(t, NULL, NULL, 0) == 0);
        CHECK(shmem_long_sum_exscan(t, NULL, NULL, 0) == 0);
    }
    /* collect: every PE contributes nothing, into a real destination. */
    long *dest = shmem_calloc(4, sizeof(long));
    CHECK(shmem_long_collect(w, dest, NULL, 0) == 0);
    CHECK(dest[0] == 0);
    /* And a real one afterwards still works. */
    long *src = shmem_malloc(sizeof(long));
    *src = shmem_my_pe() + 1;
    long *sum = shmem_malloc(sizeof(long));
    shmem_barrier_all();
    CHECK(shmem_long_sum_reduce(w, sum, src, 1) == 0);
    int n = shmem_n_pes();
    CHECK(*sum == (long)n * (n + 1) / 2);
    shmem_free(sum);
    shmem_free(src);
    shmem_free(dest);
    REPORT_OK("coll_zero");
    shmem_finalize();
    return 0;
}
