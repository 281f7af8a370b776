/* Stream-ordered operations against what they are made of, in one run, 2 PEs on one host with
 * a GPU space (SHMEM_ENABLE_GPU_SPACE=1, memheap cuda, a real driver); with more PEs (an even
 * number) PE 2i and 2i+1 are pairs and the barriers span all:
 * - "stream_put": PE 0 queues K shmemx_putmem_on_stream from its GPU-space buffer to PE 1's
 *   on a stream of its own, then synchronizes it; "raw_copy": the same K copies as
 *   cuMemcpyDtoDAsync to the address shmem_ptr gives for PE 1's buffer. Per put, µs.
 * - "host_put": blocking shmem_putmem of the same device buffer + shmem_quiet, per call.
 * - "stream_pingpong": both PEs of a pair queue K rounds of put-with-signal (8 B) to the other and a
 *   wait for the other's signal on their streams, then synchronize: per round trip, µs.
 * - "stream_barrier" / "host_barrier": K shmemx_barrier_all_on_stream + one synchronize, and K
 *   shmem_barrier_all, per barrier.
 * Each figure is the median of NREP blocks, raw and stream blocks alternating
 * ("RESULT name size median us min max"). rshmem only (the routines are extensions). */
#include "bench.h"
#include <dlfcn.h>
#include <shmemx.h>
#include <stdint.h>

#define NREP 7
#define BIG ((size_t)1 << 20)

typedef int CUresult;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;
static CUresult (*drv_stream_create)(CUstream *, unsigned);
static CUresult (*drv_stream_sync)(CUstream);
static CUresult (*drv_copy)(CUdeviceptr, CUdeviceptr, size_t, CUstream);

static void load_driver(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "on_stream: no CUDA driver\n");
        exit(2);
    }
    *(void **)&drv_stream_create = dlsym(lib, "cuStreamCreate");
    *(void **)&drv_stream_sync = dlsym(lib, "cuStreamSynchronize");
    *(void **)&drv_copy = dlsym(lib, "cuMemcpyDtoDAsync_v2");
    if (!drv_stream_create || !drv_stream_sync || !drv_copy) {
        fprintf(stderr, "on_stream: driver symbols missing\n");
        exit(2);
    }
}

int main(void) {
    load_driver();
    shmem_init(); /* memheap cuda makes the device's primary context current on this thread */
    int me = shmem_my_pe(), other = me ^ 1;
    if (shmem_n_pes() % 2 || SHMEM_SPACE_GPU == SHMEM_SPACE_INVALID) {
        if (me == 0) fprintf(stderr, "on_stream: needs an even number of PEs and a GPU space (SHMEM_ENABLE_GPU_SPACE=1)\n");
        shmem_finalize();
        return 1;
    }
    CUstream s;
    if (drv_stream_create(&s, 1) != 0) {
        fprintf(stderr, "on_stream: cuStreamCreate failed\n");
        shmem_global_exit(2);
    }
    char *dst = shmem_space_malloc(SHMEM_SPACE_GPU, BIG);
    char *src = shmem_space_malloc(SHMEM_SPACE_GPU, BIG);
    uint64_t *sig = shmem_space_calloc(SHMEM_SPACE_GPU, 1, sizeof(uint64_t));
    char *peer = shmem_ptr(dst, other);
    if (!dst || !src || !sig || !peer) {
        fprintf(stderr, "on_stream: no GPU-space memory, or PE %d's is not mapped\n", other);
        shmem_global_exit(2);
    }
    long k = getenv("ON_STREAM_ITERS") ? atol(getenv("ON_STREAM_ITERS")) : 200;
    size_t sizes[] = {8, 65536, BIG};
    double vs[NREP], vr[NREP], vh[NREP];
    for (int z = 0; z < 3; z++) {
        size_t n = sizes[z];
        for (int rep = 0; rep < NREP; rep++) {
            shmem_barrier_all();
            if (me == 0) {
                double t0 = now_us();
                for (long i = 0; i < k; i++) drv_copy((CUdeviceptr)peer, (CUdeviceptr)src, n, s);
                drv_stream_sync(s);
                double t1 = now_us();
                for (long i = 0; i < k; i++) shmemx_putmem_on_stream(dst, src, n, other, s);
                drv_stream_sync(s);
                double t2 = now_us();
                for (long i = 0; i < k / 4 + 1; i++) {
                    shmem_putmem(dst, src, n, other);
                    shmem_quiet();
                }
                double t3 = now_us();
                vr[rep] = (t1 - t0) / k;
                vs[rep] = (t2 - t1) / k;
                vh[rep] = (t3 - t2) / (k / 4 + 1);
            }
        }
        result_blocks("raw_copy", n, vr, NREP, "us");
        result_blocks("stream_put", n, vs, NREP, "us");
        result_blocks("host_put", n, vh, NREP, "us");
    }
    /* Round trips on the streams: the signal counts up across blocks. */
    uint64_t round = 0;
    for (int rep = 0; rep < NREP; rep++) {
        shmem_barrier_all();
        double t0 = now_us();
        for (long i = 0; i < k; i++) {
            round++;
            if (me % 2 == 0) {
                shmemx_putmem_signal_on_stream(dst, src, 8, sig, round, SHMEM_SIGNAL_SET, other, s);
                shmemx_signal_wait_until_on_stream(sig, SHMEM_CMP_GE, round, s);
            } else {
                shmemx_signal_wait_until_on_stream(sig, SHMEM_CMP_GE, round, s);
                shmemx_putmem_signal_on_stream(dst, src, 8, sig, round, SHMEM_SIGNAL_SET, other, s);
            }
        }
        drv_stream_sync(s);
        vs[rep] = (now_us() - t0) / k;
    }
    result_blocks("stream_pingpong", 8, vs, NREP, "us");
    for (int rep = 0; rep < NREP; rep++) {
        shmem_barrier_all();
        double t0 = now_us();
        for (long i = 0; i < k; i++) shmemx_barrier_all_on_stream(s);
        drv_stream_sync(s);
        double t1 = now_us();
        for (long i = 0; i < k; i++) shmem_barrier_all();
        double t2 = now_us();
        vs[rep] = (t1 - t0) / k;
        vh[rep] = (t2 - t1) / k;
    }
    result_blocks("stream_barrier", 0, vs, NREP, "us");
    result_blocks("host_barrier", 0, vh, NREP, "us");
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
