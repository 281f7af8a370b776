/* Point-to-point protocols hammered together by two threads per PE (issue 49's stress
 * harness), each result checked exactly:
 * - the main thread passes a block around the ring with put-with-signal, alternating
 *   SHMEM_SIGNAL_SET and SHMEM_SIGNAL_ADD, and checks every block it receives before passing
 *   it on (a signal seen before its data shows as a wrong block);
 * - a second thread, on a private context on odd PEs and the default one on even PEs, does
 *   every round an atomic add on every PE's counter, a put of its own word into every PE's
 *   slot, a fence, and an atomic set of its flag there to the round; then it waits until every
 *   PE's flag reached the round with each wait form in turn (wait_until_all, _any, _some,
 *   _all_vector, test_all) and checks each slot (a put overtaken by its flag shows as an old
 *   round).
 * At the end every counter holds n_pes * ROUNDS. ROUNDS sets the rounds (default 2000). */
#include "check.h"
#include <pthread.h>
#include <stdint.h>

#define BLOCK 64
#define MAXPES 1024

static long data[BLOCK];
static uint64_t sig;
static long counter;
static long slots[MAXPES];
static long flags[MAXPES];
static long rounds;

static void ring(void) {
    int me = shmem_my_pe(), n = shmem_n_pes(), next = (me + 1) % n, prev = (me + n - 1) % n;
    long out[BLOCK];
    for (long r = 1; r <= rounds; r++) {
        if (me != 0) {
            shmem_signal_wait_until(&sig, SHMEM_CMP_GE, (uint64_t)r);
            CHECK(sig == (uint64_t)r);
            for (int i = 0; i < BLOCK; i++) CHECK(data[i] == r * 100000 + (long)prev * 100 + i);
        }
        for (int i = 0; i < BLOCK; i++) out[i] = r * 100000 + (long)me * 100 + i;
        /* The signal is the round either way: one sender, one round at a time. */
        if (r % 2)
            shmem_long_put_signal(data, out, BLOCK, &sig, 1, SHMEM_SIGNAL_ADD, next);
        else
            shmem_long_put_signal(data, out, BLOCK, &sig, (uint64_t)r, SHMEM_SIGNAL_SET, next);
        if (me == 0) {
            shmem_signal_wait_until(&sig, SHMEM_CMP_GE, (uint64_t)r);
            CHECK(sig == (uint64_t)r);
            for (int i = 0; i < BLOCK; i++) CHECK(data[i] == r * 100000 + (long)prev * 100 + i);
        }
    }
}

/* Wait until every flag reached `r`, with the wait form `r` selects. */
static void wait_round(long r, int n) {
    int status[MAXPES] = {0};
    size_t indices[MAXPES];
    long want[MAXPES];
    switch (r % 5) {
    case 0:
        shmem_long_wait_until_all(flags, (size_t)n, NULL, SHMEM_CMP_GE, r);
        break;
    case 1:
        for (int k = 0; k < n; k++) {
            size_t i = shmem_long_wait_until_any(flags, (size_t)n, status, SHMEM_CMP_GE, r);
            CHECK(i < (size_t)n && status[i] == 0 && flags[i] >= r);
            status[i] = 1;
        }
        CHECK(shmem_long_wait_until_any(flags, (size_t)n, status, SHMEM_CMP_GE, r) == SIZE_MAX);
        break;
    case 2:
        for (int got = 0; got < n;) {
            size_t k = shmem_long_wait_until_some(flags, (size_t)n, indices, status, SHMEM_CMP_GE, r);
            CHECK(k >= 1 && got + (int)k <= n);
            for (size_t q = 0; q < k; q++) {
                CHECK(status[indices[q]] == 0 && flags[indices[q]] >= r);
                status[indices[q]] = 1;
            }
            got += (int)k;
        }
        break;
    case 3:
        for (int j = 0; j < n; j++) want[j] = r;
        shmem_long_wait_until_all_vector(flags, (size_t)n, NULL, SHMEM_CMP_GE, want);
        break;
    default:
        while (!shmem_long_test_all(flags, (size_t)n, NULL, SHMEM_CMP_GE, r)) {
        }
    }
}

static void *mix(void *arg) {
    (void)arg;
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
    if (me % 2 && shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) != 0) ctx = SHMEM_CTX_DEFAULT;
    for (long r = 1; r <= rounds; r++) {
        long mine = r * MAXPES + me;
        for (int k = 0; k < n; k++) {
            int t = (me + k) % n;
            shmem_ctx_long_atomic_add(ctx, &counter, 1, t);
            shmem_ctx_long_put(ctx, &slots[me], &mine, 1, t);
        }
        shmem_ctx_fence(ctx);
        for (int k = 0; k < n; k++) shmem_ctx_long_atomic_set(ctx, &flags[me], r, (me + k) % n);
        wait_round(r, n);
        for (int j = 0; j < n; j++) {
            long v = slots[j];
            /* PE j may already be in a later round, never in an earlier one. */
            CHECK(v % MAXPES == j && v / MAXPES >= r);
        }
    }
    shmem_ctx_quiet(ctx);
    if (ctx != SHMEM_CTX_DEFAULT) shmem_ctx_destroy(ctx);
    return NULL;
}

int main(void) {
    int provided;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    CHECK(provided == SHMEM_THREAD_MULTIPLE);
    CHECK(shmem_n_pes() <= MAXPES);
    rounds = getenv("ROUNDS") ? atol(getenv("ROUNDS")) : 2000;
    shmem_barrier_all();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, mix, NULL) == 0);
    ring();
    CHECK(pthread_join(t, NULL) == 0);
    shmem_barrier_all();
    CHECK(counter == (long)shmem_n_pes() * rounds);
    for (int j = 0; j < shmem_n_pes(); j++) CHECK(flags[j] == rounds);
    REPORT_OK("mix_storm");
    shmem_finalize();
    return 0;
}
