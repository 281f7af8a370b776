/* What the liveness watch under mpirun and srun must not mistake for a stopped PE, and what it
 * must end (LIVENESS):
 *   busy     PE 1 computes for 3 s while the others wait for it in a barrier;
 *   suspend  a helper process stops every PE of this host (SIGSTOP) for 3 s, then continues
 *            them 250 ms apart, as a whole job suspended by Ctrl-Z or a batch system (whose
 *            resumption reaches the PEs at slightly different times);
 *   stream   every PE puts to the next one, quiets and joins a barrier, over and over for
 *            LIVENESS_SECONDS (default 30): across hosts whose link the harness cuts or flaps;
 *   late     PE 0 waits (shmem_long_wait_until) for a word PE 1 sets only after 2.5 s: with
 *            SHMEM_WAIT_STALL_WARN=1 the wait says what it waits for;
 *   orphan   every PE writes its pid to $LIVENESS_DIR/pe<N>, then waits for PE 1, which sleeps
 *            for 60 s: the harness kills the launcher meanwhile, and every PE must go.
 * Run with SHMEM_STOP_TIMEOUT=2 (at most 4 PEs for suspend); prints `liveness: PE <me> ok`. */
#include <shmem.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static long pids[64];
static long mypid;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(void) {
    const char *mode = getenv("LIVENESS");
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (!mode || n > 64) {
        fprintf(stderr, "liveness: LIVENESS=busy|suspend|orphan, at most 64 PEs\n");
        shmem_global_exit(2);
    }
    mypid = getpid();
    shmem_long_fcollect(SHMEM_TEAM_WORLD, pids, &mypid, 1);
    if (!strcmp(mode, "busy") && me == 1) {
        volatile double x = 0;
        double end = now() + 3;
        while (now() < end) x += 1;
    }
    if (!strcmp(mode, "suspend") && me == 0) {
        pid_t helper = fork();
        if (helper == 0) {
            usleep(200 * 1000);
            for (int pe = 0; pe < n; pe++) kill((pid_t)pids[pe], SIGSTOP);
            sleep(3);
            for (int pe = 0; pe < n; pe++) {
                kill((pid_t)pids[pe], SIGCONT);
                usleep(250 * 1000);
            }
            _exit(0);
        }
        /* The others wait in the barrier for PE 0 the whole time. */
        int status;
        waitpid(helper, &status, 0);
    }
    if (!strcmp(mode, "late")) {
        static long word;
        if (me == 1) {
            usleep(2500 * 1000);
            shmem_long_p(&word, 1, 0);
            shmem_quiet();
        } else if (me == 0) {
            shmem_long_wait_until(&word, SHMEM_CMP_EQ, 1);
        }
    }
    if (!strcmp(mode, "orphan")) {
        char path[512];
        snprintf(path, sizeof path, "%s/pe%d", getenv("LIVENESS_DIR") ? getenv("LIVENESS_DIR") : "/tmp", me);
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "%ld\n", mypid);
            fclose(f);
        }
        if (me == 1) sleep(60);
    }
    if (!strcmp(mode, "stream")) {
        static long box, stop_at = -1;
        double end = now() + (getenv("LIVENESS_SECONDS") ? atof(getenv("LIVENESS_SECONDS")) : 30);
        long rounds = 0;
        /* When the time is up PE 0 names a round two ahead as the last for everybody (a flag
         * read at the top of the loop could reach a PE just before or just after a barrier, and
         * the PEs would then join different numbers of barriers). */
        while (stop_at < 0 || rounds < stop_at) {
            shmem_long_p(&box, rounds, (me + 1) % n);
            shmem_quiet();
            if (me == 0 && stop_at < 0 && now() >= end) {
                for (int pe = 0; pe < n; pe++) shmem_long_p(&stop_at, rounds + 2, pe);
                shmem_quiet();
            }
            shmem_barrier_all();
            rounds++;
        }
        if (me == 0) printf("liveness: %ld rounds\n", rounds);
    }
    shmem_barrier_all();
    printf("liveness: PE %d ok\n", me);
    shmem_finalize();
    return 0;
}
