/* Many barriers in a row: after each, every PE must see every other PE's increment of that
 * round, and sync_all must also order plain puts when combined with quiet. */
#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int *slots = shmem_calloc(n, sizeof(int));
    CHECK(slots != NULL);
    for (int round = 1; round <= 200; round++) {
        for (int pe = 0; pe < n; pe++) shmem_int_p(&slots[me], round, pe);
        if (round % 2) {
            shmem_barrier_all();
        } else {
            shmem_quiet();
            shmem_sync_all();
        }
        for (int pe = 0; pe < n; pe++) CHECK(slots[pe] == round);
        shmem_barrier_all(); /* nobody starts round+1 before everyone checked */
    }
    shmem_free(slots);
    REPORT_OK("barrier");
    shmem_finalize();
    return 0;
}
