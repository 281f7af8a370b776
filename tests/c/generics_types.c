/* Every type-generic interface with a pointer of every type of its specification type set
 * (OpenSHMEM 1.6: standard RMA, standard/extended/bitwise AMO, point-to-point and team-reduction
 * types, the deprecated AMO and wait sets), plain and context forms. Typedefs such as int32_t,
 * int64_t, size_t and ptrdiff_t are the same C types as int, long and unsigned long on LP64, so
 * a generic must select them through the fundamental type even where the set names only the
 * typedef (bitwise AMOs: int32_t and int64_t; bitwise reductions: int8_t ... int64_t). Built
 * with -Wall -Werror: a missing association does not compile, a wrong one is an incompatible
 * pointer. At run time the results are checked exactly, so a routine of the wrong width shows.
 * generics_types_cxx.cpp compiles this same file as C++, against the overloads. */
#include "check.h"
#include <string.h>

/* The type sets, as (C type, TYPENAME). */
#define RMA_TYPES(X)                                                                               \
    X(float, float)                                                                                \
    X(double, double)                                                                              \
    X(long double, longdouble)                                                                     \
    X(char, char)                                                                                  \
    X(signed char, schar)                                                                          \
    X(short, short)                                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned char, uchar)                                                                        \
    X(unsigned short, ushort)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int8_t, int8)                                                                                \
    X(int16_t, int16)                                                                              \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint8_t, uint8)                                                                              \
    X(uint16_t, uint16)                                                                            \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(ptrdiff_t, ptrdiff)

#define AMO_STD_TYPES(X)                                                                           \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(ptrdiff_t, ptrdiff)

#define AMO_EXT_TYPES(X) X(float, float) X(double, double) AMO_STD_TYPES(X)

#define AMO_BITWISE_TYPES(X)                                                                       \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)

/* shmem_wait_until and shmem_test also take the deprecated short and unsigned short. */
#define P2P_DEPRECATED_TYPES(X) X(short, short) X(unsigned short, ushort)

/* Team reductions: AND, OR, XOR. */
#define REDUCE_BITWISE_TYPES(X)                                                                    \
    X(unsigned char, uchar)                                                                        \
    X(unsigned short, ushort)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int8_t, int8)                                                                                \
    X(int16_t, int16)                                                                              \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint8_t, uint8)                                                                              \
    X(uint16_t, uint16)                                                                            \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)

/* Team reductions: MAX, MIN; SUM, PROD and the scans take these and the complex types. */
#define REDUCE_MINMAX_TYPES(X)                                                                     \
    X(char, char)                                                                                  \
    X(signed char, schar)                                                                          \
    X(short, short)                                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(ptrdiff_t, ptrdiff)                                                                          \
    REDUCE_BITWISE_TYPES(X)                                                                        \
    X(float, float)                                                                                \
    X(double, double)                                                                              \
    X(long double, longdouble)

#define COMPLEX_TYPES(X) X(double _Complex, complexd) X(float _Complex, complexf)

/* Deprecated (1.3) AMO generics. */
#define DEP3_TYPES(X) X(int, int) X(long, long) X(long long, longlong)
#define DEP5_TYPES(X) X(float, float) X(double, double) DEP3_TYPES(X)

/* Symmetric scratch, large enough for npes * 16 elements of 16 bytes. */
static void *A, *B, *C;
static uint64_t sig;
static int me, npes, next, prev;

#define SYNC() shmem_barrier_all()
#define EACH(n, cond)                                                                              \
    do {                                                                                           \
        for (int i = 0; i < (n); i++) CHECK(cond);                                                 \
    } while (0)

