/* Symmetric heap: alignment, exhaustion returns NULL on every PE (run with a small
 * SHMEM_SYMMETRIC_SIZE), realloc keeps contents, free + reuse, symmetry of addresses. */
#include "check.h"
#include <stdint.h>

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    /* the harness runs this with SHMEM_SYMMETRIC_SIZE=4M */
    void *huge = shmem_malloc((size_t)64 << 20);
    CHECK(huge == NULL);
    CHECK(shmem_malloc(0) == NULL);
    CHECK(shmem_align(3, 64) == NULL); /* not a power of two */
    void *a = shmem_align(4096, 100);
    CHECK(a != NULL && ((uintptr_t)a % 4096) == 0);
    long *p = shmem_malloc(10 * sizeof(long));
    CHECK(p != NULL && ((uintptr_t)p % 8) == 0);
    for (int i = 0; i < 10; i++) p[i] = me * 10 + i;
    p = shmem_realloc(p, 100000 * sizeof(long));
    CHECK(p != NULL);
    for (int i = 0; i < 10; i++) CHECK(p[i] == me * 10 + i);
    /* the reallocated block is symmetric: a put into it lands on the neighbour */
    shmem_long_p(&p[99999], me, (me + 1) % n);
    shmem_barrier_all();
    CHECK(p[99999] == (me + n - 1) % n);
    /* exhaust the heap in 256 KiB blocks: every PE gets the same count, then NULL */
    void *blocks[64];
    int count = 0;
    while (count < 64 && (blocks[count] = shmem_malloc(256 << 10)) != NULL) count++;
    CHECK(count > 0 && count < 64);
    int *counts = shmem_malloc(sizeof(int));
    if (counts == NULL) { /* heap full: free one block first */
        shmem_free(blocks[--count]);
        counts = shmem_malloc(sizeof(int));
    }
    CHECK(counts != NULL);
    *counts = count;
    shmem_barrier_all();
    for (int pe = 0; pe < n; pe++) CHECK(shmem_int_g(counts, pe) == count);
    for (int i = count - 1; i >= 0; i--) shmem_free(blocks[i]);
    void *again = shmem_malloc(256 << 10);
    CHECK(again != NULL);
    shmem_free(again);
    shmem_free(counts);
    shmem_free(p);
    shmem_free(a);
    /* legacy names */
    long *old = shmalloc(64);
    CHECK(old != NULL);
    old = shrealloc(old, 128);
    CHECK(old != NULL);
    shfree(old);
    CHECK(shmemalign(64, 64) != NULL);
    REPORT_OK("heap");
    shmem_finalize();
    return 0;
}
