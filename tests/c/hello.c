#include <shmem.h>
#include <stdio.h>

int main(void) {
    shmem_init();
    char name[SHMEM_MAX_NAME_LEN];
    int major, minor;
    shmem_info_get_name(name);
    shmem_info_get_version(&major, &minor);
    printf("Hello from PE %d of %d (%s, OpenSHMEM %d.%d)\n", shmem_my_pe(), shmem_n_pes(), name, major, minor);
    shmem_finalize();
    return 0;
}