/* --- RMA, signals and the RMA-typed collectives: standard RMA types --- */
#define RMA_TEST(T, N)                                                                             \
    static void rma_##N(void) {                                                                    \
        T *d = (T *)A, *s = (T *)B, g[4];                                                          \
        const T *cs = s;                                                                           \
        shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;                                                       \
        for (int i = 0; i < 2 * npes + 4; i++) s[i] = (T)(me + i + 1);                             \
        memset(d, 0, 16 * sizeof(T));                                                              \
        SYNC();                                                                                    \
        shmem_put(d, s, 4, next);                                                                  \
        shmem_put(ctx, d + 4, cs, 4, next);                                                        \
        shmem_put_nbi(d + 8, s, 4, next);                                                          \
        shmem_put_nbi(ctx, d + 12, cs, 4, next);                                                   \
        shmem_quiet();                                                                             \
        SYNC();                                                                                    \
        EACH(16, d[i] == (T)(prev + i % 4 + 1));                                                   \
        SYNC();                                                                                    \
        shmem_iput(d, s, 2, 2, 2, next);                                                           \
        shmem_iput(ctx, d + 1, s + 1, 2, 2, 2, next);                                              \
        shmem_ibput(d + 4, s, 2, 2, 2, 1, next);                                                   \
        shmem_ibput(ctx, d + 6, s + 2, 2, 2, 2, 1, next);                                          \
        shmem_p(d + 8, (T)(me + 7), next);                                                         \
        shmem_p(ctx, d + 9, (T)(me + 8), next);                                                    \
        shmem_put_signal(d + 10, s, 1, &sig, 1, SHMEM_SIGNAL_ADD, next);                           \
        shmem_put_signal(ctx, d + 11, s + 1, 1, &sig, 1, SHMEM_SIGNAL_ADD, next);                  \
        shmem_put_signal_nbi(d + 12, s + 2, 1, &sig, 1, SHMEM_SIGNAL_ADD, next);                   \
        shmem_put_signal_nbi(ctx, d + 13, s + 3, 1, &sig, 1, SHMEM_SIGNAL_ADD, next);              \
        shmem_quiet();                                                                             \
        SYNC();                                                                                    \
        EACH(8, d[i] == (T)(prev + i % 4 + 1));                                                    \
        CHECK(d[8] == (T)(prev + 7) && d[9] == (T)(prev + 8));                                     \
        EACH(4, d[10 + i] == (T)(prev + i + 1));                                                   \
        CHECK(shmem_signal_fetch(&sig) == 4);                                                      \
        sig = 0;                                                                                   \
        memset(g, 0, sizeof g);                                                                    \
        shmem_get(g, s, 1, next);                                                                  \
        shmem_get(ctx, g + 1, cs + 1, 1, next);                                                    \
        CHECK(g[0] == (T)(next + 1) && g[1] == (T)(next + 2));                                     \
        shmem_get_nbi(g, s + 2, 1, next);                                                          \
        shmem_get_nbi(ctx, g + 1, cs + 3, 1, next);                                                \
        shmem_quiet();                                                                             \
        CHECK(g[0] == (T)(next + 3) && g[1] == (T)(next + 4));                                     \
        shmem_iget(g, s, 2, 2, 2, next);                                                           \
        shmem_iget(ctx, g + 1, cs + 1, 2, 2, 2, next);                                             \
        EACH(4, g[i] == (T)(next + i + 1));                                                        \
        memset(g, 0, sizeof g);                                                                    \
        shmem_ibget(g, s, 2, 2, 2, 1, next);                                                       \
        shmem_ibget(ctx, g + 2, cs + 2, 2, 2, 2, 1, next);                                         \
        EACH(4, g[i] == (T)(next + i + 1));                                                        \
        CHECK(shmem_g(s + 1, next) == (T)(next + 2));                                              \
        CHECK(shmem_g(cs + 2, next) == (T)(next + 3));                                             \
        CHECK(shmem_g(ctx, s + 3, next) == (T)(next + 4));                                         \
        CHECK(shmem_g(ctx, cs, next) == (T)(next + 1));                                            \
        SYNC();                                                                                    \
        /* collectives on the world team, each into its own part of d */                           \
        T *bc = d, *fc = bc + 2, *co = fc + 2 * npes, *aa = co + npes, *as = aa + npes;            \
        CHECK(shmem_broadcast(SHMEM_TEAM_WORLD, bc, s, 2, 0) == 0);                                \
        if (me != 0) EACH(2, bc[i] == (T)(i + 1));                                                 \
        CHECK(shmem_fcollect(SHMEM_TEAM_WORLD, fc, s, 2) == 0);                                    \
        EACH(2 * npes, fc[i] == (T)(i / 2 + i % 2 + 1));                                           \
        CHECK(shmem_collect(SHMEM_TEAM_WORLD, co, cs, 1) == 0);                                    \
        EACH(npes, co[i] == (T)(i + 1));                                                           \
        CHECK(shmem_alltoall(SHMEM_TEAM_WORLD, aa, s, 1) == 0);                                    \
        EACH(npes, aa[i] == (T)(i + me + 1));                                                      \
        CHECK(shmem_alltoalls(SHMEM_TEAM_WORLD, as, cs, 1, 1, 1) == 0);                            \
        EACH(npes, as[i] == (T)(i + me + 1));                                                      \
        SYNC();                                                                                    \
    }
