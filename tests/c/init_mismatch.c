/* PE 1 sets a variable that must be equal on every PE to another value than the others
 * (MISMATCH_VAR, default SHMEM_SYMMETRIC_SIZE; values MISMATCH_A elsewhere and MISMATCH_B on
 * PE 1, default 4M and 8M), so shmem_init fails on every PE after each has created its
 * shared-memory segments: the job must end with an error naming the variable and the PE, and
 * leave no names behind in /dev/shm. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

static const char *env_or(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return v ? v : dflt;
}

int main(void) {
    const char *rank = getenv("RSHMEM_RANK");
    const char *var = env_or("MISMATCH_VAR", "SHMEM_SYMMETRIC_SIZE");
    const char *value = rank && atoi(rank) == 1 ? env_or("MISMATCH_B", "8M") : env_or("MISMATCH_A", "4M");
    if (*value) setenv(var, value, 1);
    else unsetenv(var);
    shmem_init();
    printf("not reached: PE %d initialized\n", shmem_my_pe());
    shmem_finalize();
    return 0;
}
