/* Where the PEs run, as the library sees it: SHMEM_TEAM_SHARED holds exactly the PEs whose heap
 * shmem_ptr maps, and atomics stay atomic when PEs on this host and on others update the same
 * words. Each PE prints "hosts: PE i shared=S mapped=M" (the harness compares S and M with the
 * placement it asked for) and then the usual ok line. */
#include "check.h"
#include <stdint.h>

#define ROUNDS 2000

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *counter = shmem_calloc(2, sizeof(long));
    int *probe = shmem_malloc(sizeof(int));
    CHECK(counter && probe);

    /* The shared team and shmem_ptr agree, peer by peer. */
    int shared = shmem_team_n_pes(SHMEM_TEAM_SHARED), mapped = 0;
    CHECK(shared >= 1 && shared <= n);
    CHECK(shmem_team_my_pe(SHMEM_TEAM_SHARED) >= 0);
    for (int pe = 0; pe < n; pe++) {
        int in_shared = shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, SHMEM_TEAM_SHARED) >= 0;
        int *p = shmem_ptr(probe, pe);
        CHECK((p != NULL) == in_shared);
        if (in_shared)
            CHECK(shmem_team_ptr(SHMEM_TEAM_SHARED, probe,
                                 shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, SHMEM_TEAM_SHARED)) == p);
        mapped += p != NULL;
    }
    printf("hosts: PE %d shared=%d mapped=%d\n", me, shared, mapped);
    fflush(stdout);

    /* A collective on the shared team: its PEs' ranks sum as expected. */
    static long one, sum;
    one = shmem_team_my_pe(SHMEM_TEAM_SHARED);
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_SHARED, &sum, &one, 1) == 0);
    CHECK(sum == (long)shared * (shared - 1) / 2);

    /* Mixed local/remote contention on two words: no update may be lost. */
    shmem_barrier_all();
    for (int i = 0; i < ROUNDS; i++) {
        shmem_long_atomic_inc(&counter[0], 0);
        (void)shmem_long_atomic_fetch_add(&counter[1], 3, n - 1);
    }
    shmem_barrier_all();
    CHECK(shmem_long_atomic_fetch(&counter[0], 0) == (long)n * ROUNDS);
    CHECK(shmem_long_atomic_fetch(&counter[1], n - 1) == 3L * n * ROUNDS);

    /* A put to every PE, read back by its owner. */
    *probe = -1;
    shmem_barrier_all();
    shmem_int_p(probe, me, (me + 1) % n);
    shmem_barrier_all();
    CHECK(*probe == (me + n - 1) % n);

    shmem_free(probe);
    shmem_free(counter);
    REPORT_OK("hosts");
    shmem_finalize();
    return 0;
}
