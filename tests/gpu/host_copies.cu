// Host <-> device copies of 64 KiB to 8 MiB through the CUDA driver API, three ways: from or to
// pageable memory (malloc) directly, from or to page-locked memory (cuMemHostAlloc) directly,
// and pageable memory staged through two page-locked chunks of 64 KiB, 256 KiB or 1 MiB (the
// CPU's memcpy of one chunk overlapping the DMA of the other). It asks whether rshmem should
// stage the copies between a GPU space and its host shadow (docs/performance.md, "Collectives
// on device memory"). Build and run on a GPU machine: nvcc -O2 -o /tmp/host_copies
// tests/gpu/host_copies.cu -lcuda && /tmp/host_copies (two rounds; microseconds per copy).
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
#define CK(x) do { CUresult r = (x); if (r) { printf("err %d at %s\n", r, #x); exit(1); } } while (0)
static CUstream st;
static char *pin[2];
static void staged_h2d(CUdeviceptr d, const char *h, size_t n, size_t ch) {
    size_t k = 0;
    for (size_t off = 0; off < n; off += ch, k++) {
        size_t c = n - off < ch ? n - off : ch;
        memcpy(pin[k % 2], h + off, c);
        CK(cuStreamSynchronize(st));
        CK(cuMemcpyHtoDAsync(d + off, pin[k % 2], c, st));
    }
    CK(cuStreamSynchronize(st));
}
static void staged_d2h(char *h, CUdeviceptr d, size_t n, size_t ch) {
    size_t k = 0, prev = 0, prevc = 0;
    for (size_t off = 0; off < n; off += ch, k++) {
        size_t c = n - off < ch ? n - off : ch;
        CK(cuStreamSynchronize(st));
        CK(cuMemcpyDtoHAsync(pin[k % 2], d + off, c, st));
        if (k) memcpy(h + prev, pin[(k - 1) % 2], prevc);
        prev = off; prevc = c;
    }
    CK(cuStreamSynchronize(st));
    memcpy(h + prev, pin[(k - 1) % 2], prevc);
}
int main() {
    CK(cuInit(0)); CUdevice dev; CK(cuDeviceGet(&dev, 0)); CUcontext ctx; CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&st, 0));
    size_t big = 8 << 20; CUdeviceptr d; CK(cuMemAlloc(&d, big));
    char *h = (char *)malloc(big); memset(h, 1, big);
    char *hp; CK(cuMemHostAlloc((void **)&hp, big, CU_MEMHOSTALLOC_PORTABLE));
    CK(cuMemHostAlloc((void **)&pin[0], 1 << 20, CU_MEMHOSTALLOC_PORTABLE));
    CK(cuMemHostAlloc((void **)&pin[1], 1 << 20, CU_MEMHOSTALLOC_PORTABLE));
    size_t sizes[] = {65536, 262144, 1 << 20, 8 << 20};
    for (int rep = 0; rep < 2; rep++)
    for (int s = 0; s < 4; s++) {
        size_t n = sizes[s]; int it = n >= (8 << 20) ? 20 : 200;
        double t;
#define TIME(name, stmt) t = now(); for (int i = 0; i < it; i++) { stmt; } printf("%-22s %8zu %8.2f us\n", name, n, (now() - t) / it);
        TIME("h2d pageable", { CK(cuMemcpyHtoDAsync(d, h, n, st)); CK(cuStreamSynchronize(st)); })
        TIME("h2d pinned", { CK(cuMemcpyHtoDAsync(d, hp, n, st)); CK(cuStreamSynchronize(st)); })
        TIME("h2d staged 64K", staged_h2d(d, h, n, 65536))
        TIME("h2d staged 256K", staged_h2d(d, h, n, 262144))
        TIME("h2d staged 1M", staged_h2d(d, h, n, 1 << 20))
        TIME("d2h pageable", { CK(cuMemcpyDtoHAsync(h, d, n, st)); CK(cuStreamSynchronize(st)); })
        TIME("d2h pinned", { CK(cuMemcpyDtoHAsync(hp, d, n, st)); CK(cuStreamSynchronize(st)); })
        TIME("d2h staged 64K", staged_d2h(h, d, n, 65536))
        TIME("d2h staged 256K", staged_d2h(h, d, n, 262144))
        TIME("d2h staged 1M", staged_d2h(h, d, n, 1 << 20))
    }
    return 0;
}
