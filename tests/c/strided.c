/* Strided iput/iget: typed and sized forms, strides 1 and larger, odd counts. */
#include "check.h"
#include <stdint.h>

static int32_t target32[100];
static int64_t target64[100];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    double *dt = shmem_calloc(100, sizeof(double));
    int32_t s32[100];
    int64_t s64[100];
    double sd[100];
    for (int i = 0; i < 100; i++) {
        s32[i] = me * 100 + i;
        s64[i] = -(int64_t)(me * 100 + i);
        sd[i] = me + i * 0.5;
        target32[i] = -1;
        target64[i] = 1;
    }
    shmem_barrier_all();
    /* every 3rd target element from every 2nd source element, 17 elements */
    shmem_int32_iput(target32, s32, 3, 2, 17, next);
    shmem_iput64(target64, s64, 1, 5, 19, next);
    shmem_iput(dt, sd, 4, 1, 11, next); /* C11 generic */
    shmem_barrier_all();
    for (int i = 0; i < 100; i++) {
        if (i % 3 == 0 && i / 3 < 17) CHECK(target32[i] == prev * 100 + (i / 3) * 2);
        else CHECK(target32[i] == -1);
        if (i < 19) CHECK(target64[i] == -(int64_t)(prev * 100 + i * 5));
        else CHECK(target64[i] == 1);
        if (i % 4 == 0 && i / 4 < 11) CHECK(dt[i] == prev + (i / 4) * 0.5);
        else CHECK(dt[i] == 0);
    }
    /* iget: gather every 3rd element of the neighbour's target32 densely */
    int32_t g[17];
    shmem_int32_iget(g, target32, 1, 3, 17, next);
    for (int i = 0; i < 17; i++) CHECK(g[i] == me * 100 + i * 2);
    int64_t g64[10];
    shmem_iget64(g64, target64, 1, 2, 10, next);
    for (int i = 0; i < 10; i++) CHECK(g64[i] == -(int64_t)(me * 100 + i * 2 * 5));
    /* 1.6 block-strided forms: 4 blocks of 3 elements, source blocks every 5, dest every 7 */
    static int32_t bt[40];
    int32_t bs[40];
    for (int i = 0; i < 40; i++) {
        bs[i] = me * 1000 + i;
        bt[i] = -1;
    }
    shmem_barrier_all();
    shmem_int32_ibput(bt, bs, 7, 5, 3, 4, next);
    shmem_barrier_all();
    for (int i = 0; i < 40; i++) {
        int b = i / 7, k = i % 7;
        if (b < 4 && k < 3) CHECK(bt[i] == prev * 1000 + b * 5 + k);
        else CHECK(bt[i] == -1);
    }
    int32_t bg[12];
    shmem_ibget32(bg, bt, 3, 7, 3, 4, next); /* gather the blocks back densely */
    for (int b = 0; b < 4; b++)
        for (int k = 0; k < 3; k++) CHECK(bg[b * 3 + k] == me * 1000 + b * 5 + k);
    shmem_ibput(SHMEM_CTX_DEFAULT, bt, bs, 3, 3, 3, 0, next); /* zero blocks: no-op */
    shmem_barrier_all();
    shmem_free(dt);
    REPORT_OK("strided");
    shmem_finalize();
    return 0;
}
