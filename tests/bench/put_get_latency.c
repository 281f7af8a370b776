/* Latency of blocking shmem_putmem and shmem_getmem from PE 0 to PE 1 (OSU style: average time
 * per call; a put returns at local completion, a get when the data has arrived), 1 B .. 4 MiB. */
#include "bench.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    char *buf = shmem_malloc(MAX_MSG);
    char *local = malloc(MAX_MSG);
    memset(local, 1, MAX_MSG);
    memset(buf, 2, MAX_MSG);
    shmem_barrier_all();
    for (int op = 0; op < 2; op++) {
        for (size_t size = 1; size <= MAX_MSG; size *= 2) {
            long iters = iters_for(size, 20000), warm = iters / 10;
            shmem_barrier_all();
            if (me == 0) {
                double t0 = 0;
                for (long i = 0; i < iters + warm; i++) {
                    if (i == warm) t0 = now_us();
                    if (op == 0) shmem_putmem(buf, local, size, 1);
                    else shmem_getmem(local, buf, size, 1);
                }
                double t = (now_us() - t0) / iters;
                if (op == 0) shmem_quiet();
                result(op == 0 ? "put_latency" : "get_latency", size, t, "us");
            }
            shmem_barrier_all();
        }
    }
    shmem_free(buf);
    free(local);
    shmem_finalize();
    return 0;
}
