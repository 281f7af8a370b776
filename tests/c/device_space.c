/* GPU memory spaces: SHMEM_SPACE_GPU (made at init under SHMEM_ENABLE_GPU_SPACE) and a created
 * GPU space, with RMA in every direction between host and device memory, strided and
 * non-blocking forms, transfers of more than a megabyte, atomics, waits, put-with-signal, calloc and every kind of collective (team
 * and active-set forms, device or host memory on either side) on device memory. Every value
 * in device memory is read back through shmem_getmem, never by a load: under the test memheap
 * "fakedev" the device memory is inaccessible to the CPU, so a load by this program or by the
 * library would end the PE; on a real GPU it is device memory.
 *
 * DEVICE_MODE (environment):
 *   unset   the checks above
 *   coll    a reduction on device memory, which must end the job with a clear error (run with
 *           SHMEM_GPU_COLLECTIVES=0, which makes GPU spaces without collectives)
 *   absent  SHMEM_SPACE_GPU must be invalid and creating a GPU space must return nonzero
 *   destroy shmem_space_destroy(SHMEM_SPACE_GPU), which must end the job (a predefined space) */
#include "check.h"
#include <stdint.h>
#include <string.h>

#define N 1000

static long dev_long(long *dev_word) { /* a device word's value, by a local get */
    long v;
    shmem_getmem(&v, dev_word, sizeof v, shmem_my_pe());
    return v;
}

