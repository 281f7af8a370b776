/* Collective latency by message size, in the OSU style: only the collective call is timed, and a
 * shmem_barrier_all separates iterations (so the next call never overlaps the previous one).
 * The active-set (pSync) forms of OpenSHMEM 1.4 are used, because Open MPI 4.1's OSHMEM
 * implements 1.4; rshmem runs them on the same algorithms as its team forms.
 *
 * Each figure is the median over 5 blocks of the average call time in a block, on PE 0.
 * COLL_MAX (bytes, default 1 MiB) bounds the sizes, COLL_MIN (default 4) starts them and
 * COLL_FACTOR (default 4) steps them; COLL_ITERS sets the calls per block (default 2000 for
 * the barrier, 1000 for the others, fewer from 8 KiB); COLL_ONLY=name[,name...] runs those benchmarks; COLL_WHOLE=1 times
 * the barrier after each call too. COLL_AVG=1 reports, as OSU does, the mean over all PEs of
 * each PE's average time in the call (not PE 0's alone), and COLL_INPLACE=1 broadcasts from a
 * buffer into itself, as OSU's `osu_oshm_broadcast` does. Where the library
 * implements OpenSHMEM 1.6, the inclusive scan (`shmem_float_sum_inscan` on the world team) is
 * timed too ("scan"); Open MPI 4.1's OSHMEM has none. "alltoalls" is `shmem_alltoalls32` with
 * strides of 2 on both sides, up to 16 KiB blocks. */
#include "bench.h"

#define BLOCKS 5
/* large enough for every collective timed here */
#define PSYNC_LEN (SHMEM_REDUCE_SYNC_SIZE + SHMEM_ALLTOALLS_SYNC_SIZE)
static long psync[2][PSYNC_LEN];
static long bsync[SHMEM_BARRIER_SYNC_SIZE];
/* COLL_AVG=1: the per-PE block figures are summed over the PEs with these */
static long avg_sync[SHMEM_REDUCE_SYNC_SIZE];
static double avg_wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static double avg_in, avg_out;
static int avg, inplace;

static double median(double *v) {
    qsort(v, BLOCKS, sizeof *v, cmp_double);
    return v[BLOCKS / 2];
}

/* COLL_WHOLE=1: time each iteration whole, the collective and the barrier after it, so the
 * figure does not depend on which PE the scheduler leaves waiting at the end of the call when
 * PEs outnumber cores (docs/performance.md, "Barriers on an oversubscribed node"). */
static int whole;

/* COLL_ONLY: one name, or several separated by commas. */
static int wanted(const char *name) {
    const char *only = getenv("COLL_ONLY");
    if (!only || !*only) return 1;
    size_t len = strlen(name);
    for (const char *p = only; p; p = strchr(p, ',')) {
        if (*p == ',') p++;
        if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == 0)) return 1;
    }
    return 0;
}

#if SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION >= 106
#define HAVE_SCAN 1
#endif

enum op { BARRIER, BCAST, REDUCE, FCOLLECT, COLLECT, ALLTOALL, ALLTOALLS, SCAN };

/* One call of `op` on `bytes` bytes per PE; `k` alternates the pSync arrays. */
static void call(enum op op, void *dst, void *src, float *wrk, size_t bytes, int k) {
    int n = shmem_n_pes();
    switch (op) {
    case BARRIER:
        shmem_barrier(0, 0, n, bsync);
        break;
    case BCAST:
        shmem_broadcast32(dst, inplace ? dst : src, bytes / 4, 0, 0, 0, n, psync[k]);
        break;
    case REDUCE:
        shmem_float_sum_to_all(dst, src, (int)(bytes / 4), 0, 0, n, wrk, psync[k]);
        break;
    case FCOLLECT:
        shmem_fcollect32(dst, src, bytes / 4, 0, 0, n, psync[k]);
        break;
    case COLLECT: /* the variable-size form, here with the same size on every PE */
        shmem_collect32(dst, src, bytes / 4, 0, 0, n, psync[k]);
        break;
    case ALLTOALL:
        shmem_alltoall32(dst, src, bytes / 4, 0, 0, n, psync[k]);
        break;
    case ALLTOALLS: /* every other element, on both sides */
        shmem_alltoalls32(dst, src, 2, 2, bytes / 4, 0, 0, n, psync[k]);
        break;
    case SCAN:
#ifdef HAVE_SCAN
        shmem_float_sum_inscan(SHMEM_TEAM_WORLD, dst, src, bytes / 4);
#endif
        break;
    }
}

