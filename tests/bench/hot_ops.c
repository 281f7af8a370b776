/* The cheapest operations back to back, to compare two builds of rshmem (a check added to the
 * hot path shows here first): 8-byte shmem_putmem, shmem_getmem, shmem_long_p and
 * shmem_long_atomic_fetch_add from PE 0 to PE 1, HOT_N calls each (default 2,000,000), and
 * shmem_barrier_all on every PE (HOT_N / 20 calls), the second of two rounds reported, in
 * nanoseconds per call. rshmem/examples/hot_ops.rs is the same through the Rust API. */
#include "bench.h"

static long sym[8];

int main(void) {
    shmem_init();
    long local = 42, n = getenv("HOT_N") ? atol(getenv("HOT_N")) : 2000000;
    shmem_barrier_all();
    double ns[4] = {0}, barrier_ns = 0;
    for (int round = 0; round < 2; round++) {
        if (shmem_my_pe() == 0 && n > 0) {
            double t0 = now_us();
            for (long i = 0; i < n; i++) shmem_putmem(sym, &local, 8, 1);
            double t1 = now_us();
            for (long i = 0; i < n; i++) shmem_getmem(&local, sym, 8, 1);
            double t2 = now_us();
            for (long i = 0; i < n; i++) shmem_long_p(sym + 1, i, 1);
            double t3 = now_us();
            for (long i = 0; i < n; i++) local += shmem_long_atomic_fetch_add(sym + 2, 1, 1);
            double t4 = now_us();
            double t[4] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3};
            for (int k = 0; k < 4; k++) ns[k] = t[k] * 1e3 / n;
        }
        shmem_barrier_all();
        long nb = n / 20 > 0 ? n / 20 : 1;
        double t5 = now_us();
        for (long i = 0; i < nb; i++) shmem_barrier_all();
        barrier_ns = (now_us() - t5) * 1e3 / nb;
    }
    if (n > 0) {
        result("hot_put", 8, ns[0], "ns");
        result("hot_get", 8, ns[1], "ns");
        result("hot_p", 8, ns[2], "ns");
        result("hot_fetch_add", 8, ns[3], "ns");
        result("hot_barrier_all", 8, barrier_ns, "ns");
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