static void check_space(shmem_space_t gpu, int me, int n) {
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    shmem_device_type_t dt = SHMEM_DEVICE_CPU;
    CHECK(shmem_space_get_device_type(gpu, &dt) == 0 && dt == SHMEM_DEVICE_GPU);
    shmem_space_cap_t caps = 0;
    CHECK(shmem_space_get_caps(gpu, &caps) == 0);
    CHECK(caps & SHMEM_SPACE_CAP_RMA && caps & SHMEM_SPACE_CAP_ATOMICS && caps & SHMEM_SPACE_CAP_WORLD_ACCESS);
    CHECK(!(caps & SHMEM_SPACE_CAP_DIRECT_ACCESS) && caps & SHMEM_SPACE_CAP_COLLECTIVES);

    int *a = shmem_space_malloc(gpu, N * sizeof(int));
    int *b = shmem_space_calloc(gpu, N, sizeof(int));
    long *ctr = shmem_space_calloc(gpu, 4, sizeof(long));
    uint64_t *sig = shmem_space_calloc(gpu, 1, sizeof(uint64_t));
    int *hostbuf = shmem_malloc(N * sizeof(int)); /* host symmetric memory */
    int local[N], back[N];
    CHECK(a && b && ctr && sig && hostbuf);
    /* shmem_ptr of device memory is a device address (peers' copies where CUDA IPC maps them),
     * for kernels, not for the CPU: this PE's own copy is the object itself. */
    CHECK(shmem_ptr(a, me) == a);

    /* calloc zeroes device memory */
    shmem_getmem(back, b, sizeof back, me);
    for (int i = 0; i < N; i++) CHECK(back[i] == 0);

    /* host -> device on the next PE; device -> host back */
    for (int i = 0; i < N; i++) local[i] = me * 10000 + i;
    shmem_putmem(a, local, sizeof local, next);
    shmem_barrier_all();
    shmem_getmem(back, a, sizeof back, me);
    for (int i = 0; i < N; i++) CHECK(back[i] == prev * 10000 + i);

    /* device -> device (this PE's a to the next PE's b), non-blocking */
    shmem_putmem_nbi(b, a, sizeof local, next);
    shmem_quiet();
    shmem_barrier_all();
    shmem_getmem(back, b, sizeof back, me);
    for (int i = 0; i < N; i++) CHECK(back[i] == ((prev + n - 1) % n) * 10000 + i);

    /* device -> host symmetric on the next PE, and get from a peer's device memory */
    shmem_putmem(hostbuf, a, sizeof local, next);
    shmem_barrier_all();
    for (int i = 0; i < N; i++) CHECK(hostbuf[i] == ((prev + n - 1) % n) * 10000 + i);
    shmem_getmem_nbi(back, a, sizeof back, next);
    shmem_quiet();
    for (int i = 0; i < N; i++) CHECK(back[i] == me * 10000 + i);
    /* a peer's device memory straight into this PE's device memory */
    shmem_getmem(b, a, 16 * sizeof(int), next);
    shmem_getmem(back, b, 16 * sizeof(int), me);
    for (int i = 0; i < 16; i++) CHECK(back[i] == me * 10000 + i);

    /* single elements and strides */
    shmem_int_p(&a[3], -7, next);
    shmem_barrier_all();
    CHECK(shmem_int_g(&a[3], me) == -7);
    int s[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    shmem_int_iput(b, s, 3, 1, 8, next); /* b[0,3,...,21] = 1..8 */
    shmem_barrier_all();
    int got[8];
    shmem_int_iget(got, b, 1, 3, 8, me);
    for (int i = 0; i < 8; i++) CHECK(got[i] == i + 1);

    /* atomics on device words: every PE adds to PE 0's counter, with every kind of AMO */
    shmem_barrier_all();
    for (int i = 0; i < 100; i++) shmem_long_atomic_add(&ctr[0], 1, 0);
    long f = shmem_long_atomic_fetch_inc(&ctr[1], 0);
    CHECK(f >= 0 && f < n);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(dev_long(&ctr[0]) == 100L * n);
        CHECK(dev_long(&ctr[1]) == n);
    }
    CHECK(shmem_long_atomic_fetch(&ctr[0], 0) == 100L * n);
    shmem_barrier_all();
    if (me == 0) {
        shmem_long_atomic_set(&ctr[2], 5, next);
        CHECK(shmem_long_atomic_swap(&ctr[2], 9, next) == 5);
        CHECK(shmem_long_atomic_compare_swap(&ctr[2], 8, 1, next) == 9); /* fails */
        CHECK(shmem_long_atomic_compare_swap(&ctr[2], 9, 1, next) == 9);
        CHECK(shmem_ulong_atomic_fetch_xor((unsigned long *)&ctr[2], 3, next) == 1);
        CHECK(shmem_long_atomic_fetch(&ctr[2], next) == 2);
        int *w32 = (int *)&ctr[3];
        CHECK(shmem_int_atomic_fetch_add(&w32[1], 40, next) == 0);
        CHECK(shmem_int_atomic_fetch(&w32[1], next) == 40 && shmem_int_atomic_fetch(&w32[0], next) == 0);
    }
    shmem_barrier_all();

    /* a wait on a device word, set by the previous PE; put-with-signal into device memory */
    shmem_long_atomic_set(&ctr[3], 0, me);
    shmem_barrier_all();
    shmem_long_atomic_set(&ctr[3], me + 1, next);
    shmem_long_wait_until(&ctr[3], SHMEM_CMP_EQ, prev + 1);
    CHECK(dev_long(&ctr[3]) == prev + 1);
    shmem_barrier_all();
    shmem_putmem_signal(a, local, 64 * sizeof(int), sig, 1, SHMEM_SIGNAL_ADD, next);
    CHECK(shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 1) == 1);
    shmem_getmem(back, a, 64 * sizeof(int), me);
    for (int i = 0; i < 64; i++) CHECK(back[i] == prev * 10000 + i);
    CHECK(shmem_test(&ctr[3], SHMEM_CMP_EQ, prev + 1) == 1);

    shmem_barrier_all();
    shmem_space_free(gpu, a);
    shmem_space_free(gpu, b);
    shmem_space_free(gpu, ctr);
    shmem_space_free(gpu, sig);
    shmem_free(hostbuf);
}

/* Transfers larger than a staging buffer (1 MiB) and than one message of spml ucx's transfers
 * through the target (256 KiB): device memory to a peer's device memory, and a get from a
 * peer's device memory into device memory. Needs 2.6 MB of the space. */
