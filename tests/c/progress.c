/* Progress without the target's help (1.3 spec section 4.1): PE 1 sleeps without calling the
 * library while PE 0 puts to it, gets from it and finally writes a marker. When PE 1 wakes it
 * checks the marker before calling any routine: had PE 0's operations waited for PE 1, the
 * marker could not be there yet. With PROGRESS_COMPUTE=1, PE 1 computes (keeps its CPU busy)
 * for 2 s instead of sleeping: a progress thread that stood by while PE 1 was inside the
 * library must notice and serve PE 0 while PE 1 holds its CPU. */
#include "check.h"
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void compute(double seconds) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile double x = 1;
    do {
        for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

static long data_heapless[16];
static long marker;

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    long *heap = shmem_malloc(16 * sizeof(long));
    for (int i = 0; i < 16; i++) heap[i] = 100 + i + me;
    if (shmem_n_pes() < 2) {
        REPORT_OK("progress");
        shmem_finalize();
        return 0;
    }
    shmem_barrier_all();
    if (me == 1) {
        const char *c = getenv("PROGRESS_COMPUTE");
        if (c && atoi(c))
            compute(2); /* busy on its CPU: no library calls */
        else
            sleep(3); /* busy elsewhere: no library calls */
        CHECK(marker == 42);
        CHECK(heap[0] == 7 && data_heapless[3] == 9);
    } else if (me == 0) {
        long v = 7, w[16];
        shmem_long_put(heap, &v, 1, 1);
        v = 9;
        shmem_long_put(&data_heapless[3], &v, 1, 1);
        shmem_long_get(w, heap + 1, 15, 1);
        for (int i = 1; i < 16; i++) CHECK(w[i - 1] == 100 + i + 1);
        CHECK(shmem_long_g(&data_heapless[3], 1) == 9);
        shmem_quiet();
        shmem_long_p(&marker, 42, 1);
        shmem_quiet();
    }
    shmem_barrier_all();
    REPORT_OK("progress");
    shmem_finalize();
    return 0;
}
