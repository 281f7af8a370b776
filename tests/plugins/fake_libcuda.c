/*
 * fakecuda: a stand-in for the CUDA driver library (libcuda.so), for testing memheap "cuda" on
 * machines without a GPU. It implements the driver calls that memheap cuda and
 * tests/c/gpu_context.c make, with rules at least as strict as the real driver's where the
 * component depends on them:
 *
 * - Device memory is not CPU memory: an allocation's device address is an inaccessible
 *   (PROT_NONE) reservation; its bytes live in a second mapping of the same memfd that only
 *   this library uses. A load or store by rshmem on device memory ends the PE with SIGSEGV.
 * - Contexts are per thread, on a stack (cuCtxSetCurrent, cuCtxPushCurrent, cuCtxPopCurrent,
 *   cuCtxCreate). Allocating, making streams, pinning and opening IPC handles need a current
 *   context; a copy must run with its stream's context current.
 * - cuMemcpyAsync only queues the copy: the bytes move at cuStreamSynchronize, or at the
 *   second cuStreamQuery (the first answers "not ready"). A component that forgot to wait would
 *   read stale data. Stream 0 is the current context's default stream.
 * - IPC handles name the owner's pid and memfd; a peer opens /proc/<pid>/fd/<fd>, so nothing
 *   is ever named in /dev/shm and a handle dies with its owner, as CUDA's do.
 *
 * - Stream memory operations (cuStreamWriteValue64_v2, cuStreamWaitValue64_v2) on device words
 *   are queued like copies and run in order with them; a wait spins until its word satisfies it.
 * - memheap cuda's reduction kernels load (their first line says what they do) and run on the
 *   CPU at the stream's turn; no other module loads.
 *
 * FAKECUDA_DEVICES (default 1) sets how many devices it reports. FAKECUDA_STATS=1 prints at
 * exit how many allocations, frees, IPC opens and closes, pinned buffers, registered (page-
 * locked) host ranges and their unregistrations, copies and stream queries there were,
 * how many calls failed for want of the right context, how many stream writes and waits
 * were queued, in how many batches (cuStreamBatchMemOp_v2), and how many modules were loaded and
 * kernels launched. FAKECUDA_NO_STREAM_MEM_OPS=1 plays a device without stream memory operations.
 *
 * Build:  cc -shared -fPIC -o libcuda.so tests/plugins/fake_libcuda.c
 * Use:    LD_LIBRARY_PATH=<dir> SHMEM_ENABLE_GPU_SPACE=1 oshrun ...   (memheap cuda loads it)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "registered_ranges.h" /* host memory the caller page-locked (cuMemHostRegister) */

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct fake_ctx *CUcontext;
typedef struct fake_stream *CUstream;
typedef struct {
    char reserved[64];
} CUipcMemHandle;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_MAP_FAILED = 205,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
};
enum { CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2, CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2 };

#define MAX_DEVICES 8
#define MAX_REGIONS 256
#define MAX_PINNED 64
#define STACK 16
#define QUEUE 32

struct fake_ctx {
    int device;
    int primary;
    int destroyed;
    struct fake_stream *dflt; /* the default stream (CUstream 0), made on first use */
};

/* A queued stream operation: a copy, a 64-bit store (cuStreamWriteValue64) or a wait for a
 * 64-bit word (cuStreamWaitValue64). */
enum { OP_COPY, OP_WRITE, OP_WAIT, OP_REDUCE };
struct copy_op {
    int kind;
    char *dst;
    const char *src;
    size_t len;
    uint64_t value;
    unsigned flags;
    /* OP_REDUCE: dst[i] = srcs[0][i] op ... for len elements of `dtype` (rshmem's DT_*). */
    const char *srcs[8];
    unsigned nsrc, dtype, op;
};

struct fake_stream {
    struct fake_ctx *ctx;
    int queued;
    int asked; /* cuStreamQuery said "not ready" once for the queued copies */
    struct copy_op q[QUEUE];
};