static void check_large(shmem_space_t gpu, int me, int n) {
    enum { BIG = 1300 * 1024 / sizeof(int) };
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    int *x = shmem_space_malloc(gpu, BIG * sizeof(int)), *y = shmem_space_malloc(gpu, BIG * sizeof(int));
    int *h = malloc(BIG * sizeof(int)), *g = malloc(BIG * sizeof(int));
    CHECK(x && y && h && g);
    for (int i = 0; i < BIG; i++) h[i] = me * 1000003 + i;
    shmem_putmem(x, h, BIG * sizeof(int), me);
    shmem_barrier_all();
    shmem_putmem(y, x, BIG * sizeof(int), next); /* y on the next PE holds this PE's data */
    shmem_barrier_all();
    shmem_getmem(g, y, BIG * sizeof(int), me);
    for (int i = 0; i < BIG; i++) CHECK(g[i] == prev * 1000003 + i);
    /* a collective of more than a megabyte: its copies through the host shadow reach past the
     * 2 MiB ranges the shadow is page-locked in (x and y lie next to each other) */
    shmem_broadcastmem(SHMEM_TEAM_WORLD, x, y, BIG * sizeof(int), 0);
    shmem_getmem(g, x, BIG * sizeof(int), me);
    for (int i = 0; i < BIG; i++) CHECK(g[i] == (n - 1) * 1000003 + i);
    memset(h, 0, BIG * sizeof(int));
    shmem_putmem(x, h, BIG * sizeof(int), me);
    shmem_getmem(x, y, BIG * sizeof(int), next); /* this PE's data back, into device memory */
    shmem_getmem(g, x, BIG * sizeof(int), me);
    for (int i = 0; i < BIG; i++) CHECK(g[i] == me * 1000003 + i);
    shmem_barrier_all();
    shmem_space_free(gpu, x);
    shmem_space_free(gpu, y);
    free(h);
    free(g);
}

static long pSync_b[SHMEM_BCAST_SYNC_SIZE], pSync_c[SHMEM_COLLECT_SYNC_SIZE];

static void put_local(void *dev, const void *src, size_t bytes) { shmem_putmem(dev, src, bytes, shmem_my_pe()); }
static void get_local(void *dst, const void *dev, size_t bytes) { shmem_getmem(dst, dev, bytes, shmem_my_pe()); }

/* Collectives whose buffers are device memory (through the GPU space's host shadow): every
 * result read back from the device and compared, and the bytes around each result checked
 * untouched. READY() before each: a collective's dest must be ready on every PE before any PE
 * calls it (a fast PE may write into a slow one's dest as soon as it enters). */
