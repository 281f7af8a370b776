/*
 * A bump allocator for memheap components in C: memory is handed out in address order and never
 * reused (free only retires the block), which is deterministic, as a memheap must be: the same
 * calls on every PE give the same offsets. Bookkeeping lives in host memory (malloc), never in
 * the segment. Include it in one component's source; it defines static bump_* functions for the
 * table's slots. A component whose memory the CPU cannot touch defines BUMP_COPY(dst, src, n)
 * (returning 0 on success) before including it, for realloc's copy.
 */
#ifndef RSHMEM_BUMP_HEAP_H
#define RSHMEM_BUMP_HEAP_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_plugin.h"

#ifndef BUMP_COPY
#define BUMP_COPY(dst, src, n) (memcpy((dst), (src), (n)), 0)
#endif

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

static struct block *bump_find(struct heap *h, void *ptr) {
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
    struct block *b = bump_find(heap, ptr);
    if (!b) return SHMEM_PLUGIN_RC_ERROR;
    b->live = 0;
    return SHMEM_PLUGIN_RC_OK;
}

static void *bump_realloc(void *heap, void *ptr, size_t size) {
    struct block *b = bump_find(heap, ptr);
    if (!b) return NULL;
    if (size <= b->size) return ptr;
    size_t old = b->size;
    void *p = bump_alloc(heap, size, 16); /* may move the block table: look again below */
    if (!p) return NULL;
    if (BUMP_COPY(p, ptr, old) != 0) return NULL;
    bump_free(heap, ptr);
    return p;
}

static size_t bump_usable_size(void *heap, void *ptr) {
    struct block *b = bump_find(heap, ptr);
    return b ? b->size : 0;
}

static void bump_destroy(void *heap) {
    struct heap *h = heap;
    free(h->blocks);
    free(h);
}
#endif
