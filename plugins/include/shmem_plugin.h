/*
 * shmem_plugin.h: the rshmem component plugin ABI, version 2, for plugins written in C.
 *
 * A plugin is a shared object exporting exactly one function,
 *     const shmem_plugin_descriptor_t *shmem_plugin_descriptor(void);
 * that returns a static descriptor. The core dlopens the file, checks abi_version and
 * struct_size, calls query() to learn whether the component can run (and its priority, or why
 * not), then open() on the selected component, which returns the framework's ops table. The
 * core refuses a table whose struct_size ends before its last required slot, or with a
 * required slot NULL, naming the slot; optional slots (marked so below) may be NULL.
 *
 * This header mirrors plugins/src/lib.rs field for field; see docs/plugin-abi.md.
 */
#ifndef SHMEM_PLUGIN_H
#define SHMEM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMEM_PLUGIN_ABI_VERSION 2u

#define SHMEM_PLUGIN_RC_OK 0
#define SHMEM_PLUGIN_RC_ERROR (-1)
#define SHMEM_PLUGIN_RC_DECLINED 1
#define SHMEM_PLUGIN_RC_UNSUPPORTED (-2)

enum shmem_plugin_framework {
    SHMEM_PLUGIN_SPML = 1,
    SHMEM_PLUGIN_SCOLL = 2,
    SHMEM_PLUGIN_SSHMEM = 3,
    SHMEM_PLUGIN_MEMHEAP = 4
};

enum shmem_plugin_param_kind {
    SHMEM_PLUGIN_PARAM_STRING = 0,
    SHMEM_PLUGIN_PARAM_INT = 1,
    SHMEM_PLUGIN_PARAM_BOOL = 2,
    SHMEM_PLUGIN_PARAM_SIZE = 3
};

typedef struct {
    const char *name;
    uint32_t kind; /* enum shmem_plugin_param_kind */
    const char *default_value;
    const char *doc;
} shmem_plugin_param_t;

typedef struct {
    int available;
    int priority;
    char reason[256];
} shmem_plugin_query_t;

#define SHMEM_PLUGIN_TRANSPORT_NONE 0u
#define SHMEM_PLUGIN_TRANSPORT_UCX 1u

typedef struct {
    uint32_t kind;
    void *context;
    void *worker;
} shmem_plugin_transport_t;

#define SHMEM_PLUGIN_LOG_ERROR 0
#define SHMEM_PLUGIN_LOG_WARN 1
#define SHMEM_PLUGIN_LOG_INFO 2
#define SHMEM_PLUGIN_LOG_DEBUG 3
#define SHMEM_PLUGIN_LOG_TRACE 4

/* Comparison operators, equal to SHMEM_CMP_* */
#define SHMEM_PLUGIN_CMP_EQ 1
#define SHMEM_PLUGIN_CMP_NE 2
#define SHMEM_PLUGIN_CMP_GT 3
#define SHMEM_PLUGIN_CMP_LE 4
#define SHMEM_PLUGIN_CMP_LT 5
#define SHMEM_PLUGIN_CMP_GE 6

typedef struct {
    size_t struct_size;
    uint32_t abi_version;
    int my_pe;
    int n_pes;
    int local_rank;
    int local_size;
    const char *job_id;
    void (*log)(int level, const char *component, const char *msg);
    const char *(*param)(const char *framework, const char *component, const char *name);
    int (*kv_put)(const char *key, const uint8_t *value, size_t len);
    int (*kv_get)(int pe, const char *key, uint8_t *buf, size_t cap, size_t *len);
    int (*kv_fence)(void);
    void (*abort)(int code, const char *msg);
    int (*pe_is_local)(int pe);
    shmem_plugin_transport_t (*transport)(void);
    void *(*ptr)(const void *addr, int pe);
    void (*putmem)(void *dest, const void *src, size_t len, int pe);
    void (*getmem)(void *dest, const void *src, size_t len, int pe);
    void (*quiet)(void);
    void (*fence)(void);
    void (*atomic_add_u64)(uint64_t *dest, uint64_t value, int pe);
    void (*wait_until_u64)(const uint64_t *ivar, int cmp, uint64_t value);
} shmem_plugin_core_t;

typedef struct {
    void *base;
    size_t size;
    uint8_t blob[256];
    size_t blob_len;
    void *transport_memh;
    void *handle;
} shmem_plugin_segment_t;

typedef struct {
    size_t struct_size;
    int (*create)(size_t size, void *hint, shmem_plugin_segment_t *out);
    int (*attach)(const uint8_t *blob, size_t blob_len, size_t size, void **addr);
    void (*detach)(void *addr, size_t size);
    void (*unlink)(shmem_plugin_segment_t *seg);
    void (*destroy)(shmem_plugin_segment_t *seg);
} shmem_plugin_sshmem_ops_t;