#define READY() shmem_barrier_all()
static void check_collectives(shmem_space_t gpu, int me, int n) {
    enum { M = 64, K = 8 };
    shmem_team_t team = SHMEM_TEAM_INVALID;
    CHECK(shmem_space_get_team(gpu, &team) == 0 && shmem_team_n_pes(team) == n);
    size_t cap = (size_t)2 * n * M + 8;
    long *src = shmem_space_malloc(gpu, cap * sizeof(long));
    long *dst = shmem_space_malloc(gpu, cap * sizeof(long));
    long *hostdst = shmem_malloc(cap * sizeof(long));
    long *h = malloc(cap * sizeof(long)), *back = malloc(cap * sizeof(long)), *fill = malloc(cap * sizeof(long));
    CHECK(src && dst && hostdst && h && back && fill);
    for (size_t i = 0; i < cap; i++) fill[i] = -1;

    /* reductions, device to device, in place, and device to host */
    for (int i = 0; i < M; i++) h[i] = (long)(me + 1) * i;
    put_local(src, h, M * sizeof(long));
    put_local(dst, fill, cap * sizeof(long));
    READY();
    CHECK(shmem_long_sum_reduce(team, dst, src, M) == 0);
    get_local(back, dst, (M + 4) * sizeof(long));
    for (int i = 0; i < M; i++) CHECK(back[i] == (long)i * n * (n + 1) / 2);
    for (int i = M; i < M + 4; i++) CHECK(back[i] == -1);
    READY();
    CHECK(shmem_long_max_reduce(SHMEM_TEAM_WORLD, src, src, M) == 0);
    get_local(back, src, M * sizeof(long));
    for (int i = 0; i < M; i++) CHECK(back[i] == (long)n * i);
    READY();
    CHECK(shmem_long_min_reduce(SHMEM_TEAM_WORLD, hostdst, src, M) == 0);
    for (int i = 0; i < M; i++) CHECK(hostdst[i] == (long)n * i);

    /* scans */
    put_local(src, h, M * sizeof(long));
    READY();
    CHECK(shmem_long_sum_inscan(team, dst, src, M) == 0);
    get_local(back, dst, M * sizeof(long));
    for (int i = 0; i < M; i++) CHECK(back[i] == (long)i * (me + 1) * (me + 2) / 2);
    READY();
    CHECK(shmem_long_sum_exscan(team, dst, src, M) == 0);
    get_local(back, dst, M * sizeof(long));
    for (int i = 0; i < M; i++) CHECK(back[i] == (long)i * me * (me + 1) / 2);

    /* broadcast from the last PE */
    for (int i = 0; i < M; i++) h[i] = 1000L * me + i;
    put_local(src, h, M * sizeof(long));
    READY();
    CHECK(shmem_long_broadcast(team, dst, src, M, n - 1) == 0);
    get_local(back, dst, M * sizeof(long));
    for (int i = 0; i < M; i++) CHECK(back[i] == 1000L * (n - 1) + i);

    /* fcollect, and a collect of me + 1 elements per PE (the bytes after the total untouched) */
    for (int i = 0; i < M; i++) h[i] = 100L * me + i;
    put_local(src, h, M * sizeof(long));
    READY();
    CHECK(shmem_long_fcollect(team, dst, src, M) == 0);
    get_local(back, dst, (size_t)n * M * sizeof(long));
    for (int p = 0; p < n; p++)
        for (int i = 0; i < M; i++) CHECK(back[p * M + i] == 100L * p + i);
    put_local(dst, fill, cap * sizeof(long));
    READY();
    CHECK(shmem_long_collect(team, dst, src, me + 1) == 0);
    int total = n * (n + 1) / 2;
    get_local(back, dst, (total + 4) * sizeof(long));
    for (int p = 0, at = 0; p < n; at += ++p)
        for (int i = 0; i <= p; i++) CHECK(back[at + i] == 100L * p + i);
    for (int i = total; i < total + 4; i++) CHECK(back[i] == -1);

    /* alltoall, and alltoalls into every other element (the gaps untouched) */
    for (int p = 0; p < n; p++)
        for (int i = 0; i < K; i++) h[p * K + i] = 1000L * me + 10L * p + i;
    put_local(src, h, (size_t)n * K * sizeof(long));
    READY();
    CHECK(shmem_long_alltoall(team, dst, src, K) == 0);
    get_local(back, dst, (size_t)n * K * sizeof(long));
    for (int p = 0; p < n; p++)
        for (int i = 0; i < K; i++) CHECK(back[p * K + i] == 1000L * p + 10L * me + i);
    put_local(dst, fill, cap * sizeof(long));
    READY();
    CHECK(shmem_long_alltoalls(team, dst, src, 2, 1, K) == 0);
    get_local(back, dst, (size_t)2 * n * K * sizeof(long));
    for (int p = 0; p < n; p++)
        for (int i = 0; i < K; i++) {
            CHECK(back[2 * (p * K + i)] == 1000L * p + 10L * me + i);
            CHECK(back[2 * (p * K + i) + 1] == -1);
        }

    /* the active-set forms: the root's dest stays as it was */
    put_local(dst, fill, cap * sizeof(long));
    for (int i = 0; i < M; i++) h[i] = 7000L + me * 100 + i;
    put_local(src, h, M * sizeof(long));
    READY();
    shmem_broadcast64(dst, src, M, 0, 0, 0, n, pSync_b);
    get_local(back, dst, M * sizeof(long));
    for (int i = 0; i < M; i++) CHECK(back[i] == (me == 0 ? -1 : 7000L + i));
    put_local(dst, fill, cap * sizeof(long));
    READY();
    shmem_collect64(dst, src, me + 1, 0, 0, n, pSync_c);
    get_local(back, dst, (total + 1) * sizeof(long));
    for (int p = 0, at = 0; p < n; at += ++p)
        for (int i = 0; i <= p; i++) CHECK(back[at + i] == 7000L + p * 100 + i);
    CHECK(back[total] == -1);

    shmem_barrier_all();
    free(h);
    free(back);
    free(fill);
    shmem_free(hostdst);
    shmem_space_free(gpu, dst);
    shmem_space_free(gpu, src);
}

