/* CUDA kernels and rshmem on the same symmetric device memory (issue 10), built by
 * scripts/gpu-check.sh with nvcc where one is installed (CI has no CUDA toolkit).
 * Each PE makes device 0 current before shmem_init, as NVSHMEM programs do (memheap cuda then
 * uses that device; gpu-check.sh looks for "current at shmem_init" in SHMEM_INFO's output), then,
 * with the CUDA runtime's legacy default stream:
 *   - fills a GPU-space buffer with a kernel and, with no synchronisation of its own, puts it
 *     into the next PE's GPU space: memheap cuda's copies are ordered after work queued on the
 *     legacy default stream, as cudaMemcpy is;
 *   - after a barrier, checks what the previous PE put with a kernel;
 *   - gets the next PE's kernel-written buffer into device memory and checks it with a kernel;
 *   - sums a kernel-written vector over all PEs (shmem_int_sum_reduce on GPU buffers) and
 *     checks the result with a kernel;
 *   - adds into the next PE's device counter (shmem_int_atomic_add) and checks, after a
 *     barrier, that a kernel sees npes contributions;
 *   - where shmem_ptr gives the next PE's buffer (CUDA IPC on one host), a kernel stores into it
 *     directly and the next PE's kernel checks;
 *   - on a non-blocking stream of the program's own, with no host synchronisation in between:
 *     a kernel fills, shmemx_putmem_signal_on_stream sends it, the stream waits for the
 *     previous PE's signal (shmemx_signal_wait_until_on_stream) and a kernel checks what came,
 *     then shmemx_barrier_all_on_stream.
 * Prints "gpu_kernel: PE n ok" on success; any mismatch aborts the job. */
#include <cuda_runtime.h>
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N (3 << 18) /* 3 Mi ints: 12 MiB, more than the staging chunk */

#define CUDA(call)                                                                            \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "gpu_kernel: PE %d: %s: %s\n", shmem_my_pe(), #call,              \
                    cudaGetErrorString(e_));                                                  \
            shmem_global_exit(1);                                                             \
        }                                                                                     \
    } while (0)

__global__ void fill(int *p, int n, int base) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = base + i;
}

/* Counts the elements that are not base + i * scale. */
__global__ void count_bad(const int *p, int n, int base, int scale, int *bad) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        if (p[i] != base + i * scale) atomicAdd(bad, 1);
}

static int *bad;

static void expect(const char *what, const int *p, int n, int base, int scale) {
    CUDA(cudaMemset(bad, 0, sizeof(int)));
    count_bad<<<256, 256>>>(p, n, base, scale, bad);
    int h = -1;
    CUDA(cudaMemcpy(&h, bad, sizeof(int), cudaMemcpyDeviceToHost));
    if (h != 0) {
        fprintf(stderr, "gpu_kernel: PE %d: %s: %d of %d elements wrong\n", shmem_my_pe(), what,
                h, n);
        shmem_global_exit(1);
    }
}

