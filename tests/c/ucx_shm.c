/* Whether this PE's UCX opened its shared-memory transports (issue 51): counts the mappings of
 * UCX's posix and sysv segments in /proc/self/maps after init, and whether the next PE's heap
 * is mapped for load/store (shmem_ptr), which sshmem "ucx" does through those transports.
 * Prints "ucx_shm: PE n segments k mapped m". */
#include <string.h>
#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *word = shmem_malloc(sizeof(long));
    CHECK(word != NULL);
    shmem_barrier_all();
    int segments = 0;
    char line[512];
    FILE *maps = fopen("/proc/self/maps", "r");
    CHECK(maps != NULL);
    while (fgets(line, sizeof line, maps))
        if (strstr(line, "ucx_shm_posix") || strstr(line, "/SYSV")) segments++;
    fclose(maps);
    int mapped = shmem_ptr(word, (me + 1) % npes) != NULL;
    printf("ucx_shm: PE %d segments %d mapped %d\n", me, segments, mapped);
    shmem_long_p(word, me, (me + 1) % npes);
    shmem_barrier_all();
    CHECK(*word == (me + npes - 1) % npes);
    shmem_free(word);
    REPORT_OK("ucx_shm");
    shmem_finalize();
    return 0;
}
