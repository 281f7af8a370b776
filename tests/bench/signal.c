/* Put-with-signal latency (OpenSHMEM >= 1.5): PE 0 sends 8 bytes with a signal to PE 1, which
 * waits for the signal and answers the same way; half the round trip is reported. Libraries
 * without signals (Open MPI 4.1 implements 1.4) build it and report nothing. */
#include "bench.h"
#include <stdint.h>

int main(void) {
    shmem_init();
#if SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION >= 105
    long *buf = shmem_calloc(1, sizeof(long));
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    long v = 1;
    int me = shmem_my_pe();
    long iters = 20000;
    shmem_barrier_all();
    double t0 = 0;
    if (me < 2 && shmem_n_pes() >= 2) {
        for (long i = 1; i <= iters + 100; i++) {
            if (i == 101) t0 = now_us();
            if (me == 0) {
                shmem_long_put_signal(buf, &v, 1, sig, (uint64_t)i, SHMEM_SIGNAL_SET, 1);
                shmem_signal_wait_until(sig, SHMEM_CMP_EQ, (uint64_t)i);
            } else {
                shmem_signal_wait_until(sig, SHMEM_CMP_EQ, (uint64_t)i);
                shmem_long_put_signal(buf, &v, 1, sig, (uint64_t)i, SHMEM_SIGNAL_SET, 0);
            }
        }
        result("put_signal_latency", 8, (now_us() - t0) / iters / 2, "us");
    }
    shmem_barrier_all();
#endif
    shmem_finalize();
    return 0;
}
