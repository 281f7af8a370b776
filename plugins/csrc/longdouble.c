/* Element-wise long double reduction steps for scoll components (rshmem_plugin_api::arith): Rust has no type for C's long
 * double (x87 extended precision), so these few loops are C. */
#include <stddef.h>

/* Operations, as OP_* of the plugin ABI: 3 max, 4 min, 5 sum, 6 prod. Returns 0, or -1 for an
 * operation long double does not support. */
int rshmem_plugin_ld_combine(unsigned op, long double *acc, const long double *x, size_t n) {
    size_t i;
    switch (op) {
    case 3: for (i = 0; i < n; i++) acc[i] = x[i] > acc[i] ? x[i] : acc[i]; return 0;
    case 4: for (i = 0; i < n; i++) acc[i] = x[i] < acc[i] ? x[i] : acc[i]; return 0;
    case 5: for (i = 0; i < n; i++) acc[i] += x[i]; return 0;
    case 6: for (i = 0; i < n; i++) acc[i] *= x[i]; return 0;
    default: return -1;
    }
}
