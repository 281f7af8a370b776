/* The shmemx.h extensions (docs/extensions.md): wall-clock time, node name, heap queries, the
 * node team, OSHMEM's hint-based allocation, and OSHMEM's fixed-width RMA, AMO, wait and
 * reduction names, including the shmem_ spellings shmemx.h maps onto them.
 *
 * RSHMEM_TEST_NODE_PES: how many PEs share this PE's host (the harness knows the launch layout;
 * the emulated-hosts launcher forwards only RSHMEM_* and SHMEM_* variables).
 * With RSHMEM_TEST_EXT_MODE=bad_hint the program asks for a hint bit that does not exist. */
#include <shmemx.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

static long psync[SHMEM_REDUCE_SYNC_SIZE];
static int16_t wrk16[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static int32_t wrk32[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static int64_t wrk64[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

static void reset_psync(void) {
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
}

static void time_and_place(void) {
    double t0 = shmemx_wtime();
    volatile double x = 0;
    for (int i = 0; i < 1000000; i++) x += i;
    double t1 = shmemx_wtime();
    CHECK(t1 > t0);
    CHECK(t1 - t0 < 60.0);
    const char *node = shmemx_nodename();
    CHECK(node != NULL && strlen(node) > 0);
    CHECK(shmemx_nodename() == node); /* one string for the process */
}

static void heap_queries(void) {
    size_t size = shmemx_heap_size(), before = shmemx_heap_used();
    CHECK(size >= ((size_t)1 << 20));
    CHECK(before <= size);
    char *a = shmem_malloc(1000);
    CHECK(a != NULL);
    CHECK(shmemx_heap_used() >= before + 1000);
    a = shmem_realloc(a, 5000);
    CHECK(a != NULL);
    CHECK(shmemx_heap_used() >= before + 5000);
    shmem_free(a);
    CHECK(shmemx_heap_used() == before);
    /* The whole configured size is the program's (the library's own symmetric data, under
     * 1 MiB, lies beyond it); much more than that does not fit. */
    if (before == 0) {
        char *all = shmem_malloc(size);
        CHECK(all != NULL);
        CHECK(shmemx_heap_used() >= size);
        shmem_free(all);
    }
    CHECK(shmem_malloc(size + (2 << 20)) == NULL);
    CHECK(shmemx_heap_used() == before);
}

static void node_team(void) {
    int me = shmem_my_pe(), npes = shmem_n_pes();
    const char *expect = getenv("RSHMEM_TEST_NODE_PES");
    int node_pes = shmem_team_n_pes(SHMEMX_TEAM_NODE);
    CHECK(expect != NULL);
    CHECK(node_pes == atoi(expect));
    int my_node = shmem_team_my_pe(SHMEMX_TEAM_NODE);
    CHECK(my_node >= 0 && my_node < node_pes);
    CHECK(shmem_team_translate_pe(SHMEMX_TEAM_NODE, my_node, SHMEM_TEAM_WORLD) == me);
    /* The shared team never spans more than the node (it is smaller when memory is not mapped). */
    CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) <= node_pes);
    /* A collective over the node team: every member learns the first member's world rank. */
    static int first;
    int root_world = shmem_team_translate_pe(SHMEMX_TEAM_NODE, 0, SHMEM_TEAM_WORLD);
    first = me;
    shmem_team_sync(SHMEMX_TEAM_NODE);
    CHECK(shmem_int_broadcast(SHMEMX_TEAM_NODE, &first, &first, 1, 0) == 0);
    CHECK(first == root_world);
    /* Node teams of different hosts are disjoint: my world rank's node peers all agree. */
    static long count;
    count = 0;
    shmem_barrier_all();
    shmem_long_atomic_inc(&count, root_world);
    shmem_barrier_all();
    if (me == root_world) CHECK(count == node_pes);
    (void)npes;
}

static void hinted_allocation(void) {
    long hints[] = {SHMEM_HINT_NONE, SHMEM_HINT_ATOMICS, SHMEM_HINT_PSYNC | SHMEM_HINT_PWORK,
                    SHMEM_HINT_LOW_LAT_MEM | SHMEM_HINT_HIGH_BW_MEM, SHMEM_HINT_DEVICE_GPU_MEM};
    int npes = shmem_n_pes();
    for (unsigned h = 0; h < sizeof hints / sizeof hints[0]; h++) {
        int64_t *p = shmemx_malloc_with_hint(3 * sizeof(int64_t), hints[h]);
        CHECK(p != NULL);
        if (hints[h] & (SHMEM_HINT_ATOMICS | SHMEM_HINT_PSYNC)) CHECK((uintptr_t)p % 128 == 0);
        p[0] = 0;
        shmem_barrier_all();
        shmemx_int64_add(p, 2, 0);
        shmem_barrier_all();
        if (shmem_my_pe() == 0) CHECK(p[0] == 2 * npes);
        shmem_free(p);
    }
    CHECK(shmemx_malloc_with_hint(0, SHMEM_HINT_ATOMICS) == NULL);
}

static void fixed_width_rma_and_amos(void) {
    int me = shmem_my_pe(), npes = shmem_n_pes(), right = (me + 1) % npes;
    static int16_t s16;
    static int32_t s32, c32, w32;
    static int64_t s64, c64, w64;
    static uint32_t b32;
    static uint64_t b64;
    shmemx_int16_p(&s16, (int16_t)(100 + me), right);
    shmemx_int32_p(&s32, 1000 + me, right);
    shmemx_int64_p(&s64, ((int64_t)1 << 40) + me, right);
    shmem_barrier_all();
    int left = (me + npes - 1) % npes;
    CHECK(s16 == 100 + left && s32 == 1000 + left && s64 == ((int64_t)1 << 40) + left);
    CHECK(shmemx_int16_g(&s16, right) == 100 + me);
    CHECK(shmemx_int32_g(&s32, right) == 1000 + me);
    CHECK(shmemx_int64_g(&s64, right) == ((int64_t)1 << 40) + me);
    shmem_barrier_all();

    /* Counters on PE 0: every PE adds, increments, and fetch-adds; the fetches are distinct. */
    c32 = 0;
    c64 = 0;
    b32 = 0;
    b64 = ~(uint64_t)0;
    shmem_barrier_all();
    shmemx_int32_add(&c32, 10, 0);
    shmemx_int32_inc(&c32, 0);
    shmem_int64_add(&c64, 10, 0); /* OSHMEM's shmem_ spelling, mapped by shmemx.h */
    shmem_int64_inc(&c64, 0);
    int32_t f32 = shmemx_int32_fadd(&c32, 100, 0);
    int64_t f64 = shmemx_int64_finc(&c64, 0);
    CHECK(f32 >= 0 && f32 <= 111 * npes);
    CHECK(f64 >= 0 && f64 <= 12 * npes);
    shmemx_uint32_atomic_or(&b32, 1u << me, 0);
    shmemx_uint64_atomic_and(&b64, ~((uint64_t)1 << (40 + me)), 0);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(c32 == 111 * npes);
        CHECK(c64 == 12 * npes);
        CHECK(b32 == (1u << npes) - 1);
        CHECK(b64 == ~((((uint64_t)1 << npes) - 1) << 40));
    }
    CHECK(shmemx_int32_fetch(&c32, 0) == 111 * npes);
    CHECK(shmem_int64_fetch(&c64, 0) == 12 * npes);
    shmem_barrier_all();

    /* swap, cswap and set on my right neighbour's words. */
    s32 = 7;
    s64 = 9;
    shmem_barrier_all();
    CHECK(shmemx_int32_swap(&s32, me, right) == 7);
    CHECK(shmem_int64_cswap(&s64, 9, me, right) == 9);
    CHECK(shmemx_int64_cswap(&s64, 9, -1, right) == me); /* condition fails: unchanged */
    shmem_barrier_all();
    CHECK(s32 == left && s64 == left);
    shmem_barrier_all();
    shmemx_int32_set(&s32, -5, right);
    shmem_int64_set(&s64, -6, right);
    shmem_barrier_all();
    CHECK(s32 == -5 && s64 == -6);
    shmem_barrier_all();

    /* Fetching bitwise AMOs return the old value. */
    b32 = 0xF0;
    b64 = 0xF0;
    shmem_barrier_all();
    if (me == 0) {
        CHECK(shmemx_uint32_atomic_fetch_xor(&b32, 0xFF, right) == 0xF0);
        CHECK(shmemx_int64_atomic_fetch_or((int64_t *)&b64, 0x0F, right) == 0xF0);
        CHECK(shmemx_int32_atomic_fetch_and((int32_t *)&b32, 0x3, right) == 0x0F);
    }
    shmem_barrier_all();
    if (me == 1 % npes) CHECK(b32 == 0x3 && b64 == 0xFF); /* PE 0's right neighbour */
    shmem_barrier_all();

    /* Waits: `wait` returns once the value differs, `wait_until` once the comparison holds. */
    w32 = 0;
    w64 = 0;
    shmem_barrier_all();
    shmemx_int32_p(&w32, 1, right);
    shmemx_int64_add(&w64, 1, 0);
    shmem_int32_wait(&w32, 0);
    CHECK(w32 == 1);
    if (me == 0) {
        shmemx_int64_wait_until(&w64, SHMEM_CMP_GE, npes);
        CHECK(w64 == npes);
    }
    shmem_barrier_all();
}

