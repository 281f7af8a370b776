/* One way for PE 1 to end, chosen by DEATH (the others wait for it in a barrier, then sleep):
 * kill9, segv, abort, exit3, return (leave main without shmem_finalize), global_exit5, stop
 * (SIGSTOP), stop_wait (SIGSTOP while PE 0 waits for a flag), stop_get and stop_amo (SIGSTOP
 * while PE 0 reads PE 1's flag with gets or fetching atomics until it is 1), stop_lock (PE 1
 * takes a lock, then SIGSTOP while PE 0 asks for it), stop_init (SIGSTOP before shmem_init,
 * under a PMIx launcher), exit0_init (exit(0) before shmem_init, under a PMIx launcher),
 * ucx_window (SIGKILL while a
 * shared-memory file named as UCX's posix transport names its own is still linked, as UCX's
 * is for a moment while it starts: it prints the name). The harness checks that oshrun ends
 * the job promptly, naming PE 1 and the right status. */
#include <fcntl.h>
#include <shmem.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long flag;
static long lock;

int main(void) {
    const char *how = getenv("DEATH");
    /* stop_init: PE 1 (its PMIx rank) stops before it initializes; the others wait in init. */
    const char *rank = getenv("PMIX_RANK");
    if (how && !strcmp(how, "stop_init") && rank && !strcmp(rank, "1")) raise(SIGSTOP);
    /* exit0_init: PE 1 leaves, status 0, 3 s in, before it initializes; the others wait in
     * init (srun went on waiting for them for good, 2026-12-06). */
    if (how && !strcmp(how, "exit0_init") && rank && !strcmp(rank, "1")) {
        sleep(3);
        return 0;
    }
    shmem_init();
    if (how && !strcmp(how, "stop_lock") && shmem_my_pe() == 1) shmem_set_lock(&lock);
    shmem_barrier_all();
    /* DEATH_PE: the PE that ends instead of PE 1, for kill9 and stop (the other modes have PE 0
     * wait on PE 1 itself). */
    const char *who = getenv("DEATH_PE");
    int dying = who ? atoi(who) : 1;
    if (how && shmem_my_pe() == dying) {
        if (!strcmp(how, "kill9")) kill(getpid(), SIGKILL);
        if (!strcmp(how, "segv")) raise(SIGSEGV);
        if (!strcmp(how, "abort")) abort();
        if (!strcmp(how, "exit3")) exit(3);
        if (!strcmp(how, "return")) return 0;
        if (!strcmp(how, "global_exit5")) shmem_global_exit(5);
        if (!strcmp(how, "stop") || !strcmp(how, "stop_wait") || !strcmp(how, "stop_get") ||
            !strcmp(how, "stop_amo") || !strcmp(how, "stop_lock"))
            raise(SIGSTOP);
        if (!strcmp(how, "ucx_window")) {
            char name[64];
            snprintf(name, sizeof name, "/ucx_shm_posix_rshmemtest%ld", (long)getpid());
            int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
            if (fd < 0 || ftruncate(fd, 4096) != 0) {
                perror("shm_open");
                exit(2);
            }
            printf("made %s\n", name);
            fflush(stdout);
            kill(getpid(), SIGKILL);
        }
    }
    /* PE 0 waits for a flag PE 1 never sets once it has left; the others wait in a barrier
     * that PE 1 never reaches. */
    if (shmem_my_pe() == 0 && how && (!strcmp(how, "return") || !strcmp(how, "stop_wait")))
        shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
    if (shmem_my_pe() == 0 && how && !strcmp(how, "stop_get"))
        while (shmem_long_g(&flag, 1) != 1) {}
    if (shmem_my_pe() == 0 && how && !strcmp(how, "stop_amo"))
        while (shmem_long_atomic_fetch(&flag, 1) != 1) {}
    if (shmem_my_pe() == 0 && how && !strcmp(how, "stop_lock")) shmem_set_lock(&lock);
    shmem_barrier_all();
    sleep(30);
    shmem_finalize();
    return 0;
}