static void run(const char *name, enum op op, size_t bytes, void *dst, void *src, float *wrk) {
    long iters = op == BARRIER ? 2000 : iters_for(bytes, 1000);
    if (getenv("COLL_ITERS")) iters = atol(getenv("COLL_ITERS"));
    if (iters < 1) iters = 1;
    double block[BLOCKS];
    for (int b = 0; b < BLOCKS; b++) {
        double total = 0;
        for (long i = 0; i < iters + 10; i++) {
            double t0 = now_us();
            call(op, dst, src, wrk, bytes, (int)(i & 1));
            if (whole && op != BARRIER) shmem_barrier_all();
            double t = now_us() - t0;
            if (i >= 10) total += t;
            if (!whole && op != BARRIER) shmem_barrier_all();
        }
        block[b] = total / iters;
        if (avg) {
            avg_in = block[b];
            shmem_barrier_all();
            shmem_double_sum_to_all(&avg_out, &avg_in, 1, 0, 0, shmem_n_pes(), avg_wrk, avg_sync);
            block[b] = avg_out / shmem_n_pes();
        }
    }
    result(name, bytes, median(block), "us");
}

int main(void) {
    shmem_init();
    whole = getenv("COLL_WHOLE") && strcmp(getenv("COLL_WHOLE"), "1") == 0;
    avg = getenv("COLL_AVG") && strcmp(getenv("COLL_AVG"), "1") == 0;
    inplace = getenv("COLL_INPLACE") && strcmp(getenv("COLL_INPLACE"), "1") == 0;
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) avg_sync[i] = SHMEM_SYNC_VALUE;
    int n = shmem_n_pes();
    size_t max = getenv("COLL_MAX") ? strtoul(getenv("COLL_MAX"), NULL, 10) : (size_t)1 << 20;
    /* sizes min, min * factor, ... up to max (4, 16, ..., 1 MiB by default) */
    size_t min = getenv("COLL_MIN") ? strtoul(getenv("COLL_MIN"), NULL, 10) : 4;
    size_t factor = getenv("COLL_FACTOR") ? strtoul(getenv("COLL_FACTOR"), NULL, 10) : 4;
    if (min < 4 || min % 4 || factor < 2) {
        fprintf(stderr, "coll_sizes: COLL_MIN must be a multiple of 4, COLL_FACTOR at least 2\n");
        shmem_global_exit(1);
    }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < PSYNC_LEN; i++) psync[k][i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) bsync[i] = SHMEM_SYNC_VALUE;
    /* alltoall and fcollect need n blocks of the largest size */
    char *src = shmem_malloc(max * n), *dst = shmem_malloc(max * n);
    size_t wrk_elems = max / 4 / 2 + 1 > SHMEM_REDUCE_MIN_WRKDATA_SIZE ? max / 4 / 2 + 1 : SHMEM_REDUCE_MIN_WRKDATA_SIZE;
    float *wrk = shmem_malloc(wrk_elems * sizeof(float));
    if (!src || !dst || !wrk) {
        fprintf(stderr, "coll_sizes: out of symmetric memory\n");
        shmem_global_exit(1);
    }
    for (size_t i = 0; i < max * n; i++) src[i] = (char)(i + shmem_my_pe());
    for (size_t i = 0; i < max / 4; i++) ((float *)src)[i] = (float)(i % 7);
    shmem_barrier_all();
    if (wanted("barrier")) run("coll_barrier", BARRIER, 0, dst, src, wrk);
    for (size_t s = min; s <= max; s *= factor)
        if (wanted("broadcast")) run("coll_broadcast", BCAST, s, dst, src, wrk);
    for (size_t s = min; s <= max; s *= factor)
        if (wanted("reduce")) run("coll_float_sum", REDUCE, s, dst, src, wrk);
    for (size_t s = min; s <= max; s *= factor)
        if (wanted("fcollect")) run("coll_fcollect", FCOLLECT, s, dst, src, wrk);
    for (size_t s = min; s <= max; s *= factor)
        if (wanted("collect")) run("coll_collect", COLLECT, s, dst, src, wrk);
    for (size_t s = min; s <= max / 4; s *= factor)
        if (wanted("alltoall")) run("coll_alltoall", ALLTOALL, s, dst, src, wrk);
    /* strided blocks take twice their size; capped at 16 KiB, where an element per put
     * (what some libraries do) is already slow */
    for (size_t s = min; s <= max / 4 && s <= 16384; s *= factor)
        if (wanted("alltoalls")) run("coll_alltoalls", ALLTOALLS, s, dst, src, wrk);
#ifdef HAVE_SCAN
    for (size_t s = min; s <= max; s *= factor)
        if (wanted("scan")) run("coll_float_inscan", SCAN, s, dst, src, wrk);
#endif
    shmem_finalize();
    return 0;
}