RMA_TYPES(RMA_TEST)

/* --- Standard AMOs (every PE adds 12 times to PE 0) and compare-swap on its own PE --- */
#define AMO_STD_TEST(T, N)                                                                         \
    static void amo_std_##N(void) {                                                                \
        T *x = (T *)C, f = 0;                                                                      \
        shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;                                                       \
        x[0] = 0;                                                                                  \
        x[1] = (T)5;                                                                               \
        SYNC();                                                                                    \
        shmem_atomic_add(x, (T)1, 0);                                                              \
        shmem_atomic_add(ctx, x, (T)1, 0);                                                         \
        shmem_atomic_inc(x, 0);                                                                    \
        shmem_atomic_inc(ctx, x, 0);                                                               \
        CHECK(shmem_atomic_fetch_add(x, (T)1, 0) < (T)(12 * npes));                                \
        CHECK(shmem_atomic_fetch_add(ctx, x, (T)1, 0) < (T)(12 * npes));                           \
        CHECK(shmem_atomic_fetch_inc(x, 0) < (T)(12 * npes));                                      \
        CHECK(shmem_atomic_fetch_inc(ctx, x, 0) < (T)(12 * npes));                                 \
        shmem_atomic_fetch_add_nbi(&f, x, (T)1, 0);                                                \
        shmem_atomic_fetch_add_nbi(ctx, &f, x, (T)1, 0);                                           \
        shmem_atomic_fetch_inc_nbi(&f, x, 0);                                                      \
        shmem_atomic_fetch_inc_nbi(ctx, &f, x, 0);                                                 \
        shmem_quiet();                                                                             \
        CHECK(f < (T)(12 * npes));                                                                 \
        CHECK(shmem_atomic_compare_swap(x + 1, (T)5, (T)6, me) == (T)5);                           \
        CHECK(shmem_atomic_compare_swap(ctx, x + 1, (T)6, (T)7, me) == (T)6);                      \
        shmem_atomic_compare_swap_nbi(&f, x + 1, (T)7, (T)8, me);                                  \
        shmem_quiet();                                                                             \
        CHECK(f == (T)7);                                                                          \
        shmem_atomic_compare_swap_nbi(ctx, &f, x + 1, (T)8, (T)9, me);                             \
        shmem_quiet();                                                                             \
        CHECK(f == (T)8 && x[1] == (T)9);                                                          \
        SYNC();                                                                                    \
        if (me == 0) CHECK(x[0] == (T)(12 * npes));                                                \
        SYNC();                                                                                    \
    }
AMO_STD_TYPES(AMO_STD_TEST)

/* --- Extended AMOs, on the next PE's element --- */
#define AMO_EXT_TEST(T, N)                                                                         \
    static void amo_ext_##N(void) {                                                                \
        T *x = (T *)C, f = 0;                                                                      \
        const T *cx = x;                                                                           \
        shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;                                                       \
        x[0] = x[1] = 0;                                                                           \
        SYNC();                                                                                    \
        shmem_atomic_set(x, (T)(me + 1), next);                                                    \
        shmem_atomic_set(ctx, x + 1, (T)(me + 2), next);                                           \
        shmem_quiet();                                                                             \
        SYNC();                                                                                    \
        CHECK(x[0] == (T)(prev + 1) && x[1] == (T)(prev + 2));                                     \
        SYNC();                                                                                    \
        CHECK(shmem_atomic_fetch(x, next) == (T)(me + 1));                                         \
        CHECK(shmem_atomic_fetch(ctx, cx + 1, next) == (T)(me + 2));                               \
        shmem_atomic_fetch_nbi(&f, cx, next);                                                      \
        shmem_quiet();                                                                             \
        CHECK(f == (T)(me + 1));                                                                   \
        shmem_atomic_fetch_nbi(ctx, &f, x + 1, next);                                              \
        shmem_quiet();                                                                             \
        CHECK(f == (T)(me + 2));                                                                   \
        CHECK(shmem_atomic_swap(x, (T)20, next) == (T)(me + 1));                                   \
        CHECK(shmem_atomic_swap(ctx, x, (T)21, next) == (T)20);                                    \
        shmem_atomic_swap_nbi(&f, x, (T)22, next);                                                 \
        shmem_quiet();                                                                             \
        CHECK(f == (T)21);                                                                         \
        shmem_atomic_swap_nbi(ctx, &f, x, (T)23, next);                                            \
        shmem_quiet();                                                                             \
        CHECK(f == (T)22);                                                                         \
        SYNC();                                                                                    \
        CHECK(x[0] == (T)23);                                                                      \
        SYNC();                                                                                    \
    }
