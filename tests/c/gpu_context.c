/* A program that drives the GPU through the CUDA driver API with a context of its own
 * (cuCtxCreate) keeps that context current across rshmem's calls on device memory: init,
 * allocation, RMA in each direction, an atomic, a collective, free and finalize. memheap cuda works in
 * the device's primary context and gives the thread its own context back.
 *
 * The driver is loaded with dlopen, so the same program runs against the real one
 * (scripts/gpu-check.sh) and against the test driver fakecuda (tests/plugins/fake_libcuda.c).
 * Run with SHMEM_ENABLE_GPU_SPACE=1 and memheap cuda selected. Device memory is read back
 * through shmem_getmem only. */
#include "check.h"
#include "cuda_driver.h"
#include <string.h>

typedef void *CUcontext;

static CUresult (*drv_init)(unsigned);
static CUresult (*drv_device_get)(CUdevice *, int);
static CUresult (*drv_ctx_create)(CUcontext *, unsigned, CUdevice);
static CUresult (*drv_ctx_destroy)(CUcontext);
static CUresult (*drv_ctx_get_current)(CUcontext *);

static void load_driver(void) {
    void *lib = cuda_driver("gpu_context");
    *(void **)&drv_init = cuda_sym(lib, "gpu_context", "cuInit");
    *(void **)&drv_device_get = cuda_sym(lib, "gpu_context", "cuDeviceGet");
    *(void **)&drv_ctx_create = cuda_sym(lib, "gpu_context", "cuCtxCreate_v2");
    *(void **)&drv_ctx_destroy = cuda_sym(lib, "gpu_context", "cuCtxDestroy_v2");
    *(void **)&drv_ctx_get_current = cuda_sym(lib, "gpu_context", "cuCtxGetCurrent");
}

static CUcontext mine;

/* The program's own context is still the current one after rshmem's call `what`. */
static void still_mine(const char *what) {
    CUcontext now = NULL;
    if (drv_ctx_get_current(&now) != 0 || now != mine) {
        fprintf(stderr, "PE %d: after %s the current context is %p, not the program's %p\n", shmem_my_pe(), what,
                now, mine);
        fflush(stderr);
        shmem_global_exit(1);
    }
}

int main(void) {
    load_driver();
    CUdevice dev = 0;
    if (drv_init(0) != 0 || drv_device_get(&dev, 0) != 0 || drv_ctx_create(&mine, 0, dev) != 0) {
        fprintf(stderr, "gpu_context: could not make a context of the program's own\n");
        return 2;
    }
    shmem_init();
    still_mine("shmem_init");
    int me = shmem_my_pe(), n = shmem_n_pes(), next = (me + 1) % n, prev = (me + n - 1) % n;
    CHECK(SHMEM_SPACE_GPU != SHMEM_SPACE_INVALID);

    long *words = shmem_space_calloc(SHMEM_SPACE_GPU, 4, sizeof(long));
    long *all = shmem_space_malloc(SHMEM_SPACE_GPU, (size_t)n * sizeof(long));
    CHECK(words && all);
    still_mine("shmem_space_calloc");

    long v = 1000 + me, back = 0;
    shmem_long_p(&words[0], v, next); /* host -> the next PE's device memory */
    still_mine("shmem_long_p");
    shmem_barrier_all();
    still_mine("shmem_barrier_all");
    shmem_getmem(&back, &words[0], sizeof back, me); /* device -> host */
    still_mine("shmem_getmem");
    CHECK(back == 1000 + prev);

    shmem_putmem(&words[1], &words[0], sizeof(long), next); /* device -> device */
    shmem_quiet();
    still_mine("shmem_putmem");
    long old = shmem_long_atomic_fetch_add(&words[2], 5, next);
    still_mine("shmem_long_atomic_fetch_add");
    CHECK(old == 0);
    shmem_barrier_all();
    CHECK(shmem_long_g(&words[1], me) == 1000 + ((prev + n - 1) % n));
    CHECK(shmem_long_g(&words[2], me) == 5);
    still_mine("shmem_long_g");

    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, all, &words[0], 1) == 0); /* a collective */
    still_mine("shmem_long_fcollect");
    for (int i = 0; i < n; i++) {
        long x = shmem_long_g(&all[i], me);
        CHECK(x == 1000 + (i + n - 1) % n);
    }

    shmem_space_free(SHMEM_SPACE_GPU, all);
    shmem_space_free(SHMEM_SPACE_GPU, words);
    still_mine("shmem_space_free");
    REPORT_OK("gpu_context");
    /* GPU_CONTEXT_EXIT=implicit-odd: odd PEs return without shmem_finalize, so the implicit
     * finalize at exit meets the explicit one of the others (it must not hang). */
    const char *how = getenv("GPU_CONTEXT_EXIT");
    if (how && strcmp(how, "implicit-odd") == 0 && me % 2 == 1) return 0;
    shmem_finalize();
    CUcontext now = NULL;
    if (drv_ctx_get_current(&now) != 0 || now != mine) {
        fprintf(stderr, "gpu_context: after shmem_finalize the current context is %p, not %p\n", now, mine);
        return 1;
    }
    return drv_ctx_destroy(mine) == 0 ? 0 : 3;
}
