/* RMA from PE 0 to PE 1's memory in a GPU space against the same RMA to PE 1's host memory
 * (shmem_malloc), in one run: blocking shmem_putmem + shmem_quiet and shmem_getmem of 8 B,
 * 64 KiB and 1 MiB from a host buffer, average time per call in microseconds, each figure the
 * median of NREP timed blocks ("RESULT name size median us min max"). Run with a GPU space
 * (SHMEM_ENABLE_GPU_SPACE=1); rshmem only (memory spaces are not in OpenSHMEM 1.6). Where PE 1's
 * device memory is not mapped and the spml moves no device memory, the GPU figures are
 * transfers through PE 1's CPU, and the ratio to the host figures is their cost.
 * The "_d2d" figures move the same bytes between PE 0's own GPU-space buffer and PE 1's
 * (device to device). PE 1 waits in shmem_long_wait_until between blocks, inside the library. */
#include "bench.h"

#define NREP 7
#define BIG ((size_t)1 << 20)

static long done;
static long blocks;


int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    if (shmem_n_pes() < 2 || SHMEM_SPACE_GPU == SHMEM_SPACE_INVALID) {
        if (me == 0) fprintf(stderr, "device_rma: needs 2 PEs and a GPU space (SHMEM_ENABLE_GPU_SPACE=1)\n");
        shmem_finalize();
        return 1;
    }
    char *host = shmem_malloc(BIG);
    char *dev = shmem_space_malloc(SHMEM_SPACE_GPU, BIG);
    char *local = malloc(BIG);
    char *mine = shmem_space_malloc(SHMEM_SPACE_GPU, BIG); /* PE 0's device-side source */
    if (!host || !dev || !local || !mine) {
        fprintf(stderr, "device_rma: out of memory\n");
        shmem_global_exit(1);
    }
    memset(local, 1, BIG);
    long base = getenv("DEVICE_RMA_ITERS") ? atol(getenv("DEVICE_RMA_ITERS")) : 400;
    size_t sizes[] = {8, 65536, BIG};
    double v[NREP];
    for (int s = 0; s < 3; s++) {
        size_t n = sizes[s];
        long iters = n >= BIG ? base / 20 + 5 : n >= 65536 ? base / 4 + 5 : base;
        for (int where = 0; where < 3; where++) {
            char *dest = where ? dev : host;
            char *buf = where == 2 ? mine : local;
            for (int get = 0; get < 2; get++) {
                for (int r = 0; r < NREP; r++) {
                    shmem_barrier_all();
                    if (me == 0) {
                        double t = now_us();
                        for (long i = 0; i < iters; i++) {
                            if (get) {
                                shmem_getmem(buf, dest, n, 1);
                            } else {
                                shmem_putmem(dest, buf, n, 1);
                                shmem_quiet();
                            }
                        }
                        v[r] = (now_us() - t) / iters;
                    }
                    block_end(&done, &blocks);
                }
                char name[32];
                snprintf(name, sizeof name, "%s_%s", get ? "get" : "put_quiet",
                         where == 2 ? "gpu_d2d" : where ? "gpu" : "host");
                result_blocks(name, n, v, NREP, "us");
            }
        }
    }
    shmem_barrier_all();
    shmem_space_free(SHMEM_SPACE_GPU, mine);
    shmem_space_free(SHMEM_SPACE_GPU, dev);
    shmem_free(host);
    free(local);
    shmem_finalize();
    return 0;
}
