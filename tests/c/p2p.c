/* Point-to-point synchronization: wait_until/test for every standard AMO type (macro-generated),
 * the _all/_any/_some forms and their _vector variants with status masks, the deprecated forms
 * and the C11 generics. Flags are set by other PEs with puts and atomics. */
#include "check.h"
#include <stddef.h>
#include <stdint.h>

#define TEST_TYPE(T, N)                                                              \
    do {                                                                             \
        T *flag = shmem_calloc(1, sizeof(T));                                        \
        CHECK(shmem_##N##_test(flag, SHMEM_CMP_EQ, (T)0));                           \
        CHECK(!shmem_##N##_test(flag, SHMEM_CMP_GT, (T)0));                          \
        shmem_barrier_all();                                                         \
        shmem_##N##_p(flag, (T)(prev + 1), next); /* each PE signals its neighbour */ \
        shmem_##N##_wait_until(flag, SHMEM_CMP_EQ, (T)(prev2 + 1));                  \
        CHECK(*flag == (T)(prev2 + 1));                                              \
        CHECK(shmem_##N##_test(flag, SHMEM_CMP_GE, (T)1));                           \
        CHECK(shmem_##N##_test(flag, SHMEM_CMP_NE, (T)0));                           \
        CHECK(shmem_##N##_test(flag, SHMEM_CMP_LE, (T)n));                           \
        CHECK(!shmem_##N##_test(flag, SHMEM_CMP_LT, (T)1));                          \
        shmem_barrier_all();                                                         \
        shmem_free(flag);                                                            \
    } while (0)

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    int prev2 = (me + n - 1) % n; /* the PE that signals me (flag value = its prev + 1) */
    prev2 = (prev2 + n - 1) % n;
    TEST_TYPE(int, int);
    TEST_TYPE(long, long);
    TEST_TYPE(long long, longlong);
    TEST_TYPE(unsigned int, uint);
    TEST_TYPE(unsigned long, ulong);
    TEST_TYPE(unsigned long long, ulonglong);
    TEST_TYPE(int32_t, int32);
    TEST_TYPE(int64_t, int64);
    TEST_TYPE(uint32_t, uint32);
    TEST_TYPE(uint64_t, uint64);
    TEST_TYPE(size_t, size);
    TEST_TYPE(ptrdiff_t, ptrdiff);

    /* every PE sets its slot in PE 0's array; PE 0 waits on all, any, some */
    long *slots = shmem_calloc(n, sizeof(long));
    int *status = calloc(n, sizeof(int));
    size_t *idx = calloc(n, sizeof(size_t));
    long *want = calloc(n, sizeof(long));
    for (int i = 0; i < n; i++) want[i] = 10 + i;
    shmem_barrier_all();
    if (me == 0) {
        CHECK(shmem_long_test_any(slots, n, NULL, SHMEM_CMP_GT, 0) == SIZE_MAX);
        CHECK(shmem_long_test_some(slots, n, idx, NULL, SHMEM_CMP_GT, 0) == 0);
        CHECK(!shmem_long_test_all(slots, n, NULL, SHMEM_CMP_GT, 0));
        CHECK(shmem_long_test_all(slots, 0, NULL, SHMEM_CMP_GT, 0)); /* vacuous */
    }
    shmem_barrier_all();
    shmem_long_atomic_set(&slots[me], 10 + me, 0);
    if (me == 0) {
        size_t any = shmem_long_wait_until_any(slots, n, NULL, SHMEM_CMP_GE, 10);
        CHECK(any < (size_t)n && slots[any] == (long)(10 + any));
        size_t k = shmem_long_wait_until_some(slots, n, idx, NULL, SHMEM_CMP_GE, 10);
        CHECK(k >= 1 && k <= (size_t)n);
        for (size_t i = 0; i < k; i++) CHECK(slots[idx[i]] == (long)(10 + idx[i]));
        shmem_long_wait_until_all(slots, n, NULL, SHMEM_CMP_GE, 10);
        shmem_long_wait_until_all_vector(slots, n, NULL, SHMEM_CMP_EQ, want);
        CHECK(shmem_long_test_all_vector(slots, n, NULL, SHMEM_CMP_EQ, want));
        CHECK(shmem_long_test_some_vector(slots, n, idx, NULL, SHMEM_CMP_EQ, want) == (size_t)n);
        CHECK(shmem_long_wait_until_any_vector(slots, n, NULL, SHMEM_CMP_EQ, want) < (size_t)n);
        CHECK(shmem_long_wait_until_some_vector(slots, n, idx, NULL, SHMEM_CMP_EQ, want) == (size_t)n);
        /* status masks: a masked element never counts */
        for (int i = 0; i < n; i++) status[i] = 1;
        CHECK(shmem_long_wait_until_any(slots, n, status, SHMEM_CMP_GE, 0) == SIZE_MAX);
        CHECK(shmem_long_wait_until_some(slots, n, idx, status, SHMEM_CMP_GE, 0) == 0);
        shmem_long_wait_until_all(slots, n, status, SHMEM_CMP_LT, 0); /* nothing to wait for */
        CHECK(shmem_long_test_any_vector(slots, n, status, SHMEM_CMP_EQ, want) == SIZE_MAX);
        status[n - 1] = 0;
        CHECK(shmem_long_test_any(slots, n, status, SHMEM_CMP_GE, 0) == (size_t)(n - 1));
        CHECK(shmem_long_test_all(slots, n, status, SHMEM_CMP_EQ, 10 + n - 1));
    }
    shmem_barrier_all();

    /* C11 generics, deprecated forms */
    static int gi;
    static short gs;
    static long gl;
    shmem_barrier_all();
    shmem_int_p(&gi, 5, next);
    shmem_short_p(&gs, 6, next);
    shmem_long_p(&gl, 7, next);
    shmem_wait_until(&gi, SHMEM_CMP_EQ, 5);
    shmem_short_wait_until(&gs, SHMEM_CMP_EQ, 6);
    (shmem_wait_until)(&gl, SHMEM_CMP_EQ, 7); /* the deprecated long function */
    shmem_wait(&gl, 0);
    shmem_int_wait(&gi, 0);
    CHECK(shmem_test(&gi, SHMEM_CMP_EQ, 5));
    CHECK(shmem_short_test(&gs, SHMEM_CMP_EQ, 6));
    CHECK(shmem_wait_until_any(&gi, 1, NULL, SHMEM_CMP_EQ, 5) == 0);
    /* Alternating wait_until_any and test_any on 4 words that all hold: between them they
     * return every index in turn (the spec's fairness rule; issue 49 reported only 2 of 4). */
    int *four = shmem_calloc(4, sizeof(int));
    for (int i = 0; i < 4; i++) four[i] = 1;
    int seen[4] = {0, 0, 0, 0};
    for (int k = 0; k < 8; k++) {
        size_t a = (k & 1) ? shmem_int_test_any(four, 4, NULL, SHMEM_CMP_EQ, 1)
                           : shmem_int_wait_until_any(four, 4, NULL, SHMEM_CMP_EQ, 1);
        CHECK(a < 4);
        seen[a]++;
    }
    for (int i = 0; i < 4; i++) CHECK(seen[i] == 2);
    shmem_free(four);
    shmem_barrier_all();
    free(status);
    free(idx);
    free(want);
    shmem_free(slots);
    REPORT_OK("p2p");
    shmem_finalize();
    return 0;
}