/* A device allocation, own (cuMemAlloc) or opened from another process's IPC handle. */
struct region {
    uintptr_t dev; /* the PROT_NONE reservation; 0 when the slot is free */
    char *view;    /* the read-write mapping of the same memory */
    size_t len;
    int fd; /* own allocations keep their memfd open for peers; -1 for opened ones */
};

static struct region regions[MAX_REGIONS];
static void *pinned[MAX_PINNED];
static size_t pinned_len[MAX_PINNED];
static struct fake_ctx primaries[MAX_DEVICES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int initialised;
static int devices = 1;
static atomic_ulong n_alloc, n_free, n_open, n_close, n_pinned, n_unpinned, n_registered, n_unregistered, n_copies,
    n_queries, n_ctx_errors, n_writes, n_waits, n_batches, n_modules, n_kernels;

static void drain(struct fake_stream *st);

static __thread struct fake_ctx *stack[STACK];
static __thread int depth;

static struct fake_ctx *current(void) { return depth > 0 ? stack[depth - 1] : NULL; }

/* The current context, or NULL after counting the failure (no context, or a destroyed one). */
static struct fake_ctx *need_ctx(void) {
    struct fake_ctx *c = current();
    if (!c || c->destroyed) {
        atomic_fetch_add(&n_ctx_errors, 1);
        return NULL;
    }
    return c;
}

#define NEED_INIT                                                                                                \
    do {                                                                                                         \
        if (!atomic_load(&initialised)) return CUDA_ERROR_NOT_INITIALIZED;                                      \
    } while (0)

/* The region holding [p, p+len), or NULL. Called with the lock held. */
static struct region *find(uintptr_t p, size_t len) {
    /* A region inside which `p` lies first: the kernel may place one region's device range
       right after another's, so `p` may be both the first one's end and the second's start
       (cuMemFree of the second then found the first, and failed, 2 runs in 19). */
    for (int i = 0; i < MAX_REGIONS; i++) {
        struct region *r = &regions[i];
        if (r->dev && p >= r->dev && p - r->dev < r->len && len <= r->len - (p - r->dev)) return r;
    }
    /* Then an empty range at a region's end. */
    for (int i = 0; i < MAX_REGIONS; i++) {
        struct region *r = &regions[i];
        if (r->dev && len == 0 && p == r->dev + r->len) return r;
    }
    return NULL;
}

static int is_pinned(uintptr_t p) {
    for (int i = 0; i < MAX_PINNED; i++)
        if (pinned[i] && p >= (uintptr_t)pinned[i] && p - (uintptr_t)pinned[i] < pinned_len[i]) return 1;
    return ranges_cover(p, 0);
}

/* Map `fd` twice into a free slot: inaccessible at the device address, read-write for copies. */
static struct region *map_region(int fd, size_t len) {
    struct region *r = NULL;
    for (int i = 0; i < MAX_REGIONS && !r; i++)
        if (!regions[i].dev) r = &regions[i];
    if (!r) return NULL;
    void *view = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (view == MAP_FAILED) return NULL;
    void *dev = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (dev == MAP_FAILED) {
        munmap(view, len);
        return NULL;
    }
    r->dev = (uintptr_t)dev;
    r->view = view;
    r->len = len;
    r->fd = -1;
    return r;
}

static void unmap_region(struct region *r) {
    munmap((void *)r->dev, r->len);
    munmap(r->view, r->len);
    if (r->fd >= 0) close(r->fd);
    memset(r, 0, sizeof *r);
}

EXPORT CUresult cuInit(unsigned flags) {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    const char *n = getenv("FAKECUDA_DEVICES");
    if (n) devices = atoi(n) < 0 ? 0 : atoi(n) > MAX_DEVICES ? MAX_DEVICES : atoi(n);
    for (int i = 0; i < MAX_DEVICES; i++) primaries[i] = (struct fake_ctx){.device = i, .primary = 1};
    atomic_store(&initialised, 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v) {
    *v = 12000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
    NEED_INIT;
    *count = devices;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
    NEED_INIT;
    if (ordinal < 0 || ordinal >= devices) return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    NEED_INIT;
    if (dev < 0 || dev >= devices) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "rshmem fake CUDA device %d", dev);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    NEED_INIT;
    if (dev < 0 || dev >= devices) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)16 << 30;
    return CUDA_SUCCESS;
}

/* CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS (122): 1, unless
 * FAKECUDA_NO_STREAM_MEM_OPS=1 plays a device without them; every other attribute is 0. */
EXPORT CUresult cuDeviceGetAttribute(int *value, int attr, CUdevice dev) {
    NEED_INIT;
    if (dev < 0 || dev >= devices) return CUDA_ERROR_INVALID_DEVICE;
    const char *no = getenv("FAKECUDA_NO_STREAM_MEM_OPS");
    *value = attr == 122 && !(no && strcmp(no, "1") == 0);
    return CUDA_SUCCESS;
}

/* Device d's UUID: 16 bytes of 0xd0 + d. */
EXPORT CUresult cuDeviceGetUuid_v2(unsigned char *uuid, CUdevice dev) {
    NEED_INIT;
    if (dev < 0 || dev >= devices) return CUDA_ERROR_INVALID_DEVICE;
    memset(uuid, 0xd0 + dev, 16);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
    NEED_INIT;
    if (dev < 0 || dev >= devices) return CUDA_ERROR_INVALID_DEVICE;
    *ctx = &primaries[dev];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    NEED_INIT;
    return dev < 0 || dev >= devices ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

/* A context of the program's own: made current (pushed), as the driver does. */
EXPORT CUresult cuCtxCreate_v2(CUcontext *ctx, unsigned flags, CUdevice dev) {
    (void)flags;
    NEED_INIT;
    if (dev < 0 || dev >= devices) return CUDA_ERROR_INVALID_DEVICE;
    if (depth == STACK) return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_ctx *c = calloc(1, sizeof *c);
    if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
    c->device = dev;
    stack[depth++] = c;
    *ctx = c;
    return CUDA_SUCCESS;
}

/* Destroying a context pops it where it is current on this thread. Its memory is kept (tests
 * destroy contexts only at their end), but using it any further is an error. */
EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
    NEED_INIT;
    if (!ctx || ctx->primary || ctx->destroyed) return CUDA_ERROR_INVALID_CONTEXT;
    ctx->destroyed = 1;
    if (current() == ctx) depth--;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
    NEED_INIT;
    if (!ctx) {
        if (depth > 0) depth--;
        return CUDA_SUCCESS;
    }
    if (ctx->destroyed) return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == 0) depth = 1;
    stack[depth - 1] = ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx) {
    NEED_INIT;
    *ctx = current();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    NEED_INIT;
    if (!ctx || ctx->destroyed) return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == STACK) return CUDA_ERROR_OUT_OF_MEMORY;
    stack[depth++] = ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx) {
    NEED_INIT;
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    struct fake_ctx *c = stack[--depth];
    if (ctx) *ctx = c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *dev) {
    NEED_INIT;
    struct fake_ctx *c = need_ctx();
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    *dev = c->device;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t len) {
    NEED_INIT;
    if (!need_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    if (len == 0) return CUDA_ERROR_INVALID_VALUE;
    int fd = memfd_create("fakecuda", MFD_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    if (ftruncate(fd, (off_t)len) != 0) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&lock);
    struct region *r = map_region(fd, len);
    if (r) r->fd = fd;
    pthread_mutex_unlock(&lock);
    if (!r) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    atomic_fetch_add(&n_alloc, 1);
    *dptr = r->dev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
    NEED_INIT;
    if (!need_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    struct region *r = find(dptr, 0);
    int ok = r && r->dev == dptr && r->fd >= 0;
    if (ok) unmap_region(r);
    pthread_mutex_unlock(&lock);
    if (!ok) return CUDA_ERROR_INVALID_VALUE;
    atomic_fetch_add(&n_free, 1);
    return CUDA_SUCCESS;
}

/* The handle: a magic word, the owner's pid, its memfd and the allocation's size. */
struct handle {
    char magic[8];
    int pid;
    int fd;
    size_t len;
};

EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr dptr) {
    NEED_INIT;
    if (!need_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    struct region *r = find(dptr, 0);
    struct handle x = {.magic = "fakecu", .pid = getpid(), .fd = r ? r->fd : -1, .len = r ? r->len : 0};
    int ok = r && r->dev == dptr && r->fd >= 0;
    pthread_mutex_unlock(&lock);
    if (!ok) return CUDA_ERROR_INVALID_VALUE;
    memset(h, 0, sizeof *h);
    memcpy(h->reserved, &x, sizeof x);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *dptr, CUipcMemHandle h, unsigned flags) {
    (void)flags;
    NEED_INIT;
    if (!need_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    struct handle x;
    memcpy(&x, h.reserved, sizeof x);
    if (memcmp(x.magic, "fakecu", 7) != 0 || x.pid == getpid()) return CUDA_ERROR_INVALID_HANDLE;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", x.pid, x.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    struct region *r = map_region(fd, x.len);
    pthread_mutex_unlock(&lock);
    close(fd);
    if (!r) return CUDA_ERROR_MAP_FAILED;
    atomic_fetch_add(&n_open, 1);
    *dptr = r->dev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
    NEED_INIT;
    if (!need_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    struct region *r = find(dptr, 0);
    int ok = r && r->dev == dptr && r->fd < 0;
    if (ok) unmap_region(r);
    pthread_mutex_unlock(&lock);
    if (!ok) return CUDA_ERROR_INVALID_VALUE;
    atomic_fetch_add(&n_close, 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr ptr) {
    NEED_INIT;
    if (attr != CU_POINTER_ATTRIBUTE_MEMORY_TYPE) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    unsigned kind = find(ptr, 0) ? CU_MEMORYTYPE_DEVICE : is_pinned(ptr) ? CU_MEMORYTYPE_HOST : 0;
    pthread_mutex_unlock(&lock);
    if (!kind) return CUDA_ERROR_INVALID_VALUE; /* pageable memory the driver does not know */
    *(unsigned *)data = kind;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostAlloc(void **p, size_t len, unsigned flags) {
    (void)flags;
    NEED_INIT;
    if (!need_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    void *m = malloc(len ? len : 1);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < MAX_PINNED && pinned[i]) i++;
    if (i < MAX_PINNED) {
        pinned[i] = m;
        pinned_len[i] = len;
    }
    pthread_mutex_unlock(&lock);
    if (i == MAX_PINNED) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    atomic_fetch_add(&n_pinned, 1);
    *p = m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void *p) {
    NEED_INIT;
    if (!need_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    int found = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_PINNED; i++)
        if (pinned[i] == p) {
            pinned[i] = NULL;
            found = 1;
        }
    pthread_mutex_unlock(&lock);
    if (!found) return CUDA_ERROR_INVALID_VALUE;
    free(p);
    atomic_fetch_add(&n_unpinned, 1);
    return CUDA_SUCCESS;
}

/* Page-locking memory the caller has: as the real driver, it takes whole pages and refuses a
 * range that overlaps one already registered; cuMemHostUnregister takes the start of one. */
EXPORT CUresult cuMemHostRegister_v2(void *p, size_t len, unsigned flags) {
    (void)flags;
    NEED_INIT;
    if (!need_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    int r = ranges_add((uintptr_t)p, len);
    pthread_mutex_unlock(&lock);
    switch (r) {
    case RANGE_ADDED: atomic_fetch_add(&n_registered, 1); return CUDA_SUCCESS;
    case RANGE_OVERLAPS: return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    case RANGE_TABLE_FULL: return CUDA_ERROR_OUT_OF_MEMORY;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

EXPORT CUresult cuMemHostUnregister(void *p) {
    NEED_INIT;
    if (!need_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    int found = ranges_remove((uintptr_t)p);
    pthread_mutex_unlock(&lock);
    if (!found) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    atomic_fetch_add(&n_unregistered, 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags) {
    (void)flags;
    NEED_INIT;
    struct fake_ctx *c = need_ctx();
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    struct fake_stream *st = calloc(1, sizeof *st);
    if (!st) return CUDA_ERROR_OUT_OF_MEMORY;
    st->ctx = c;
    *s = st;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
    NEED_INIT;
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    drain(s); /* the driver lets queued work finish */
    pthread_mutex_unlock(&lock);
    free(s);
    return CUDA_SUCCESS;
}

/* Where the bytes of [p, p+len) are: the view for device memory, else p itself (host memory).
 * NULL when the range starts in an allocation but runs past its end. Lock held. */
static char *bytes_at(uintptr_t p, size_t len) {
    struct region *r = find(p, len);
    if (r) return r->view + (p - r->dev);
    return find(p, 0) ? NULL : (char *)p;
}

/* Whether a wait's word satisfies it: CU_STREAM_WAIT_VALUE_GEQ (0) compares as the driver
 * documents, (int64_t)(word - value) >= 0; CU_STREAM_WAIT_VALUE_EQ (1) for equality. */
static int wait_done(const struct copy_op *o) {
    uint64_t w = atomic_load((_Atomic uint64_t *)(void *)o->dst);
    return o->flags == 1 ? w == o->value : (int64_t)(w - o->value) >= 0;
}

/* One element of a reduction: rshmem's DT_I32 2, DT_I64 3, DT_U32 6, DT_U64 7, DT_F32 8,
 * DT_F64 9; OP_AND 0, OR 1, XOR 2, MAX 3, MIN 4, SUM 5, PROD 6 (what memheap cuda's kernels
 * take). */
#define COMBINE(T, BITWISE)                                                                    \
    do {                                                                                       \
        T *d = (T *)(void *)o->dst;                                                            \
        for (size_t i = 0; i < o->len; i++) {                                                  \
            T acc = ((const T *)(const void *)o->srcs[0])[i];                                  \
            for (unsigned k = 1; k < o->nsrc; k++) {                                           \
                T x = ((const T *)(const void *)o->srcs[k])[i];                                \
                switch (o->op) {                                                               \
                case 3: acc = acc > x ? acc : x; break;                                        \
                case 4: acc = acc < x ? acc : x; break;                                        \
                case 5: acc = acc + x; break;                                                  \
                case 6: acc = acc * x; break;                                                  \
                default: BITWISE;                                                              \
                }                                                                              \
            }                                                                                  \
            d[i] = acc;                                                                        \
        }                                                                                      \
    } while (0)
#define INT_BITS                                                                               \
    acc = o->op == 0 ? (acc & x) : o->op == 1 ? (acc | x) : (acc ^ x)

static void run_reduce(const struct copy_op *o) {
    switch (o->dtype) {
    case 2: COMBINE(int32_t, INT_BITS); break;
    case 3: COMBINE(int64_t, INT_BITS); break;
    case 6: COMBINE(uint32_t, INT_BITS); break;
    case 7: COMBINE(uint64_t, INT_BITS); break;
    case 8: COMBINE(float, (void)0); break;
    case 9: COMBINE(double, (void)0); break;
    }
}

/* Run the stream's queued operations, in order. Lock held; a wait drops it while it spins, so
 * that other threads of this process can make progress (the word changes in another PE). */
static void drain(struct fake_stream *st) {
    struct copy_op q[QUEUE];
    int n = st->queued;
    memcpy(q, st->q, (size_t)n * sizeof q[0]);
    st->queued = 0;
    st->asked = 0;
    for (int i = 0; i < n; i++) {
        if (q[i].kind == OP_COPY) {
            memmove(q[i].dst, q[i].src, q[i].len);
        } else if (q[i].kind == OP_REDUCE) {
            run_reduce(&q[i]);
        } else if (q[i].kind == OP_WRITE) {
            atomic_thread_fence(memory_order_seq_cst); /* the earlier copies first */
            atomic_store((_Atomic uint64_t *)(void *)q[i].dst, q[i].value);
        } else {
            pthread_mutex_unlock(&lock);
            while (!wait_done(&q[i])) sched_yield();
            atomic_thread_fence(memory_order_seq_cst);
            pthread_mutex_lock(&lock);
        }
    }
}

/* Queue `o` on stream `s` (context checked by the caller). Lock held. */
static void enqueue(struct fake_stream *s, struct copy_op o) {
    if (s->queued == QUEUE) drain(s);
    s->q[s->queued++] = o;
}

/* Stream `s`, or for 0 the current context's default stream (NULL without a context). */
static CUstream or_default(CUstream s) {
    if (s) return s;
    struct fake_ctx *c = current();
    if (!c) return NULL;
    pthread_mutex_lock(&lock);
    if (!c->dflt && (c->dflt = calloc(1, sizeof *c->dflt)) != NULL) c->dflt->ctx = c;
    pthread_mutex_unlock(&lock);
    return c->dflt;
}

EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t len, CUstream s) {
    NEED_INIT;
    struct fake_ctx *c = need_ctx();
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    s = or_default(s);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    if (s->ctx != c) {
        atomic_fetch_add(&n_ctx_errors, 1);
        return CUDA_ERROR_INVALID_HANDLE; /* a stream of another context */
    }
    pthread_mutex_lock(&lock);
    char *d = bytes_at(dst, len), *sv = bytes_at(src, len);
    if (ranges_past(dst, len) || ranges_past(src, len)) d = NULL;
    if (d && sv) enqueue(s, (struct copy_op){.kind = OP_COPY, .dst = d, .src = sv, .len = len});
    pthread_mutex_unlock(&lock);
    if (!d || !sv) return CUDA_ERROR_INVALID_VALUE;
    atomic_fetch_add(&n_copies, 1);
    return CUDA_SUCCESS;
}

/* A 64-bit word of device memory (own or opened by IPC) for a stream memory operation. */
static CUresult stream_word(CUstream s, CUdeviceptr addr, char **word) {
    NEED_INIT;
    struct fake_ctx *c = need_ctx();
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    if (!s) return CUDA_ERROR_INVALID_HANDLE; /* the callers resolved the default stream */
    if (s->ctx != c) {
        atomic_fetch_add(&n_ctx_errors, 1);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (addr % 8 != 0) return CUDA_ERROR_INVALID_VALUE;
    struct region *r = find(addr, 8);
    if (!r) return CUDA_ERROR_INVALID_VALUE; /* host memory would have to be registered */
    *word = r->view + (addr - r->dev);
    return CUDA_SUCCESS;
}

/* Queue a stream memory operation (`kind`) on device word `addr`; flags above `max_flags`
 * are refused. */
static CUresult word_op(int kind, CUstream s, CUdeviceptr addr, uint64_t value, unsigned flags, unsigned max_flags,
                        atomic_ulong *count) {
    char *w = NULL;
    s = or_default(s);
    pthread_mutex_lock(&lock);
    CUresult r = stream_word(s, addr, &w);
    if (r == CUDA_SUCCESS && flags > max_flags) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) enqueue(s, (struct copy_op){.kind = kind, .dst = w, .len = 8, .value = value, .flags = flags});
    pthread_mutex_unlock(&lock);
    if (r == CUDA_SUCCESS) atomic_fetch_add(count, 1);
    return r;
}

/* Only the default flags: a write with its memory barrier. */
EXPORT CUresult cuStreamWriteValue64_v2(CUstream s, CUdeviceptr addr, uint64_t value, unsigned flags) {
    return word_op(OP_WRITE, s, addr, value, flags, 0, &n_writes);
}

/* CU_STREAM_WAIT_VALUE_GEQ (0) or _EQ (1) only. */
EXPORT CUresult cuStreamWaitValue64_v2(CUstream s, CUdeviceptr addr, uint64_t value, unsigned flags) {
    return word_op(OP_WAIT, s, addr, value, flags, 1, &n_waits);
}

/* cuStreamBatchMemOp's operations: the 64-bit waits and writes (the layout of CUDA's
 * CUstreamBatchMemOpParams for them; other operations are refused). */
typedef union {
    unsigned int operation;
    struct {
        unsigned int operation;
        CUdeviceptr address;
        union {
            uint32_t value;
            uint64_t value64;
        } v;
        unsigned int flags;
        CUdeviceptr alias;
    } word;
    uint64_t pad[6];
} CUstreamBatchMemOpParams;

enum { CU_STREAM_MEM_OP_WAIT_VALUE_64 = 4, CU_STREAM_MEM_OP_WRITE_VALUE_64 = 5 };

EXPORT CUresult cuStreamBatchMemOp_v2(CUstream s, unsigned count, CUstreamBatchMemOpParams *ops, unsigned flags) {
    if (flags != 0 || count > 256) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; i++) {
        CUresult r;
        if (ops[i].operation == CU_STREAM_MEM_OP_WAIT_VALUE_64)
            r = word_op(OP_WAIT, s, ops[i].word.address, ops[i].word.v.value64, ops[i].word.flags, 1, &n_waits);
        else if (ops[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_64)
            r = word_op(OP_WRITE, s, ops[i].word.address, ops[i].word.v.value64, ops[i].word.flags, 0, &n_writes);
        else
            r = CUDA_ERROR_INVALID_VALUE;
        if (r != CUDA_SUCCESS) return r;
    }
    atomic_fetch_add(&n_batches, 1);
    return CUDA_SUCCESS;
}

/* Modules: the test driver runs no PTX. It reads the first line of memheap cuda's reduction
 * kernels ("// rshmem_reduce dtype=D op=O size=S") and does what the kernel would, on the
 * CPU, when the stream reaches the launch. Anything else does not load. */
struct fake_kernel {
    unsigned dtype, op, size;
};

EXPORT CUresult cuModuleLoadData(void **module, const void *image) {
    NEED_INIT;
    if (!need_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    struct fake_kernel k;
    if (sscanf((const char *)image, "// rshmem_reduce dtype=%u op=%u size=%u", &k.dtype, &k.op, &k.size) != 3)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_kernel *m = malloc(sizeof *m);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    *m = k;
    *module = m;
    atomic_fetch_add(&n_modules, 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(void **f, void *module, const char *name) {
    if (!module || strcmp(name, "rshmem_reduce") != 0) return CUDA_ERROR_INVALID_VALUE;
    *f = module;
    return CUDA_SUCCESS;
}

/* rshmem_reduce(dst, s0..s7, n, count): queued like a copy, run at the stream's turn. */
EXPORT CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                               unsigned shared, CUstream s, void **params, void **extra) {
    (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)extra;
    NEED_INIT;
    struct fake_ctx *c = need_ctx();
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    s = or_default(s);
    if (!s || !f || !params) return CUDA_ERROR_INVALID_VALUE;
    if (s->ctx != c) {
        atomic_fetch_add(&n_ctx_errors, 1);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    const struct fake_kernel *k = f;
    struct copy_op o = {.kind = OP_REDUCE, .dtype = k->dtype, .op = k->op};
    o.nsrc = *(unsigned *)params[9];
    o.len = (size_t) * (uint64_t *)params[10];
    if (o.nsrc == 0 || o.nsrc > 8) return CUDA_ERROR_INVALID_VALUE;
    size_t bytes = o.len * k->size;
    pthread_mutex_lock(&lock);
    o.dst = bytes_at(*(uint64_t *)params[0], bytes);
    int ok = o.dst != NULL && find(*(uint64_t *)params[0], bytes) != NULL; /* device memory only */
    for (unsigned i = 0; i < o.nsrc; i++) {
        uint64_t a = *(uint64_t *)params[1 + i];
        o.srcs[i] = bytes_at(a, bytes);
        ok &= o.srcs[i] != NULL && find(a, bytes) != NULL;
    }
    if (ok) enqueue(s, o);
    pthread_mutex_unlock(&lock);
    if (!ok) return CUDA_ERROR_INVALID_VALUE;
    atomic_fetch_add(&n_kernels, 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamGetCtx(CUstream s, CUcontext *ctx) {
    NEED_INIT;
    if (!s || !ctx) return CUDA_ERROR_INVALID_HANDLE;
    *ctx = s->ctx;
    return CUDA_SUCCESS;
}

/* A stream with queued copies answers "not ready" to its first query and runs them at the
 * second, so a caller that polls must loop. */
EXPORT CUresult cuStreamQuery(CUstream s) {
    NEED_INIT;
    s = or_default(s);
    if (!s) return CUDA_ERROR_INVALID_CONTEXT;
    atomic_fetch_add(&n_queries, 1);
    pthread_mutex_lock(&lock);
    int pending = s->queued > 0 && !s->asked;
    if (pending)
        s->asked = 1;
    else {
        drain(s);
        s->asked = 0;
    }
    pthread_mutex_unlock(&lock);
    return pending ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
    NEED_INIT;
    s = or_default(s);
    if (!s) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    drain(s);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **s) {
    switch (e) {
    case CUDA_SUCCESS: *s = "no error"; break;
    case CUDA_ERROR_INVALID_VALUE: *s = "invalid argument"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *s = "out of memory"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *s = "initialization error"; break;
    case CUDA_ERROR_INVALID_DEVICE: *s = "invalid device ordinal"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *s = "invalid device context"; break;
    case CUDA_ERROR_MAP_FAILED: *s = "mapping of buffer object failed"; break;
    case CUDA_ERROR_INVALID_HANDLE: *s = "invalid resource handle"; break;
    case CUDA_ERROR_NOT_READY: *s = "device not ready"; break;
    default: *s = "unknown error"; return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult e, const char **s) {
    const char *text;
    CUresult r = cuGetErrorString(e, &text);
    *s = r == CUDA_SUCCESS ? "CUDA_ERROR" : "CUDA_ERROR_UNKNOWN";
    return r;
}

__attribute__((destructor)) static void fake_stats(void) {
    const char *on = getenv("FAKECUDA_STATS");
    /* Only a process that used the driver: a probe that loads and unloads it says nothing. */
    if (on && strcmp(on, "1") == 0 && atomic_load(&initialised))
        fprintf(stderr,
                "fakecuda stats: alloc %lu free %lu ipc_open %lu ipc_close %lu pinned %lu unpinned %lu registered %lu "
                "unregistered %lu copies %lu queries %lu context_errors %lu writes %lu waits %lu batches %lu modules %lu kernels %lu\n",
                atomic_load(&n_alloc), atomic_load(&n_free), atomic_load(&n_open), atomic_load(&n_close),
                atomic_load(&n_pinned), atomic_load(&n_unpinned), atomic_load(&n_registered),
                atomic_load(&n_unregistered), atomic_load(&n_copies), atomic_load(&n_queries),
                atomic_load(&n_ctx_errors), atomic_load(&n_writes), atomic_load(&n_waits),
                atomic_load(&n_batches), atomic_load(&n_modules), atomic_load(&n_kernels));
}
