/* Shared helpers for rshmem's multi-PE C tests. */
#ifndef RSHMEM_TEST_CHECK_H
#define RSHMEM_TEST_CHECK_H
#include <dirent.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

/* How many descriptors this process has open. */
static inline int open_fds(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while ((e = readdir(d)) != NULL) n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

/* A failed check names the PE and the line, then ends the whole job with status 1. */
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "PE %d: CHECK FAILED %s:%d: %s\n", shmem_my_pe(), __FILE__, __LINE__, \
                    #cond);                                                                        \
            fflush(stderr);                                                                        \
            shmem_global_exit(1);                                                                  \
        }                                                                                          \
    } while (0)

/* Every PE prints one line when all its checks passed; the harness counts them. */
#define REPORT_OK(name)                                    \
    do {                                                   \
        printf("%s: PE %d ok\n", (name), shmem_my_pe());  \
        fflush(stdout);                                    \
    } while (0)
#endif
