/* Non-blocking put/get completed by shmem_quiet, with fence ordering a flag after data. */
#include "check.h"

#define N 4096

static long flag;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    long *buf = shmem_malloc(N * sizeof(long));
    long *src = malloc(N * sizeof(long));
    for (int i = 0; i < N; i++) {
        src[i] = me * N + i;
        buf[i] = -1;
    }
    shmem_barrier_all();
    for (int c = 0; c < N; c += 512) shmem_long_put_nbi(buf + c, src + c, 512, next);
    shmem_fence();
    shmem_long_p(&flag, 1, next);
    shmem_quiet();
    shmem_barrier_all();
    CHECK(flag == 1);
    for (int i = 0; i < N; i++) CHECK(buf[i] == prev * N + i);

    long *got = malloc(N * sizeof(long));
    for (int i = 0; i < N; i++) got[i] = 0;
    shmem_long_get_nbi(got, buf, N, next);
    shmem_getmem_nbi(got, buf, 8, next);
    shmem_quiet();
    for (int i = 0; i < N; i++) CHECK(got[i] == me * N + i);
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
    shmem_ctx_fence(SHMEM_CTX_DEFAULT);
    shmem_barrier_all();
    shmem_free(buf);
    free(src);
    free(got);
    REPORT_OK("nbi");
    shmem_finalize();
    return 0;
}
