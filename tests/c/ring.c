/* Ring exchange: in each round every PE puts to its right neighbour, then all synchronise.
 * A value also travels all the way around the ring, one hop per round. */
#include "check.h"

static long recv_val;
static long traveller;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    if (me == 0) traveller = 1000;
    shmem_barrier_all();
    for (long round = 0; round < 3L * n + 5; round++) {
        long carry = traveller;
        shmem_barrier_all(); /* everyone has read its traveller before it is overwritten */
        shmem_long_p(&recv_val, round * n + me, next);
        shmem_long_p(&traveller, carry + (carry ? 1 : 0), next);
        shmem_barrier_all();
        CHECK(recv_val == round * n + prev);
    }
    /* after R rounds the traveller started on PE 0 sits on PE R mod n, incremented R times */
    long rounds = 3L * n + 5;
    if (me == rounds % n) CHECK(traveller == 1000 + rounds);
    else CHECK(traveller == 0);
    REPORT_OK("ring");
    shmem_finalize();
    return 0;
}
