/* SHMEM_THREAD_MULTIPLE: two threads per PE run active-set collectives over all PEs at the
 * same time, each thread with pSync arrays of its own (thread t of every PE meets thread t of
 * the others). An active set equal to the world must not then run on the world team, where
 * the two threads' calls would meet. Results are checked, and every pSync is clean at the end. */
#include "check.h"
#include <pthread.h>

#define THREADS 2
#define ITERS 200

static long ps[THREADS][2][SHMEM_REDUCE_SYNC_SIZE];
static long bar[THREADS][SHMEM_BARRIER_SYNC_SIZE];
static long src[THREADS][2], dst[THREADS][2], wrk[THREADS][SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static int me, n;

static void *worker(void *arg) {
    int t = (int)(long)arg;
    for (int i = 0; i < ITERS; i++) {
        src[t][0] = me * 10 + t + i;
        shmem_long_sum_to_all(dst[t], src[t], 1, 0, 0, n, wrk[t], ps[t][i & 1]);
        long want = (long)n * (n - 1) / 2 * 10 + (long)n * (t + i);
        if (dst[t][0] != want) {
            fprintf(stderr, "PE %d: thread %d, call %d: sum %ld, expected %ld\n", me, t, i, dst[t][0], want);
            fflush(stderr);
            shmem_global_exit(1);
        }
        /* dest must be ready everywhere before the broadcast, and ps[t][i & 1] is used again
         * two calls later, by when everyone has left this one (the barrier says so) */
        shmem_barrier(0, 0, n, bar[t]);
        int root = (i + t) % n;
        shmem_broadcast64(dst[t], src[t], 1, root, 0, 0, n, ps[t][(i + 1) & 1]);
        if (me != root) CHECK(dst[t][0] == root * 10 + t + i);
        shmem_barrier(0, 0, n, bar[t]);
    }
    return NULL;
}

int main(void) {
    for (int t = 0; t < THREADS; t++) {
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) ps[t][0][i] = ps[t][1][i] = SHMEM_SYNC_VALUE;
        for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) bar[t][i] = SHMEM_SYNC_VALUE;
    }
    int provided;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0);
    CHECK(provided == SHMEM_THREAD_MULTIPLE);
    me = shmem_my_pe();
    n = shmem_n_pes();
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, worker, (void *)t) == 0);
    for (int t = 0; t < THREADS; t++) CHECK(pthread_join(th[t], NULL) == 0);
    shmem_barrier_all();
    for (int t = 0; t < THREADS; t++) {
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) CHECK(ps[t][0][i] == SHMEM_SYNC_VALUE && ps[t][1][i] == SHMEM_SYNC_VALUE);
        for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) CHECK(bar[t][i] == SHMEM_SYNC_VALUE);
    }
    REPORT_OK("active_set_threads");
    shmem_finalize();
    return 0;
}
