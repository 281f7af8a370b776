/* Deprecated include path, still supported. */
#include <shmem.h>