typedef struct {
    size_t struct_size;
    void *(*create)(void *base, size_t size);
    void *(*alloc)(void *heap, size_t size, size_t align);
    int (*free)(void *heap, void *ptr);
    void *(*realloc)(void *heap, void *ptr, size_t size);
    size_t (*usable_size)(void *heap, void *ptr);
    void (*destroy)(void *heap);
    /* appended in v1: the memory this heap serves (SHMEM_PLUGIN_MEMHEAP_DEVICE_*); the core
     * picks one memheap per device type; a table that ends before it serves CPU memory */
    uint32_t device_type;
} shmem_plugin_memheap_ops_t;

#define SHMEM_PLUGIN_MEMHEAP_DEVICE_CPU 0u
#define SHMEM_PLUGIN_MEMHEAP_DEVICE_GPU 1u

/* Atomic operations of shmem_plugin_spml_ops_t.atomic */
#define SHMEM_PLUGIN_AMO_FETCH 0u
#define SHMEM_PLUGIN_AMO_SET 1u
#define SHMEM_PLUGIN_AMO_SWAP 2u
#define SHMEM_PLUGIN_AMO_CSWAP 3u
#define SHMEM_PLUGIN_AMO_ADD 4u
#define SHMEM_PLUGIN_AMO_AND 5u
#define SHMEM_PLUGIN_AMO_OR 6u
#define SHMEM_PLUGIN_AMO_XOR 7u

typedef void *shmem_plugin_spml_ctx_t;

typedef struct {
    size_t struct_size;
    shmem_plugin_transport_t transport;
    shmem_plugin_spml_ctx_t default_ctx;
    int (*connect)(void);
    int (*mem_register)(void *base, size_t len, void *memh, uint8_t *rkey, size_t cap,
                        size_t *rkey_len, void **reg);
    void (*mem_deregister)(void *reg);
    int (*add_segment)(int pe, uint32_t seg, uint64_t base, size_t len, const uint8_t *rkey,
                       size_t rkey_len);
    void *(*remote_ptr)(int pe, uint32_t seg, uint64_t raddr);
    int (*put)(shmem_plugin_spml_ctx_t ctx, int pe, uint32_t seg, uint64_t raddr, const void *src, size_t len);
    int (*get)(shmem_plugin_spml_ctx_t ctx, int pe, uint32_t seg, uint64_t raddr, void *dst, size_t len);
    int (*put_nbi)(shmem_plugin_spml_ctx_t ctx, int pe, uint32_t seg, uint64_t raddr, const void *src, size_t len);
    int (*get_nbi)(shmem_plugin_spml_ctx_t ctx, int pe, uint32_t seg, uint64_t raddr, void *dst, size_t len);
    int (*quiet)(shmem_plugin_spml_ctx_t ctx);
    int (*fence)(shmem_plugin_spml_ctx_t ctx);
    void (*progress)(void);
    void (*finalize)(void);
    int (*atomic)(shmem_plugin_spml_ctx_t ctx, int pe, uint32_t seg, uint64_t raddr, uint32_t op,
                  uint32_t size, uint64_t value, uint64_t cond, uint64_t *fetched);
    /* Optional (NULL, or absent when struct_size ends before it): a context of its own for an
     * OpenSHMEM context created with `options` (SHMEM_PLUGIN_SPML_CTX_*). 0 and the context in
     * *out, or nonzero to make the core share the default context. */
    int (*ctx_create)(long options, shmem_plugin_spml_ctx_t *out);
    /* Release a context from ctx_create (the core has quieted it). */
    void (*ctx_destroy)(shmem_plugin_spml_ctx_t ctx); /* optional */
} shmem_plugin_spml_ops_t;

/* Options of shmem_plugin_spml_ops_t.ctx_create (the values of the SHMEM_CTX_* constants) */
#define SHMEM_PLUGIN_SPML_CTX_SERIALIZED (1L << 0)
#define SHMEM_PLUGIN_SPML_CTX_PRIVATE (1L << 1)
#define SHMEM_PLUGIN_SPML_CTX_NOSTORE (1L << 2)

typedef struct {
    int id;
    int start;
    int stride;
    int size;
    int my_index;
    void *scratch;
    size_t scratch_len;
    uint32_t flags; /* SHMEM_PLUGIN_TEAM_* */
} shmem_plugin_team_t;

/* shmem_plugin_team_t.flags: one active-set call whose scratch is the user's pSync, to be left
 * all zeros once every member has returned */
