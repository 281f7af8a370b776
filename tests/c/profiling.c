/* The profiling interface: this program interposes shmem_long_p and shmem_barrier_all, counts
 * the calls and forwards them to the library through the pshmem_ names. */
#include "check.h"
#include <pshmem.h>

static int p_calls, barrier_calls;

void shmem_long_p(long *dest, long value, int pe) {
    p_calls++;
    pshmem_long_p(dest, value, pe);
}

void shmem_barrier_all(void) {
    barrier_calls++;
    pshmem_barrier_all();
}

static long x;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_long_p(&x, me + 1, (me + 1) % n);
    shmem_barrier_all();
    CHECK(x == (me + n - 1) % n + 1);
    CHECK(p_calls == 1 && barrier_calls == 1);
    CHECK(pshmem_my_pe() == me && pshmem_n_pes() == n);
    shmem_barrier_all();
    REPORT_OK("profiling");
    shmem_finalize();
    return 0;
}
