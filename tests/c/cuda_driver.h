/* The CUDA driver for tests that drive the GPU themselves, loaded with dlopen so that the same
 * program runs against the real driver (scripts/gpu-check.sh) and against the test driver
 * fakecuda (tests/plugins/fake_libcuda.c). A missing driver or symbol ends the program with
 * status 2, naming it. */
#ifndef RSHMEM_TEST_CUDA_DRIVER_H
#define RSHMEM_TEST_CUDA_DRIVER_H
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;

/* libcuda, or the end of program `prog`. */
static void *cuda_driver(const char *prog) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) lib = dlopen("libcuda.so", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "%s: no CUDA driver: %s\n", prog, dlerror());
        exit(2);
    }
    return lib;
}

/* The driver's `name`, or the end of program `prog`. */
static void *cuda_sym(void *lib, const char *prog, const char *name) {
    void *f = dlsym(lib, name);
    if (!f) {
        fprintf(stderr, "%s: the CUDA driver has no %s\n", prog, name);
        exit(2);
    }
    return f;
}
#endif
