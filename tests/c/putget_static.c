/* Global and static variables are symmetric: RMA targets and sources (1.3 spec section 3). */
#include "check.h"

long global_arr[64];
int global_init[4] = {1, 2, 3, 4}; /* initialized data */
static double static_var;

int main(void) {
    static short local_static[8];
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    CHECK(global_init[2] == 3); /* contents survive init */
    CHECK(shmem_addr_accessible(global_arr, next));
    CHECK(shmem_addr_accessible(&static_var, next));

    long src[64];
    for (int i = 0; i < 64; i++) src[i] = me * 64 + i;
    shmem_long_put(global_arr, src, 64, next);
    shmem_double_p(&static_var, me + 0.25, next);
    short s[8] = {(short)me, 1, 2, 3, 4, 5, 6, (short)-me};
    shmem_short_put(local_static, s, 8, next);
    shmem_int_p(&global_init[3], 40 + me, next);
    shmem_barrier_all();
    for (int i = 0; i < 64; i++) CHECK(global_arr[i] == prev * 64 + i);
    CHECK(static_var == prev + 0.25);
    CHECK(local_static[0] == prev && local_static[7] == -prev && local_static[3] == 3);
    CHECK(global_init[3] == 40 + prev && global_init[0] == 1);

    /* get from global data */
    long got[64];
    shmem_long_get(got, global_arr, 64, next);
    for (int i = 0; i < 64; i++) CHECK(got[i] == me * 64 + i);
    CHECK(shmem_double_g(&static_var, next) == me + 0.25);
    shmem_barrier_all();
    REPORT_OK("putget_static");
    shmem_finalize();
    return 0;
}
