// The type-generic interfaces from C++ (oshc++): shmem.h provides them as overloads, since C++
// has no _Generic. One call per family, on plain and context forms, with several types.
#include "check.h"
#include <cstdint>
#include <string_view>

static long lv[8];
static double dv[8];
static int iv[4];
static unsigned long long uv[2];
static uint64_t sig;
static char cbuf[16];

int main() {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;

    long ls[8];
    double ds[8];
    for (int i = 0; i < 8; i++) {
        ls[i] = me * 100 + i;
        ds[i] = me + i / 8.0;
    }
    shmem_put(lv, ls, 8, next);                     // long
    shmem_put(SHMEM_CTX_DEFAULT, dv, ds, 8, next);  // ctx form, double
    shmem_p(&iv[0], me + 7, next);                  // int
    shmem_put_nbi(cbuf, "overloaded", 11, next);    // char from a string literal
    shmem_quiet();
    shmem_barrier_all();
    for (int i = 0; i < 8; i++) CHECK(lv[i] == prev * 100 + i && dv[i] == prev + i / 8.0);
    CHECK(iv[0] == prev + 7);
    CHECK(std::string_view(cbuf) == "overloaded");
    long got[8];
    shmem_get(got, lv, 8, next);
    CHECK(got[3] == me * 100 + 3);
    CHECK(shmem_g(&dv[1], next) == me + 1 / 8.0);
    shmem_barrier_all();

    // atomics: standard, extended, bitwise; fetching and not; ctx and not
    shmem_atomic_add(&iv[1], 2, 0);
    shmem_atomic_inc(SHMEM_CTX_DEFAULT, &iv[1], 0);
    unsigned long long old = shmem_atomic_fetch_or(&uv[0], 1ULL << me, 0);
    (void)old;
    shmem_barrier_all();
    if (me == 0) {
        CHECK(iv[1] == 3 * n);
        CHECK(uv[0] == (n >= 64 ? ~0ULL : (1ULL << n) - 1));
    }
    shmem_atomic_set(&dv[7], 2.5, next);
    shmem_barrier_all();
    CHECK(shmem_atomic_fetch(&dv[7], me) == 2.5);
    CHECK(shmem_atomic_compare_swap(SHMEM_CTX_DEFAULT, &lv[7], 0L, 1L, me) == prev * 100 + 7);
    shmem_barrier_all();

    // point-to-point synchronization and signals
    shmem_atomic_set(&iv[2], me + 1, next);
    shmem_wait_until(&iv[2], SHMEM_CMP_EQ, prev + 1);
    CHECK(shmem_test(&iv[2], SHMEM_CMP_GE, 1) == 1);
    shmem_put_signal(&lv[0], ls, 8, &sig, 5, SHMEM_SIGNAL_SET, next);
    CHECK(shmem_signal_wait_until(&sig, SHMEM_CMP_GE, 5) >= 5);
    shmem_signal_add(SHMEM_CTX_DEFAULT, &sig, 1, next);
    shmem_signal_add(&sig, 1, next);  // the C function, not an overload
    shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 7);
    CHECK(lv[7] == prev * 100 + 7);
    shmem_barrier_all();
    REPORT_OK("cxx_generics");
    shmem_finalize();
    return 0;
}
