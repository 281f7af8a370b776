/* OpenSHMEM 1.3, 8.1.2 SHMEM_MY_PE */
#include <stdio.h>
#include <shmem.h>

int main(void)
{
    int me;

    shmem_init();
    me = shmem_my_pe();
    printf("My PE id is: %d\n", me);

    return 0;
}
