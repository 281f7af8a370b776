/* shmem_global_exit from one PE ends every PE with that status. */
#include <shmem.h>
#include <unistd.h>

int main(void) {
    shmem_init();
    if (shmem_my_pe() == shmem_n_pes() - 1) shmem_global_exit(7);
    sleep(30); /* the others would wait here */
    shmem_finalize();
    return 0;
}
