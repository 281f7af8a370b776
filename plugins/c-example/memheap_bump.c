/*
 * memheap "bump": a skeleton allocator in C. It hands out memory in address order and never
 * reuses it (free only retires the block), which is deterministic, as a memheap must be: the
 * same calls on every PE give the same offsets. Its bookkeeping lives in host memory (malloc),
 * never in the segment. The allocator itself is bump_heap.h, which other C components share.
 *
 * Build:  cc -shared -fPIC -I plugins/include -o libmemheap_bump.so plugins/c-example/memheap_bump.c
 * Use:    SHMEM_MCA_plugin_path=<dir> SHMEM_MCA_memheap=bump oshrun ...
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bump_heap.h"
#include "shmem_plugin.h"

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
