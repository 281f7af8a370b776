/*
 * scoll "cbarrier": an example component written in C, proving that a vendor can drop a
 * plugin into a directory and select it. It provides only the barrier slot (a linear
 * gather/release through team index 0); every other collective falls through to the next
 * component in the stack.
 *
 * Build:  gcc -shared -fPIC -I plugins/include -o libcbarrier.so plugins/c-example/scoll_cbarrier.c
 * Use:    SHMEM_MCA_plugin_path=<dir of the .so> SHMEM_MCA_scoll=cbarrier,basic oshrun ...
 */
#include <stdint.h>
#include <stdlib.h>

#include "shmem_plugin.h"

static const shmem_plugin_core_t *core;

struct team_state {
    shmem_plugin_team_t team;
    uint64_t epoch; /* barriers done so far */
};

/* scratch words: [0] arrivals at index 0, [1] releases */
static void *cb_enable(const shmem_plugin_team_t *team) {
    /* decline teams we cannot serve: no scratch, or this PE is not a member */
    if (!team || !team->scratch || team->scratch_len < 2 * sizeof(uint64_t)) return NULL;
    if (team->my_index < 0 || team->my_index >= team->size) return NULL;
    struct team_state *s = calloc(1, sizeof *s);
    if (s) s->team = *team;
    return s;
}

static void cb_disable(void *state) { free(state); }

static int cb_barrier(void *state) {
    struct team_state *s = state;
    uint64_t *words = s->team.scratch;
    int n = s->team.size;
    s->epoch++;
    if (n == 1) return SHMEM_PLUGIN_RC_OK;
    if (s->team.my_index == 0) {
        core->wait_until_u64(&words[0], SHMEM_PLUGIN_CMP_GE, s->epoch * (uint64_t)(n - 1));
        for (int i = 1; i < n; i++) core->atomic_add_u64(&words[1], 1, s->team.start + i * s->team.stride);
    } else {
        core->atomic_add_u64(&words[0], 1, s->team.start);
        core->wait_until_u64(&words[1], SHMEM_PLUGIN_CMP_GE, s->epoch);
    }
    return SHMEM_PLUGIN_RC_OK;
}

static const shmem_plugin_scoll_ops_t ops = {
    .struct_size = sizeof(shmem_plugin_scoll_ops_t),
    .scratch_needed = 2 * sizeof(uint64_t),
    .enable = cb_enable,
    .disable = cb_disable,
    .barrier = cb_barrier,
    .broadcast = NULL,
};

static void cb_query(const shmem_plugin_core_t *c, shmem_plugin_query_t *result) {
    (void)c;
    result->available = 1;
    result->priority = 5;
    result->reason[0] = '\0';
}

static const void *cb_open(const shmem_plugin_core_t *c) {
    core = c;
    return &ops;
}

static const shmem_plugin_descriptor_t descriptor = {
    .abi_version = SHMEM_PLUGIN_ABI_VERSION,
    .framework = SHMEM_PLUGIN_FRAMEWORK_SCOLL,
    .struct_size = sizeof(shmem_plugin_descriptor_t),
    .name = "cbarrier",
    .version = "1.0",
    .description = "example C component: linear barrier through team index 0",
    .params = NULL,
    .n_params = 0,
    /* Not SHMEM_PLUGIN_SCOLL_CAP_EPHEMERAL: its epoch counter lives in the scratch, which an
     * active-set call's pSync must get back zeroed; the core keeps it off those teams. */
    .caps = 0,
    .query = cb_query,
    .open = cb_open,
};

__attribute__((visibility("default"))) const shmem_plugin_descriptor_t *shmem_plugin_descriptor(void) {
    return &descriptor;
}
