/* Shared helpers for the benchmark suite. Only the public OpenSHMEM API is used, so every
 * program builds with rshmem's oshcc and with Open MPI's. Output lines are
 * "RESULT <benchmark> <size> <value> <unit>" from PE 0. */
#ifndef RSHMEM_BENCH_H
#define RSHMEM_BENCH_H
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static inline void result(const char *bench, size_t size, double value, const char *unit) {
    if (shmem_my_pe() == 0) {
        printf("RESULT %s %zu %.6g %s\n", bench, size, value, unit);
        fflush(stdout);
    }
}

/* Iterations scaled so each measurement runs about the same time for every size. */
static inline long iters_for(size_t size, long small) {
    long n = small;
    if (size >= 8192) n = small / 10;
    if (size >= 262144) n = small / 100;
    return n < 20 ? 20 : n;
}

/* qsort's comparison of doubles. */
static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* "RESULT <benchmark> <size> <median> <unit> <min> <max>" from PE 0 over the n figures of v
 * (one per timed block; sorted in place), so one descheduled block does not move the figure. */
static inline void result_blocks(const char *bench, size_t size, double *v, int n, const char *unit) {
    qsort(v, n, sizeof *v, cmp_double);
    if (shmem_my_pe() == 0) {
        printf("RESULT %s %zu %.6g %s %.6g %.6g\n", bench, size, v[n / 2], unit, v[0], v[n - 1]);
        fflush(stdout);
    }
}

/* The end of a timed block between PE 0 and PE 1: PE 0 completes its operations and increments
 * PE 1's `*done`; PE 1 waits for that in shmem_long_wait_until, inside the library (where both
 * libraries drive their UCX worker) rather than in a barrier. `done` is symmetric; `blocks`
 * counts the blocks ended so far on this PE. */
static inline void block_end(long *done, long *blocks) {
    int me = shmem_my_pe();
    (*blocks)++;
    if (me == 0) {
        shmem_quiet();
        shmem_long_atomic_inc(done, 1);
    } else if (me == 1) {
        shmem_long_wait_until(done, SHMEM_CMP_GE, *blocks);
    }
}

#define MAX_MSG ((size_t)4 << 20)
#endif
