/* The histogram kernel of the bale suite's kind, written for rshmem: every PE makes HIST_N
 * (default 200,000) atomic increments of counters picked at random in a table spread over all
 * PEs (HIST_T counters per PE, default 1,000), then every PE checks its own counters against
 * the counts it expects from replaying every PE's random stream. Prints the update rate of the
 * whole job and `histogram: PE <me> ok`. rshmem/examples/histogram.rs is the same kernel
 * through the Rust API. */
#include "bench.h"

/* xorshift64*: the same stream in the Rust port. */
static uint64_t next_rand(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long updates = getenv("HIST_N") ? atol(getenv("HIST_N")) : 200000;
    long per_pe = getenv("HIST_T") ? atol(getenv("HIST_T")) : 1000;
    int64_t *table = shmem_calloc(per_pe, sizeof *table);
    uint64_t total = (uint64_t)per_pe * n;
    shmem_barrier_all();
    double t0 = now_us();
    uint64_t s = 0x9E3779B97F4A7C15ULL * (me + 1);
    for (long i = 0; i < updates; i++) {
        uint64_t idx = next_rand(&s) % total;
        shmem_int64_atomic_inc(table + idx % per_pe, (int)(idx / per_pe));
    }
    shmem_barrier_all();
    double t = now_us() - t0;
    result("histogram_updates_per_s", n, updates * (double)n / t, "M");
    /* Replay every PE's stream and count what landed here. */
    int64_t *want = calloc(per_pe, sizeof *want);
    for (int pe = 0; pe < n; pe++) {
        uint64_t r = 0x9E3779B97F4A7C15ULL * (pe + 1);
        for (long i = 0; i < updates; i++) {
            uint64_t idx = next_rand(&r) % total;
            if ((int)(idx / per_pe) == me) want[idx % per_pe]++;
        }
    }
    for (long k = 0; k < per_pe; k++) {
        if (table[k] != want[k]) {
            fprintf(stderr, "histogram: PE %d counter %ld is %ld, want %ld\n", me, k, (long)table[k], (long)want[k]);
            shmem_global_exit(1);
        }
    }
    printf("histogram: PE %d ok\n", me);
    free(want);
    shmem_free(table);
    shmem_finalize();
    return 0;
}
