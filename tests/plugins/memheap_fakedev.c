/*
 * memheap "fakedev": a stand-in for GPU memory, for testing the core's device data path on
 * machines without a GPU. It serves device type GPU with memory the CPU cannot touch at the
 * addresses the core sees: each segment's "device address" is an inaccessible (PROT_NONE)
 * reservation, and the bytes live in a second, private read-write mapping of the same shared
 * memory object that only this component uses, in `copy`. So any load or store the core makes
 * on device memory itself, instead of going through `copy`, ends the PE with SIGSEGV.
 *
 * Same-host peers map each other's segments from a POSIX shared-memory name (the attach blob),
 * as CUDA IPC handles do on a real GPU. The names are removed once every peer has attached.
 *
 * Build:  cc -shared -fPIC -I plugins/include -o libmemheap_fakedev.so tests/plugins/memheap_fakedev.c
 * Use:    SHMEM_MCA_plugin_path=<dir> SHMEM_MCA_memheap=fakedev,cpu SHMEM_ENABLE_GPU_SPACE=1 oshrun ...
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shmem_plugin.h"

/* A segment, own or attached: where the core sees it and where its bytes are. */
struct region {
    uintptr_t dev; /* the PROT_NONE reservation, 0 when the slot is free */
    char *view;    /* the read-write mapping */
    size_t len;
    char name[64];
    int named; /* the creator has not unlinked the name yet */
};

#define MAX_REGIONS 256
static struct region regions[MAX_REGIONS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_ulong created;
static const shmem_plugin_core_t *core_services;

static void say(const char *msg) {
    if (core_services) core_services->log(SHMEM_PLUGIN_LOG_WARN, "memheap fakedev", msg);
}

/* The region holding [p, p+len), or NULL. Called with the lock held. */
static struct region *find(uintptr_t p, size_t len) {
    for (int i = 0; i < MAX_REGIONS; i++) {
        struct region *r = &regions[i];
        if (r->dev && p >= r->dev && p - r->dev <= r->len && len <= r->len - (p - r->dev)) return r;
    }
    return NULL;
}

static struct region *take_slot(void) {
    for (int i = 0; i < MAX_REGIONS; i++)
        if (!regions[i].dev) return &regions[i];
    return NULL;
}

/* Map `fd` twice: inaccessible where the core sees it, read-write for `copy`. */
static int map_region(struct region *r, int fd, size_t len) {
    void *view = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (view == MAP_FAILED) return -1;
    void *dev = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (dev == MAP_FAILED) {
        munmap(view, len);
        return -1;
    }
    r->dev = (uintptr_t)dev;
    r->view = view;
    r->len = len;
    return 0;
}

static void unmap_region(struct region *r) {
    munmap((void *)r->dev, r->len);
    munmap(r->view, r->len);
    memset(r, 0, sizeof *r);
}

static int seg_create(size_t size, void *hint, shmem_plugin_segment_t *out) {
    (void)hint;
    char name[64];
    snprintf(name, sizeof name, "/rshmem-fakedev-%d-%lu", (int)getpid(), atomic_fetch_add(&created, 1));
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) return SHMEM_PLUGIN_RC_ERROR;
    int rc = SHMEM_PLUGIN_RC_ERROR;
    pthread_mutex_lock(&lock);
    struct region *r = take_slot();
    if (r && ftruncate(fd, (off_t)size) == 0 && map_region(r, fd, size) == 0) {
        strcpy(r->name, name);
        r->named = 1;
        memset(out, 0, sizeof *out);
        out->base = (void *)r->dev;
        out->size = size;
        memcpy(out->blob, name, strlen(name));
        out->blob_len = strlen(name);
        out->handle = r;
        rc = SHMEM_PLUGIN_RC_OK;
    }
    pthread_mutex_unlock(&lock);
    close(fd);
    if (rc != SHMEM_PLUGIN_RC_OK) {
        shm_unlink(name);
        say("could not make a segment");
    }
    return rc;
}

static int seg_attach(const uint8_t *blob, size_t blob_len, size_t size, void **addr) {
    char name[64];
    if (blob_len == 0 || blob_len >= sizeof name) return SHMEM_PLUGIN_RC_UNSUPPORTED;
    memcpy(name, blob, blob_len);
    name[blob_len] = 0;
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) return SHMEM_PLUGIN_RC_ERROR;
    int rc = SHMEM_PLUGIN_RC_ERROR;
    pthread_mutex_lock(&lock);
    struct region *r = take_slot();
    if (r && map_region(r, fd, size) == 0) {
        *addr = (void *)r->dev;
        rc = SHMEM_PLUGIN_RC_OK;
    }
    pthread_mutex_unlock(&lock);
    close(fd);
    return rc;
}

