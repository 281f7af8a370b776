/* Bad input: a put to a non-symmetric (stack) address must end the job with a clear error. */
#include <shmem.h>
#include <stdio.h>

int main(void) {
    long local = 0, v = 1;
    shmem_init();
    shmem_long_put(&local, &v, 1, 0);
    printf("not_symmetric: not reached\n");
    shmem_finalize();
    return 0;
}
