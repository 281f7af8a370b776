/* Bad arguments chosen by MISUSE, each of which must end the job with a message naming the
 * routine and the argument (never a segfault or a silent success):
 * get_past_end / put_past_end (a transfer longer than the peer's heap), null_source,
 * null_dest, ctx_destroy_twice; contexts: ctx_invalid_put, ctx_after_destroy,
 * ctx_quiet_after_destroy, team_ctx_gone (a shareable context of a destroyed team),
 * team_ctx_pe (PE 1 of a 1-PE team's context: PE numbers there are the team's), ctx_garbage and
 * team_garbage (handles no routine returned);
 * team_after_destroy; waits: wait_null, wait_private, test_any_null, wait_some_null_indices,
 * signal_wait_null;
 * put_signal_private_sig; locks: clear_unheld_lock, set_lock_twice, lock_private;
 * pe_quiet_null, pe_quiet_bad_pe; strided: iput_past_end, iget_not_symmetric; PEs passing
 * different arguments to a collective: split_mismatch, split_2d_mismatch
 * (negative_num_contexts: a team config asking for -1 contexts), arguments the team, context
 * and space routines refuse (split_unknown_mask, split_null_config, split_null_out,
 * destroy_world, destroy_default_ctx, space_null_caps, destroy_cpu_space, as_past_end,
 * as_negative_nreduce, as_private_psync, alltoalls_zero_stride, free_not_allocated), and under
 * SHMEM_DEBUG=1 malloc_mismatch, broadcast_mismatch, reduce_mismatch, and their active-set
 * forms (with a pSync) as_broadcast_mismatch, as_to_all_mismatch, as_fcollect_mismatch; and
 * under SHMEM_DEBUG=1 transfers that stay in the heap but leave their allocation:
 * put_past_block, get_freed, atomic_freed (put_within_block must pass). */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long lk;
static long psync[SHMEM_REDUCE_SYNC_SIZE];

