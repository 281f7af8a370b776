/* Broadcasts, fcollects, alltoalls and reductions on GPU-space buffers, which rshmem runs device to device
 * between the members' copies where they map each other's GPU memory (SHMEM_GPU_DIRECT_
 * COLLECTIVES, the default; reductions by a kernel on the device), else through the host
 * shadow; IN_PLACE=1 adds a reduction whose dest is its source. The team forms on the world and on
 * a strided team of the even PEs, an active-set broadcast (the root's dest left alone), each
 * round with other values, every value read back through shmem_getmem, and a barrier after
 * each check, since a collective may write a PE's dest as soon as any member has entered it
 * (the spec makes the program see that every dest is ready). Run with
 * SHMEM_ENABLE_GPU_SPACE=1 and a GPU memheap. */
#include "check.h"
#include <string.h>

#define N 2048 /* 16 KiB blocks: direct gathers on teams of more than 2 */

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(SHMEM_SPACE_GPU != SHMEM_SPACE_INVALID);
    long *src = shmem_space_malloc(SHMEM_SPACE_GPU, (size_t)N * n * sizeof(long));
    long *dst = shmem_space_malloc(SHMEM_SPACE_GPU, (size_t)N * n * sizeof(long));
    long *psync = shmem_malloc(SHMEM_BCAST_SYNC_SIZE * sizeof(long));
    CHECK(src && dst && psync);
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    long *local = malloc((size_t)N * n * sizeof(long)), *back = malloc((size_t)N * n * sizeof(long));
    shmem_team_t evens = SHMEM_TEAM_INVALID;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &evens);
    shmem_barrier_all();

    for (int round = 1; round <= 3; round++) {
        long tag = round * 1000000L;
        for (int i = 0; i < N * n; i++) local[i] = tag + me * 10000 + i;
        shmem_putmem(src, local, (size_t)N * n * sizeof(long), me);
        memset(back, 0, (size_t)N * n * sizeof(long));
        shmem_putmem(dst, back, (size_t)N * n * sizeof(long), me);
        shmem_barrier_all();

        int root = round % n;
        CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, N, root) == 0);
        shmem_getmem(back, dst, N * sizeof(long), me);
        for (int i = 0; i < N; i++) CHECK(back[i] == tag + root * 10000 + i);
        shmem_barrier_all(); /* every dest ready for the next collective (the spec's rule) */

        CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, N) == 0);
        shmem_getmem(back, dst, (size_t)N * n * sizeof(long), me);
        for (int p = 0; p < n; p++)
            for (int i = 0; i < N; i++) CHECK(back[p * N + i] == tag + p * 10000 + i);
        shmem_barrier_all();

        CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, N) == 0);
        shmem_getmem(back, dst, (size_t)N * n * sizeof(long), me);
        for (int p = 0; p < n; p++)
            for (int i = 0; i < N; i++) CHECK(back[p * N + i] == tag + p * 10000 + me * N + i);
        shmem_barrier_all();

        if (evens != SHMEM_TEAM_INVALID) {
            int en = shmem_team_n_pes(evens), ei = shmem_team_my_pe(evens);
            CHECK(shmem_long_fcollect(evens, dst, src, N) == 0);
            shmem_getmem(back, dst, (size_t)N * en * sizeof(long), me);
            for (int k = 0; k < en; k++)
                for (int i = 0; i < N; i++) CHECK(back[k * N + i] == tag + 2 * k * 10000 + i);
            shmem_team_sync(evens);
            CHECK(shmem_long_broadcast(evens, dst, src, N, en - 1) == 0);
            shmem_getmem(back, dst, N * sizeof(long), me);
            for (int i = 0; i < N; i++) CHECK(back[i] == tag + 2 * (en - 1) * 10000 + i);
            (void)ei;
        }
        shmem_barrier_all();

        /* Reductions over the world, on the device where a kernel serves the type. */
        CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, N) == 0);
        shmem_getmem(back, dst, N * sizeof(long), me);
        for (int i = 0; i < N; i++) CHECK(back[i] == n * (tag + i) + 10000L * n * (n - 1) / 2);
        shmem_barrier_all();
        CHECK(shmem_long_max_reduce(SHMEM_TEAM_WORLD, dst, src, N) == 0);
        shmem_getmem(back, dst, N * sizeof(long), me);
        for (int i = 0; i < N; i++) CHECK(back[i] == tag + (n - 1) * 10000L + i);
        shmem_barrier_all();
        CHECK(shmem_ulong_xor_reduce(SHMEM_TEAM_WORLD, (unsigned long *)dst, (unsigned long *)src, N) == 0);
        shmem_getmem(back, dst, N * sizeof(long), me);
        for (int i = 0; i < N; i++) {
            long x = 0;
            for (int p = 0; p < n; p++) x ^= tag + p * 10000L + i;
            CHECK(back[i] == x);
        }
        shmem_barrier_all();
        double *dd = (double *)dst, *ds = (double *)src;
        double dl[N], dback[N];
        for (int i = 0; i < N; i++) dl[i] = 0.5 * (me + 1) + i;
        shmem_putmem(ds, dl, sizeof dl, me);
        shmem_barrier_all();
        CHECK(shmem_double_sum_reduce(SHMEM_TEAM_WORLD, dd, ds, N) == 0);
        shmem_getmem(dback, dd, sizeof dback, me);
        for (int i = 0; i < N; i++) CHECK(dback[i] == 0.25 * n * (n + 1) + (double)n * i);
        shmem_putmem(src, local, (size_t)N * n * sizeof(long), me); /* the sources again */
        shmem_barrier_all();
        if (getenv("IN_PLACE")) { /* dest == source: through the shadow */
            CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, src, src, N) == 0);
            shmem_getmem(back, src, N * sizeof(long), me);
            for (int i = 0; i < N; i++) CHECK(back[i] == n * (tag + i) + 10000L * n * (n - 1) / 2);
            shmem_putmem(src, local, (size_t)N * n * sizeof(long), me);
            shmem_barrier_all();
        }

        /* The active-set form leaves the root's dest as it was. */
        shmem_putmem(dst, local, N * sizeof(long), me);
        shmem_barrier_all();
        shmem_broadcast64(dst, src, N, 0, 0, 0, n, psync);
        shmem_barrier_all();
        shmem_getmem(back, dst, N * sizeof(long), me);
        for (int i = 0; i < N; i++) CHECK(back[i] == (me == 0 ? local[i] : tag + i));
        shmem_barrier_all();
    }
    if (evens != SHMEM_TEAM_INVALID) shmem_team_destroy(evens);
    shmem_free(psync);
    shmem_space_free(SHMEM_SPACE_GPU, dst);
    shmem_space_free(SHMEM_SPACE_GPU, src);
    free(local);
    free(back);
    REPORT_OK("gpu_direct_coll");
    shmem_finalize();
    return 0;
}
