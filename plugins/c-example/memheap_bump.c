/*
 * memheap "bump": a skeleton allocator in C. It hands out memory in address order and never
 * reuses it (free only retires the block), which is deterministic, as a memheap must be: the
 * same calls on every PE give the same offsets. Its bookkeeping lives in host memory (malloc),
 * never in the segment.
 *
 * Build:  cc -shared -fPIC -I plugins/include -o libmemheap_bump.so plugins/c-example/memheap_bump.c
 * Use:    SHMEM_MCA_plugin_path=<dir> SHMEM_MCA_memheap=bump oshrun ...
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_plugin.h"

struct block {
    uintptr_t addr;
    size_t size;
    int live;
};

struct heap {
    uintptr_t base, end, next;
    struct block *blocks;
    size_t n, cap;
};

static void *bump_create(void *base, size_t size) {
    struct heap *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->base = h->next = (uintptr_t)base;
    h->end = (uintptr_t)base + size;
    return h;
}

static struct block *find(struct heap *h, void *ptr) {
    for (size_t i = 0; i < h->n; i++)
        if (h->blocks[i].live && h->blocks[i].addr == (uintptr_t)ptr) return &h->blocks[i];
    return NULL;
}

static void *bump_alloc(void *heap, size_t size, size_t align) {
    struct heap *h = heap;
    if (align < 16) align = 16;
    uintptr_t at = (h->next + align - 1) & ~(uintptr_t)(align - 1);
    if (size == 0) size = 1;
    if (at < h->next || at > h->end || size > h->end - at) return NULL;
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        struct block *b = realloc(h->blocks, cap * sizeof *b);
        if (!b) return NULL;
        h->blocks = b;
        h->cap = cap;
    }
    h->blocks[h->n++] = (struct block){at, size, 1};
    h->next = at + size;
    return (void *)at;
}

static int bump_free(void *heap, void *ptr) {
    struct block *b = find(heap, ptr);
    if (!b) return SHMEM_PLUGIN_RC_ERROR;
    b->live = 0;
    return SHMEM_PLUGIN_RC_OK;
}

static void *bump_realloc(void *heap, void *ptr, size_t size) {
    struct block *b = find(heap, ptr);
    if (!b) return NULL;
    if (size <= b->size) return ptr;
    size_t old = b->size;
    void *p = bump_alloc(heap, size, 16); /* may move the block table: look again below */
    if (!p) return NULL;
    memcpy(p, ptr, old);
    bump_free(heap, ptr);
    return p;
}

static size_t bump_usable_size(void *heap, void *ptr) {
    struct block *b = find(heap, ptr);
    return b ? b->size : 0;
}

static void bump_destroy(void *heap) {
    struct heap *h = heap;
    free(h->blocks);
    free(h);
}

static const shmem_plugin_memheap_ops_t ops = {
    .struct_size = sizeof(shmem_plugin_memheap_ops_t),
    .create = bump_create,
    .alloc = bump_alloc,
    .free = bump_free,
    .realloc = bump_realloc,
    .usable_size = bump_usable_size,
    .destroy = bump_destroy,
    .device_type = SHMEM_PLUGIN_MEMHEAP_DEVICE_CPU,
};

static void bump_query(const shmem_plugin_core_t *core, shmem_plugin_query_t *result) {
    (void)core;
    result->available = 1;
    result->priority = 1;
    strcpy(result->reason, "bump allocation, memory never reused");
}

static const void *bump_open(const shmem_plugin_core_t *core) {
    (void)core;
    return &ops;
}

static const shmem_plugin_descriptor_t descriptor = {
    .abi_version = SHMEM_PLUGIN_ABI_VERSION,
    .framework = SHMEM_PLUGIN_FRAMEWORK_MEMHEAP,
    .struct_size = sizeof(shmem_plugin_descriptor_t),
    .name = "bump",
    .version = "1.0",
    .description = "example C component: bump allocator, host-side bookkeeping",
    .caps = 0,
    .query = bump_query,
    .open = bump_open,
};

__attribute__((visibility("default"))) const shmem_plugin_descriptor_t *shmem_plugin_descriptor(void) {
    return &descriptor;
}