AMO_EXT_TYPES(AMO_EXT_TEST)

/* --- Bitwise AMOs: every PE sets, clears or flips its own bit of 18 elements on PE 0 (one per
 * form: and/or/xor, non-fetching, fetching, fetching nbi, each with and without a context) --- */
#define AMO_BITWISE_TEST(T, N)                                                                     \
    static void amo_bitwise_##N(void) {                                                            \
        T *x = (T *)C, f = 0, bit = (T)((T)1 << me), mask = (T)(((T)1 << npes) - 1);              \
        shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;                                                       \
        for (int i = 0; i < 18; i++) x[i] = (T)(i % 3 == 0 ? ~(T)0 : 0);                           \
        SYNC();                                                                                    \
        shmem_atomic_and(x + 0, (T)~bit, 0);                                                       \
        shmem_atomic_or(x + 1, bit, 0);                                                            \
        shmem_atomic_xor(x + 2, bit, 0);                                                           \
        shmem_atomic_and(ctx, x + 3, (T)~bit, 0);                                                  \
        shmem_atomic_or(ctx, x + 4, bit, 0);                                                       \
        shmem_atomic_xor(ctx, x + 5, bit, 0);                                                      \
        CHECK((shmem_atomic_fetch_and(x + 6, (T)~bit, 0) & bit) == bit);                           \
        CHECK((shmem_atomic_fetch_or(x + 7, bit, 0) & bit) == 0);                                  \
        CHECK((shmem_atomic_fetch_xor(x + 8, bit, 0) & bit) == 0);                                 \
        CHECK((shmem_atomic_fetch_and(ctx, x + 9, (T)~bit, 0) & bit) == bit);                      \
        CHECK((shmem_atomic_fetch_or(ctx, x + 10, bit, 0) & bit) == 0);                            \
        CHECK((shmem_atomic_fetch_xor(ctx, x + 11, bit, 0) & bit) == 0);                           \
        shmem_atomic_fetch_and_nbi(&f, x + 12, (T)~bit, 0);                                        \
        shmem_quiet();                                                                             \
        CHECK((f & bit) == bit);                                                                   \
        shmem_atomic_fetch_or_nbi(&f, x + 13, bit, 0);                                             \
        shmem_quiet();                                                                             \
        CHECK((f & bit) == 0);                                                                     \
        shmem_atomic_fetch_xor_nbi(&f, x + 14, bit, 0);                                            \
        shmem_quiet();                                                                             \
        CHECK((f & bit) == 0);                                                                     \
        shmem_atomic_fetch_and_nbi(ctx, &f, x + 15, (T)~bit, 0);                                   \
        shmem_quiet();                                                                             \
        CHECK((f & bit) == bit);                                                                   \
        shmem_atomic_fetch_or_nbi(ctx, &f, x + 16, bit, 0);                                        \
        shmem_quiet();                                                                             \
        CHECK((f & bit) == 0);                                                                     \
        shmem_atomic_fetch_xor_nbi(ctx, &f, x + 17, bit, 0);                                       \
        shmem_quiet();                                                                             \
        CHECK((f & bit) == 0);                                                                     \
        SYNC();                                                                                    \
        if (me == 0) EACH(18, x[i] == (T)(i % 3 == 0 ? (T)~mask : mask));                          \
        SYNC();                                                                                    \
    }
AMO_BITWISE_TYPES(AMO_BITWISE_TEST)

