/* The figures of the network path between two PEs (PE 0 -> PE 1), for runs across hosts or with
 * every peer forced onto the network: 8-byte blocking put, put + quiet and get latency, 8-byte
 * AMO fetch-add, add (no fetch) and add + quiet latency, 8-byte put-with-signal latency (where
 * the library has it: OpenSHMEM 1.5), the 8-byte non-blocking put rate, and 1 MiB put and get bandwidth.
 * Each figure is the median of NREP timed blocks (printed with the block minimum and maximum as
 * "RESULT name size median unit min max"), so one descheduled block does not move it.
 * While PE 0 times a block, PE 1 waits in shmem_long_wait_until for PE 0's "done" increment,
 * inside the library (where both libraries drive their UCX worker) rather than in an MPI-based
 * barrier. (With Open MPI's OSHMEM across emulated hosts, while every host's mpirun bound its
 * rank to core 0, put + quiet to the waiting PE hung both ways; with --bind-to none both ways
 * complete.) */
#include "bench.h"

#define NREP 7
#define WINDOW 64
#define BIG ((size_t)1 << 20)

static long done; /* PE 1: blocks PE 0 has finished */
static long blocks;

/* Before a timed block: both PEs line up (after it: `block_end`, bench.h). */
static void block_start(void) { shmem_barrier_all(); }

static void report(const char *name, size_t size, double *v, const char *unit) {
    result_blocks(name, size, v, NREP, unit);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    char *buf = shmem_malloc(BIG * 2);
    long *word = shmem_malloc(sizeof(long));
    char *local = malloc(BIG);
    long iters = getenv("NETPATH_ITERS") ? atol(getenv("NETPATH_ITERS")) : 2000;
    memset(local, 1, BIG);
    memset(buf, 2, BIG * 2);
    *word = 0;
    double v[NREP];
    shmem_barrier_all();
    /* 0: put, 1: put + quiet, 2: get, 3: fetch-add, 4: add, 5: add + quiet, 6: put-with-signal
     * (latencies, us per call) */
#ifdef SHMEM_SIGNAL_ADD
    static uint64_t sig;
    const int nops = 7;
#else
    const int nops = 6;
#endif
    for (int op = 0; op < nops; op++) {
        for (int r = 0; r < NREP; r++) {
            block_start();
            if (me == 0) {
                long warm = iters / 10;
                double t0 = 0;
                for (long i = 0; i < iters + warm; i++) {
                    if (i == warm) t0 = now_us();
                    switch (op) {
                    case 0: shmem_putmem(buf, local, 8, 1); break;
                    case 1: shmem_putmem(buf, local, 8, 1); shmem_quiet(); break;
                    case 2: shmem_getmem(local, buf, 8, 1); break;
                    case 3: (void)shmem_long_atomic_fetch_add(word, 1, 1); break;
                    case 4: shmem_long_atomic_add(word, 1, 1); break;
                    case 5: shmem_long_atomic_add(word, 1, 1); shmem_quiet(); break;
#ifdef SHMEM_SIGNAL_ADD
                    default: shmem_putmem_signal(buf, local, 8, &sig, 1, SHMEM_SIGNAL_ADD, 1); break;
#endif
                    }
                }
                v[r] = (now_us() - t0) / iters;
            }
            block_end(&done, &blocks);
        }
        static const char *names[] = {"put_latency", "put_quiet_latency", "get_latency", "fadd_latency",
                                      "add_latency", "add_quiet_latency", "put_signal_latency"};
        report(names[op], 8, v, "us");
    }
    /* 8-byte put rate: windows of non-blocking puts, each completed by a quiet */
    for (int r = 0; r < NREP; r++) {
        block_start();
        if (me == 0) {
            long loops = iters / 4 + 1;
            double t0 = now_us();
            for (long l = 0; l < loops; l++) {
                for (int w = 0; w < WINDOW; w++) shmem_putmem_nbi(buf + 8 * w, local, 8, 1);
                shmem_quiet();
            }
            v[r] = WINDOW * loops / (now_us() - t0);
        }
        block_end(&done, &blocks);
    }
    report("put_rate", 8, v, "Mops/s");
    /* 1 MiB bandwidth, put then get: windows of 8 non-blocking transfers */
    for (int op = 0; op < 2; op++) {
        for (int r = 0; r < NREP; r++) {
            block_start();
            if (me == 0) {
                long loops = iters / 200 + 2;
                double t0 = now_us();
                for (long l = 0; l < loops; l++) {
                    for (int w = 0; w < 8; w++) {
                        if (op == 0) shmem_putmem_nbi(buf + (w & 1) * BIG, local, BIG, 1);
                        else shmem_getmem_nbi(local, buf + (w & 1) * BIG, BIG, 1);
                    }
                    shmem_quiet();
                }
                v[r] = (double)BIG * 8 * loops / (now_us() - t0);
            }
            block_end(&done, &blocks);
        }
        report(op == 0 ? "put_bandwidth" : "get_bandwidth", BIG, v, "MB/s");
    }
    /* Gets from a PE that computes (300 ms without calling the library): the average time of
     * 100 gets. A library whose target makes progress only inside its calls takes about
     * 300 ms / 100 here, the first get waiting for the computation to end. */
    shmem_barrier_all();
    if (me == 1) {
        double end = now_us() + 300e3;
        while (now_us() < end) { /* computing */ }
    } else if (me == 0) {
        double t0 = now_us();
        for (int i = 0; i < 100; i++) shmem_getmem(local, buf, 8, 1);
        double t = (now_us() - t0) / 100;
        printf("RESULT get_latency_busy_target 8 %.6g us\n", t);
    }
    shmem_barrier_all();
    shmem_free(word);
    shmem_free(buf);
    free(local);
    shmem_finalize();
    return 0;
}
