/* PE 0 gets 8 bytes from PE 1 ITERS times (default 20000) in each of 5 timed blocks, or does a
 * fetch-add with OP=1, while PE 1 waits in shmem_long_wait_until; prints "op N: X us" per
 * block. For counting what the waiting PE does per get (docs/performance.md, "Waits that serve
 * a peer"):
 *   target/release/oshcc -O2 -o /tmp/get_loop tests/bench/get_loop.c
 *   SHMEM_LOCAL_MAP=0 UCX_TLS=tcp,self perf stat -e syscalls:sys_enter_sched_yield \
 *       target/release/oshrun -np 2 /tmp/get_loop */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long done;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(void) {
    shmem_init();
    long *word = shmem_malloc(sizeof(long));
    long local = 0;
    long iters = getenv("ITERS") ? atol(getenv("ITERS")) : 20000;
    int op = getenv("OP") ? atoi(getenv("OP")) : 0;
    *word = 0;
    shmem_barrier_all();
    if (shmem_my_pe() == 0) {
        for (int r = 0; r < 5; r++) {
            double t0 = now_us();
            for (long i = 0; i < iters; i++) {
                if (op == 0)
                    shmem_getmem(&local, word, sizeof local, 1);
                else
                    (void)shmem_long_atomic_fetch_add(word, 1, 1);
            }
            printf("op %d: %.3f us\n", op, (now_us() - t0) / iters);
        }
        shmem_long_atomic_inc(&done, 1);
    } else {
        shmem_long_wait_until(&done, SHMEM_CMP_EQ, 1);
    }
    shmem_barrier_all();
    shmem_free(word);
    shmem_finalize();
    return 0;
}