/* --- Point-to-point synchronization on conditions already true --- */
#define P2P_TEST(T, N)                                                                             \
    static void p2p_##N(void) {                                                                    \
        T *iv = (T *)C, cmp[4] = {1, 1, 1, 1};                                                     \
        size_t idx[4];                                                                             \
        int status[4] = {0, 0, 0, 0};                                                              \
        for (int i = 0; i < 4; i++) iv[i] = (T)1;                                                  \
        shmem_wait_until(iv, SHMEM_CMP_EQ, (T)1);                                                  \
        CHECK(shmem_test(iv + 1, SHMEM_CMP_GE, (T)1) == 1);                                        \
        CHECK(shmem_test(iv + 1, SHMEM_CMP_NE, (T)1) == 0);                                        \
        shmem_wait_until_all(iv, 4, status, SHMEM_CMP_EQ, (T)1);                                   \
        shmem_wait_until_all_vector(iv, 4, NULL, SHMEM_CMP_EQ, cmp);                               \
        CHECK(shmem_wait_until_any(iv, 4, status, SHMEM_CMP_EQ, (T)1) < 4);                        \
        CHECK(shmem_wait_until_any_vector(iv, 4, NULL, SHMEM_CMP_EQ, cmp) < 4);                    \
        CHECK(shmem_wait_until_some(iv, 4, idx, status, SHMEM_CMP_EQ, (T)1) == 4);                 \
        CHECK(shmem_wait_until_some_vector(iv, 4, idx, NULL, SHMEM_CMP_EQ, cmp) == 4);             \
        CHECK(shmem_test_all(iv, 4, status, SHMEM_CMP_EQ, (T)1) == 1);                             \
        CHECK(shmem_test_all_vector(iv, 4, NULL, SHMEM_CMP_EQ, cmp) == 1);                         \
        CHECK(shmem_test_any(iv, 4, status, SHMEM_CMP_EQ, (T)1) < 4);                              \
        CHECK(shmem_test_any_vector(iv, 4, NULL, SHMEM_CMP_EQ, cmp) < 4);                          \
        CHECK(shmem_test_some(iv, 4, idx, status, SHMEM_CMP_EQ, (T)1) == 4);                       \
        CHECK(shmem_test_some_vector(iv, 4, idx, NULL, SHMEM_CMP_EQ, cmp) == 4);                   \
        CHECK(shmem_test_any(iv, 4, status, SHMEM_CMP_EQ, (T)2) == SIZE_MAX);                      \
    }
AMO_STD_TYPES(P2P_TEST)

#define P2P_DEPRECATED_TEST(T, N)                                                                  \
    static void p2p_deprecated_##N(void) {                                                         \
        T *iv = (T *)C;                                                                            \
        iv[0] = (T)3;                                                                              \
        shmem_wait_until(iv, SHMEM_CMP_GT, (T)2);                                                  \
        CHECK(shmem_test(iv, SHMEM_CMP_EQ, (T)3) == 1 && shmem_test(iv, SHMEM_CMP_LT, (T)3) == 0); \
    }
P2P_DEPRECATED_TYPES(P2P_DEPRECATED_TEST)

/* --- Team reductions. Bitwise: PE p gives 1 << p and 0x70 | 1 << p (below 0x80: fits int8_t) --- */
#define REDUCE_BITWISE_TEST(T, N)                                                                  \
    static void reduce_bitwise_##N(void) {                                                         \
        T *d = (T *)A, *s = (T *)B;                                                                \
        const T *cs = s;                                                                           \
        int mask = (1 << npes) - 1, all = npes == 1 ? 1 : 0;                                       \
        SYNC(); /* no PE still reads s or writes d for the previous type */                        \
        s[0] = (T)(1 << me);                                                                       \
        s[1] = (T)(0x70 | 1 << me);                                                                \
        CHECK(shmem_and_reduce(SHMEM_TEAM_WORLD, d, s, 2) == 0);                                   \
        CHECK(d[0] == (T)all && d[1] == (T)(0x70 | all));                                          \
        CHECK(shmem_or_reduce(SHMEM_TEAM_WORLD, d + 2, cs, 2) == 0);                               \
        CHECK(d[2] == (T)mask && d[3] == (T)(0x70 | mask));                                        \
        CHECK(shmem_xor_reduce(SHMEM_TEAM_WORLD, d + 4, s, 2) == 0);                               \
        CHECK(d[4] == (T)mask && d[5] == (T)((npes % 2 ? 0x70 : 0) | mask));                       \
    }