#define SHMEM_PLUGIN_TEAM_EPHEMERAL 1u
/* shmem_plugin_team_t.flags: every member maps every member's symmetric memory (the ptr service
 * reaches it), known alike on all members; load/store components must require it */
#define SHMEM_PLUGIN_TEAM_MAPPED 2u

typedef struct {
    size_t struct_size;
    size_t scratch_needed;
    void *(*enable)(const shmem_plugin_team_t *team);
    void (*disable)(void *state);
    /* Every collective slot is optional: NULL (or a slot past struct_size) falls through to the
     * next component of the stack, as does a call that returns SHMEM_PLUGIN_RC_DECLINED. */
    int (*barrier)(void *state);
    int (*broadcast)(void *state, void *dest, const void *src, size_t nbytes, int root);
    int (*collect)(void *state, void *dest, const void *src, size_t nbytes, int fixed);
    int (*alltoall)(void *state, void *dest, const void *src, size_t elem_size, size_t nelems,
                    ptrdiff_t dst, ptrdiff_t sst);
    int (*reduce)(void *state, void *dest, const void *src, size_t nelems, uint32_t dtype,
                  uint32_t op, uint32_t kind);
    /* as broadcast, but the root's dest is left as it is (the active-set form); without it
     * the core saves and restores the root's dest around broadcast */
    int (*broadcast_keep_root)(void *state, void *dest, const void *src, size_t nbytes, int root);
} shmem_plugin_scoll_ops_t;

/* shmem_plugin_scoll_ops_t.reduce: element types, operations, kinds */
enum {
    SHMEM_PLUGIN_DT_I8, SHMEM_PLUGIN_DT_I16, SHMEM_PLUGIN_DT_I32, SHMEM_PLUGIN_DT_I64,
    SHMEM_PLUGIN_DT_U8, SHMEM_PLUGIN_DT_U16, SHMEM_PLUGIN_DT_U32, SHMEM_PLUGIN_DT_U64,
    SHMEM_PLUGIN_DT_F32, SHMEM_PLUGIN_DT_F64, SHMEM_PLUGIN_DT_LONGDOUBLE,
    SHMEM_PLUGIN_DT_COMPLEXF, SHMEM_PLUGIN_DT_COMPLEXD
};
enum {
    SHMEM_PLUGIN_OP_AND, SHMEM_PLUGIN_OP_OR, SHMEM_PLUGIN_OP_XOR, SHMEM_PLUGIN_OP_MAX,
    SHMEM_PLUGIN_OP_MIN, SHMEM_PLUGIN_OP_SUM, SHMEM_PLUGIN_OP_PROD
};
enum { SHMEM_PLUGIN_REDUCE_ALL, SHMEM_PLUGIN_REDUCE_INSCAN, SHMEM_PLUGIN_REDUCE_EXSCAN };

/* shmem_plugin_descriptor_t.caps: what a component can do. A job selects only components
 * with the capabilities it needs, and shmem_info lists them. */
/* spml: reaches PEs on other hosts (a job across hosts needs it) */
#define SHMEM_PLUGIN_SPML_CAP_MULTI_HOST (1ull << 0)
/* spml: its slots may be called from several threads at once (SHMEM_THREAD_MULTIPLE needs it) */
#define SHMEM_PLUGIN_SPML_CAP_THREAD_MULTIPLE (1ull << 1)
/* sshmem: local peers can map its segments (attach works); without it they use the spml */
#define SHMEM_PLUGIN_SSHMEM_CAP_PEER_ATTACH (1ull << 0)
/* scoll: serves SHMEM_PLUGIN_TEAM_EPHEMERAL teams, leaving the pSync zeroed */
#define SHMEM_PLUGIN_SCOLL_CAP_EPHEMERAL (1ull << 0)

typedef struct {
    uint32_t abi_version; /* SHMEM_PLUGIN_ABI_VERSION; first in every ABI version */
    uint32_t framework; /* enum shmem_plugin_framework */
    size_t struct_size; /* sizeof(shmem_plugin_descriptor_t) */
    const char *name;
    const char *version;
    const char *description;
    const shmem_plugin_param_t *params;
    size_t n_params;
    uint64_t caps; /* SHMEM_PLUGIN_<FRAMEWORK>_CAP_* */
    void (*query)(const shmem_plugin_core_t *core, shmem_plugin_query_t *result);
    const void *(*open)(const shmem_plugin_core_t *core);
} shmem_plugin_descriptor_t;

#define SHMEM_PLUGIN_DESCRIPTOR_SYMBOL "shmem_plugin_descriptor"

#ifdef __cplusplus
}
#endif
#endif /* SHMEM_PLUGIN_H */
