/* Latency of blocking 64-bit atomics from PE 0 to PE 1 (average time per call): fetch-add,
 * add, compare-swap, swap, fetch, set and inc, with the OpenSHMEM 1.4 names that both
 * libraries provide. */
#include "bench.h"

#define ITERS 200000

int main(void) {
    shmem_init();
    long *x = shmem_calloc(1, sizeof(long));
    const char *names[] = {"amo_fetch_add", "amo_add", "amo_compare_swap", "amo_swap", "amo_fetch", "amo_set", "amo_inc"};
    long sink = 0;
    for (int op = 0; op < 7; op++) {
        shmem_barrier_all();
        if (shmem_my_pe() == 0) {
            double t0 = 0;
            for (long i = 0; i < ITERS + 1000; i++) {
                if (i == 1000) t0 = now_us();
                switch (op) {
                case 0: sink += shmem_long_atomic_fetch_add(x, 1, 1); break;
                case 1: shmem_long_atomic_add(x, 1, 1); break;
                case 2: sink += shmem_long_atomic_compare_swap(x, i, i + 1, 1); break;
                case 3: sink += shmem_long_atomic_swap(x, i, 1); break;
                case 4: sink += shmem_long_atomic_fetch(x, 1); break;
                case 5: shmem_long_atomic_set(x, i, 1); break;
                case 6: shmem_long_atomic_inc(x, 1); break;
                }
            }
            double t = (now_us() - t0) / ITERS;
            shmem_quiet();
            result(names[op], 8, t, "us");
        }
    }
    shmem_barrier_all();
    if (sink == 42) printf("\n"); /* keep the results used */
    shmem_free(x);
    shmem_finalize();
    return 0;
}