static void seg_detach(void *addr, size_t size) {
    (void)size;
    pthread_mutex_lock(&lock);
    struct region *r = find((uintptr_t)addr, 0);
    if (r && r->dev == (uintptr_t)addr) unmap_region(r);
    pthread_mutex_unlock(&lock);
}

static void seg_unlink(shmem_plugin_segment_t *seg) {
    pthread_mutex_lock(&lock);
    struct region *r = seg->handle;
    if (r && r->named) {
        shm_unlink(r->name);
        r->named = 0;
    }
    pthread_mutex_unlock(&lock);
}

static void seg_destroy(shmem_plugin_segment_t *seg) {
    seg_unlink(seg);
    pthread_mutex_lock(&lock);
    struct region *r = seg->handle;
    if (r && r->dev) unmap_region(r);
    seg->handle = NULL;
    pthread_mutex_unlock(&lock);
}

static const shmem_plugin_sshmem_ops_t segments = {
    .struct_size = sizeof(shmem_plugin_sshmem_ops_t),
    .create = seg_create,
    .attach = seg_attach,
    .detach = seg_detach,
    .unlink = seg_unlink,
    .destroy = seg_destroy,
};

/* Where the bytes of [p, p+len) are: the view for fake device memory, else p itself. NULL
 * when the range starts in a region but runs past its end. Called with the lock held. */
static char *bytes_at(uintptr_t p, size_t len) {
    struct region *r = find(p, len);
    if (r) return r->view + (p - r->dev);
    if (find(p, 0)) return NULL;
    return (char *)p;
}

/* "Pinned" host memory (host_alloc): ordinary memory here, remembered so that copies through it
 * can be counted. FAKEDEV_PINNED=0 makes host_alloc answer NULL, as a memheap that cannot pin
 * would; FAKEDEV_STATS=1 prints at exit how many buffers were made and freed and how many
 * copies between device memory and them there were, for the tests to check. */
#define MAX_PINNED 64
static void *pinned[MAX_PINNED];
static size_t pinned_len[MAX_PINNED];
static atomic_ulong pinned_made, pinned_freed, pinned_copies;

static int in_pinned(uintptr_t p, size_t len) {
    for (int i = 0; i < MAX_PINNED; i++) {
        uintptr_t b = (uintptr_t)pinned[i];
        if (b && p >= b && p - b <= pinned_len[i] && len <= pinned_len[i] - (p - b)) return 1;
    }
    return 0;
}

static void *fake_host_alloc(size_t len) {
    const char *off = getenv("FAKEDEV_PINNED");
    if (off && strcmp(off, "0") == 0) return NULL;
    void *p = malloc(len);
    if (!p) return NULL;
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < MAX_PINNED && pinned[i]) i++;
    if (i < MAX_PINNED) {
        pinned[i] = p;
        pinned_len[i] = len;
    }
    pthread_mutex_unlock(&lock);
    if (i == MAX_PINNED) {
        free(p);
        return NULL;
    }
    atomic_fetch_add(&pinned_made, 1);
    return p;
}

static void fake_host_free(void *p) {
    pthread_mutex_lock(&lock);
    int found = 0;
    for (int i = 0; i < MAX_PINNED; i++)
        if (pinned[i] == p) {
            pinned[i] = NULL;
            found = 1;
        }
    pthread_mutex_unlock(&lock);
    if (!found) {
        say("host_free of a buffer host_alloc did not make");
        return;
    }
    free(p);
    atomic_fetch_add(&pinned_freed, 1);
}

/* Host memory the core page-locks (host_register: its GPU spaces' shadows), remembered so that
 * copies through it can be counted: ranges must start and end on pages and not overlap one
 * already registered, and host_unregister must name the start of one, as with
 * cuMemHostRegister. FAKEDEV_REGISTER=0 refuses every range, as a memheap that cannot lock
 * more memory would. FAKEDEV_STATS=1 adds a line of these counts. */
#include "registered_ranges.h"
static atomic_ulong registrations, unregistrations, registered_copies, registration_errors;

static int fake_host_register(void *ptr, size_t len) {
    const char *off = getenv("FAKEDEV_REGISTER");
    if (off && strcmp(off, "0") == 0) return SHMEM_PLUGIN_RC_ERROR;
    pthread_mutex_lock(&lock);
    int r = ranges_add((uintptr_t)ptr, len);
    pthread_mutex_unlock(&lock);
    if (r != RANGE_ADDED) {
        atomic_fetch_add(&registration_errors, 1);
        say("host_register of a range that is not whole pages, or overlaps one registered");
        return SHMEM_PLUGIN_RC_ERROR;
    }
    atomic_fetch_add(&registrations, 1);
    return SHMEM_PLUGIN_RC_OK;
}

