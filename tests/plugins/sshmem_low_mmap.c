/*
 * A vendor's sshmem "mmap" at priority 5, for testing what the core says when a plugin hides
 * a built-in of the same name at another priority: with it, the built-in mmap (priority 30)
 * is hidden and another sshmem becomes the default choice. Only its probe is ever called; a
 * job that selects it by name fails to open it.
 *
 * Build:  cc -shared -fPIC -I plugins/include -o libvendor_sshmem.so tests/plugins/sshmem_low_mmap.c
 */
#include <string.h>

#include "shmem_plugin.h"

static void low_query(const shmem_plugin_core_t *core, shmem_plugin_query_t *result) {
    (void)core;
    result->available = 1;
    result->priority = 5;
    strcpy(result->reason, "a vendor's mmap at a low priority (tests)");
}

static const void *low_open(const shmem_plugin_core_t *core) {
    (void)core;
    return NULL;
}

static const shmem_plugin_descriptor_t descriptor = {
    .abi_version = SHMEM_PLUGIN_ABI_VERSION,
    .framework = SHMEM_PLUGIN_FRAMEWORK_SSHMEM,
    .struct_size = sizeof(shmem_plugin_descriptor_t),
    .name = "mmap",
    .version = "0.1",
    .description = "test component: a vendor's sshmem mmap at priority 5",
    .caps = SHMEM_PLUGIN_SSHMEM_CAP_PEER_ATTACH,
    .query = low_query,
    .open = low_open,
};

__attribute__((visibility("default"))) const shmem_plugin_descriptor_t *shmem_plugin_descriptor(void) {
    return &descriptor;
}
