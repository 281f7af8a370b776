/* Bad arguments chosen by MISUSE, each of which must end the job with a message naming the
 * routine and the argument (never a segfault or a silent success):
 * get_past_end / put_past_end (a transfer longer than the peer's heap), null_source,
 * null_dest, ctx_destroy_twice. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    const char *how = getenv("MISUSE");
    shmem_init();
    size_t heap = 64 << 20; /* SHMEM_SYMMETRIC_SIZE=64M in the harness */
    char *sym = shmem_malloc(1 << 20);
    int peer = (shmem_my_pe() + 1) % shmem_n_pes();
    shmem_barrier_all();
    if (shmem_my_pe() == 0 && how) {
        if (!strcmp(how, "get_past_end")) {
            char *local = malloc(heap + (16 << 20));
            shmem_getmem(local, sym, heap + (8 << 20), peer);
        }
        if (!strcmp(how, "put_past_end")) {
            char *local = calloc(1, heap + (16 << 20));
            shmem_putmem(sym, local, heap + (8 << 20), peer);
        }
        if (!strcmp(how, "null_source")) shmem_putmem(sym, NULL, 64, peer);
        if (!strcmp(how, "null_dest")) shmem_getmem(NULL, sym, 64, peer);
        if (!strcmp(how, "ctx_destroy_twice")) {
            shmem_ctx_t ctx;
            if (shmem_ctx_create(0, &ctx) == 0) {
                shmem_ctx_destroy(ctx);
                shmem_ctx_destroy(ctx);
            }
        }
        printf("misuse: not reached\n");
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
