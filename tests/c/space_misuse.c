/* A space handle used after shmem_space_destroy (SPACE_MISUSE=malloc_after_destroy,
 * destroy_twice, free_after_destroy) or a pointer that is no space handle (not_a_handle) must
 * end the job with a message naming the routine, on every PE at once: never a hang or a crash
 * in the transport. bad_hints: shmem_malloc_with_hints with bits that are no hint, which are
 * warned about and ignored.
 * put_past_block (under SHMEM_DEBUG): a put leaving its block of the space's heap. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    const char *how = getenv("SPACE_MISUSE");
    shmem_init();
    shmem_space_config_t c = {.device_type = SHMEM_DEVICE_CPU, .size = 1 << 20, .flags = SHMEM_SPACE_FLAG_DEFAULT};
    shmem_space_t s;
    shmem_team_t t;
    if (shmem_space_create(&c, &s, &t) != 0) return 2;
    long *p = shmem_space_malloc(s, 64);
    if (!strcmp(how, "put_past_block")) {
        /* Under SHMEM_DEBUG: a put running from one block of the space into the next. */
        long *next = shmem_space_malloc(s, 64), src[16] = {0};
        (void)next;
        if (shmem_my_pe() == 0) shmem_long_put(p, src, 16, 1);
        shmem_barrier_all();
    }
    if (strcmp(how, "free_after_destroy") != 0) shmem_space_free(s, p);
    shmem_team_destroy(t);
    if (shmem_space_destroy(s) != 0) return 3;
    if (!strcmp(how, "malloc_after_destroy")) shmem_space_malloc(s, 64);
    if (!strcmp(how, "destroy_twice")) shmem_space_destroy(s);
    if (!strcmp(how, "free_after_destroy")) shmem_space_free(s, p);
    if (!strcmp(how, "bad_hints")) {
        /* warned about, then served as the defined bit asks: a block of whole cache lines */
        long *h = shmem_malloc_with_hints(64, SHMEM_MALLOC_ATOMICS_REMOTE | 0x40);
        long *h2 = shmem_malloc_with_hints(64, 0x80);
        if (h == NULL || (uintptr_t)h % 128 != 0 || h2 == NULL) return 4;
        shmem_free(h2);
        shmem_free(h);
        printf("space_misuse: bad_hints allocated\n");
        shmem_finalize();
        return 0;
    }
    if (!strcmp(how, "not_a_handle")) {
        long junk[8] = {0};
        shmem_space_malloc((shmem_space_t)junk, 64);
    }
    printf("space_misuse: not reached\n");
    shmem_finalize();
    return 0;
}
