/* Contexts (create with each option, per-context quiet, get_team, destroy, sessions) and
 * signals (put-with-signal SET and ADD, blocking and nbi, signal_add/set/fetch/wait_until, the
 * C11 generics): the signal is delivered after the data. */
#include "check.h"
#include <stdint.h>

#define N 1000
#define ROUNDS 10

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;

    /* contexts */
    shmem_ctx_t ctx[3];
    long opts[3] = {SHMEM_CTX_PRIVATE, SHMEM_CTX_SERIALIZED, SHMEM_CTX_NOSTORE};
    for (int i = 0; i < 3; i++) {
        CHECK(shmem_ctx_create(opts[i], &ctx[i]) == 0);
        CHECK(ctx[i] != SHMEM_CTX_INVALID && ctx[i] != SHMEM_CTX_DEFAULT);
        shmem_team_t t;
        CHECK(shmem_ctx_get_team(ctx[i], &t) == 0 && t == SHMEM_TEAM_WORLD);
    }
    shmem_ctx_t bad;
    CHECK(shmem_ctx_create(1L << 20, &bad) != 0 && bad == SHMEM_CTX_INVALID);
    shmem_team_t t;
    CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &t) != 0 && t == SHMEM_TEAM_INVALID);
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t) == 0 && t == SHMEM_TEAM_WORLD);
    long *buf = shmem_calloc(3 * N, sizeof(long));
    long src[N];
    for (int i = 0; i < N; i++) src[i] = me * N + i;
    shmem_barrier_all();
    shmem_ctx_session_start(ctx[0], SHMEM_CTX_SESSION_BATCH, NULL, 0);
    for (int i = 0; i < 3; i++) {
        shmem_ctx_long_put_nbi(ctx[i], buf + i * N, src, N, next);
        shmem_ctx_quiet(ctx[i]);
    }
    shmem_ctx_session_stop(ctx[0]);
    shmem_ctx_long_atomic_add(ctx[1], &buf[0], 0, next); /* AMO on a created context */
    shmem_ctx_fence(ctx[2]);
    shmem_barrier_all();
    for (int i = 0; i < 3 * N; i++) CHECK(buf[i] == prev * N + i % N);
    for (int i = 0; i < 3; i++) shmem_ctx_destroy(ctx[i]);
    shmem_ctx_destroy(SHMEM_CTX_INVALID); /* no-op */
    shmem_barrier_all(); /* everyone has checked buf before it is written again */

    /* contexts come and go during the job (each may own transport resources); while one holds
     * unfinished nbi puts, another context's traffic completes on its own */
    for (int round = 0; round < ROUNDS; round++) {
        shmem_ctx_t a, b;
        CHECK(shmem_ctx_create(round % 2 ? SHMEM_CTX_PRIVATE : 0, &a) == 0);
        CHECK(shmem_ctx_create(SHMEM_CTX_SERIALIZED, &b) == 0);
        static long src2[N];
        for (int i = 0; i < N; i++) src2[i] = round * 100000 + me * N + i;
        shmem_ctx_long_put_nbi(a, buf, src2, N, next);
        shmem_ctx_long_atomic_add(b, &buf[2 * N], 1, next);
        shmem_ctx_quiet(b);
        shmem_ctx_quiet(a);
        shmem_ctx_destroy(b);
        shmem_ctx_destroy(a);
        shmem_barrier_all();
        for (int i = 0; i < N; i++) CHECK(buf[i] == round * 100000 + prev * N + i);
        shmem_barrier_all();
    }
    CHECK(buf[2 * N] == ROUNDS + prev * N); /* ROUNDS increments on top of the value put above */

    /* put-with-signal, SET: a ring */
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    long *data = shmem_calloc(N, sizeof(long));
    shmem_barrier_all();
    shmem_long_put_signal(data, src, N, sig, (uint64_t)me + 1, SHMEM_SIGNAL_SET, next);
    uint64_t v = shmem_signal_wait_until(sig, SHMEM_CMP_EQ, (uint64_t)prev + 1);
    CHECK(v == (uint64_t)prev + 1);
    for (int i = 0; i < N; i++) CHECK(data[i] == prev * N + i); /* data before signal */
    CHECK(shmem_signal_fetch(sig) == (uint64_t)prev + 1);
    shmem_barrier_all();

    /* put-with-signal, ADD, nbi and sized/mem forms: everyone into PE 0 */
    uint64_t *count = shmem_calloc(1, sizeof(uint64_t));
    long *slots = shmem_calloc((size_t)n * 4, sizeof(long));
    shmem_barrier_all();
    long mine[4] = {me, me + 1, me + 2, me + 3};
    shmem_put_signal_nbi(slots + me * 4, mine, 2, count, 1, SHMEM_SIGNAL_ADD, 0); /* C11 generic */
    shmem_put64_signal(slots + me * 4 + 2, mine + 2, 1, count, 1, SHMEM_SIGNAL_ADD, 0);
    shmem_ctx_putmem_signal_nbi(SHMEM_CTX_DEFAULT, slots + me * 4 + 3, mine + 3, sizeof(long), count, 1,
                                SHMEM_SIGNAL_ADD, 0);
    shmem_quiet();
    if (me == 0) {
        shmem_signal_wait_until(count, SHMEM_CMP_EQ, (uint64_t)(3 * n));
        for (int pe = 0; pe < n; pe++)
            for (int k = 0; k < 4; k++) CHECK(slots[pe * 4 + k] == pe + k);
    }
    shmem_barrier_all();

    /* signal_add / signal_set, function and generic forms */
    uint64_t *s2 = shmem_calloc(1, sizeof(uint64_t));
    shmem_barrier_all();
    shmem_signal_add(s2, 2, 0);
    shmem_signal_add(SHMEM_CTX_DEFAULT, s2, 3, 0);
    shmem_ctx_signal_add(SHMEM_CTX_DEFAULT, s2, 5, 0);
    shmem_barrier_all();
    if (me == 0) CHECK(shmem_signal_fetch(s2) == (uint64_t)(10 * n));
    shmem_barrier_all();
    if (me == 0) shmem_signal_set(s2, 77, next);
    if (me == 0) shmem_signal_set(SHMEM_CTX_DEFAULT, s2, 78, next);
    shmem_barrier_all();
    if (me == next && n > 1) CHECK(*s2 == 78);
    shmem_barrier_all();
    shmem_free(s2);
    shmem_free(slots);
    shmem_free(count);
    shmem_free(data);
    shmem_free(sig);
    shmem_free(buf);
    REPORT_OK("ctx_signal");
    shmem_finalize();
    return 0;
}
