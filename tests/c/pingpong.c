/* The classic ping-pong: each PE puts a word into its partner's flag, waits on its own flag
 * with wait_until, clears it with a plain store and answers (issue 49). Every message carries
 * its sequence number, so a put stored twice shows as a number that comes back after its flag
 * was cleared, rather than as a hang. Sizes: the flag alone (a long), and a flag at the end of
 * a block of 1..4096 bytes put in one call, so that the copy of longer puts is covered too
 * (only the flag is checked there: the spec orders no bytes within one put).
 * Pairs (0,1), (2,3), ... run at once; an odd last PE sits out. */
#include "check.h"
#include <string.h>

#define ROUNDS 4000
#define BLOCK 4096

static void pingpong(long *flag, char *block, size_t len, int peer, int first) {
    char out[BLOCK + sizeof(long)];
    long expect = 1;
    for (long i = 1; i <= ROUNDS; i++) {
        if (!(first ^ (i & 1))) {
            /* My turn to send: the data, then (in the same put when len > 0) the flag after it. */
            memset(out, (int)(i & 0x7f), len);
            memcpy(out + len, &i, sizeof(long));
            if (len == 0)
                shmem_long_put(flag, &i, 1, peer);
            else
                shmem_putmem(block + BLOCK - len, out, len + sizeof(long), peer);
        } else {
            long *f = len == 0 ? flag : (long *)(block + BLOCK);
            shmem_long_wait_until(f, SHMEM_CMP_NE, 0);
            long got = *f;
            if (got != i) {
                fprintf(stderr, "PE %d: round %ld of size %zu: flag holds %ld (a put stored twice, or lost)\n",
                        shmem_my_pe(), i, len, got);
                CHECK(got == i);
            }
            *f = 0;
            expect++;
        }
    }
    CHECK(expect == ROUNDS / 2 + 1);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *flag = shmem_calloc(1, sizeof(long));
    /* The block's flag sits right after it: block[BLOCK .. BLOCK + 8), 8-byte aligned. */
    char *block = shmem_calloc(BLOCK + sizeof(long), 1);
    CHECK(flag != NULL && block != NULL);
    int peer = me ^ 1;
    size_t sizes[] = {0, 1, 8, 13, 64, 300, 4096};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        shmem_barrier_all();
        if (peer < n) pingpong(flag, block, sizes[s], peer, (me & 1) == 0);
        shmem_barrier_all();
        CHECK(*flag == 0 && *(long *)(block + BLOCK) == 0);
    }
    REPORT_OK("pingpong");
    shmem_free(block);
    shmem_free(flag);
    shmem_finalize();
    return 0;
}
