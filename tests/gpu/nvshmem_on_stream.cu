/* The peer of tests/bench/on_stream.c: the same measurements with NVSHMEM's host API
 * (nvshmemx_*_on_stream, nvshmem_putmem + nvshmem_quiet, nvshmem_barrier_all), for issue 54's
 * side-by-side figures. NVSHMEM is not part of rshmem: this is built only on a GPU machine
 * where NVSHMEM is installed (the nvidia-nvshmem wheel), by hand:
 *
 *   nvcc -O2 -I$NV/include -o nv tests/gpu/nvshmem_on_stream.cu -L$NV/lib -lnvshmem_host -lcuda
 *   RANK=0 NRANKS=2 ./nv & RANK=1 NRANKS=2 ./nv; wait
 *
 * The two processes meet through NVSHMEM's unique-ID bootstrap: rank 0 writes the ID to
 * $NV_UID_FILE (default /tmp/nvshmem-uid), rank 1 reads it. Built with -DNV_COLL it also times
 * NVSHMEM's host-initiated collectives on device buffers as tests/bench/device_coll.c does. Output lines as on_stream.c's:
 * "RESULT name size median us min max", from rank 0. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NREP 7
#define BIG ((size_t)1 << 20)

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int rank;

static void result(const char *name, size_t size, double *v) {
    qsort(v, NREP, sizeof *v, cmp);
    if (rank == 0) printf("RESULT %s %zu %.6g us %.6g %.6g\n", name, size, v[NREP / 2], v[0], v[NREP - 1]);
    fflush(stdout);
}

int main(void) {
    rank = atoi(getenv("RANK") ? getenv("RANK") : "0");
    int nranks = atoi(getenv("NRANKS") ? getenv("NRANKS") : "2");
    const char *file = getenv("NV_UID_FILE") ? getenv("NV_UID_FILE") : "/tmp/nvshmem-uid";
    cudaSetDevice(0);
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (rank == 0) {
        nvshmemx_get_uniqueid(&id);
        char tmp[256];
        snprintf(tmp, sizeof tmp, "%s.tmp", file);
        FILE *f = fopen(tmp, "wb");
        fwrite(&id, sizeof id, 1, f);
        fclose(f);
        rename(tmp, file);
    } else {
        FILE *f = NULL;
        for (int i = 0; i < 3000 && !(f = fopen(file, "rb")); i++) usleep(10000);
        if (!f || fread(&id, sizeof id, 1, f) != 1) {
            fprintf(stderr, "nvshmem_on_stream: no unique ID in %s\n", file);
            return 2;
        }
        fclose(f);
    }
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_set_attr_uniqueid_args(rank, nranks, &id, &attr);
    nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
    int me = nvshmem_my_pe(), other = 1 - me;
    if (me == 0) unlink(file);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    char *dst = (char *)nvshmem_malloc(BIG);
    char *src = (char *)nvshmem_malloc(BIG);
    uint64_t *sig = (uint64_t *)nvshmem_calloc(1, sizeof(uint64_t));
    char *peer = (char *)nvshmem_ptr(dst, other);
    if (me == 0) printf("nvshmem_on_stream: nvshmem_ptr of the peer's buffer: %s\n", peer ? "mapped" : "NULL");
    long k = getenv("ON_STREAM_ITERS") ? atol(getenv("ON_STREAM_ITERS")) : 200;
    size_t sizes[] = {8, 65536, BIG};
    double vs[NREP], vr[NREP], vh[NREP];
    for (int z = 0; z < 3; z++) {
        size_t n = sizes[z];
        for (int rep = 0; rep < NREP; rep++) {
            nvshmem_barrier_all();
            if (me == 0) {
                double t0 = now_us();
                if (peer)
                    for (long i = 0; i < k; i++) cudaMemcpyAsync(peer, src, n, cudaMemcpyDeviceToDevice, s);
                cudaStreamSynchronize(s);
                double t1 = now_us();
                for (long i = 0; i < k; i++) nvshmemx_putmem_on_stream(dst, src, n, other, s);
                cudaStreamSynchronize(s);
                double t2 = now_us();
                for (long i = 0; i < k / 4 + 1; i++) {
                    nvshmem_putmem(dst, src, n, other);
                    nvshmem_quiet();
                }
                double t3 = now_us();
                vr[rep] = (t1 - t0) / k;
                vs[rep] = (t2 - t1) / k;
                vh[rep] = (t3 - t2) / (k / 4 + 1);
            }
        }
        if (peer) result("nv_raw_copy", n, vr);
        result("nv_stream_put", n, vs);
        result("nv_host_put", n, vh);
    }
    uint64_t round = 0;
    for (int rep = 0; rep < NREP; rep++) {
        nvshmem_barrier_all();
        double t0 = now_us();
        for (long i = 0; i < k; i++) {
            round++;
            if (me == 0) {
                nvshmemx_putmem_signal_on_stream(dst, src, 8, sig, round, NVSHMEM_SIGNAL_SET, other, s);
                nvshmemx_signal_wait_until_on_stream(sig, NVSHMEM_CMP_GE, round, s);
            } else {
                nvshmemx_signal_wait_until_on_stream(sig, NVSHMEM_CMP_GE, round, s);
                nvshmemx_putmem_signal_on_stream(dst, src, 8, sig, round, NVSHMEM_SIGNAL_SET, other, s);
            }
        }
        cudaStreamSynchronize(s);
        vs[rep] = (now_us() - t0) / k;
    }
    result("nv_stream_pingpong", 8, vs);
    for (int rep = 0; rep < NREP; rep++) {
        nvshmem_barrier_all();
        double t0 = now_us();
        for (long i = 0; i < k; i++) nvshmemx_barrier_all_on_stream(s);
        cudaStreamSynchronize(s);
        double t1 = now_us();
        for (long i = 0; i < k; i++) nvshmem_barrier_all();
        double t2 = now_us();
        vs[rep] = (t1 - t0) / k;
        vh[rep] = (t2 - t1) / k;
    }
    result("nv_stream_barrier", 0, vs);
    result("nv_host_barrier", 0, vh);
    /* Host-initiated collectives on device buffers, as tests/bench/device_coll.c times them:
     * float sum reduction, broadcast from the last PE, fcollect; PE 0's time per call. */
