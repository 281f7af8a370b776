/*
 * sshmem "anon": a skeleton segment backend in C. Segments are private anonymous mappings, so
 * local peers cannot map them (no SHMEM_PLUGIN_SSHMEM_CAP_PEER_ATTACH): the core then reaches
 * same-host peers through the spml, as it does peers on other hosts.
 *
 * Build:  cc -shared -fPIC -I plugins/include -o libsshmem_anon.so plugins/c-example/sshmem_anon.c
 * Use:    SHMEM_MCA_plugin_path=<dir> SHMEM_MCA_sshmem=anon oshrun ...
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "shmem_plugin.h"

static int anon_create(size_t size, void *hint, shmem_plugin_segment_t *out) {
    void *p = mmap(hint, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return SHMEM_PLUGIN_RC_ERROR;
    memset(out, 0, sizeof *out);
    out->base = p;
    out->size = size;
    out->blob_len = 0; /* nothing a peer could attach to */
    return SHMEM_PLUGIN_RC_OK;
}

static int anon_attach(const uint8_t *blob, size_t blob_len, size_t size, void **addr) {
    (void)blob, (void)blob_len, (void)size, (void)addr;
    return SHMEM_PLUGIN_RC_UNSUPPORTED;
}

static void anon_detach(void *addr, size_t size) { (void)addr, (void)size; }

/* Nothing is named, so nothing can leak if the job dies. */
static void anon_unlink(shmem_plugin_segment_t *seg) { (void)seg; }

static void anon_destroy(shmem_plugin_segment_t *seg) {
    if (seg && seg->base) munmap(seg->base, seg->size);
    if (seg) seg->base = NULL;
}

static const shmem_plugin_sshmem_ops_t ops = {
    .struct_size = sizeof(shmem_plugin_sshmem_ops_t),
    .create = anon_create,
    .attach = anon_attach,
    .detach = anon_detach,
    .unlink = anon_unlink,
    .destroy = anon_destroy,
};

static void anon_query(const shmem_plugin_core_t *core, shmem_plugin_query_t *result) {
    (void)core;
    result->available = 1;
    result->priority = 1; /* never chosen unless asked for */
    strcpy(result->reason, "private anonymous memory (peers go through the spml)");
}

static const void *anon_open(const shmem_plugin_core_t *core) {
    (void)core;
    return &ops;
}

static const shmem_plugin_descriptor_t descriptor = {
    .abi_version = SHMEM_PLUGIN_ABI_VERSION,
    .framework = SHMEM_PLUGIN_FRAMEWORK_SSHMEM,
    .struct_size = sizeof(shmem_plugin_descriptor_t),
    .name = "anon",
    .version = "1.0",
    .description = "example C component: private anonymous segments, reached by peers through the spml",
    .caps = 0,
    .query = anon_query,
    .open = anon_open,
};

__attribute__((visibility("default"))) const shmem_plugin_descriptor_t *shmem_plugin_descriptor(void) {
    return &descriptor;
}
