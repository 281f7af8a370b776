/* The host-initiated part of the OpenSHMEM Auxiliary Specification for GPU Support (shmemg.h):
 * shmem_init_thread with SHMEM_DEVICE_HOST_INIT, the GPU heap through shmemg_malloc, _calloc,
 * _align and _free, the device teams, shmem_ptr on GPU-heap objects, and host-initiated RMA,
 * put-with-signal, atomics and a collective on them. Device memory is read back through
 * shmem_getmem only.
 *
 * EXPECT_GPU=0: no GPU heap can be made here, so HOST_INIT is not granted and the device teams
 * are invalid. EXPECT_HEAP=BYTES: SHMEM_DEVICE_SYMMETRIC_SIZE, so a larger block fails.
 * EXPECT_SHARED=K: SHMEM_DEVICE_TEAM_SHARED has K PEs (all of them unless given; 1 where a PE
 * maps no peer's GPU heap, under SHMEM_LOCAL_MAP=0). */
#include "check.h"
#include <shmemg.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define N 256

static int want(const char *var, int dflt) {
    const char *v = getenv(var);
    return v && *v ? atoi(v) : dflt;
}

int main(void) {
    int provided = -1;
    int rc = shmem_init_thread(SHMEM_THREAD_SINGLE | SHMEM_DEVICE_HOST_INIT | SHMEM_DEVICE_KERNEL_INIT, &provided);
    CHECK(rc == 0);
    int me = shmem_my_pe(), n = shmem_n_pes(), next = (me + 1) % n, prev = (me + n - 1) % n;
    CHECK((provided & ~(SHMEM_DEVICE_HOST_INIT | SHMEM_DEVICE_KERNEL_INIT)) == SHMEM_THREAD_SINGLE);
    CHECK(!(provided & SHMEM_DEVICE_KERNEL_INIT)); /* no routines for kernels */
    shmem_ctx_t dctx = SHMEM_CTX_INVALID;
    CHECK(shmem_ctx_create(SHMEM_DEVICE_CTX, &dctx) != 0 && dctx == SHMEM_CTX_INVALID);
    if (!want("EXPECT_GPU", 1)) {
        CHECK(!(provided & SHMEM_DEVICE_HOST_INIT));
        shmemg_free(NULL); /* no action, GPU heap or not */
        CHECK(SHMEM_DEVICE_TEAM_WORLD == SHMEM_TEAM_INVALID);
        CHECK(SHMEM_DEVICE_TEAM_SHARED == SHMEM_TEAM_INVALID);
        REPORT_OK("gpu_aux");
        shmem_finalize();
        return 0;
    }
    CHECK(provided & SHMEM_DEVICE_HOST_INIT);

    /* Zero sizes: NULL, and (calloc) no barrier. */
    CHECK(shmemg_malloc(0) == NULL);
    CHECK(shmemg_calloc(0, 8) == NULL && shmemg_calloc(8, 0) == NULL);
    CHECK(shmemg_align(64, 0) == NULL);
    long heap = want("EXPECT_HEAP", 0);
    if (heap) CHECK(shmemg_malloc((size_t)heap + 4096) == NULL); /* SHMEM_DEVICE_SYMMETRIC_SIZE */

    long *a = shmemg_malloc(N * sizeof(long));
    long *z = shmemg_calloc(N, sizeof(long));
    long *c = shmemg_align(4096, 100 * sizeof(long));
    uint64_t *sig = shmemg_calloc(1, sizeof(uint64_t));
    long *all = shmemg_malloc((size_t)n * sizeof(long));
    CHECK(a && z && c && sig && all);
    CHECK((uintptr_t)c % 4096 == 0);
    static long back[N], local[N];
    shmem_getmem(back, z, sizeof back, me);
    for (int i = 0; i < N; i++) CHECK(back[i] == 0);

    /* The device teams. */
    CHECK(SHMEM_DEVICE_TEAM_WORLD != SHMEM_TEAM_INVALID);
    CHECK(shmem_team_n_pes(SHMEM_DEVICE_TEAM_WORLD) == n && shmem_team_my_pe(SHMEM_DEVICE_TEAM_WORLD) == me);
    CHECK(shmem_team_translate_pe(SHMEM_DEVICE_TEAM_WORLD, next, SHMEM_TEAM_WORLD) == next);
    /* shmem_ptr gives device addresses: this PE's own copy is the object itself, and every PE
     * of SHMEM_DEVICE_TEAM_SHARED has one. */
    CHECK(shmem_ptr(a, me) == a);
    CHECK(SHMEM_DEVICE_TEAM_SHARED != SHMEM_TEAM_INVALID);
    int sn = shmem_team_n_pes(SHMEM_DEVICE_TEAM_SHARED);
    CHECK(sn == want("EXPECT_SHARED", n));
    for (int i = 0; i < sn; i++) CHECK(shmem_team_ptr(SHMEM_DEVICE_TEAM_SHARED, a, i) != NULL);
    if (sn == 1) CHECK(shmem_ptr(a, next) == NULL || n == 1);

    /* Host-initiated RMA into the next PE's GPU heap, with a signal behind it. */
    for (int i = 0; i < N; i++) local[i] = me * 1000 + i;
    /* PE 0 puts late, so PE 1 waits long enough on its device-memory signal word for the
     * wait to look at the clock and publish the word's value (read through the memheap: a
     * plain load of device memory there was a SIGSEGV, seen in CI). */
    if (me == 0) usleep(200 * 1000);
    shmem_putmem_signal(a, local, sizeof local, sig, 1, SHMEM_SIGNAL_ADD, next);
    shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 1);
    shmem_getmem(back, a, sizeof back, me);
    for (int i = 0; i < N; i++) CHECK(back[i] == prev * 1000 + i);
    /* Device to device, an atomic, a collective on the device world team. */
    shmem_barrier_all();
    shmem_putmem(c, a, 100 * sizeof(long), next);
    shmem_long_atomic_add(&z[0], me + 1, 0);
    shmem_barrier_all();
    shmem_getmem(back, c, 100 * sizeof(long), me);
    for (int i = 0; i < 100; i++) CHECK(back[i] == ((prev + n - 1) % n) * 1000 + i);
    if (me == 0) CHECK(shmem_long_g(&z[0], 0) == (long)n * (n + 1) / 2);
    CHECK(shmem_long_fcollect(SHMEM_DEVICE_TEAM_WORLD, all, &a[0], 1) == 0);
    shmem_getmem(back, all, (size_t)n * sizeof(long), me);
    for (int i = 0; i < n; i++) CHECK(back[i] == ((i + n - 1) % n) * 1000);

    shmemg_free(NULL);
    shmemg_free(all);
    shmemg_free(sig);
    shmemg_free(c);
    shmemg_free(z);
    shmemg_free(a);
    REPORT_OK("gpu_aux");
    shmem_finalize();
    return 0;
}
