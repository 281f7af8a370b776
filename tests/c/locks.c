/* Locks under contention: every PE takes the lock many times and increments a counter on PE 0
 * with a non-atomic get + put inside the critical section (lost updates would show), test_lock
 * only succeeds when the lock is free, and every PE gets the lock (no starvation). */
#include "check.h"

#define ROUNDS 200

static long lock;
static long counter;
static long got_it[64];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n <= 64);
    shmem_barrier_all();
    for (int i = 0; i < ROUNDS; i++) {
        shmem_set_lock(&lock);
        long c = shmem_long_g(&counter, 0);
        shmem_long_p(&counter, c + 1, 0);
        shmem_long_atomic_inc(&got_it[me], 0);
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    if (me == 0) {
        CHECK(counter == (long)ROUNDS * n);
        for (int pe = 0; pe < n; pe++) CHECK(got_it[pe] == ROUNDS);
    }
    shmem_barrier_all();
    /* test_lock: PE 0 holds the lock; everyone else must fail to take it */
    if (me == 0) shmem_set_lock(&lock);
    shmem_barrier_all();
    if (me != 0) CHECK(shmem_test_lock(&lock) == 1);
    shmem_barrier_all();
    if (me == 0) shmem_clear_lock(&lock);
    shmem_barrier_all();
    /* now free: spin on test_lock until each PE in turn gets it */
    while (shmem_test_lock(&lock) != 0) {
    }
    long c = shmem_long_g(&counter, 0);
    shmem_long_p(&counter, c + 1, 0);
    shmem_clear_lock(&lock);
    shmem_barrier_all();
    if (me == 0) CHECK(counter == (long)ROUNDS * n + n);
    /* the no-op compatibility routines exist and do nothing */
    shmem_pcontrol(1);
    shmem_pcontrol(2, "extra", 3);
    shmem_set_cache_inv();
    shmem_clear_cache_inv();
    shmem_set_cache_line_inv(&lock);
    shmem_clear_cache_line_inv(&lock);
    shmem_udcflush();
    shmem_udcflush_line(&lock);
    int pes[1] = {(me + 1) % n};
    shmem_pe_quiet(pes, 1);
    shmem_ctx_pe_quiet(SHMEM_CTX_DEFAULT, pes, 1);
    shmem_barrier_all();
    REPORT_OK("locks");
    shmem_finalize();
    return 0;
}
