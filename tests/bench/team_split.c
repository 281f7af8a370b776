/* Team creation: the time to split the world into one team of every PE and destroy it, and
 * to split it into rows of 4 (shmem_team_split_2d) and destroy both, over the PEs of the job
 * (median of 9 blocks of 20, in microseconds per split). OSHMEM 4.1 has no teams, so this
 * compares rshmem builds. */
#include "bench.h"

#define BLOCKS 9
#define REPS 20

int main(void) {
    shmem_init();
    int n = shmem_n_pes();
    double whole[BLOCKS], rows[BLOCKS];
    for (int b = 0; b < BLOCKS; b++) {
        shmem_barrier_all();
        double t0 = now_us();
        for (int r = 0; r < REPS; r++) {
            shmem_team_t t;
            if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t) != 0) {
                fprintf(stderr, "team_split: the split failed\n");
                shmem_global_exit(1);
            }
            shmem_team_destroy(t);
        }
        whole[b] = (now_us() - t0) / REPS;
        shmem_barrier_all();
        t0 = now_us();
        for (int r = 0; r < REPS; r++) {
            shmem_team_t x, y;
            if (shmem_team_split_2d(SHMEM_TEAM_WORLD, 4, NULL, 0, &x, NULL, 0, &y) != 0) {
                fprintf(stderr, "team_split: the 2d split failed\n");
                shmem_global_exit(1);
            }
            shmem_team_destroy(x);
            shmem_team_destroy(y);
        }
        rows[b] = (now_us() - t0) / REPS;
    }
    result_blocks("team_split_world", (size_t)n, whole, BLOCKS, "us");
    result_blocks("team_split_2d_rows_of_4", (size_t)n, rows, BLOCKS, "us");
    shmem_finalize();
    return 0;
}
