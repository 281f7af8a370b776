/* Hot paths for instruction counting under valgrind --tool=callgrind: N calls each of an 8-byte
 * shmem_putmem and shmem_getmem from PE 0 to PE 1, and N shmem_barrier_all on every PE. The
 * callgrind script collects only inside one routine at a time and divides by N. */
#include <shmem.h>
#include <stdlib.h>

#define N 1000

int main(void) {
    shmem_init();
    long *buf = shmem_malloc(64);
    long local = 42;
    shmem_barrier_all();
    if (shmem_my_pe() == 0) {
        for (int i = 0; i < N; i++) shmem_putmem(buf, &local, 8, 1);
        for (int i = 0; i < N; i++) shmem_getmem(&local, buf, 8, 1);
    }
    for (int i = 0; i < N; i++) shmem_barrier_all();
    shmem_free(buf);
    shmem_finalize();
    return 0;
}
