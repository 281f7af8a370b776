/* How fast can memheap cuda's `copy` be? Per-call time of the CUDA driver's ways of copying
 * 8 B, 4 KiB, 64 KiB and 1 MiB between pageable host, pinned host and device memory, each
 * waited for as memheap cuda must (the core relies on finished copies). Built and run by hand
 * on a GPU machine (docs/performance.md, "GPU check"):
 *   nvcc -O2 -o /tmp/copy_variants tests/gpu/copy_variants.cu -lcuda && /tmp/copy_variants
 * Prints "RESULT variant direction bytes median_us". */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(call)                                                                              \
    do {                                                                                      \
        CUresult r_ = (call);                                                                 \
        if (r_ != CUDA_SUCCESS) {                                                             \
            const char *s_;                                                                   \
            cuGetErrorString(r_, &s_);                                                        \
            fprintf(stderr, "%s: %s\n", #call, s_);                                           \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { REPS = 9 };
static CUstream blocking, nonblocking;

/* variant: 0 async on a blocking stream + stream sync (today), 1 async on a non-blocking
 * stream + sync, 2 cuMemcpy (synchronous), 3 cuMemcpyHtoD/DtoH/DtoD (synchronous),
 * 4 async on the blocking stream + cuStreamQuery spin */
static void one(int variant, CUdeviceptr dst, CUdeviceptr src, size_t n, int dir) {
    switch (variant) {
    case 0:
        CK(cuMemcpyAsync(dst, src, n, blocking));
        CK(cuStreamSynchronize(blocking));
        break;
    case 1:
        CK(cuMemcpyAsync(dst, src, n, nonblocking));
        CK(cuStreamSynchronize(nonblocking));
        break;
    case 2:
        CK(cuMemcpy(dst, src, n));
        break;
    case 3:
        if (dir == 0) CK(cuMemcpyHtoD(dst, (const void *)src, n));
        else if (dir == 1) CK(cuMemcpyDtoH((void *)dst, src, n));
        else CK(cuMemcpyDtoD(dst, src, n));
        break;
    case 4: {
        CK(cuMemcpyAsync(dst, src, n, blocking));
        CUresult r;
        while ((r = cuStreamQuery(blocking)) == CUDA_ERROR_NOT_READY) {
        }
        CK(r);
        break;
    }
    }
}

int main(void) {
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    unsigned flags;
    int active;
    CK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
    printf("primary context flags 0x%x\n", flags);
    CK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    CK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
    size_t big = 1 << 20;
    CUdeviceptr d1, d2;
    CK(cuMemAlloc(&d1, big));
    CK(cuMemAlloc(&d2, big));
    void *pinned;
    CK(cuMemHostAlloc(&pinned, big, CU_MEMHOSTALLOC_PORTABLE));
    char *pageable = (char *)malloc(big);
    memset(pageable, 1, big);
    memset(pinned, 1, big);
    const char *vname[] = {"async_blocking_stream", "async_nonblocking_stream", "cuMemcpy",
                           "cuMemcpyXtoY", "async_query_spin"};
    const char *dname[] = {"pageable_to_dev", "dev_to_pageable", "dev_to_dev", "pinned_to_dev",
                           "dev_to_pinned"};
    size_t sizes[] = {8, 4096, 65536, big};
    for (int s = 0; s < 4; s++) {
        size_t n = sizes[s];
        int iters = n >= big ? 50 : 400;
        for (int d = 0; d < 5; d++) {
            for (int v = 0; v < 5; v++) {
                CUdeviceptr dst, src;
                int dir = d == 0 || d == 3 ? 0 : d == 2 ? 2 : 1;
                if (d == 0) dst = d1, src = (CUdeviceptr)pageable;
                else if (d == 1) dst = (CUdeviceptr)pageable, src = d1;
                else if (d == 2) dst = d2, src = d1;
                else if (d == 3) dst = d1, src = (CUdeviceptr)pinned;
                else dst = (CUdeviceptr)pinned, src = d1;
                double t[REPS];
                for (int r = 0; r < REPS; r++) {
                    double t0 = now_us();
                    for (int i = 0; i < iters; i++) one(v, dst, src, n, dir);
                    t[r] = (now_us() - t0) / iters;
                }
                qsort(t, REPS, sizeof t[0], cmp);
                printf("RESULT %s %s %zu %.2f\n", vname[v], dname[d], n, t[REPS / 2]);
            }
        }
    }
    return 0;
}
