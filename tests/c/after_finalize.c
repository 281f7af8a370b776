/* What a PE may do after the last shmem_finalize, now that the library stays ready to be
 * initialized again (OpenSHMEM 1.6). MODE=linger: PE 0 exits at once while the others go
 * on without the library for 3 s (longer than spml ucx's 2 s grace for lost peers) and then
 * exit normally: losing PE 0 then is expected, the job succeeds. MODE=leave: PE 0 exits
 * while the others initialize again, which is collective: the launcher ends the job, naming
 * PE 0, instead of leaving them waiting. MODE=mixed: with a created space alive, odd PEs
 * return from main without shmem_finalize (the implicit finalize at exit) while even PEs
 * finalize: both must synchronise alike, and the job succeeds. QUIET=1 leaves out the put and
 * barrier before the finalize. */
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
    /* QUIET=1: no communication before the finalize, so no PE has reached another yet. */
    if (!getenv("QUIET")) {
        shmem_long_p(&word, me, (me + 1) % n);
        shmem_barrier_all();
    }
    if (strcmp(mode, "mixed") == 0) {
        shmem_space_config_t cfg = {.device_type = SHMEM_DEVICE_CPU, .size = 1 << 20,
                                    .flags = SHMEM_SPACE_FLAG_DEFAULT};
        shmem_space_t space;
        shmem_team_t team;
        if (shmem_space_create(&cfg, &space, &team) != 0)
            return 1;
        printf("after_finalize: PE %d ok\n", me);
        fflush(stdout);
        if (me % 2)
            return 0;
        shmem_finalize();
        return 0;
    }
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
