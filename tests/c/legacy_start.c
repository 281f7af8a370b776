/* The deprecated start-up interface: start_pes, _my_pe, _num_pes; no shmem_finalize call. */
#include <shmem.h>
#include <stdio.h>

static int seen;

int main(void) {
    start_pes(0);
    int me = _my_pe(), n = _num_pes();
    shmem_int_p(&seen, me + 1, (me + 1) % n);
    shmem_barrier_all();
    if (seen != (me + n - 1) % n + 1) {
        printf("legacy_start: PE %d wrong value %d\n", me, seen);
        return 1;
    }
    printf("legacy_start: PE %d ok\n", me);
    return 0;
}