int main(void) {
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) pSync_b[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_COLLECT_SYNC_SIZE; i++) pSync_c[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    const char *mode = getenv("DEVICE_MODE") ? getenv("DEVICE_MODE") : "";
    shmem_space_config_t cfg = {.device_type = SHMEM_DEVICE_GPU, .size = 1 << 20, .flags = 0};
    shmem_space_t made = SHMEM_SPACE_INVALID;
    shmem_team_t team = SHMEM_TEAM_INVALID;

    if (!strcmp(mode, "absent")) {
        CHECK(SHMEM_SPACE_GPU == SHMEM_SPACE_INVALID && !shmem_team_is_valid(SHMEM_TEAM_GPU));
        CHECK(shmem_space_create(&cfg, &made, &team) != 0);
        CHECK(made == SHMEM_SPACE_INVALID && team == SHMEM_TEAM_INVALID);
        shmem_finalize();
        printf("device_space: PE %d ok\n", me);
        return 0;
    }

    CHECK(SHMEM_SPACE_GPU != SHMEM_SPACE_INVALID && shmem_space_is_available(SHMEM_SPACE_GPU) == 0);
    CHECK(shmem_team_is_valid(SHMEM_TEAM_GPU));
    if (!strcmp(mode, "destroy")) {
        shmem_space_destroy(SHMEM_SPACE_GPU);
        printf("device_space: PE %d destroyed SHMEM_SPACE_GPU\n", me);
        return 0;
    }
    if (!strcmp(mode, "coll")) {
        float *x = shmem_space_malloc(SHMEM_SPACE_GPU, 16 * sizeof(float));
        float *y = shmem_space_malloc(SHMEM_SPACE_GPU, 16 * sizeof(float));
        shmem_float_sum_reduce(SHMEM_TEAM_WORLD, y, x, 16);
        printf("device_space: PE %d ran a reduction on device memory\n", me);
        return 0;
    }
    check_space(SHMEM_SPACE_GPU, me, n);
    check_large(SHMEM_SPACE_GPU, me, n);
    check_collectives(SHMEM_SPACE_GPU, me, n);

    CHECK(shmem_space_create(&cfg, &made, &team) == 0 && made != SHMEM_SPACE_INVALID);
    check_space(made, me, n);
    check_collectives(made, me, n);
    /* data in two spaces at once: the predefined one's stays while the created one is used */
    int *keep = shmem_space_malloc(SHMEM_SPACE_GPU, sizeof(int));
    shmem_int_p(keep, 42 + me, me);
    check_space(made, me, n);
    CHECK(shmem_int_g(keep, me) == 42 + me);
    shmem_space_free(SHMEM_SPACE_GPU, keep);
    CHECK(shmem_space_destroy(made) != 0); /* its team still exists */
    shmem_team_destroy(team);
    CHECK(shmem_space_destroy(made) == 0);

    shmem_finalize();
    printf("device_space: PE %d ok\n", me);
    return 0;
}
