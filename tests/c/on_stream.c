/* Stream-ordered operations (shmemx_*_on_stream) on a stream of the program's own: puts with
 * a signal around the ring into GPU-space memory, waits for the signal on the stream, gets,
 * a signal added on the stream, waits with each comparison, a put into host symmetric memory,
 * and stream barriers between rounds. Nothing is checked until the program has synchronized
 * its stream: the operations run in the stream's order, not the host's. Every value is read
 * back through shmem_getmem (device memory) or plain loads (host memory) and compared.
 *
 * The driver is loaded with dlopen, so the same program runs against the real one
 * (scripts/gpu-check.sh) and against the test driver fakecuda (tests/plugins/fake_libcuda.c),
 * whose streams run their operations only when synchronized. Run with SHMEM_ENABLE_GPU_SPACE=1
 * and memheap cuda selected. */
#include "check.h"
#include "cuda_driver.h"
#include <shmemx.h>
#include <stdint.h>
#include <string.h>

typedef void *CUcontext;
typedef struct CUstream_st *CUstream;

static CUresult (*drv_init)(unsigned);
static CUresult (*drv_device_get)(CUdevice *, int);
static CUresult (*drv_retain)(CUcontext *, CUdevice);
static CUresult (*drv_set_current)(CUcontext);
static CUresult (*drv_stream_create)(CUstream *, unsigned);
static CUresult (*drv_stream_sync)(CUstream);
static CUresult (*drv_stream_destroy)(CUstream);

static void load_driver(void) {
    void *lib = cuda_driver("on_stream");
    *(void **)&drv_init = cuda_sym(lib, "on_stream", "cuInit");
    *(void **)&drv_device_get = cuda_sym(lib, "on_stream", "cuDeviceGet");
    *(void **)&drv_retain = cuda_sym(lib, "on_stream", "cuDevicePrimaryCtxRetain");
    *(void **)&drv_set_current = cuda_sym(lib, "on_stream", "cuCtxSetCurrent");
    *(void **)&drv_stream_create = cuda_sym(lib, "on_stream", "cuStreamCreate");
    *(void **)&drv_stream_sync = cuda_sym(lib, "on_stream", "cuStreamSynchronize");
    *(void **)&drv_stream_destroy = cuda_sym(lib, "on_stream", "cuStreamDestroy_v2");
}

#define N 1024
#define ROUNDS 20

static CUstream s;

static void sync_stream(void) { CHECK(drv_stream_sync(s) == 0); }

