/* Every AMO for every type of its table, generated with macros: concurrent adds/incs from every
 * PE on PE 0's word, a compare-and-swap race with exactly one winner, swap/set/fetch around the
 * ring, bitwise and/or/xor, the non-blocking forms, ctx forms and the C11 generics. */
#include "check.h"
#include <stddef.h>
#include <stdint.h>

#define K 50

/* Standard AMO types: add, inc, fetch_add, fetch_inc, compare_swap (+ nbi). */
#define TEST_STD(T, N)                                                                          \
    do {                                                                                        \
        T *v = shmem_malloc(sizeof(T));                                                         \
        *v = 0;                                                                                 \
        shmem_barrier_all();                                                                    \
        for (int i = 0; i < K; i++) {                                                           \
            shmem_##N##_atomic_add(v, (T)1, 0);                                                 \
            shmem_##N##_atomic_inc(v, 0);                                                       \
            T old = shmem_##N##_atomic_fetch_add(v, (T)2, 0);                                   \
            CHECK(old < (T)(5 * K * n));                                                        \
            old = shmem_##N##_atomic_fetch_inc(v, 0);                                           \
            CHECK(old < (T)(5 * K * n));                                                        \
        }                                                                                       \
        T f = 0;                                                                                \
        shmem_##N##_atomic_fetch_add_nbi(&f, v, (T)0, 0);                                       \
        shmem_quiet();                                                                          \
        CHECK(f <= (T)(5 * K * n));                                                             \
        shmem_barrier_all();                                                                    \
        if (me == 0) CHECK(*v == (T)(5 * K * n));                                               \
        shmem_barrier_all();                                                                    \
        /* race: only one PE sees the expected value */                                         \
        T won = shmem_##N##_atomic_compare_swap(v, (T)(5 * K * n), (T)(me + 7), 0);             \
        int *wins = shmem_calloc(1, sizeof(int));                                               \
        if (won == (T)(5 * K * n)) shmem_int_atomic_inc(wins, 0);                               \
        shmem_barrier_all();                                                                    \
        if (me == 0) CHECK(*wins == 1 && *v >= (T)7 && *v < (T)(7 + n));                       \
        shmem_barrier_all(); /* PE 0 checked before anyone changes v again */                   \
        T got = 0;                                                                              \
        shmem_##N##_atomic_compare_swap_nbi(&got, v, (T)12345, (T)1, 0); /* fails: no change */ \
        shmem_quiet();                                                                          \
        CHECK(got >= (T)7 && got < (T)(7 + 2 * n)); /* others may have incremented already */ \
        shmem_##N##_atomic_fetch_inc_nbi(&got, v, 0);                                           \
        shmem_quiet();                                                                          \
        shmem_barrier_all();                                                                    \
        if (me == 0) CHECK(*v >= (T)(7 + n) && *v < (T)(7 + 2 * n));                            \
        shmem_barrier_all();                                                                    \
        shmem_free(wins);                                                                       \
        shmem_free(v);                                                                          \
    } while (0)

