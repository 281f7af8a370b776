/* Bandwidth of non-blocking put and get from PE 0 to PE 1: windows of 64 _nbi operations
 * completed by shmem_quiet, 1 B .. 4 MiB; and the 8-byte put message rate. */
#include "bench.h"

#define WINDOW 64

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    char *buf = shmem_malloc(MAX_MSG);
    char *local = malloc(MAX_MSG);
    memset(local, 1, MAX_MSG);
    memset(buf, 2, MAX_MSG);
    shmem_barrier_all();
    for (int op = 0; op < 2; op++) {
        for (size_t size = 1; size <= MAX_MSG; size *= 4) {
            long loops = iters_for(size, 2000) / 4 + 5;
            shmem_barrier_all();
            if (me == 0) {
                double t0 = 0;
                for (long l = 0; l < loops + 2; l++) {
                    if (l == 2) t0 = now_us();
                    for (int w = 0; w < WINDOW; w++) {
                        if (op == 0) shmem_putmem_nbi(buf, local, size, 1);
                        else shmem_getmem_nbi(local, buf, size, 1);
                    }
                    shmem_quiet();
                }
                double t = now_us() - t0;
                double mbps = (double)size * WINDOW * loops / t; /* bytes per us = MB/s */
                result(op == 0 ? "put_bandwidth" : "get_bandwidth", size, mbps, "MB/s");
            }
            shmem_barrier_all();
        }
    }
    /* message rate: 8-byte nbi puts */
    shmem_barrier_all();
    if (me == 0) {
        long loops = 2000;
        double t0 = 0;
        for (long l = 0; l < loops + 10; l++) {
            if (l == 10) t0 = now_us();
            for (int w = 0; w < WINDOW; w++) shmem_putmem_nbi(buf + 8 * w, local, 8, 1);
            shmem_quiet();
        }
        double t = now_us() - t0;
        result("put_rate", 8, WINDOW * loops / t, "Mops/s");
    }
    shmem_barrier_all();
    shmem_free(buf);
    free(local);
    shmem_finalize();
    return 0;
}
