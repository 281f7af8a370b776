/* For building shmem4py (the OpenSHMEM binding for Python) against rshmem. shmem4py finds out
 * what an implementation's shmem.h offers from macros particular to each vendor; for one it
 * does not know, it declares stand-ins for routines OpenSHMEM 1.5 added, which then clash with
 * rshmem's own declarations. rshmem has the whole OpenSHMEM 1.6 API, so this header tells
 * shmem4py that every one of them is there. Build it with (docs/python.md):
 *
 *   OSHCC="oshcc -include shmem4py-rshmem.h" pip install --no-binary shmem4py shmem4py
 */
#ifndef RSHMEM_SHMEM4PY_H
#define RSHMEM_SHMEM4PY_H

#define PySHMEM_HAVE_shmem_malloc_with_hints 1
#define PySHMEM_HAVE_shmem_team_t 1
#define PySHMEM_HAVE_SHMEM_CTX_INVALID 1
#define PySHMEM_HAVE_shmem_amo_nbi 1
#define PySHMEM_HAVE_shmem_put_signal 1
#define PySHMEM_HAVE_shmem_signal_fetch 1
#define PySHMEM_HAVE_shmem_signal_wait_until 1
#define PySHMEM_HAVE_shmem_broadcast 1
#define PySHMEM_HAVE_shmem_collect 1
#define PySHMEM_HAVE_shmem_fcollect 1
#define PySHMEM_HAVE_shmem_alltoall 1
#define PySHMEM_HAVE_shmem_alltoalls 1
#define PySHMEM_HAVE_shmem_broadcastmem 1
#define PySHMEM_HAVE_shmem_collectmem 1
#define PySHMEM_HAVE_shmem_fcollectmem 1
#define PySHMEM_HAVE_shmem_alltoallmem 1
#define PySHMEM_HAVE_shmem_alltoallsmem 1
#define PySHMEM_HAVE_shmem_reduce 1
#define PySHMEM_HAVE_shmem_wait_test_many 1
#define PySHMEM_HAVE_shmem_pcontrol 1

#endif
