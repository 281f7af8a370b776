/* SHMEM_THREAD_MULTIPLE: one thread's shmem_quiet must complete that thread's puts even while
 * other threads quiet the same (default) context. On PE 0, thread A puts x = i to PE 1, quiets,
 * then tells PE 1 "i" through a context of its own (another path, which may overtake puts that
 * are still in flight); thread B keeps putting and quieting on the default context, so that its
 * quiets often run while A issues. PE 1 waits for each i and checks that x has reached it. */
#include "check.h"
#include <pthread.h>
#include <stdatomic.h>

#define ITERS 4000

static long x, y, flag;
static atomic_int a_done;

static void *quieter(void *arg) {
    (void)arg;
    for (long j = 0; !atomic_load(&a_done); j++) {
        shmem_long_p(&y, j, 1);
        shmem_quiet();
    }
    return NULL;
}

int main(void) {
    int provided;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0);
    CHECK(provided == SHMEM_THREAD_MULTIPLE);
    int me = shmem_my_pe();
    if (shmem_n_pes() >= 2 && me == 0) {
        shmem_ctx_t own;
        CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &own) == 0);
        pthread_t b;
        CHECK(pthread_create(&b, NULL, quieter, NULL) == 0);
        for (long i = 1; i <= ITERS; i++) {
            shmem_long_p(&x, i, 1);
            shmem_quiet();
            shmem_ctx_long_atomic_set(own, &flag, i, 1);
            shmem_ctx_quiet(own);
        }
        atomic_store(&a_done, 1);
        CHECK(pthread_join(b, NULL) == 0);
        shmem_ctx_destroy(own);
    } else if (shmem_n_pes() >= 2 && me == 1) {
        for (long i = 1; i <= ITERS; i++) {
            shmem_long_wait_until(&flag, SHMEM_CMP_GE, i);
            long seen = __atomic_load_n(&x, __ATOMIC_SEQ_CST);
            if (seen < i) {
                fprintf(stderr, "PE 1: flag %ld came before the put it follows (x = %ld)\n", i, seen);
                fflush(stderr);
                shmem_global_exit(1);
            }
        }
    }
    shmem_barrier_all();
    REPORT_OK("quiet_threads");
    shmem_finalize();
    return 0;
}
