/* Where a PE runs and where its heap lives: prints, per PE, the CPUs it may run on
 * (Cpus_allowed_list) and the NUMA policy of the mapping that holds its symmetric heap (from
 * /proc/self/numa_maps: "default", or "bind:N" when the heap's pages are bound to node N). */
#include "check.h"
#include <stdint.h>
#include <string.h>

static void cpus(char *out, size_t n) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[1024];
    out[0] = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Cpus_allowed_list:", 18)) {
            char *v = line + 18;
            while (*v == ' ' || *v == '\t') v++;
            v[strcspn(v, "\n")] = 0;
            snprintf(out, n, "%.*s", (int)(n - 1), v);
        }
    if (f) fclose(f);
}

/* The policy of the mapping containing p. */
static void policy(const void *p, char *out, size_t n) {
    uintptr_t a = (uintptr_t)p, lo = 0, hi = 0, start = 0;
    char line[4096];
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= a && a < hi) start = lo;
    if (f) fclose(f);
    snprintf(out, n, "unknown");
    f = fopen("/proc/self/numa_maps", "r");
    while (f && fgets(line, sizeof line, f)) {
        uintptr_t s;
        char pol[256];
        if (sscanf(line, "%lx %255s", &s, pol) == 2 && s == start) snprintf(out, n, "%s", pol);
    }
    if (f) fclose(f);
}

int main(void) {
    shmem_init();
    char *heap = shmem_malloc(1 << 20);
    CHECK(heap != NULL);
    memset(heap, 1, 1 << 20);
    char c[1024], pol[256];
    cpus(c, sizeof c);
    policy(heap, pol, sizeof pol);
    printf("binding: PE %d cpus %s heap %s\n", shmem_my_pe(), c, pol);
    shmem_barrier_all();
    shmem_free(heap);
    REPORT_OK("binding");
    shmem_finalize();
    return 0;
}
