/* Initialisation counting (spec 9.1): each shmem_init / shmem_init_thread is matched by a
 * shmem_finalize, and only the last one finalizes. Also: shmem_init_thread with a level that
 * is not one returns nonzero and initializes nothing; shmem_align with an alignment that is
 * not a power of two returns NULL. INIT_AGAIN=1 initializes once more after the last
 * finalize, which OpenSHMEM 1.6 allows, and communicates again (tests/c/reinit.c does more). */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c)                                                                              \
    do {                                                                                      \
        if (!(c)) {                                                                           \
            fprintf(stderr, "init_count: check failed at line %d: %s\n", __LINE__, #c);       \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)

static long word;

int main(void) {
    int provided = -1, initialized = -1;
    CHECK(shmem_init_thread(42, &provided) != 0);
    shmem_query_initialized(&initialized);
    CHECK(initialized == 0);

    shmem_init();
    CHECK(shmem_init_thread(SHMEM_THREAD_SINGLE, &provided) == 0);
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(shmem_align(24, 64) == NULL);

    /* Two of the three initialisations are matched: the library must still work. */
    shmem_finalize();
    shmem_finalize();
    shmem_query_initialized(&initialized);
    CHECK(initialized == 1);
    shmem_long_p(&word, me + 1, (me + 1) % n);
    shmem_barrier_all();
    CHECK(word == (me + n - 1) % n + 1);
    long *heap = shmem_malloc(sizeof(long));
    CHECK(heap != NULL);
    shmem_free(heap);
    printf("init_count: PE %d ok\n", me);
    fflush(stdout);

    shmem_finalize();
    shmem_query_initialized(&initialized);
    CHECK(initialized == 0);
    shmem_finalize(); /* after the last one: nothing to do */
    if (getenv("INIT_AGAIN")) {
        shmem_init();
        shmem_query_initialized(&initialized);
        CHECK(initialized == 1);
        word = 0;
        shmem_barrier_all();
        shmem_long_p(&word, 2 * (me + 1), (me + 1) % n);
        shmem_barrier_all();
        CHECK(word == 2 * ((me + n - 1) % n + 1));
        printf("init_count: PE %d initialized again\n", me);
        shmem_finalize();
    }
    return 0;
}