REDUCE_BITWISE_TYPES(REDUCE_BITWISE_TEST)

/* Arithmetic: PE p gives p + 1, 10 - p and 2 (products at most 4! and 2^4 on 4 PEs). */
#define REDUCE_ARITH_TEST(T, N)                                                                    \
    static void reduce_arith_##N(void) {                                                           \
        T *d = (T *)A, *s = (T *)B;                                                                \
        const T *cs = s;                                                                           \
        int sum = npes * (npes + 1) / 2, fact = 1, pow2 = 1 << npes;                               \
        for (int p = 2; p <= npes; p++) fact *= p;                                                 \
        SYNC();                                                                                    \
        s[0] = (T)(me + 1);                                                                        \
        s[1] = (T)(10 - me);                                                                       \
        s[2] = (T)2;                                                                               \
        CHECK(shmem_max_reduce(SHMEM_TEAM_WORLD, d, s, 2) == 0);                                   \
        CHECK(d[0] == (T)npes && d[1] == (T)10);                                                   \
        CHECK(shmem_min_reduce(SHMEM_TEAM_WORLD, d + 2, cs, 2) == 0);                              \
        CHECK(d[2] == (T)1 && d[3] == (T)(11 - npes));                                             \
        CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, d + 4, s, 3) == 0);                               \
        CHECK(d[4] == (T)sum && d[5] == (T)(11 * npes - sum) && d[6] == (T)(2 * npes));            \
        CHECK(shmem_prod_reduce(SHMEM_TEAM_WORLD, d + 7, cs, 3) == 0);                             \
        CHECK(d[7] == (T)fact && d[9] == (T)pow2);                                                 \
        CHECK(shmem_sum_inscan(SHMEM_TEAM_WORLD, d + 10, s, 1) == 0);                              \
        CHECK(d[10] == (T)((me + 1) * (me + 2) / 2));                                              \
        CHECK(shmem_sum_exscan(SHMEM_TEAM_WORLD, d + 11, cs, 1) == 0);                             \
        CHECK(d[11] == (T)(me * (me + 1) / 2)); /* 0 on PE 0 */                                     \
    }
REDUCE_MINMAX_TYPES(REDUCE_ARITH_TEST)

/* Complex: PE p gives (p + 1) + i, and 2. */
#define REDUCE_COMPLEX_TEST(T, N)                                                                  \
    static void reduce_complex_##N(void) {                                                         \
        T *d = (T *)A, *s = (T *)B;                                                                \
        const T *cs = s;                                                                           \
        SYNC();                                                                                    \
        s[0] = (T)(me + 1);                                                                        \
        __imag__ s[0] = 1;                                                                         \
        s[1] = (T)2;                                                                               \
        CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, d, s, 2) == 0);                                   \
        CHECK(__real__ d[0] == npes * (npes + 1) / 2 && __imag__ d[0] == npes);                    \
        CHECK(__real__ d[1] == 2 * npes && __imag__ d[1] == 0);                                    \
        CHECK(shmem_prod_reduce(SHMEM_TEAM_WORLD, d + 2, cs + 1, 1) == 0);                         \
        CHECK(__real__ d[2] == (1 << npes) && __imag__ d[2] == 0);                                 \
        CHECK(shmem_sum_inscan(SHMEM_TEAM_WORLD, d + 3, s, 1) == 0);                               \
        CHECK(__real__ d[3] == (me + 1) * (me + 2) / 2 && __imag__ d[3] == me + 1);                \
        CHECK(shmem_sum_exscan(SHMEM_TEAM_WORLD, d + 4, cs, 1) == 0);                              \
        CHECK(__real__ d[4] == me * (me + 1) / 2 && __imag__ d[4] == me); /* 0 on PE 0 */        \
    }
COMPLEX_TYPES(REDUCE_COMPLEX_TEST)

/* --- Deprecated AMO generics: every PE adds 6 times to PE 0 --- */
#define DEP3_TEST(T, N)                                                                            \
    static void dep3_##N(void) {                                                                   \
        T *x = (T *)C;                                                                             \
        x[0] = 0;                                                                                  \
        x[1] = (T)1;                                                                               \
        SYNC();                                                                                    \
        shmem_add(x, (T)2, 0);                                                                     \
        shmem_inc(x, 0);                                                                           \
        CHECK(shmem_fadd(x, (T)2, 0) < (T)(6 * npes));                                             \
        CHECK(shmem_finc(x, 0) < (T)(6 * npes));                                                   \
        CHECK(shmem_cswap(x + 1, (T)1, (T)2, me) == (T)1 && x[1] == (T)2);                         \
        SYNC();                                                                                    \
        if (me == 0) CHECK(x[0] == (T)(6 * npes));                                                 \
        SYNC();                                                                                    \
    }
