/* put/get/p/g/iput/iget/put_nbi/get_nbi (typed and through the C11 generics) for every one of
 * the 24 standard RMA types, generated with a macro. */
#include "check.h"
#include <stddef.h>
#include <stdint.h>

#define M 9

#define TEST_RMA(T, N)                                                              \
    do {                                                                            \
        T *d = shmem_calloc(2 * M, sizeof(T));                                      \
        T s[M], g[M];                                                               \
        for (int i = 0; i < M; i++) s[i] = (T)(me * 10 + i + 1);                    \
        shmem_barrier_all();                                                        \
        shmem_##N##_put(d, s, M, next);                                             \
        shmem_##N##_p(&d[M], (T)(me + 100), next);                                  \
        shmem_##N##_iput(&d[M + 1], s, 2, 3, 3, next);                              \
        shmem_barrier_all();                                                        \
        for (int i = 0; i < M; i++) CHECK(d[i] == (T)(prev * 10 + i + 1));          \
        CHECK(d[M] == (T)(prev + 100));                                             \
        for (int k = 0; k < 3; k++) CHECK(d[M + 1 + 2 * k] == (T)(prev * 10 + 3 * k + 1)); \
        shmem_##N##_get(g, d, M, next);                                             \
        for (int i = 0; i < M; i++) CHECK(g[i] == (T)(me * 10 + i + 1));           \
        CHECK(shmem_##N##_g(&d[M], next) == (T)(me + 100));                         \
        shmem_##N##_iget(g, &d[M + 1], 1, 2, 3, next);                              \
        for (int k = 0; k < 3; k++) CHECK(g[k] == (T)(me * 10 + 3 * k + 1));        \
        shmem_##N##_get_nbi(g, d, M, next);                                         \
        shmem_quiet();                                                              \
        CHECK(g[M - 1] == (T)(me * 10 + M));                                        \
        shmem_barrier_all();                                                        \
        shmem_##N##_put_nbi(d, s, M, next);                                         \
        shmem_quiet();                                                              \
        shmem_barrier_all();                                                        \
        CHECK(d[0] == (T)(prev * 10 + 1));                                          \
        shmem_barrier_all();                                                        \
        shmem_free(d);                                                              \
    } while (0)

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    TEST_RMA(float, float);
    TEST_RMA(double, double);
    TEST_RMA(long double, longdouble);
    TEST_RMA(char, char);
    TEST_RMA(signed char, schar);
    TEST_RMA(short, short);
    TEST_RMA(int, int);
    TEST_RMA(long, long);
    TEST_RMA(long long, longlong);
    TEST_RMA(unsigned char, uchar);
    TEST_RMA(unsigned short, ushort);
    TEST_RMA(unsigned int, uint);
    TEST_RMA(unsigned long, ulong);
    TEST_RMA(unsigned long long, ulonglong);
    TEST_RMA(int8_t, int8);
    TEST_RMA(int16_t, int16);
    TEST_RMA(int32_t, int32);
    TEST_RMA(int64_t, int64);
    TEST_RMA(uint8_t, uint8);
    TEST_RMA(uint16_t, uint16);
    TEST_RMA(uint32_t, uint32);
    TEST_RMA(uint64_t, uint64);
    TEST_RMA(size_t, size);
    TEST_RMA(ptrdiff_t, ptrdiff);
    REPORT_OK("rma_types");
    shmem_finalize();
    return 0;
}