int main(void) {
    const char *how = getenv("MISUSE");
    shmem_init();
    size_t heap = 64 << 20; /* SHMEM_SYMMETRIC_SIZE=64M in the harness */
    char *sym = shmem_malloc(1 << 20);
    int peer = (shmem_my_pe() + 1) % shmem_n_pes();
    shmem_barrier_all();
    /* Collective set-ups, on every PE. */
    shmem_team_t team = SHMEM_TEAM_INVALID;
    shmem_ctx_t team_ctx = SHMEM_CTX_INVALID;
    if (how && (!strcmp(how, "team_after_destroy") || !strcmp(how, "team_ctx_gone"))) {
        if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shmem_n_pes(), NULL, 0, &team)) return 3;
        if (!strcmp(how, "team_ctx_gone") && shmem_team_create_ctx(team, 0, &team_ctx)) return 4;
        shmem_team_destroy(team);
    }
    if (how && !strcmp(how, "team_ctx_pe")) {
        if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 1, NULL, 0, &team)) return 3;
        if (shmem_my_pe() == 0 && shmem_team_create_ctx(team, 0, &team_ctx)) return 4;
    }
    /* Collectives whose PEs disagree: PE 0 passes other arguments than the rest. */
    int first = shmem_my_pe() == 0;
    if (how && !strcmp(how, "split_mismatch"))
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, first ? 1 : 2, NULL, 0, &team);
    if (how && !strcmp(how, "split_2d_mismatch")) {
        shmem_team_t y;
        shmem_team_split_2d(SHMEM_TEAM_WORLD, first ? 1 : 2, NULL, 0, &team, NULL, 0, &y);
    }
    if (how && !strcmp(how, "negative_num_contexts")) {
        shmem_team_config_t cfg = {.num_contexts = -1};
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shmem_n_pes(), &cfg, SHMEM_TEAM_NUM_CONTEXTS, &team);
    }
    if (how && !strcmp(how, "split_unknown_mask")) {
        shmem_team_config_t cfg = {.num_contexts = 1};
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shmem_n_pes(), &cfg, 6, &team);
    }
    if (how && !strcmp(how, "split_null_config"))
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shmem_n_pes(), NULL, SHMEM_TEAM_NUM_CONTEXTS, &team);
    if (how && !strcmp(how, "split_null_out"))
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shmem_n_pes(), NULL, 0, NULL);
    if (how && !strcmp(how, "destroy_world")) shmem_team_destroy(SHMEM_TEAM_WORLD);
    if (how && !strcmp(how, "destroy_default_ctx")) shmem_ctx_destroy(SHMEM_CTX_DEFAULT);
    if (how && !strcmp(how, "space_null_caps")) shmem_space_get_caps(SHMEM_SPACE_CPU, NULL);
    if (how && !strcmp(how, "destroy_cpu_space")) shmem_space_destroy(SHMEM_SPACE_CPU);
    if (how && !strcmp(how, "malloc_mismatch")) shmem_malloc(first ? 64 : 128);
    if (how && !strcmp(how, "broadcast_mismatch"))
        shmem_broadcastmem(SHMEM_TEAM_WORLD, sym, sym + 4096, first ? 8 : 16, 0);
    if (how && !strcmp(how, "reduce_mismatch"))
        shmem_long_sum_reduce(SHMEM_TEAM_WORLD, (long *)sym, (long *)(sym + 4096), first ? 1 : 2);
    /* The active-set forms, over PEs 0 and 1 (the world on 2 PEs, a set of its own on more). */
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    if (how && shmem_my_pe() < 2) {
        if (!strcmp(how, "as_broadcast_mismatch"))
            shmem_broadcast64(sym, sym + 4096, first ? 1 : 2, 0, 0, 0, 2, psync);
        if (!strcmp(how, "as_to_all_mismatch"))
            shmem_long_sum_to_all((long *)sym, (long *)(sym + 4096), first ? 1 : 2, 0, 0, 2,
                                  (long *)(sym + 8192), psync);
        if (!strcmp(how, "as_fcollect_mismatch"))
            shmem_fcollect64(sym, sym + 4096, first ? 1 : 2, 0, 0, 2, psync);
        if (!strcmp(how, "as_past_end")) shmem_barrier(0, 0, shmem_n_pes() + 1, psync);
        if (!strcmp(how, "as_negative_nreduce"))
            shmem_long_sum_to_all((long *)sym, (long *)(sym + 4096), -1, 0, 0, 2, (long *)(sym + 8192), psync);
        if (!strcmp(how, "as_private_psync")) shmem_barrier(0, 0, 2, (long *)&how);
    }
    if (how && !strcmp(how, "alltoalls_zero_stride"))
        shmem_alltoallsmem(SHMEM_TEAM_WORLD, sym, sym + 4096, 0, 1, 1);
    if (how && !strcmp(how, "free_not_allocated")) shmem_free(sym + 8);
    /* Under SHMEM_DEBUG: a put that runs from one allocation into the next, and a get and an
     * atomic on a freed one (all inside the heap). */
    long *arr = shmem_malloc(8 * sizeof(long)), *next = shmem_malloc(8 * sizeof(long));
    long *gone = shmem_malloc(8 * sizeof(long));
    shmem_free(gone);
    shmem_barrier_all();
    if (shmem_my_pe() == 0 && how) {
        long src[16] = {0}, v;
        if (!strcmp(how, "put_past_block")) shmem_long_put(arr, src, 16, peer);
        if (!strcmp(how, "get_freed")) shmem_long_get(&v, gone, 1, peer);
        if (!strcmp(how, "atomic_freed")) shmem_long_atomic_inc(gone, peer);
        if (!strcmp(how, "put_within_block")) {
            shmem_long_put(arr, src, 8, peer);
            shmem_long_put(next, src, 8, peer);
            printf("misuse: in-block puts passed\n");
        }
    }
    if (how && !strcmp(how, "put_within_block")) {
        shmem_barrier_all();
        shmem_finalize();
        return 0;
    }
    if (shmem_my_pe() == 0 && how) {
        if (!strcmp(how, "pe_quiet_null")) shmem_pe_quiet(NULL, 2);
        if (!strcmp(how, "pe_quiet_bad_pe")) {
            int pes[2] = {peer, 99};
            shmem_pe_quiet(pes, 2);
        }
        if (!strcmp(how, "iput_past_end")) {
            long src[4] = {1, 2, 3, 4};
            shmem_long_iput((long *)sym, src, (ptrdiff_t)1 << 27, 1, 4, peer);
        }
        if (!strcmp(how, "iget_not_symmetric")) {
            long src[4], dst[4];
            shmem_long_iget(dst, src, 1, 2, 4, peer);
        }
        if (!strcmp(how, "team_after_destroy")) shmem_team_my_pe(team);
        if (!strcmp(how, "team_ctx_gone")) shmem_ctx_destroy(team_ctx);
        if (!strcmp(how, "team_ctx_pe")) shmem_ctx_long_p(team_ctx, (long *)sym, 1, 1);
        if (!strcmp(how, "ctx_garbage")) shmem_ctx_long_put((shmem_ctx_t)0x1234, (long *)sym, (long *)sym, 1, peer);
        if (!strcmp(how, "team_garbage")) shmem_team_n_pes((shmem_team_t)0x1234);
        if (!strcmp(how, "ctx_invalid_put")) shmem_ctx_long_p(SHMEM_CTX_INVALID, (long *)sym, 1, peer);
        if (!strcmp(how, "ctx_after_destroy") || !strcmp(how, "ctx_quiet_after_destroy")) {
            shmem_ctx_t ctx;
            if (shmem_ctx_create(0, &ctx) == 0) {
                shmem_ctx_long_p(ctx, (long *)sym, 1, peer);
                shmem_ctx_destroy(ctx);
                if (!strcmp(how, "ctx_after_destroy")) shmem_ctx_long_p(ctx, (long *)sym, 2, peer);
                shmem_ctx_quiet(ctx);
            }
        }
        if (!strcmp(how, "wait_null")) shmem_long_wait_until(NULL, SHMEM_CMP_EQ, 1);
        if (!strcmp(how, "wait_private")) shmem_long_wait_until(calloc(1, sizeof(long)), SHMEM_CMP_EQ, 1);
        if (!strcmp(how, "test_any_null")) shmem_long_test_any(NULL, 4, NULL, SHMEM_CMP_EQ, 0);
        if (!strcmp(how, "wait_some_null_indices"))
            shmem_long_wait_until_some((long *)sym, 4, NULL, NULL, SHMEM_CMP_EQ, 0);
        if (!strcmp(how, "signal_wait_null")) shmem_signal_wait_until(NULL, SHMEM_CMP_EQ, 1);
        if (!strcmp(how, "put_signal_private_sig")) {
            uint64_t sig = 0;
            shmem_putmem_signal(sym, sym, 8, &sig, 1, SHMEM_SIGNAL_SET, peer);
        }
        if (!strcmp(how, "clear_unheld_lock")) shmem_clear_lock(&lk);
        if (!strcmp(how, "set_lock_twice")) {
            shmem_set_lock(&lk);
            shmem_set_lock(&lk);
        }
        if (!strcmp(how, "lock_private")) {
            long mine = 0;
            shmem_set_lock(&mine);
        }
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
