/* Soak: SOAK_OPS operations per PE (atomic increments, fetch-adds, puts, atomic fetches),
 * spread over every PE, then each PE recomputes what it must have received from everyone
 * and checks its memory holds exactly that. */
#include "check.h"
#include <stdint.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

#define SLOTS 64
static long counter[64]; /* counter[src]: increments from src */
static long sum;         /* fetch-adds from everyone */
static long slot[64][SLOTS];

static int target(int src, long i, int n) { return (int)((src + 1 + i) % n); }

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n <= 64);
    const char *e = getenv("SOAK_OPS");
    long ops = e ? atol(e) : 100000;
    long last_seen[64] = {0};
    shmem_barrier_all();
    double t0 = now_s();
    for (long i = 0; i < ops; i++) {
        int t = target(me, i, n);
        switch (i % 4) {
        case 0: shmem_long_atomic_inc(&counter[me], t); break;
        case 1: shmem_long_atomic_fetch_add(&sum, i, t); break;
        case 2: shmem_long_p(&slot[me][(i / 4) % SLOTS], i, t); break;
        case 3: {
            long v = shmem_long_atomic_fetch(&counter[me], t);
            CHECK(v >= last_seen[t]); /* my own increments there never go backwards */
            last_seen[t] = v;
            break;
        }
        }
    }
    shmem_barrier_all();
    if (me == 0 && getenv("SOAK_RATE")) /* for benchmarks: the rate including the barrier */
        printf("RESULT soak_rate %d %.6g ops/s/PE\n", n, ops / (now_s() - t0));
    long want_sum = 0;
    for (int src = 0; src < n; src++) {
        long incs = 0, want_slot[SLOTS];
        for (int j = 0; j < SLOTS; j++) want_slot[j] = 0;
        for (long i = 0; i < ops; i++) {
            if (target(src, i, n) != me) continue;
            if (i % 4 == 0) incs++;
            if (i % 4 == 1) want_sum += i;
            if (i % 4 == 2) want_slot[(i / 4) % SLOTS] = i;
        }
        CHECK(counter[src] == incs);
        for (int j = 0; j < SLOTS; j++) CHECK(slot[src][j] == want_slot[j]);
    }
    CHECK(sum == want_sum);
    REPORT_OK("soak");
    shmem_finalize();
    return 0;
}
