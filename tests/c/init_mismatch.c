/* PE 1 asks for a different heap size than the others, so shmem_init fails on every PE after
 * each has created its shared-memory segments: the job must end with an error and leave no
 * names behind in /dev/shm. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    const char *rank = getenv("RSHMEM_RANK");
    setenv("SHMEM_SYMMETRIC_SIZE", rank && atoi(rank) == 1 ? "8M" : "4M", 1);
    shmem_init();
    printf("not reached: PE %d initialized\n", shmem_my_pe());
    shmem_finalize();
    return 0;
}
