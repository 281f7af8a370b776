/* SHMEM_THREAD_MULTIPLE: several threads per PE issue puts and AMOs concurrently, on the
 * default context and on private contexts of their own. */
#include "check.h"
#include <pthread.h>

#define THREADS 4
#define ITERS 500

static long *counter; /* on PE 0 */
static long *slots;   /* [n][THREADS][ITERS] on every PE */
static int me, n;

static void *worker(void *arg) {
    int t = (int)(long)arg;
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
    if (t % 2 == 1) CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0);
    for (int i = 0; i < ITERS; i++) {
        shmem_ctx_long_atomic_inc(ctx, counter, 0);
        long v = (long)me * 1000000 + t * 10000 + i;
        shmem_ctx_long_p(ctx, &slots[((size_t)me * THREADS + t) * ITERS + i], v, (me + 1) % n);
    }
    shmem_ctx_quiet(ctx);
    if (ctx != SHMEM_CTX_DEFAULT) shmem_ctx_destroy(ctx);
    return NULL;
}

int main(void) {
    int provided;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0);
    CHECK(provided == SHMEM_THREAD_MULTIPLE);
    int q;
    shmem_query_thread(&q);
    CHECK(q == SHMEM_THREAD_MULTIPLE);
    me = shmem_my_pe();
    n = shmem_n_pes();
    counter = shmem_calloc(1, sizeof(long));
    slots = shmem_calloc((size_t)n * THREADS * ITERS, sizeof(long));
    shmem_barrier_all();
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, worker, (void *)t) == 0);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    shmem_barrier_all();
    if (me == 0) CHECK(*counter == (long)n * THREADS * ITERS);
    int prev = (me + n - 1) % n;
    for (int t = 0; t < THREADS; t++)
        for (int i = 0; i < ITERS; i++)
            CHECK(slots[((size_t)prev * THREADS + t) * ITERS + i] == (long)prev * 1000000 + t * 10000 + i);
    shmem_barrier_all();
    REPORT_OK("threads");
    shmem_finalize();
    return 0;
}