static int fake_host_unregister(void *ptr) {
    pthread_mutex_lock(&lock);
    int found = ranges_remove((uintptr_t)ptr);
    pthread_mutex_unlock(&lock);
    if (!found) {
        atomic_fetch_add(&registration_errors, 1);
        say("host_unregister of an address host_register did not take");
        return SHMEM_PLUGIN_RC_ERROR;
    }
    atomic_fetch_add(&unregistrations, 1);
    return SHMEM_PLUGIN_RC_OK;
}

__attribute__((destructor)) static void fake_stats(void) {
    const char *on = getenv("FAKEDEV_STATS");
    if (on && strcmp(on, "1") == 0) {
        fprintf(stderr, "fakedev stats: pinned made %lu freed %lu copies %lu\n", atomic_load(&pinned_made),
                atomic_load(&pinned_freed), atomic_load(&pinned_copies));
        fprintf(stderr, "fakedev registered: ranges %lu unregistered %lu copies %lu errors %lu\n",
                atomic_load(&registrations), atomic_load(&unregistrations), atomic_load(&registered_copies),
                atomic_load(&registration_errors));
    }
}

static int fake_copy(void *dst, const void *src, size_t len) {
    pthread_mutex_lock(&lock);
    if (ranges_past((uintptr_t)dst, len) || ranges_past((uintptr_t)src, len)) {
        pthread_mutex_unlock(&lock);
        say("a copy runs past the end of the page-locked range it starts in");
        return SHMEM_PLUGIN_RC_ERROR;
    }
    char *d = bytes_at((uintptr_t)dst, len);
    char *s = bytes_at((uintptr_t)src, len);
    if (d && s) memmove(d, s, len);
    if (in_pinned((uintptr_t)dst, len) || in_pinned((uintptr_t)src, len)) atomic_fetch_add(&pinned_copies, 1);
    if (ranges_cover((uintptr_t)dst, len) || ranges_cover((uintptr_t)src, len))
        atomic_fetch_add(&registered_copies, 1);
    pthread_mutex_unlock(&lock);
    if (!d || !s) {
        say("a copy runs past the end of a device segment");
        return SHMEM_PLUGIN_RC_ERROR;
    }
    return SHMEM_PLUGIN_RC_OK;
}

static int fake_owns(const void *p) {
    pthread_mutex_lock(&lock);
    int yes = find((uintptr_t)p, 0) != NULL;
    pthread_mutex_unlock(&lock);
    return yes;
}

/* The allocator: the C skeletons' bump allocator (memory never reused, bookkeeping in host
 * memory), with realloc copying through `fake_copy`. */
#define BUMP_COPY(dst, src, n) fake_copy((dst), (src), (n))
#include "../../plugins/c-example/bump_heap.h"

static const shmem_plugin_memheap_ops_t ops = {
    .struct_size = sizeof(shmem_plugin_memheap_ops_t),
    .create = bump_create,
    .alloc = bump_alloc,
    .free = bump_free,
    .realloc = bump_realloc,
    .usable_size = bump_usable_size,
    .destroy = bump_destroy,
    .device_type = SHMEM_PLUGIN_MEMHEAP_DEVICE_GPU,
    .segments = &segments,
    .copy = fake_copy,
    .owns = fake_owns,
    .host_alloc = fake_host_alloc,
    .host_free = fake_host_free,
    .host_register = fake_host_register,
    .host_unregister = fake_host_unregister,
};

static void fake_query(const shmem_plugin_core_t *core, shmem_plugin_query_t *result) {
    (void)core;
    result->available = 1;
    result->priority = 5;
    strcpy(result->reason, "stand-in GPU memory the CPU cannot touch (tests)");
}

static const void *fake_open(const shmem_plugin_core_t *core) {
    core_services = core;
    return &ops;
}

static const shmem_plugin_descriptor_t descriptor = {
    .abi_version = SHMEM_PLUGIN_ABI_VERSION,
    .framework = SHMEM_PLUGIN_FRAMEWORK_MEMHEAP,
    .struct_size = sizeof(shmem_plugin_descriptor_t),
    .name = "fakedev",
    .version = "1.0",
    .description = "test component: GPU-type memory reachable only through its copy slot",
    .caps = 0,
    .query = fake_query,
    .open = fake_open,
};

__attribute__((visibility("default"))) const shmem_plugin_descriptor_t *shmem_plugin_descriptor(void) {
    return &descriptor;
}
