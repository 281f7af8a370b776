/* What shmem_malloc_with_hints buys: PE 1 adds to a counter on PE 0 with remote atomics while
 * PE 0 keeps storing into a block allocated right after the counter. From shmem_malloc the two
 * small blocks may share a cache line (false sharing: every store steals the line from the
 * atomics); with SHMEM_MALLOC_ATOMICS_REMOTE an implementation can give the counter lines of
 * its own. Other PEs only wait. RESULT hint_amo_neighbour_busy <0: shmem_malloc, 1: hinted>
 * <ns per atomic>. */
#include "bench.h"

#ifdef SHMEM_MALLOC_ATOMICS_REMOTE
#define HINTED_MALLOC(n) shmem_malloc_with_hints((n), SHMEM_MALLOC_ATOMICS_REMOTE)
#else /* a library before OpenSHMEM 1.5 (Debian 12's OSHMEM) has no hints: plain allocation */
#define HINTED_MALLOC(n) shmem_malloc(n)
#endif

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    static int stop;
    const long n = 200000;
    for (int hinted = 0; hinted <= 1; hinted++) {
        for (int rep = 0; rep < 3; rep++) {
            long *ctr = hinted ? HINTED_MALLOC(sizeof(long)) : shmem_malloc(sizeof(long));
            volatile long *nb = shmem_malloc(sizeof(long));
            *ctr = 0;
            stop = 0;
            shmem_barrier_all();
            double dt = 0;
            if (me == 0) {
                while (!shmem_int_test(&stop, SHMEM_CMP_NE, 0))
                    for (int i = 0; i < 4096; i++) *nb = *nb + 1;
            } else if (me == 1) {
                double t0 = now_us();
                for (long i = 0; i < n; i++) shmem_long_atomic_add(ctr, 1, 0);
                dt = now_us() - t0;
                shmem_int_atomic_set(&stop, 1, 0);
            }
            shmem_barrier_all();
            if (me == 0 && *ctr != n) {
                fprintf(stderr, "hints: counter %ld, expected %ld\n", *ctr, n);
                shmem_global_exit(1);
            }
            /* PE 1 measured; PE 0 reports. */
            static double t;
            if (me == 1) shmem_double_p(&t, dt, 0);
            shmem_barrier_all();
            if (rep > 0) result("hint_amo_neighbour_busy", hinted, t * 1000.0 / n, "ns");
            shmem_free((void *)nb);
            shmem_free(ctr);
        }
    }
    shmem_finalize();
    return 0;
}