static void fixed_width_reductions(void) {
    int me = shmem_my_pe(), npes = shmem_n_pes();
    static int16_t s16[4], d16[4];
    static int32_t s32[4], d32[4];
    static int64_t s64[4], d64[4];
    for (int i = 0; i < 4; i++) {
        s16[i] = (int16_t)(me + i);
        s32[i] = 1 << me;
        s64[i] = ((int64_t)me << 33) + i;
    }
    reset_psync();
    shmemx_int16_sum_to_all(d16, s16, 4, 0, 0, npes, wrk16, psync);
    for (int i = 0; i < 4; i++) CHECK(d16[i] == npes * (npes - 1) / 2 + npes * i);
    reset_psync();
    shmem_int16_max_to_all(d16, s16, 4, 0, 0, npes, wrk16, psync);
    for (int i = 0; i < 4; i++) CHECK(d16[i] == npes - 1 + i);
    reset_psync();
    shmemx_int32_or_to_all(d32, s32, 4, 0, 0, npes, wrk32, psync);
    for (int i = 0; i < 4; i++) CHECK(d32[i] == (1 << npes) - 1);
    reset_psync();
    shmemx_int32_xor_to_all(d32, s32, 4, 0, 0, npes, wrk32, psync);
    for (int i = 0; i < 4; i++) CHECK(d32[i] == (1 << npes) - 1);
    reset_psync();
    shmemx_int32_and_to_all(d32, s32, 4, 0, 0, npes, wrk32, psync);
    for (int i = 0; i < 4; i++) CHECK(d32[i] == (npes == 1 ? 1 : 0));
    reset_psync();
    shmemx_int64_min_to_all(d64, s64, 4, 0, 0, npes, wrk64, psync);
    for (int i = 0; i < 4; i++) CHECK(d64[i] == i);
    reset_psync();
    shmem_int64_sum_to_all(d64, s64, 4, 0, 0, npes, wrk64, psync);
    for (int i = 0; i < 4; i++) CHECK(d64[i] == ((int64_t)npes * (npes - 1) / 2 << 33) + (int64_t)npes * i);
    for (int i = 0; i < 4; i++) s64[i] = 2 + i;
    reset_psync();
    shmemx_int64_prod_to_all(d64, s64, 4, 0, 0, npes, wrk64, psync);
    for (int i = 0; i < 4; i++) {
        int64_t want = 1;
        for (int p = 0; p < npes; p++) want *= 2 + i;
        CHECK(d64[i] == want);
    }
    /* An active set: the even PEs. */
    int evens = (npes + 1) / 2;
    reset_psync();
    if (me % 2 == 0) {
        shmemx_int32_sum_to_all(d32, s32, 4, 0, 1, evens, wrk32, psync);
        int want = 0;
        for (int p = 0; p < npes; p += 2) want += 1 << p;
        for (int i = 0; i < 4; i++) CHECK(d32[i] == want);
    }
    shmem_barrier_all();
}

int main(void) {
    shmem_init();
    const char *mode = getenv("RSHMEM_TEST_EXT_MODE");
    if (mode && strcmp(mode, "bad_hint") == 0) {
        shmemx_malloc_with_hint(64, 1L << 5);
        fprintf(stderr, "PE %d: an unknown hint was accepted\n", shmem_my_pe());
        shmem_finalize();
        return 3;
    }
    time_and_place();
    heap_queries();
    node_team();
    hinted_allocation();
    fixed_width_rma_and_amos();
    fixed_width_reductions();
    REPORT_OK("extensions");
    shmem_finalize();
    return 0;
}
