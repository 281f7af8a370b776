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

#define MAX_MSG ((size_t)4 << 20)
#endif
