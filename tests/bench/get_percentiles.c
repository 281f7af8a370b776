/* The distribution of single 8-byte gets (or fetch-adds with OP=1) from PE 0 to PE 1, each
 * timed on its own: ITERS of them (default 50000) after 2000 untimed ones, while PE 1 waits in
 * shmem_long_wait_until. Prints the mean, the 10th to 99.9th percentiles and the share of the
 * total time spent in the slowest 1 %, as RESULT lines (µs; the share in %). A library whose
 * median equals another's can still lose on the mean through its tail, which this shows
 * (docs/performance.md, "The progress thread stands by"). Across two emulated hosts:
 *   target/release/oshcc -O2 -Itests/bench -o /tmp/gp tests/bench/get_percentiles.c
 *   UCX_TLS=tcp,self bash scripts/hosts.sh run 2 1 /tmp/gp */
#include "bench.h"

static long done, blocks;

int main(void) {
    shmem_init();
    long *word = shmem_malloc(sizeof(long));
    long local = 0;
    long iters = getenv("ITERS") ? atol(getenv("ITERS")) : 50000;
    int op = getenv("OP") ? atoi(getenv("OP")) : 0;
    const char *name = op ? "fadd" : "get";
    *word = 0;
    shmem_barrier_all();
    if (shmem_my_pe() == 0) {
        double *t = malloc(sizeof(double) * (size_t)iters);
        if (!t) shmem_global_exit(1);
        for (long i = 0; i < 2000; i++) shmem_getmem(&local, word, sizeof local, 1);
        double start = now_us();
        for (long i = 0; i < iters; i++) {
            double a = now_us();
            if (op == 0)
                shmem_getmem(&local, word, sizeof local, 1);
            else
                (void)shmem_long_atomic_fetch_add(word, 1, 1);
            t[i] = now_us() - a;
        }
        double mean = (now_us() - start) / iters;
        qsort(t, (size_t)iters, sizeof(double), cmp_double);
        double total = 0, tail = 0;
        for (long i = 0; i < iters; i++) {
            total += t[i];
            if (i >= iters * 99 / 100) tail += t[i];
        }
        char label[32];
        snprintf(label, sizeof label, "%s_mean", name);
        result(label, 8, mean, "us");
        const long per_mille[] = {100, 500, 900, 990, 999};
        const char *tag[] = {"p10", "p50", "p90", "p99", "p99.9"};
        for (int k = 0; k < 5; k++) {
            snprintf(label, sizeof label, "%s_%s", name, tag[k]);
            result(label, 8, t[iters * per_mille[k] / 1000], "us");
        }
        snprintf(label, sizeof label, "%s_slowest_1pct_share", name);
        result(label, 8, 100 * tail / total, "%");
        free(t);
    }
    block_end(&done, &blocks); /* PE 1 serves the operations until PE 0 is done */
    shmem_barrier_all();
    shmem_free(word);
    shmem_finalize();
    return 0;
}
