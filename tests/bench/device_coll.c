/* Collectives on buffers in a GPU space against the same collectives on host buffers
 * (shmem_malloc), in one run: float sum reduction, broadcast and fcollect on SHMEM_TEAM_WORLD,
 * 8 B to 1 MiB of data per PE. A collective on device buffers runs on the space's host shadow
 * (docs/architecture.md): its sources are copied from the device before and its destinations
 * to the device after, so the difference between the two figures is the cost of those copies.
 * The broadcast's root is the last PE, so that PE 0, which times, receives (a root may return
 * before its data arrives). Each figure is PE 0's time per call in microseconds, the median of
 * NREP timed blocks with a barrier before each ("RESULT name size median us min max"). Run
 * with a GPU space (SHMEM_ENABLE_GPU_SPACE=1); rshmem only (memory spaces are not in
 * OpenSHMEM 1.6). Where PEs share a GPU, compare with and without MPS (docs/performance.md). */
#include "bench.h"

#define NREP 7
#define BIG ((size_t)1 << 20)

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (SHMEM_SPACE_GPU == SHMEM_SPACE_INVALID) {
        if (me == 0) fprintf(stderr, "device_coll: needs a GPU space (SHMEM_ENABLE_GPU_SPACE=1)\n");
        shmem_finalize();
        return 1;
    }
    /* Sources of BIG bytes; destinations of BIG bytes per PE (fcollect gathers every PE's). */
    char *host_src = shmem_malloc(BIG), *host_dst = shmem_malloc(BIG * n);
    char *dev_src = shmem_space_malloc(SHMEM_SPACE_GPU, BIG);
    char *dev_dst = shmem_space_malloc(SHMEM_SPACE_GPU, BIG * n);
    if (!host_src || !host_dst || !dev_src || !dev_dst) {
        fprintf(stderr, "device_coll: out of memory (SHMEM_SYMMETRIC_SIZE and SHMEM_GPU_SYMMETRIC_SIZE "
                        "must hold %zu bytes)\n", BIG * (n + 1));
        shmem_global_exit(1);
    }
    memset(host_src, 0, BIG);
    shmem_putmem(dev_src, host_src, BIG, me); /* defined values on the device too */
    long base = getenv("DEVICE_COLL_ITERS") ? atol(getenv("DEVICE_COLL_ITERS")) : 200;
    size_t sizes[] = {8, 1024, 65536, BIG};
    const char *ops[] = {"reduce", "broadcast", "fcollect"};
    double v[NREP];
    for (int s = 0; s < 4; s++) {
        size_t bytes = sizes[s], floats = bytes / sizeof(float);
        long iters = bytes >= BIG ? base / 20 + 5 : bytes >= 65536 ? base / 4 + 5 : base;
        for (int op = 0; op < 3; op++) {
            for (int dev = 0; dev < 2; dev++) {
                char *src = dev ? dev_src : host_src, *dst = dev ? dev_dst : host_dst;
                for (int r = 0; r < NREP; r++) {
                    shmem_barrier_all();
                    double t = now_us();
                    for (long i = 0; i < iters; i++) {
                        if (op == 0)
                            shmem_float_sum_reduce(SHMEM_TEAM_WORLD, (float *)dst, (float *)src, floats);
                        else if (op == 1)
                            shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, bytes, n - 1);
                        else
                            shmem_fcollectmem(SHMEM_TEAM_WORLD, dst, src, bytes);
                    }
                    v[r] = (now_us() - t) / iters;
                }
                char name[32];
                snprintf(name, sizeof name, "%s_%s", ops[op], dev ? "gpu" : "host");
                result_blocks(name, bytes, v, NREP, "us");
            }
        }
    }
    shmem_barrier_all();
    shmem_space_free(SHMEM_SPACE_GPU, dev_dst);
    shmem_space_free(SHMEM_SPACE_GPU, dev_src);
    shmem_free(host_dst);
    shmem_free(host_src);
    shmem_finalize();
    return 0;
}
