/* Fetch-add latency to the next PE on the default context and on a created one. Meant for the
 * spml path (run with SHMEM_LOCAL_MAP=0 under rshmem), where each created context has a UCX
 * worker of its own. */
#include "bench.h"

static long x;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_ctx_t created;
    if (shmem_ctx_create(0, &created) != 0) created = SHMEM_CTX_DEFAULT;
    long iters = 2000;
    for (int k = 0; k < 2; k++) {
        shmem_ctx_t ctx = k ? created : SHMEM_CTX_DEFAULT;
        shmem_ctx_long_atomic_fetch_add(ctx, &x, 1, (me + 1) % n); /* wire-up */
        shmem_barrier_all();
        double t0 = now_us();
        for (long i = 0; i < iters; i++) shmem_ctx_long_atomic_fetch_add(ctx, &x, 1, (me + 1) % n);
        result(k ? "fetch_add_created_ctx" : "fetch_add_default_ctx", 8, (now_us() - t0) / iters, "us");
        shmem_barrier_all();
    }
    if (created != SHMEM_CTX_DEFAULT) shmem_ctx_destroy(created);
    shmem_finalize();
    return 0;
}
