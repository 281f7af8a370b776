/* Deprecated include path, still supported. */
#include <shmemx.h>
