/* Initializing the library again after its last shmem_finalize, which OpenSHMEM 1.6 allows
 * (shmem_init: "may be re-initialized with a subsequent call to an initialization routine").
 * ROUNDS rounds (3 unless set) of initialize ... finalize. Every round communicates (RMA,
 * atomics, collectives on the world and on a team, a context) and leaves behind what the
 * last finalize must release (spec: it destroys every team and frees the heap): a block of
 * most of the heap, TEAMS teams with a context each, and a created space. Were any of them
 * kept, a later round would run out of heap, team slots or segments. Odd rounds ask for
 * SHMEM_THREAD_MULTIPLE. Global data keeps its values across rounds, as any variable does.
 * The library keeps its connections between rounds (SHMEM_REINIT), but nothing more: no more
 * descriptors are open after a later finalize than after the first, give or take UCX's
 * connections to peers. Under SHMEM_ENABLE_GPU_SPACE, where a GPU space can be made, every
 * round also moves data in SHMEM_SPACE_GPU, which the last finalize frees and the next
 * shmem_init makes again: a put into a peer's device memory, an atomic on a device word and a
 * reduction on device buffers, each read back through shmem_getmem (device memory takes no
 * loads). */
#include "check.h"
#include <shmemx.h>
#include <string.h>

/* Checks outside an initialized library, where shmem_my_pe and shmem_global_exit are not
 * available. */
#define CHECK_OUTSIDE(cond)                                                                   \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "reinit: CHECK FAILED line %d: %s\n", __LINE__, #cond);           \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

#define TEAMS 24
#define CONTEXTS 4

static long ring;
static long counter;
static long total;
static long bsrc[4], bdst[4];

/* Data moved in the GPU space made by this round's shmem_init. */
static void gpu_round(int r, int me, int n) {
    long *words = shmem_space_calloc(SHMEM_SPACE_GPU, 4, sizeof(long));
    long *sum = shmem_space_malloc(SHMEM_SPACE_GPU, sizeof(long));
    CHECK(words != NULL && sum != NULL);
    long v = 1000 * r + me, back[4];
    shmem_long_put(&words[0], &v, 1, (me + 1) % n);   /* host -> the next PE's device */
    shmem_long_atomic_add(&words[1], me + 1, 0);      /* on PE 0's device word */
    shmem_barrier_all();
    shmem_getmem(back, words, sizeof back, me);
    CHECK(back[0] == 1000 * r + (me + n - 1) % n);
    if (me == 0)
        CHECK(back[1] == (long)n * (n + 1) / 2);
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, sum, &words[0], 1) == 0); /* device buffers */
    shmem_getmem(back, sum, sizeof(long), me);
    CHECK(back[0] == (long)n * 1000 * r + (long)n * (n - 1) / 2);
}

