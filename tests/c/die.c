/* PE 2 kills itself with SIGKILL while the others wait in a barrier: oshrun must end the job
 * at once, naming PE 2. */
#include <shmem.h>
#include <signal.h>
#include <unistd.h>

int main(void) {
    shmem_init();
    if (shmem_my_pe() == 2) kill(getpid(), SIGKILL);
    shmem_barrier_all();
    shmem_barrier_all();
    sleep(30);
    shmem_finalize();
    return 0;
}
