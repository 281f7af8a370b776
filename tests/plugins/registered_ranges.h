/* The host ranges a test device driver has page-locked (cuMemHostRegister in fakecuda,
 * host_register in fakedev), with the real driver's rules: whole pages, no overlap with a
 * range already registered, unregistered by the start of one, and a copy may not run past
 * the end of the range it starts in. Included by tests/plugins/fake_libcuda.c and
 * tests/plugins/memheap_fakedev.c, each of which holds its own lock around every call. */
#ifndef RSHMEM_TEST_REGISTERED_RANGES_H
#define RSHMEM_TEST_REGISTERED_RANGES_H
#include <stddef.h>
#include <stdint.h>

#define MAX_REGISTERED 256
static uintptr_t registered[MAX_REGISTERED];
static size_t registered_len[MAX_REGISTERED];

enum { RANGE_ADDED, RANGE_NOT_PAGES, RANGE_OVERLAPS, RANGE_TABLE_FULL };

/* Register [b, b+len): one of the values above. */
static int ranges_add(uintptr_t b, size_t len) {
    if (!b || !len || b % 4096 || len % 4096) return RANGE_NOT_PAGES;
    int at = -1;
    for (int i = 0; i < MAX_REGISTERED; i++) {
        if (!registered[i]) {
            if (at < 0) at = i;
        } else if (b < registered[i] + registered_len[i] && registered[i] < b + len) {
            return RANGE_OVERLAPS;
        }
    }
    if (at < 0) return RANGE_TABLE_FULL;
    registered[at] = b;
    registered_len[at] = len;
    return RANGE_ADDED;
}

/* Unregister the range that starts at p: 1, or 0 when none does. */
static int ranges_remove(uintptr_t p) {
    for (int i = 0; i < MAX_REGISTERED; i++)
        if (registered[i] && registered[i] == p) {
            registered[i] = 0;
            return 1;
        }
    return 0;
}

/* Whether [p, p+len) lies inside one registered range (len 0: whether p does). */
static int ranges_cover(uintptr_t p, size_t len) {
    for (int i = 0; i < MAX_REGISTERED; i++) {
        uintptr_t b = registered[i];
        if (b && p >= b && p - b < registered_len[i] && len <= registered_len[i] - (p - b)) return 1;
    }
    return 0;
}

/* Whether [p, p+len) starts in a registered range and runs past its end, which
 * cuMemcpyAsync refuses (CUDA_ERROR_INVALID_VALUE). */
static int ranges_past(uintptr_t p, size_t len) {
    for (int i = 0; i < MAX_REGISTERED; i++)
        if (registered[i] && p >= registered[i] && p - registered[i] < registered_len[i])
            return len > registered_len[i] - (p - registered[i]);
    return 0;
}
#endif
