/*
 * spml "counting": a skeleton spml in C that wraps another spml plugin (by default rshmem's
 * "ucx"), counts the operations the core sends through it, and reports the counts when the
 * job finalizes. It shows how a vendor can interpose on the data path without rewriting it.
 *
 * Build:  cc -shared -fPIC -I plugins/include -o libspml_counting.so plugins/c-example/spml_counting.c -ldl
 * Use:    SHMEM_MCA_plugin_path=<dir> SHMEM_MCA_spml=counting \
 *         SHMEM_MCA_spml_counting_delegate=/path/to/librshmem_spml_ucx.so oshrun ...
 * The counts are logged at info level (SHMEM_LOG_LEVEL=info).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "shmem_plugin.h"

static const shmem_plugin_core_t *core;
static const shmem_plugin_descriptor_t *inner;   /* the wrapped spml's descriptor */
static const shmem_plugin_spml_ops_t *below;     /* and its table */
static shmem_plugin_spml_ops_t ops;              /* ours: its table with counting slots */
static unsigned long n_put, n_get, n_amo, n_quiet; /* updated atomically: THREAD_MULTIPLE */

#define COUNT(n) __atomic_fetch_add(&(n), 1, __ATOMIC_RELAXED)

/* Find the wrapped spml: the `delegate` parameter names its file. */
static const char *load_inner(const shmem_plugin_core_t *c) {
    if (inner) return NULL;
    const char *path = c ? c->param("spml", "counting", "delegate") : NULL;
    if (!path) path = "librshmem_spml_ucx.so";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return "the delegate spml could not be loaded (set SHMEM_MCA_spml_counting_delegate)";
    const shmem_plugin_descriptor_t *(*get)(void) =
        (const shmem_plugin_descriptor_t *(*)(void))dlsym(lib, SHMEM_PLUGIN_DESCRIPTOR_SYMBOL);
    const shmem_plugin_descriptor_t *d = get ? get() : NULL;
    if (!d || d->abi_version != SHMEM_PLUGIN_ABI_VERSION || d->framework != SHMEM_PLUGIN_FRAMEWORK_SPML)
        return "the delegate is not an spml plugin of this ABI";
    inner = d;
    return NULL;
}

static int c_put(shmem_plugin_spml_ctx_t ctx, int pe, uint32_t seg, uint64_t raddr, const void *src, size_t len) {
    COUNT(n_put);
    return below->put(ctx, pe, seg, raddr, src, len);
}
static int c_get(shmem_plugin_spml_ctx_t ctx, int pe, uint32_t seg, uint64_t raddr, void *dst, size_t len) {
    COUNT(n_get);
    return below->get(ctx, pe, seg, raddr, dst, len);
}
static int c_put_nbi(shmem_plugin_spml_ctx_t ctx, int pe, uint32_t seg, uint64_t raddr, const void *src, size_t len) {
    COUNT(n_put);
    return below->put_nbi(ctx, pe, seg, raddr, src, len);
}
static int c_get_nbi(shmem_plugin_spml_ctx_t ctx, int pe, uint32_t seg, uint64_t raddr, void *dst, size_t len) {
    COUNT(n_get);
    return below->get_nbi(ctx, pe, seg, raddr, dst, len);
}
static int c_atomic(shmem_plugin_spml_ctx_t ctx, int pe, uint32_t seg, uint64_t raddr, uint32_t op,
                    uint32_t size, uint64_t value, uint64_t cond, uint64_t *fetched) {
    COUNT(n_amo);
    return below->atomic(ctx, pe, seg, raddr, op, size, value, cond, fetched);
}
static int c_quiet(shmem_plugin_spml_ctx_t ctx) {
    COUNT(n_quiet);
    return below->quiet(ctx);
}

static void c_finalize(void) {
    char msg[200];
    snprintf(msg, sizeof msg, "PE %d: %lu puts, %lu gets, %lu atomics, %lu quiets through %s", core->my_pe,
             n_put, n_get, n_amo, n_quiet, inner->name);
    core->log(SHMEM_PLUGIN_LOG_INFO, "spml counting", msg);
    below->finalize();
}

static void c_query(const shmem_plugin_core_t *c, shmem_plugin_query_t *result) {
    const char *why = load_inner(c);
    if (why) {
        result->available = 0;
        snprintf(result->reason, sizeof result->reason, "%s", why);
        return;
    }
    inner->query(c, result);
    char note[sizeof result->reason];
    int k = snprintf(note, sizeof note, "counting over %s: ", inner->name);
    if (k > 0 && (size_t)k < sizeof note) {
        strncat(note, result->reason, sizeof note - (size_t)k - 1);
        memcpy(result->reason, note, sizeof note);
    }
    result->priority = 1; /* only when asked for */
}

static const void *c_open(const shmem_plugin_core_t *c) {
    core = c;
    if (load_inner(c)) return NULL;
    below = inner->open(c);
    if (!below) return NULL;
    /* Start from the delegate's table (only as much of it as both know), then interpose. */
    size_t n = below->struct_size < sizeof ops ? below->struct_size : sizeof ops;
    memcpy(&ops, below, n);
    ops.struct_size = n;
    ops.put = c_put;
    ops.get = c_get;
    ops.put_nbi = c_put_nbi;
    ops.get_nbi = c_get_nbi;
    ops.atomic = c_atomic;
    ops.quiet = c_quiet;
    ops.finalize = c_finalize;
    return &ops;
}

static const shmem_plugin_param_t params[] = {
    {"delegate", SHMEM_PLUGIN_PARAM_STRING, "librshmem_spml_ucx.so", "The spml plugin file whose operations are counted"},
};

static const shmem_plugin_descriptor_t descriptor = {
    .abi_version = SHMEM_PLUGIN_ABI_VERSION,
    .framework = SHMEM_PLUGIN_FRAMEWORK_SPML,
    .struct_size = sizeof(shmem_plugin_descriptor_t),
    .name = "counting",
    .version = "1.0",
    .description = "example C component: counts the operations of another spml it wraps",
    .params = params,
    .n_params = 1,
    .caps = SHMEM_PLUGIN_SPML_CAP_MULTI_HOST | SHMEM_PLUGIN_SPML_CAP_THREAD_MULTIPLE,
    .query = c_query,
    .open = c_open,
};

__attribute__((visibility("default"))) const shmem_plugin_descriptor_t *shmem_plugin_descriptor(void) {
    return &descriptor;
}
