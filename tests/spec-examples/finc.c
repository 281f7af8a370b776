/* OpenSHMEM 1.3, 8.5.4 SHMEM_FINC */
#include <stdio.h>
#include <shmem.h>

int dst;

int main(void)
{
    int me;
    int old;
    shmem_init();
    me = shmem_my_pe();
    old = -1;
    dst = 22;
    shmem_barrier_all();
    if (me == 0)
        old = shmem_finc(&dst, 1);
    shmem_barrier_all();
    printf("%d: old = %d, dst = %d\n", me, old, dst);
    return 0;
}
