/* Barrier time and where the PEs ran: after 1000 warm-up barriers, PE 0 times BARRIERS
 * (default 20000) back-to-back shmem_barrier_all calls; every PE records the CPU it was on
 * before and after them. One line from PE 0:
 *   RESULT barrier_cpus <PEs> <microseconds per barrier> us cpus <before>-><after> ...
 * With more PEs than cores the time depends on how the kernel spread the PEs over the cores
 * (docs/performance.md, "Barriers on an oversubscribed node"). Linux only (sched_getcpu). */
#define _GNU_SOURCE
#include "bench.h"
#include <sched.h>

static long cpus[2][4096];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long iters = getenv("BARRIERS") ? atol(getenv("BARRIERS")) : 20000;
    if (n > 4096 || iters < 1) {
        fprintf(stderr, "barrier_cpus: at most 4096 PEs and BARRIERS >= 1\n");
        shmem_global_exit(1);
    }
    for (int i = 0; i < 1000; i++) shmem_barrier_all();
    long before = sched_getcpu();
    double t0 = now_us();
    for (long i = 0; i < iters; i++) shmem_barrier_all();
    double per = (now_us() - t0) / iters;
    long after = sched_getcpu();
    shmem_long_p(&cpus[0][me], before, 0);
    shmem_long_p(&cpus[1][me], after, 0);
    shmem_barrier_all();
    if (me == 0) {
        printf("RESULT barrier_cpus %d %.6g us cpus", n, per);
        for (int i = 0; i < n; i++) printf(" %ld->%ld", cpus[0][i], cpus[1][i]);
        printf("\n");
        fflush(stdout);
    }
    shmem_finalize();
    return 0;
}
