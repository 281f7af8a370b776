/* Every PE fills BIG_HEAP_MB (default 48) MiB of symmetric heap with its PE number, plus a global
 * array, and reads a peer's last heap byte and first global byte: the harness runs it where
 * /dev/shm is smaller than that (a container's small tmpfs), which must not matter. */
#include "check.h"
#include <string.h>

static char global[1 << 20];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), peer = (me + 1) % n;
    const char *mb = getenv("BIG_HEAP_MB");
    size_t len = (size_t)(mb ? atoi(mb) : 48) << 20;
    char *p = shmem_malloc(len);
    CHECK(p != NULL);
    memset(p, 1 + me, len);
    memset(global, 1 + me, sizeof global);
    shmem_barrier_all();
    CHECK(shmem_char_g(p + len - 1, peer) == 1 + peer);
    CHECK(shmem_char_g(global, peer) == 1 + peer);
    shmem_barrier_all();
    shmem_free(p);
    REPORT_OK("big_heap");
    shmem_finalize();
    return 0;
}