int main(void) {
    /* Before init: no PE number yet, so no shmem_global_exit either. */
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "gpu_kernel: no CUDA device\n");
        return 1;
    }
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    if (SHMEM_SPACE_GPU == SHMEM_SPACE_INVALID) {
        fprintf(stderr, "gpu_kernel: PE %d: no GPU space (SHMEM_ENABLE_GPU_SPACE=1?)\n", me);
        shmem_global_exit(1);
    }
    size_t bytes = N * sizeof(int);
    int *src = (int *)shmem_space_malloc(SHMEM_SPACE_GPU, bytes);
    int *dst = (int *)shmem_space_malloc(SHMEM_SPACE_GPU, bytes);
    int *got = (int *)shmem_space_malloc(SHMEM_SPACE_GPU, bytes);
    int *sum = (int *)shmem_space_malloc(SHMEM_SPACE_GPU, bytes);
    int *counter = (int *)shmem_space_malloc(SHMEM_SPACE_GPU, sizeof(int));
    if (!src || !dst || !got || !sum || !counter) {
        fprintf(stderr, "gpu_kernel: PE %d: shmem_space_malloc failed\n", me);
        shmem_global_exit(1);
    }
    CUDA(cudaMalloc(&bad, sizeof(int)));
    CUDA(cudaMemset(counter, 0, sizeof(int)));
    CUDA(cudaDeviceSynchronize());
    shmem_barrier_all();

    /* A kernel writes, rshmem moves it at once: the put must see the kernel's bytes. */
    fill<<<256, 256>>>(src, N, me * 10007);
    shmem_putmem(dst, src, bytes, next);
    shmem_barrier_all();
    expect("put of a kernel's output", dst, N, prev * 10007, 1);

    shmem_getmem(got, src, bytes, next);
    expect("get of the next PE's kernel output", got, N, next * 10007, 1);

    /* sum over PEs of (p * 10007 + i) = 10007 * npes(npes-1)/2 + npes * i */
    shmem_int_sum_reduce(SHMEM_TEAM_WORLD, sum, src, N);
    expect("sum reduction", sum, N, 10007 * npes * (npes - 1) / 2, npes);

    shmem_int_atomic_add(counter, me + 1, next);
    shmem_barrier_all();
    expect("atomic adds", counter, 1, prev + 1, 0);

    /* A kernel's stores through shmem_ptr: the device address of the next PE's copy. */
    int *peer = (int *)shmem_ptr(dst, next);
    if (peer) {
        fill<<<256, 256>>>(peer, N, me * 31 + 5);
        CUDA(cudaDeviceSynchronize());
    }
    shmem_barrier_all();
    if (shmem_ptr(dst, prev)) expect("a kernel's stores through shmem_ptr", dst, N, prev * 31 + 5, 1);

    /* Kernel, put with signal, wait and kernel on one stream, the host never waiting between. */
    cudaStream_t st;
    CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    uint64_t *sig = (uint64_t *)shmem_space_calloc(SHMEM_SPACE_GPU, 1, sizeof(uint64_t));
    if (!sig) {
        fprintf(stderr, "gpu_kernel: PE %d: shmem_space_calloc failed\n", me);
        shmem_global_exit(1);
    }
    shmem_barrier_all();
    fill<<<256, 256, 0, st>>>(src, N, me * 7 + 3);
    shmemx_putmem_signal_on_stream(dst, src, bytes, sig, 1, SHMEM_SIGNAL_SET, next, st);
    shmemx_signal_wait_until_on_stream(sig, SHMEM_CMP_EQ, 1, st);
    CUDA(cudaMemsetAsync(bad, 0, sizeof(int), st));
    count_bad<<<256, 256, 0, st>>>(dst, N, prev * 7 + 3, 1, bad);
    int h = -1;
    CUDA(cudaMemcpyAsync(&h, bad, sizeof(int), cudaMemcpyDeviceToHost, st));
    shmemx_barrier_all_on_stream(st);
    CUDA(cudaStreamSynchronize(st));
    if (h != 0) {
        fprintf(stderr, "gpu_kernel: PE %d: on a stream: %d of %d elements wrong\n", me, h, N);
        shmem_global_exit(1);
    }
    CUDA(cudaStreamDestroy(st));

    shmem_barrier_all();
    shmem_space_free(SHMEM_SPACE_GPU, sig);
    CUDA(cudaFree(bad));
    shmem_space_free(SHMEM_SPACE_GPU, counter);
    shmem_space_free(SHMEM_SPACE_GPU, sum);
    shmem_space_free(SHMEM_SPACE_GPU, got);
    shmem_space_free(SHMEM_SPACE_GPU, dst);
    shmem_space_free(SHMEM_SPACE_GPU, src);
    printf("gpu_kernel: PE %d ok\n", me);
    shmem_finalize();
    return 0;
}