int main(void) {
    int rounds = getenv("ROUNDS") ? atoi(getenv("ROUNDS")) : 3;
    void *first_block = NULL;
    int me = -1, n = -1, fds_first = -1;
    for (int r = 0; r < rounds; r++) {
        int initialized = -1;
        shmem_query_initialized(&initialized);
        CHECK_OUTSIDE(initialized == 0);
        if (r % 2) {
            int provided = -1;
            CHECK_OUTSIDE(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0);
            CHECK(provided == SHMEM_THREAD_MULTIPLE);
        } else {
            shmem_init();
            int provided = -1;
            shmem_query_thread(&provided);
            CHECK(provided == SHMEM_THREAD_SINGLE);
        }
        shmem_query_initialized(&initialized);
        CHECK(initialized == 1);
        if (r == 0) {
            me = shmem_my_pe();
            n = shmem_n_pes();
        }
        CHECK(shmem_my_pe() == me && shmem_n_pes() == n);

        /* The heap starts empty again: the same block at the same place every round, though
         * no round frees it. */
        size_t big = shmemx_heap_size() / 4 * 3;
        char *block = shmem_malloc(big);
        CHECK(block != NULL);
        if (r == 0)
            first_block = block;
        CHECK(block == first_block);
        memset(block, r + 1, 64);

        /* RMA on global data and on the heap, and atomics. */
        shmem_long_p(&ring, 100 * r + me, (me + 1) % n);
        shmem_putmem(block, block, 64, (me + 1) % n);
        shmem_long_atomic_add(&counter, 1, 0);
        shmem_barrier_all();
        CHECK(ring == 100 * r + (me + n - 1) % n);
        CHECK(block[0] == r + 1 && block[63] == r + 1);
        if (me == 0)
            CHECK(shmem_long_atomic_fetch(&counter, 0) == (long)n * (r + 1));

        /* Collectives on the world. */
        shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &total, &ring, 1);
        CHECK(total == (long)n * 100 * r + (long)n * (n - 1) / 2);
        for (int i = 0; i < 4; i++) {
            bsrc[i] = me == 0 ? 7 * r + i : -1;
            bdst[i] = -2;
        }
        shmem_barrier_all(); /* the root may write bdst as soon as it is in the broadcast */
        shmem_long_broadcast(SHMEM_TEAM_WORLD, bdst, bsrc, 4, 0);
        for (int i = 0; i < 4; i++)
            CHECK(bdst[i] == 7 * r + i);

        /* Teams, each with a context, left for the finalize to destroy. */
        for (int t = 0; t < TEAMS; t++) {
            shmem_team_t team = SHMEM_TEAM_INVALID;
            CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &team) == 0);
            CHECK(team != SHMEM_TEAM_INVALID);
            if (t < CONTEXTS) {
                shmem_ctx_t ctx = SHMEM_CTX_INVALID;
                CHECK(shmem_team_create_ctx(team, 0, &ctx) == 0);
                shmem_ctx_long_atomic_add(ctx, &counter, 1, 0);
                shmem_ctx_quiet(ctx);
                shmem_team_sync(team);
            }
            if (t == 0) {
                long one = 1, sum = 0;
                long *src = shmem_malloc(sizeof(long)), *dst = shmem_malloc(sizeof(long));
                *src = one;
                CHECK(shmem_long_sum_reduce(team, dst, src, 1) == 0);
                sum = *dst;
                CHECK(sum == n);
            }
        }
        /* Undo the contexts' atomic adds in the count checked above. */
        shmem_barrier_all();
        if (me == 0)
            shmem_long_atomic_add(&counter, -(long)n * CONTEXTS, 0);

        /* A created space, left as well. */
        shmem_space_config_t cfg = {.device_type = SHMEM_DEVICE_CPU, .size = 1 << 20,
                                    .flags = SHMEM_SPACE_FLAG_DEFAULT};
        shmem_space_t space = SHMEM_SPACE_INVALID;
        shmem_team_t space_team = SHMEM_TEAM_INVALID;
        CHECK(shmem_space_create(&cfg, &space, &space_team) == 0);
        long *in_space = shmem_space_malloc(space, sizeof(long));
        CHECK(in_space != NULL);
        shmem_long_p(in_space, me, (me + 1) % n);
        shmem_barrier_all();
        CHECK(*in_space == (me + n - 1) % n);

        if (SHMEM_SPACE_GPU != SHMEM_SPACE_INVALID)
            gpu_round(r, me, n);

        shmem_finalize();
        shmem_query_initialized(&initialized);
        CHECK_OUTSIDE(initialized == 0);
        int fds = open_fds();
        if (r == 0)
            fds_first = fds;
        /* UCX may open a connection in a later round that the first did not need (one per
         * peer at most) or close one late; the contexts' workers left open would add more. */
        if (fds > fds_first + n - 1)
            fprintf(stderr, "reinit: PE %d: %d descriptors open after finalize %d, %d after the first\n", me,
                    fds, r + 1, fds_first);
        CHECK_OUTSIDE(fds <= fds_first + n - 1);
    }
    printf("reinit: PE %d ok\n", me);
    return 0;
}