DEP3_TYPES(DEP3_TEST)

#define DEP5_TEST(T, N)                                                                            \
    static void dep5_##N(void) {                                                                   \
        T *x = (T *)C;                                                                             \
        const T *cx = x;                                                                           \
        x[0] = 0;                                                                                  \
        SYNC();                                                                                    \
        shmem_set(x, (T)(me + 1), next);                                                           \
        shmem_quiet();                                                                             \
        SYNC();                                                                                    \
        CHECK(x[0] == (T)(prev + 1));                                                              \
        CHECK(shmem_fetch(cx, next) == (T)(me + 1));                                               \
        SYNC();                                                                                    \
        CHECK(shmem_swap(x, (T)9, next) == (T)(me + 1));                                           \
        SYNC();                                                                                    \
        CHECK(shmem_fetch(x, me) == (T)9);                                                         \
        SYNC();                                                                                    \
    }
DEP5_TYPES(DEP5_TEST)

#ifdef __cplusplus
#define TEST_NAME "generics_types_cxx"
#else
#define TEST_NAME "generics_types"
#endif

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    next = (me + 1) % npes;
    prev = (me + npes - 1) % npes;
    CHECK(npes <= 8);
    size_t bytes = 16 * 16 * (size_t)npes;
    A = shmem_align(64, bytes);
    B = shmem_align(64, bytes);
    C = shmem_align(64, bytes);
    CHECK(A && B && C);

#define RUN_RMA(T, N) rma_##N();
    RMA_TYPES(RUN_RMA)
#define RUN_AMO_STD(T, N) amo_std_##N();
    AMO_STD_TYPES(RUN_AMO_STD)
#define RUN_AMO_EXT(T, N) amo_ext_##N();
    AMO_EXT_TYPES(RUN_AMO_EXT)
#define RUN_AMO_BITWISE(T, N) amo_bitwise_##N();
    AMO_BITWISE_TYPES(RUN_AMO_BITWISE)
#define RUN_P2P(T, N) p2p_##N();
    AMO_STD_TYPES(RUN_P2P)
#define RUN_P2P_DEPRECATED(T, N) p2p_deprecated_##N();
    P2P_DEPRECATED_TYPES(RUN_P2P_DEPRECATED)
    SYNC();
#define RUN_REDUCE_BITWISE(T, N) reduce_bitwise_##N();
    REDUCE_BITWISE_TYPES(RUN_REDUCE_BITWISE)
#define RUN_REDUCE_ARITH(T, N) reduce_arith_##N();
    REDUCE_MINMAX_TYPES(RUN_REDUCE_ARITH)
#define RUN_REDUCE_COMPLEX(T, N) reduce_complex_##N();
    COMPLEX_TYPES(RUN_REDUCE_COMPLEX)
#define RUN_DEP3(T, N) dep3_##N();
    DEP3_TYPES(RUN_DEP3)
#define RUN_DEP5(T, N) dep5_##N();
    DEP5_TYPES(RUN_DEP5)

    /* The untyped generics: signal updates (optional context) and shmem_sync(team). */
    SYNC();
    shmem_signal_add(&sig, 1, next);
    shmem_signal_add(SHMEM_CTX_DEFAULT, &sig, 2, next);
    shmem_quiet();
    CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0);
    CHECK(shmem_signal_fetch(&sig) == 3);
    CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0);
    shmem_signal_set(&sig, 5, next);
    shmem_quiet();
    SYNC();
    CHECK(shmem_signal_fetch(&sig) == 5);
    SYNC();
    shmem_signal_set(SHMEM_CTX_DEFAULT, &sig, 7, next);
    shmem_quiet();
    SYNC();
    CHECK(shmem_signal_fetch(&sig) == 7);

    shmem_free(C);
    shmem_free(B);
    shmem_free(A);
    SYNC();
    REPORT_OK(TEST_NAME);
    shmem_finalize();
    return 0;
}