int main(void) {
    /* ON_STREAM_WITHOUT_GPU=1: no GPU memheap here; the first stream routine must end the job
     * with a message naming it and what is missing. */
    const char *none = getenv("ON_STREAM_WITHOUT_GPU");
    if (none && *none == '1') {
        shmem_init();
        shmemx_quiet_on_stream(NULL);
        fprintf(stderr, "on_stream: shmemx_quiet_on_stream returned without a GPU memheap\n");
        return 3;
    }
    /* The program's device: its primary context current before init (cudaSetDevice's way),
     * and a non-blocking stream of its own in it. */
    load_driver();
    CUdevice dev = 0;
    CUcontext primary = NULL;
    if (drv_init(0) != 0 || drv_device_get(&dev, 0) != 0 || drv_retain(&primary, dev) != 0 ||
        drv_set_current(primary) != 0 || drv_stream_create(&s, 1 /* CU_STREAM_NON_BLOCKING */) != 0) {
        fprintf(stderr, "on_stream: could not make a stream\n");
        return 2;
    }
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), next = (me + 1) % n, prev = (me + n - 1) % n;
    CHECK(SHMEM_SPACE_GPU != SHMEM_SPACE_INVALID);

    long *buf = shmem_space_calloc(SHMEM_SPACE_GPU, N, sizeof(long)); /* what prev puts here */
    long *src = shmem_space_malloc(SHMEM_SPACE_GPU, N * sizeof(long)); /* what this PE puts */
    long *got = shmem_space_malloc(SHMEM_SPACE_GPU, N * sizeof(long)); /* what this PE gets */
    uint64_t *sig = shmem_space_calloc(SHMEM_SPACE_GPU, 4, sizeof(uint64_t));
    long *hostbuf = shmem_calloc(N, sizeof(long)); /* host symmetric memory */
    uint64_t *hostsig = shmem_calloc(1, sizeof(uint64_t));
    CHECK(buf && src && got && sig && hostbuf && hostsig);
    static long local[N], back[N];

    for (uint64_t r = 1; r <= ROUNDS; r++) {
        for (int i = 0; i < N; i++) local[i] = (long)r * 1000000 + me * 10000 + i;
        shmem_putmem(src, local, sizeof local, me); /* host -> this PE's device memory */
        /* The data to the next PE, then the signal; this PE's stream waits for its own. */
        shmemx_putmem_signal_on_stream(buf, src, sizeof local, &sig[0], r, SHMEM_SIGNAL_SET, next, s);
        shmemx_signal_wait_until_on_stream(&sig[0], SHMEM_CMP_GE, r, s);
        /* What arrived here, fetched back from the previous PE's source on the stream too. */
        shmemx_getmem_on_stream(got, src, sizeof local, prev, s);
        /* An addition on the stream, and waits on it by the other comparisons. */
        shmemx_signal_op_on_stream(&sig[1], 2, SHMEM_SIGNAL_ADD, next, s);
        shmemx_signal_wait_until_on_stream(&sig[1], SHMEM_CMP_EQ, 2 * r, s);
        shmemx_signal_wait_until_on_stream(&sig[1], SHMEM_CMP_GT, 2 * r - 1, s);
        shmemx_signal_wait_until_on_stream(&sig[1], SHMEM_CMP_NE, 0, s);
        /* Device -> the next PE's host memory, and a signal there. */
        shmemx_putmem_on_stream(hostbuf, src, sizeof local, next, s);
        shmemx_signal_op_on_stream(hostsig, r, SHMEM_SIGNAL_SET, next, s);
        shmemx_quiet_on_stream(s);
        shmemx_barrier_all_on_stream(s);
        sync_stream();

        shmem_getmem(back, buf, sizeof back, me);
        for (int i = 0; i < N; i++) CHECK(back[i] == (long)r * 1000000 + prev * 10000 + i);
        shmem_getmem(back, got, sizeof back, me);
        for (int i = 0; i < N; i++) CHECK(back[i] == (long)r * 1000000 + prev * 10000 + i);
        for (int i = 0; i < N; i++) CHECK(hostbuf[i] == (long)r * 1000000 + prev * 10000 + i);
        CHECK(*hostsig == r);
        /* Nobody writes into this PE's memory for the next round before every PE has read
         * this one's. */
        shmemx_barrier_all_on_stream(s);
        sync_stream();
    }

    /* The operations are ordered with the host's: a host put after a stream barrier the
     * stream has passed lands after everything queued before that barrier. */
    shmem_long_p(&buf[0], -1, next);
    shmem_barrier_all();
    CHECK(shmem_long_g(&buf[0], me) == -1);

    /* The typed forms (NVSHMEM's nvshmemx_TYPENAME_*_on_stream): element counts. */
    for (int i = 0; i < N; i++) local[i] = 7000 + me * 100 + i;
    shmem_putmem(src, local, sizeof local, me);
    shmem_barrier_all();
    shmemx_long_put_on_stream(buf + 1, src, N - 1, next, s);
    shmemx_barrier_all_on_stream(s);
    shmemx_long_get_on_stream(got, buf, N, me, s);
    /* Two ints (one long: the source's third) over the first long put, after it on the
     * sender's stream; the get above may have read either, so it is checked from [2]. */
    shmemx_int_put_signal_on_stream((int *)(buf + 1), (const int *)(src + 2), 2, &sig[3], 5, SHMEM_SIGNAL_SET, next, s);
    shmemx_signal_wait_until_on_stream(&sig[3], SHMEM_CMP_EQ, 5, s);
    sync_stream();
    shmem_getmem(back, got, sizeof back, me);
    for (int i = 2; i < N; i++) CHECK(back[i] == 7000 + prev * 100 + i - 1);
    shmem_getmem(back, buf, sizeof back, me);
    CHECK(back[1] == 7000 + prev * 100 + 2);
    shmem_long_p(&buf[0], -1, me);
    shmem_barrier_all();

    /* An empty put and a zero-length put with a signal are no-ops but for the signal. */
    shmemx_putmem_on_stream(buf, src, 0, next, s);
    shmemx_putmem_signal_on_stream(buf, src, 0, &sig[2], 7, SHMEM_SIGNAL_SET, next, s);
    shmemx_signal_wait_until_on_stream(&sig[2], SHMEM_CMP_EQ, 7, s);
    sync_stream();
    CHECK(shmem_long_g(&buf[0], me) == -1);
    uint64_t seven = 0;
    shmem_getmem(&seven, &sig[2], sizeof seven, me);
    CHECK(seven == 7);
    shmem_barrier_all();

    shmem_free(hostsig);
    shmem_free(hostbuf);
    shmem_space_free(SHMEM_SPACE_GPU, sig);
    shmem_space_free(SHMEM_SPACE_GPU, got);
    shmem_space_free(SHMEM_SPACE_GPU, src);
    shmem_space_free(SHMEM_SPACE_GPU, buf);
    REPORT_OK("on_stream");
    shmem_finalize();
    return drv_stream_destroy(s) == 0 ? 0 : 3;
}
