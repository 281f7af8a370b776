/* SHMEM_DEFAULT_SPACE=GPU: SHMEM_SPACE_DEFAULT is SHMEM_SPACE_GPU, its team SHMEM_TEAM_WORLD,
 * and shmem_malloc, shmem_calloc, shmem_align, shmem_realloc, shmem_malloc_with_hints and
 * shmem_free work on device memory, which RMA, atomics and world collectives then use. The
 * CPU space stays a host heap of its own. EXPECT_HEAP_SIZE (environment) is the size
 * shmemx_heap_size must report. Device memory is read back through shmem_getmem only
 * (under the test memheap "fakedev" the CPU cannot touch it). */
#include "check.h"
#include <shmemx.h>
#include <stdint.h>
#include <string.h>

#define N 256

static void get_local(void *dst, const void *dev, size_t bytes) { shmem_getmem(dst, dev, bytes, shmem_my_pe()); }

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), next = (me + 1) % n, prev = (me + n - 1) % n;

    CHECK(SHMEM_SPACE_DEFAULT == SHMEM_SPACE_GPU && SHMEM_SPACE_GPU != SHMEM_SPACE_INVALID);
    CHECK(SHMEM_SPACE_CPU != SHMEM_SPACE_INVALID && SHMEM_SPACE_CPU != SHMEM_SPACE_DEFAULT);
    shmem_device_type_t dt = SHMEM_DEVICE_CPU;
    CHECK(shmem_space_get_device_type(SHMEM_SPACE_DEFAULT, &dt) == 0 && dt == SHMEM_DEVICE_GPU);
    shmem_team_t team = SHMEM_TEAM_INVALID;
    CHECK(shmem_space_get_team(SHMEM_SPACE_DEFAULT, &team) == 0 && team == SHMEM_TEAM_WORLD);
    CHECK(SHMEM_TEAM_GPU == SHMEM_TEAM_WORLD);
    shmem_space_cap_t caps = 0;
    CHECK(shmem_space_get_caps(SHMEM_SPACE_DEFAULT, &caps) == 0 && caps & SHMEM_SPACE_CAP_COLLECTIVES);

    /* shmem_malloc is device memory: not load/store accessible, zeroed by calloc */
    int *a = shmem_malloc(N * sizeof(int));
    int *z = shmem_calloc(N, sizeof(int));
    long *ctr = shmem_malloc_with_hints(sizeof(long), SHMEM_MALLOC_ATOMICS_REMOTE);
    CHECK(a && z && ctr);
    /* shmem_ptr of device memory is a device address (peers' copies where CUDA IPC maps them),
     * for kernels, not for the CPU: this PE's own copy is the object itself. */
    CHECK(shmem_ptr(a, me) == a);
    int back[N], local[N];
    get_local(back, z, sizeof back);
    for (int i = 0; i < N; i++) CHECK(back[i] == 0);

    /* RMA around the ring, an atomic, a reduction and an fcollect on the world team */
    for (int i = 0; i < N; i++) local[i] = me * 1000 + i;
    shmem_putmem(a, local, sizeof local, next);
    shmem_long_atomic_set(ctr, 0, me);
    shmem_barrier_all();
    get_local(back, a, sizeof back);
    for (int i = 0; i < N; i++) CHECK(back[i] == prev * 1000 + i);
    shmem_long_atomic_add(ctr, me + 1, 0);
    shmem_barrier_all();
    if (me == 0) CHECK(shmem_long_atomic_fetch(ctr, 0) == (long)n * (n + 1) / 2);
    CHECK(shmem_int_sum_reduce(SHMEM_TEAM_WORLD, z, a, N) == 0);
    get_local(back, z, sizeof back);
    for (int i = 0; i < N; i++) CHECK(back[i] == 1000 * n * (n - 1) / 2 + n * i);
    shmem_barrier_all();
    int *all = shmem_malloc((size_t)n * 4 * sizeof(int));
    CHECK(all);
    CHECK(shmem_int_fcollect(SHMEM_TEAM_WORLD, all, a, 4) == 0);
    get_local(back, all, (size_t)n * 4 * sizeof(int));
    for (int p = 0; p < n; p++)
        for (int i = 0; i < 4; i++) CHECK(back[p * 4 + i] == ((p + n - 1) % n) * 1000 + i);

    /* realloc keeps the contents (copied on the device); align within the heap's guarantee */
    int *b = shmem_realloc(a, 4 * N * sizeof(int));
    CHECK(b);
    get_local(back, b, sizeof back);
    for (int i = 0; i < N; i++) CHECK(back[i] == prev * 1000 + i);
    void *al = shmem_align(256, 100);
    CHECK(al && (uintptr_t)al % 256 == 0);
    /* sized by SHMEM_GPU_SYMMETRIC_SIZE, else SHMEM_SYMMETRIC_SIZE (the test says which) */
    CHECK(shmemx_heap_size() == (size_t)atol(getenv("EXPECT_HEAP_SIZE") ? getenv("EXPECT_HEAP_SIZE") : "0"));

    /* the CPU space is host memory of its own: stores work there */
    int *h = shmem_space_malloc(SHMEM_SPACE_CPU, sizeof(int));
    CHECK(h);
    *h = me;
    shmem_barrier_all();
    CHECK(shmem_int_g(h, next) == next);
    shmem_space_free(SHMEM_SPACE_CPU, h);

    shmem_free(al);
    shmem_free(all);
    shmem_free(b);
    shmem_free(z);
    shmem_free(ctr);
    shmem_finalize();
    printf("default_gpu: PE %d ok\n", me);
    return 0;
}
