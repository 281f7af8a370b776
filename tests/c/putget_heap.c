/* Typed, sized and mem put/get/p/g on symmetric heap memory, every PE to every PE. */
#include "check.h"
#include <stdint.h>
#include <string.h>

#define N 37 /* odd, so sizes are not multiples of anything convenient */

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *lbuf = shmem_malloc(N * n * sizeof(long));
    double *dbuf = shmem_malloc(N * n * sizeof(double));
    int16_t *sbuf = shmem_malloc(N * n * sizeof(int16_t));
    char *cbuf = shmem_calloc(N * n, 1);
    CHECK(lbuf && dbuf && sbuf && cbuf);
    for (int i = 0; i < N * n; i++) CHECK(cbuf[i] == 0); /* calloc zeroes */
    shmem_barrier_all(); /* nobody writes into cbuf before everyone checked it */

    long lsrc[N];
    double dsrc[N];
    int16_t ssrc[N];
    char csrc[N];
    for (int i = 0; i < N; i++) {
        lsrc[i] = (long)me * 1000 + i;
        dsrc[i] = me + i / 4.0;
        ssrc[i] = (int16_t)(me * 100 - i);
        csrc[i] = (char)('a' + (me + i) % 26);
    }
    for (int pe = 0; pe < n; pe++) { /* each PE writes its own slot on every PE */
        shmem_long_put(lbuf + me * N, lsrc, N, pe);
        shmem_put(dbuf + me * N, dsrc, N, pe); /* C11 generic */
        shmem_put16(sbuf + me * N, ssrc, N, pe);
        shmem_putmem(cbuf + me * N, csrc, N, pe);
    }
    shmem_barrier_all();
    for (int src = 0; src < n; src++)
        for (int i = 0; i < N; i++) {
            CHECK(lbuf[src * N + i] == (long)src * 1000 + i);
            CHECK(dbuf[src * N + i] == src + i / 4.0);
            CHECK(sbuf[src * N + i] == (int16_t)(src * 100 - i));
            CHECK(cbuf[src * N + i] == (char)('a' + (src + i) % 26));
        }
    shmem_barrier_all();

    /* get everything back from the next PE and compare */
    int next = (me + 1) % n;
    long lget[N];
    double dget[N];
    char cget[N];
    shmem_long_get(lget, lbuf + next * N, N, next);
    shmem_get64(dget, dbuf + next * N, N, next);
    shmem_getmem(cget, cbuf + next * N, N, next);
    for (int i = 0; i < N; i++) {
        CHECK(lget[i] == (long)next * 1000 + i);
        CHECK(dget[i] == next + i / 4.0);
        CHECK(cget[i] == (char)('a' + (next + i) % 26));
    }

    /* single elements */
    shmem_barrier_all();
    shmem_long_p(lbuf, -7 - me, next);
    shmem_p(dbuf, 0.5 + me, next);
    shmem_barrier_all();
    int prev = (me + n - 1) % n;
    CHECK(lbuf[0] == -7 - prev);
    CHECK(dbuf[0] == 0.5 + prev);
    CHECK(shmem_long_g(lbuf, next) == -7 - me);
    CHECK(shmem_g(dbuf, next) == 0.5 + me);

    /* long double travels by value through p/g */
    long double *ld = shmem_malloc(sizeof(long double));
    *ld = 0;
    shmem_barrier_all();
    shmem_longdouble_p(ld, 1.25L + me, next);
    shmem_barrier_all();
    CHECK(*ld == 1.25L + prev);
    CHECK(shmem_longdouble_g(ld, next) == 1.25L + me);
    CHECK(shmem_ctx_longdouble_g(SHMEM_CTX_DEFAULT, ld, next) == 1.25L + me);

    /* zero-length transfers are no-ops (SHMEM_CTX_INVALID ends the job: tests/c/misuse.c) */
    shmem_long_put(lbuf, lsrc, 0, next);
    shmem_barrier_all();
    CHECK(lbuf[0] == -7 - prev);

    /* shmem_ptr, addr_accessible, pe_accessible */
    CHECK(shmem_ptr(lbuf, me) == lbuf);
    CHECK(shmem_addr_accessible(lbuf, next));
    CHECK(!shmem_addr_accessible(lsrc, next)); /* stack memory is not symmetric */
    CHECK(shmem_pe_accessible(next));
    CHECK(!shmem_pe_accessible(n));
    long *remote = shmem_ptr(lbuf, next);
    if (remote) CHECK(*remote == -7 - me);

    shmem_barrier_all();
    shmem_free(ld);
    shmem_free(cbuf);
    shmem_free(sbuf);
    shmem_free(dbuf);
    shmem_free(lbuf);
    REPORT_OK("putget_heap");
    shmem_finalize();
    return 0;
}