#ifdef NV_COLL
    {
        int n = nvshmem_n_pes();
        char *csrc = (char *)nvshmem_malloc(BIG), *cdst = (char *)nvshmem_malloc(BIG * n);
        cudaMemset(csrc, 0, BIG);
        cudaDeviceSynchronize();
        size_t csizes[] = {8, 1024, 65536, BIG};
        const char *ops[] = {"reduce", "broadcast", "fcollect"};
        for (int z = 0; z < 4; z++) {
            size_t bytes = csizes[z], floats = bytes / sizeof(float);
            long iters = bytes >= BIG ? 15 : bytes >= 65536 ? 55 : 200;
            for (int op = 0; op < 3; op++) {
                for (int rep = 0; rep < NREP; rep++) {
                    nvshmem_barrier_all();
                    double t = now_us();
                    for (long i = 0; i < iters; i++) {
                        if (op == 0)
                            nvshmem_float_sum_reduce(NVSHMEM_TEAM_WORLD, (float *)cdst, (float *)csrc, floats);
                        else if (op == 1)
                            nvshmem_char_broadcast(NVSHMEM_TEAM_WORLD, cdst, csrc, bytes, n - 1);
                        else
                            nvshmem_char_fcollect(NVSHMEM_TEAM_WORLD, cdst, csrc, bytes);
                    }
                    vs[rep] = (now_us() - t) / iters;
                }
                char name[32];
                snprintf(name, sizeof name, "nv_%s_gpu", ops[op]);
                result(name, bytes, vs);
            }
        }
        nvshmem_free(cdst);
        nvshmem_free(csrc);
    }
#endif
    nvshmem_barrier_all();
    nvshmem_free(sig);
    nvshmem_free(src);
    nvshmem_free(dst);
    nvshmem_finalize();
    return 0;
}