/* Extended AMO types: set, fetch, swap (+ nbi) around the ring. */
#define TEST_EXT(T, N)                                                                  \
    do {                                                                                \
        T *v = shmem_malloc(sizeof(T));                                                 \
        *v = (T)0;                                                                      \
        shmem_barrier_all();                                                            \
        shmem_##N##_atomic_set(v, (T)(me + 1), next);                                   \
        shmem_barrier_all();                                                            \
        CHECK(*v == (T)(prev + 1));                                                     \
        CHECK(shmem_##N##_atomic_fetch(v, next) == (T)(me + 1));                        \
        shmem_barrier_all();                                                            \
        T old = shmem_##N##_atomic_swap(v, (T)(100 + me), next);                        \
        CHECK(old == (T)(me + 1));                                                      \
        shmem_barrier_all();                                                            \
        CHECK(*v == (T)(100 + prev));                                                   \
        T f = (T)0;                                                                     \
        shmem_barrier_all();                                                            \
        shmem_##N##_atomic_swap_nbi(&f, v, (T)(200 + me), next);                        \
        shmem_quiet();                                                                  \
        CHECK(f == (T)(100 + me));                                                      \
        shmem_barrier_all();                                                            \
        shmem_##N##_atomic_fetch_nbi(&f, v, next);                                      \
        shmem_quiet();                                                                  \
        CHECK(f == (T)(200 + me));                                                      \
        shmem_barrier_all();                                                            \
        shmem_free(v);                                                                  \
    } while (0)

/* Bitwise AMO types: every PE sets, toggles and clears its own bit on PE 0's word. */
#define TEST_BITWISE(T, N)                                                        \
    do {                                                                          \
        T *v = shmem_malloc(sizeof(T));                                           \
        *v = 0;                                                                   \
        shmem_barrier_all();                                                      \
        T bit = (T)1 << me;                                                       \
        shmem_##N##_atomic_or(v, bit, 0);                                         \
        shmem_barrier_all();                                                      \
        if (me == 0) CHECK(*v == (T)(((T)1 << n) - 1));                           \
        shmem_barrier_all();                                                      \
        T old = shmem_##N##_atomic_fetch_xor(v, bit, 0);                          \
        CHECK(old & bit);                                                         \
        shmem_barrier_all();                                                      \
        if (me == 0) CHECK(*v == 0);                                              \
        shmem_barrier_all();                                                      \
        shmem_##N##_atomic_xor(v, bit, 0);                                        \
        shmem_barrier_all();                                                      \
        old = shmem_##N##_atomic_fetch_and(v, (T)~bit, 0);                        \
        CHECK(old & bit);                                                         \
        shmem_barrier_all();                                                      \
        if (me == 0) CHECK(*v == 0);                                              \
        shmem_barrier_all();                                                      \
        old = shmem_##N##_atomic_fetch_or(v, bit, 0);                             \
        CHECK(!(old & bit));                                                      \
        shmem_##N##_atomic_and(v, (T)~(T)0, 0);                                   \
        T f = 0;                                                                  \
        shmem_##N##_atomic_fetch_and_nbi(&f, v, (T)~(T)0, 0);                     \
        shmem_##N##_atomic_fetch_or_nbi(&f, v, (T)0, 0);                          \
        shmem_##N##_atomic_fetch_xor_nbi(&f, v, (T)0, 0);                         \
        shmem_quiet();                                                            \
        CHECK(f & bit);                                                           \
        shmem_barrier_all();                                                      \
        if (me == 0) CHECK(*v == (T)(((T)1 << n) - 1));                           \
        shmem_barrier_all();                                                      \
        shmem_free(v);                                                            \
    } while (0)

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    (void)prev;
    TEST_STD(int, int);
    TEST_STD(long, long);
    TEST_STD(long long, longlong);
    TEST_STD(unsigned int, uint);
    TEST_STD(unsigned long, ulong);
    TEST_STD(unsigned long long, ulonglong);
    TEST_STD(int32_t, int32);
    TEST_STD(int64_t, int64);
    TEST_STD(uint32_t, uint32);
    TEST_STD(uint64_t, uint64);
    TEST_STD(size_t, size);
    TEST_STD(ptrdiff_t, ptrdiff);
    TEST_EXT(float, float);
    TEST_EXT(double, double);
    TEST_EXT(int, int);
    TEST_EXT(long, long);
    TEST_EXT(long long, longlong);
    TEST_EXT(unsigned int, uint);
    TEST_EXT(unsigned long, ulong);
    TEST_EXT(unsigned long long, ulonglong);
    TEST_EXT(int32_t, int32);
    TEST_EXT(int64_t, int64);
    TEST_EXT(uint32_t, uint32);
    TEST_EXT(uint64_t, uint64);
    TEST_EXT(size_t, size);
    TEST_EXT(ptrdiff_t, ptrdiff);
    TEST_BITWISE(unsigned int, uint);
    TEST_BITWISE(unsigned long, ulong);
    TEST_BITWISE(unsigned long long, ulonglong);
    TEST_BITWISE(int32_t, int32);
    TEST_BITWISE(int64_t, int64);
    TEST_BITWISE(uint32_t, uint32);
    TEST_BITWISE(uint64_t, uint64);

    /* ctx forms and C11 generics, negative values on signed types */
    long *c = shmem_calloc(1, sizeof(long));
    shmem_barrier_all();
    shmem_ctx_long_atomic_add(SHMEM_CTX_DEFAULT, c, -3, 0);
    shmem_atomic_add(c, -1L, 0);
    long was = shmem_atomic_fetch_add(SHMEM_CTX_DEFAULT, c, 0L, 0);
    CHECK(was <= 0);
    shmem_atomic_inc(c, 0);
    double *d = shmem_calloc(1, sizeof(double));
    shmem_atomic_set(d, 0.5, next);
    shmem_barrier_all();
    if (me == 0) CHECK(*c == -3L * n);
    CHECK(*d == 0.5);
    shmem_barrier_all(); /* every PE checked its d before the swaps below */
    CHECK(shmem_atomic_fetch(d, next) == 0.5);
    CHECK(shmem_atomic_swap(SHMEM_CTX_DEFAULT, d, 1.5, next) == 0.5);
    shmem_barrier_all();
    if (me == 0) CHECK(*c == -3L * n);
    shmem_free(d);
    shmem_free(c);
    REPORT_OK("atomics");
    shmem_finalize();
    return 0;
}
