/* The deprecated (1.3 and earlier) AMO names and their C11 generics behave like the 1.4 ones. */
#include "check.h"

static long x;
static int y;
static long long z;
static double d;
static float f;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), next = (me + 1) % n;
    shmem_barrier_all();
    shmem_long_add(&x, 2, 0);
    shmem_add(&y, 3, 0);
    shmem_longlong_inc(&z, 0);
    shmem_inc(&x, 0);
    CHECK(shmem_fadd(&z, 10LL, 0) >= 1);
    CHECK(shmem_int_finc(&y, 0) >= 3);
    shmem_set(&d, 2.5, next);
    shmem_float_set(&f, 1.5f, next);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(x == 3L * n);
        CHECK(y == 4 * n);
        CHECK(z == 11LL * n);
    }
    CHECK(d == 2.5 && f == 1.5f);
    shmem_barrier_all();
    CHECK(shmem_double_fetch(&d, next) == 2.5);
    CHECK(shmem_swap(&f, 4.0f, next) == 1.5f);
    shmem_barrier_all();
    CHECK(f == 4.0f);
    if (me == 0) {
        CHECK(shmem_cswap(&y, 4 * n, -1, 0) == 4 * n);
        CHECK(shmem_long_cswap(&x, 12345L, 0L, 0) == 3L * n); /* no match: unchanged */
        CHECK(shmem_int_fetch(&y, 0) == -1 && shmem_fetch(&x, 0) == 3L * n);
        CHECK(shmem_longlong_swap(&z, 5LL, 0) == 11LL * n && z == 5);
    }
    shmem_barrier_all();
    REPORT_OK("deprecated_amo");
    shmem_finalize();
    return 0;
}
