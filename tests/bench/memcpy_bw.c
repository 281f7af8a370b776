/* Single-core memcpy bandwidth of 1 MiB blocks (not OpenSHMEM): the yardstick for put/get
 * bandwidth in the same run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(void) {
    size_t size = 1 << 20;
    char *a = malloc(size), *b = malloc(size);
    memset(a, 1, size);
    memset(b, 2, size);
    struct timespec t0, t1;
    int n = 2000;
    for (int i = 0; i < 50; i++) memcpy(b, a, size);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; i++) {
        memcpy(b, a, size);
        __asm__ volatile("" ::"r"(b) : "memory");
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double us = (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3;
    printf("RESULT memcpy_bandwidth %zu %.6g MB/s\n", size, (double)size * n / us);
    return 0;
}
