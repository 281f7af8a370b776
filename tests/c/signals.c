/* Signals oshrun passes on and the end it gives a job (tests/tests/launchers.rs).
 *
 * SIGNALS_MODE=forward: every PE catches SIGUSR1 and SIGUSR2 with handlers installed without
 *   SA_RESTART (so a system call they interrupt fails with EINTR), says "ready", and keeps
 *   putting, getting and synchronising, checking every value, until every PE has got both
 *   signals (which the test sends to oshrun, not to the PEs). Then it reports and finalizes.
 * SIGNALS_MODE=term: every PE catches SIGTERM, says "ready" and waits in barriers; the handler
 *   says "cleaned up" and exits.
 * SIGNALS_MODE=ignore: every PE ignores SIGTERM, says "ready" and waits in barriers.
 */
#include <shmem.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_usr1, got_usr2;

static void on_usr(int sig) {
    if (sig == SIGUSR1) got_usr1 = 1;
    if (sig == SIGUSR2) got_usr2 = 1;
}

static void on_term(int sig) {
    (void)sig;
    char msg[64];
    int n = snprintf(msg, sizeof msg, "PE %d: SIGTERM, cleaned up\n", shmem_my_pe());
    if (write(STDOUT_FILENO, msg, (size_t)n) < 0) _exit(4);
    _exit(0);
}

static void catch(int sig, void (*f)(int)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = f;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART */
    sigaction(sig, &sa, NULL);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static long slots[64];
static long flag;
static int got, all_got;

int main(void) {
    const char *mode = getenv("SIGNALS_MODE");
    if (!mode) mode = "forward";
    if (!strcmp(mode, "forward")) {
        catch(SIGUSR1, on_usr);
        catch(SIGUSR2, on_usr);
    } else if (!strcmp(mode, "term")) {
        catch(SIGTERM, on_term);
    } else if (!strcmp(mode, "ignore")) {
        signal(SIGTERM, SIG_IGN);
    } else {
        fprintf(stderr, "signals: unknown SIGNALS_MODE %s\n", mode);
        return 2;
    }
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    shmem_barrier_all();
    printf("PE %d ready\n", me);
    fflush(stdout);
    if (strcmp(mode, "forward")) {
        for (;;) {
            shmem_barrier_all();
            usleep(1000);
        }
    }
    double start = now();
    long round = 0;
    int bad = 0;
    while (!all_got) {
        round++;
        /* A value the right neighbour checks, a get it checks back, and a wait on a flag. */
        shmem_long_p(&slots[me % 64], round * 1000 + me, right);
        shmem_quiet();
        shmem_long_atomic_add(&flag, 1, right);
        shmem_long_wait_until(&flag, SHMEM_CMP_GE, round);
        if (slots[left % 64] != round * 1000 + left) bad++;
        if (shmem_long_g(&slots[me % 64], right) != round * 1000 + me) bad++;
        got = got_usr1 && got_usr2;
        shmem_barrier_all();
        shmem_int_min_reduce(SHMEM_TEAM_WORLD, &all_got, &got, 1);
        if (now() - start > 30) {
            printf("PE %d: no SIGUSR1 and SIGUSR2 within 30 s (usr1 %d usr2 %d)\n", me, (int)got_usr1,
                   (int)got_usr2);
            shmem_global_exit(1);
        }
    }
    if (bad)
        printf("PE %d: %d wrong values in %ld rounds\n", me, bad, round);
    else
        printf("PE %d got SIGUSR1 and SIGUSR2, %ld rounds, values ok\n", me, round);
    shmem_finalize();
    return bad ? 1 : 0;
}
