/* What a PE may do after the last shmem_finalize, now that the library stays ready to be
 * initialized again (OpenSHMEM 1.6). MODE=linger: PE 0 exits at once while the others go
 * on without the library for 3 s (longer than spml ucx's 2 s grace for lost peers) and then
 * exit normally: losing PE 0 then is expected, the job succeeds. MODE=leave: PE 0 exits
 * while the others initialize again, which is collective: the launcher ends the job, naming
 * PE 0, instead of leaving them waiting. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long word;

int main(void) {
    const char *mode = getenv("MODE") ? getenv("MODE") : "linger";
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_long_p(&word, me, (me + 1) % n);
    shmem_barrier_all();
    shmem_finalize();
    if (me == 0)
        return 0;
    if (strcmp(mode, "linger") == 0) {
        sleep(3);
        printf("after_finalize: PE %d ok\n", me);
        return 0;
    }
    usleep(200 * 1000); /* PE 0 has gone by now */
    shmem_init();
    printf("after_finalize: PE %d not reached\n", me);
    shmem_finalize();
    return 0;
}
