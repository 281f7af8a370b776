/* Reports the symmetric heap size this job got (shmemx_heap_size) after a ring of puts through
 * the heap, so that the configuration tests can see which settings took effect. */
#include <shmemx.h>
#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *ring = shmem_malloc(sizeof(long));
    CHECK(ring != NULL);
    *ring = -1;
    shmem_barrier_all();
    shmem_long_p(ring, me, (me + 1) % npes);
    shmem_barrier_all();
    CHECK(*ring == (me + npes - 1) % npes);
    printf("heap_report: PE %d heap %zu\n", me, shmemx_heap_size());
    shmem_free(ring);
    REPORT_OK("heap_report");
    shmem_finalize();
    return 0;
}
