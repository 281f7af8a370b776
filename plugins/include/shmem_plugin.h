/*
 * shmem_plugin.h: the rshmem component plugin ABI, version 2, for plugins written in C.
 *
 * GENERATED from plugins/src/abi.rs by plugins/build.rs (cbindgen): do not edit; change the
 * Rust definitions and run `RSHMEM_REGEN_HEADERS=1 cargo build -p rshmem-plugin-api`.
 *
 * A plugin is a shared object exporting exactly one function,
 *     const shmem_plugin_descriptor_t *shmem_plugin_descriptor(void);
 * that returns a static descriptor. The core dlopens the file, checks abi_version and
 * struct_size, calls query() to learn whether the component can run (and its priority, or why
 * not), then open() on the selected component, which returns the framework's ops table. The
 * core refuses a table whose struct_size ends before its last required slot, or with a
 * required slot NULL, naming the slot. Every function pointer in a table is required unless
 * its comment says optional; an optional one may be NULL.
 *
 * Plugins never link libshmem.so: what they need from the core arrives in the
 * shmem_plugin_core_t passed to query() and open(). See docs/plugin-abi.md for the lifetimes,
 * threading rules and the versioning policy.
 */

#ifndef SHMEM_PLUGIN_H
#define SHMEM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

/**
 * Bumped on any incompatible change to the structures below. Version 2: the descriptor gained
 * `struct_size` and `caps`, `shmem_plugin_param_t.kind` is a plain 32-bit integer, and `shmem_plugin_spml_ops_t.atomic_add_u64`
 * is gone (`atomic` with `SHMEM_PLUGIN_AMO_ADD` does it).
 */
#define SHMEM_PLUGIN_ABI_VERSION 2

/**
 * Return codes shared by every framework.
 */
#define SHMEM_PLUGIN_RC_OK 0

#define SHMEM_PLUGIN_RC_ERROR (-1)

/**
 * A slot declined this call (type, size, team...); the core falls back to the next provider.
 */
#define SHMEM_PLUGIN_RC_DECLINED 1

/**
 * The operation is not supported by this component.
 */
#define SHMEM_PLUGIN_RC_UNSUPPORTED (-2)

/**
 * The component frameworks, as `shmem_plugin_descriptor_t.framework` names them.
 */
#define SHMEM_PLUGIN_FRAMEWORK_SPML 1

#define SHMEM_PLUGIN_FRAMEWORK_SCOLL 2

#define SHMEM_PLUGIN_FRAMEWORK_SSHMEM 3

#define SHMEM_PLUGIN_FRAMEWORK_MEMHEAP 4

/**
 * Kinds of configuration parameter a component may declare (`shmem_plugin_param_t.kind`). The core
 * checks every value given for a parameter against its kind at init.
 */
#define SHMEM_PLUGIN_PARAM_STRING 0

#define SHMEM_PLUGIN_PARAM_INT 1

#define SHMEM_PLUGIN_PARAM_BOOL 2

/**
 * A byte count with an optional K, M, G or T suffix (`64K`, `1.5G`).
 */
#define SHMEM_PLUGIN_PARAM_SIZE 3

/**
 * `shmem_plugin_descriptor_t.caps` of an spml: it reaches PEs on other hosts (not only this one's).
 * A job that spans hosts selects only spmls with it.
 */
#define SHMEM_PLUGIN_SPML_CAP_MULTI_HOST (1 << 0)

/**
 * `shmem_plugin_descriptor_t.caps` of an spml: its slots may be called from several threads at once
 * (`SHMEM_THREAD_MULTIPLE`). A job initialised with `SHMEM_THREAD_MULTIPLE` selects only
 * spmls with it.
 */
#define SHMEM_PLUGIN_SPML_CAP_THREAD_MULTIPLE (1 << 1)

/**
 * `shmem_plugin_descriptor_t.caps` of an sshmem: a local peer can map its segments (`attach` works),
 * so same-host peers reach them by load and store. Without it they go through the spml.
 */
#define SHMEM_PLUGIN_SSHMEM_CAP_PEER_ATTACH (1 << 0)

/**
 * `shmem_plugin_descriptor_t.caps` of an scoll: it serves `SHMEM_PLUGIN_TEAM_EPHEMERAL` teams (the active-set
 * routines on a user's pSync), leaving the scratch zeroed as that contract requires. The core
 * enables only such components on those teams.
 */
#define SHMEM_PLUGIN_SCOLL_CAP_EPHEMERAL (1 << 0)

/**
 * `shmem_plugin_descriptor_t.caps` of a memheap: it serves GPU memory (`SHMEM_PLUGIN_MEMHEAP_DEVICE_GPU`;
 * without it, CPU memory). The core opens, per device type, only the best memheap that
 * declares it, so a memheap that is not used is never opened.
 */
#define SHMEM_PLUGIN_MEMHEAP_CAP_GPU (1 << 0)

/**
 * Kinds of transport an spml can publish for other components.
 */
#define SHMEM_PLUGIN_TRANSPORT_NONE 0

/**
 * `context` is a `ucp_context_h`, `worker` the default `ucp_worker_h`.
 */
#define SHMEM_PLUGIN_TRANSPORT_UCX 1

/**
 * Log levels for `shmem_plugin_core_t.log`.
 */
#define SHMEM_PLUGIN_LOG_ERROR 0

#define SHMEM_PLUGIN_LOG_WARN 1

#define SHMEM_PLUGIN_LOG_INFO 2

#define SHMEM_PLUGIN_LOG_DEBUG 3

#define SHMEM_PLUGIN_LOG_TRACE 4

/**
 * Comparison operators (the values of `SHMEM_CMP_*`).
 */
#define SHMEM_PLUGIN_CMP_EQ 1

#define SHMEM_PLUGIN_CMP_NE 2

#define SHMEM_PLUGIN_CMP_GT 3

#define SHMEM_PLUGIN_CMP_LE 4

#define SHMEM_PLUGIN_CMP_LT 5

#define SHMEM_PLUGIN_CMP_GE 6

/**
 * Kinds of `shmem_plugin_stream_word_op_t`.
 */
#define SHMEM_PLUGIN_STREAM_OP_WRITE 0

#define SHMEM_PLUGIN_STREAM_OP_WAIT 1

/**
 * Comparisons of `shmem_plugin_memheap_ops_t.stream_wait_u64`.
 */
#define SHMEM_PLUGIN_STREAM_WAIT_EQ 0

#define SHMEM_PLUGIN_STREAM_WAIT_GE 1

/**
 * Device types of `shmem_plugin_memheap_ops_t.device_type` (the values of `SHMEM_DEVICE_*`).
 */
#define SHMEM_PLUGIN_MEMHEAP_DEVICE_CPU 0

#define SHMEM_PLUGIN_MEMHEAP_DEVICE_GPU 1

/**
 * Atomic operations of `shmem_plugin_spml_ops_t.atomic`. Values travel as the low `size` bytes of a u64.
 */
#define SHMEM_PLUGIN_AMO_FETCH 0

#define SHMEM_PLUGIN_AMO_SET 1

#define SHMEM_PLUGIN_AMO_SWAP 2

/**
 * Compare-and-swap: `cond` is compared, `value` stored when equal.
 */
#define SHMEM_PLUGIN_AMO_CSWAP 3

#define SHMEM_PLUGIN_AMO_ADD 4

#define SHMEM_PLUGIN_AMO_AND 5

#define SHMEM_PLUGIN_AMO_OR 6

#define SHMEM_PLUGIN_AMO_XOR 7

/**
 * Segment ids the core passes (to `add_segment`, `put`, `get`, `atomic`...) are below this:
 * the heap, the global data and the segments of memory spaces. An spml may size per-segment
 * tables by it.
 */
#define SHMEM_PLUGIN_MAX_SEGMENTS 16

/**
 * Options of `shmem_plugin_spml_ops_t.ctx_create` (the values of the matching `SHMEM_CTX_*`).
 */
#define SHMEM_PLUGIN_SPML_CTX_SERIALIZED (1 << 0)

#define SHMEM_PLUGIN_SPML_CTX_PRIVATE (1 << 1)

#define SHMEM_PLUGIN_SPML_CTX_NOSTORE (1 << 2)

/**
 * `shmem_plugin_team_t.flags`: the team lives for one active-set collective call (OpenSHMEM's legacy
 * routines with a pSync array) and its scratch is the user's pSync. Each collective must leave
 * the scratch as it found it (all zeros) once every member has returned, and the state from
 * `enable` is not reused.
 */
#define SHMEM_PLUGIN_TEAM_EPHEMERAL 1

/**
 * `shmem_plugin_team_t.flags`: every member maps every member's symmetric memory for load/store
 * (`shmem_plugin_core_t.ptr` reaches it), and every member sees this flag alike. A component that
 * works by load/store must require it rather than probe `ptr` itself: a transport may map
 * some peers and not others, and members that chose differently would wait on each other.
 */
#define SHMEM_PLUGIN_TEAM_MAPPED 2

/**
 * `shmem_plugin_team_t.flags`: every member maps the symmetric memory of the members on its own host
 * (the team may span several hosts; `shmem_plugin_core_t.host_of` tells them apart), and every
 * member sees this flag alike. A hierarchical component requires it for its load/store phase
 * inside each host.
 */
#define SHMEM_PLUGIN_TEAM_HOSTS_MAPPED 4

/**
 * Element types of `shmem_plugin_scoll_ops_t.reduce`.
 */
#define SHMEM_PLUGIN_DT_I8 0

#define SHMEM_PLUGIN_DT_I16 1

#define SHMEM_PLUGIN_DT_I32 2

#define SHMEM_PLUGIN_DT_I64 3

#define SHMEM_PLUGIN_DT_U8 4

#define SHMEM_PLUGIN_DT_U16 5

#define SHMEM_PLUGIN_DT_U32 6

#define SHMEM_PLUGIN_DT_U64 7

#define SHMEM_PLUGIN_DT_F32 8

#define SHMEM_PLUGIN_DT_F64 9

/**
 * C `long double` (x87 80-bit extended, 16 bytes in memory on x86-64).
 */
#define SHMEM_PLUGIN_DT_LONGDOUBLE 10

/**
 * C `float _Complex` / `double _Complex` (sum and prod only).
 */
#define SHMEM_PLUGIN_DT_COMPLEXF 11

#define SHMEM_PLUGIN_DT_COMPLEXD 12

/**
 * Operations of `shmem_plugin_scoll_ops_t.reduce`.
 */
#define SHMEM_PLUGIN_OP_AND 0

#define SHMEM_PLUGIN_OP_OR 1

#define SHMEM_PLUGIN_OP_XOR 2

#define SHMEM_PLUGIN_OP_MAX 3

#define SHMEM_PLUGIN_OP_MIN 4

#define SHMEM_PLUGIN_OP_SUM 5

#define SHMEM_PLUGIN_OP_PROD 6

/**
 * Kinds of `shmem_plugin_scoll_ops_t.reduce`.
 */
#define SHMEM_PLUGIN_REDUCE_ALL 0

#define SHMEM_PLUGIN_REDUCE_INSCAN 1

#define SHMEM_PLUGIN_REDUCE_EXSCAN 2

/**
 * One configuration parameter of a component, settable as
 * `SHMEM_MCA_<framework>_<component>_<name>`.
 */
typedef struct {
  const char *name;
  /**
   * A `SHMEM_PLUGIN_PARAM_*` value.
   */
  uint32_t kind;
  const char *default_value;
  const char *doc;
} shmem_plugin_param_t;

/**
 * What `query` answers.
 */
typedef struct {
  /**
   * Nonzero when the component can run here.
   */
  int available;
  /**
   * Higher wins when several are available.
   */
  int priority;
  /**
   * Why the component is unavailable (NUL-terminated), or a short note when available.
   */
  char reason[256];
} shmem_plugin_query_t;

/**
 * A typed handle the selected spml publishes so that other components (sshmem "ucx", device
 * memheaps) can allocate or register memory with the same transport instead of reaching into
 * the spml's globals.
 */
typedef struct {
  uint32_t kind;
  void *context;
  void *worker;
} shmem_plugin_transport_t;

/**
 * What the core offers every plugin. The pointer stays valid from `query` until the job ends.
 */
typedef struct {
  size_t struct_size;
  uint32_t abi_version;
  int my_pe;
  int n_pes;
  /**
   * This PE's index among the PEs of its node, and how many PEs the node has.
   */
  int local_rank;
  int local_size;
  /**
   * A NUL-terminated identifier unique to this job (used to name shared objects).
   */
  const char *job_id;
  void (*log)(int level, const char *component, const char *msg);
  /**
   * Value of the setting `SHMEM_MCA_<framework>_<component>_<name>` (environment or config
   * file), or NULL when unset. The string lives until the job ends.
   */
  const char *(*param)(const char *framework, const char *component, const char *name);
  /**
   * Publish `len` bytes under `key` for this PE; visible to others after `kv_fence`.
   */
  int (*kv_put)(const char *key, const uint8_t *value, size_t len);
  /**
   * Read what PE `pe` published under `key` into `buf` (capacity `cap`); `*len` gets the size.
   */
  int (*kv_get)(int pe, const char *key, uint8_t *buf, size_t cap, size_t *len);
  /**
   * Collective over all PEs: after it returns every `kv_put` made before it is visible.
   */
  int (*kv_fence)(void);
  /**
   * Ends the whole job with `code`, printing `msg`. Does not return.
   */
  void (*abort)(int code, const char *msg);
  /**
   * Nonzero when PE `pe` runs on this node.
   */
  int (*pe_is_local)(int pe);
  /**
   * The selected spml's transport (`SHMEM_PLUGIN_TRANSPORT_NONE` until an spml is open).
   */
  shmem_plugin_transport_t (*transport)(void);
  /**
   * A local address through which PE `pe`'s copy of symmetric `addr` can be loaded and stored,
   * or NULL.
   */
  void *(*ptr)(const void *addr, int pe);
  void (*putmem)(void *dest, const void *src, size_t len, int pe);
  void (*getmem)(void *dest, const void *src, size_t len, int pe);
  void (*quiet)(void);
  void (*fence)(void);
  /**
   * Atomically add `value` to the 64-bit symmetric word `dest` on PE `pe`. Through the spml
   * it may return before the add is done there; the next `quiet` of this table completes it
   * (the application's `shmem_quiet` does not: a collective's signals are not its operations).
   */
  void (*atomic_add_u64)(uint64_t *dest, uint64_t value, int pe);
  /**
   * Block until `*ivar <cmp> value` holds on this PE (`cmp` is a `SHMEM_PLUGIN_CMP_*` value). Waits back
   * off so that oversubscribed nodes keep making progress.
   */
  void (*wait_until_u64)(const uint64_t *ivar, int cmp, uint64_t value);
  /**
   * The host PE `pe` runs on, named by the lowest PE on that host: `a` and `b` share a host
   * exactly when `host_of(a) == host_of(b)`, and every PE gets the same answers (from the
   * launcher's host identity, agreed at init). -1 for a PE out of range. Valid once the
   * symmetric heap exists. Appended within ABI v2, so a plugin checks that `struct_size`
   * covers the slot before reading it (the Rust accessor of the same name does).
   */
  int (*host_of)(int pe);
  /**
   * Put `len` bytes from `src` to symmetric `dest` on PE `pe`, then add `value` to the
   * 64-bit symmetric word `sig` there, which changes only once the data is in place. Returns
   * when `src` may be reused; the receiver learns of the delivery by waiting on `sig`, and
   * this table's `quiet` completes whatever the sender still has in flight. Through an spml
   * with `shmem_plugin_spml_ops_t.put_signal` (spml ucx: a UCX active message) this is one message instead
   * of a put and an atomic. A word signalled through this service must be updated through
   * it alone (or by local loads, stores and waits), never through `atomic_add_u64`: the
   * target's CPU applies these signals, and a transport's atomics need not be atomic with
   * its CPU's. Nothing orders it after the caller's earlier puts to `pe` (a `quiet` does).
   * Appended within ABI v2, like `host_of`: read it through the accessor of the same name.
   */
  void (*put_signal_u64)(void *dest,
                         const void *src,
                         size_t len,
                         uint64_t *sig,
                         uint64_t value,
                         int pe);
  /**
   * Copy between the host buffer `buf` and bytes `off..off + len` of this PE's segment
   * `seg` (into the segment when `into_segment` is nonzero, else out of it), where `seg` is
   * a device segment that the spml does not register: the target side of
   * `shmem_plugin_spml_ops_t.put_via_target` and `get_via_target`. The device memheap's `copy` moves the
   * bytes. Nonzero, with nothing copied, for any other segment or a range that leaves it: a
   * message naming one is refused. Callable from any thread, including inside the spml's
   * progress. Appended within ABI v2: read it through the accessor of the same name.
   */
  int (*segment_copy)(uint32_t seg, uint64_t off, void *buf, size_t len, int into_segment);
  /**
   * How many CPUs the PEs of this node may run on between them: the union of their CPU
   * affinities, gathered at init. The node has more PEs than CPUs when `local_size` exceeds
   * it (a PE bound to one core of its own sees one CPU, which alone says nothing). Valid
   * once the symmetric heap exists. Appended within ABI v2: read it through the accessor of
   * the same name.
   */
  int (*node_cpus)(void);
  /**
   * The user's selection for `framework` ("spml", "sshmem", "memheap", "scoll"): the value
   * of `SHMEM_MCA_<framework>` (environment or configuration file) that the core selects
   * that framework's components by, such as "ucx", "^mmap" or "mmap,ucx"; "" when the user
   * chose nothing; NULL for an unknown framework. The string lives for the process. So a
   * component can prepare for a later framework's choice at its own `open` (spml ucx opens
   * UCX's shared-memory transports, which only sshmem "ucx" uses, when the user asks for
   * that component). Appended within ABI v2: read it through the accessor of the same name.
   */
  const char *(*selection)(const char *framework);
  /**
   * Nonzero when the core means to map the memory of every PE on this host (the
   * `SHMEM_LOCAL_MAP` setting, on by default) and serves no device memory that the spml could
   * be asked to reach for them (no GPU memheap is open): the PEs of a host then reach each
   * other through loads, stores and the sshmem's mappings, and the spml carries nothing
   * between them. Zero otherwise. Known before the spml opens, so an spml can leave out a
   * transport between the PEs of one host (spml ucx: UCX's TCP transport in a job on one
   * host, whose listener any local user could connect to). A mapping can still fail; the
   * spml then says so in `shmem_plugin_spml_ops_t.no_host_transport` and the core ends the start-up with
   * the reason. Appended within ABI v2: read it through the accessor of the same name.
   */
  int (*maps_host_peers)(void);
  /**
   * The name of PE `pe`'s host, for messages (a peer that became unreachable is named with
   * its host): written NUL-terminated into `buf` of `len` bytes, cut to fit. Returns the
   * name's full length, or -1 when the core knows no name for that PE (a PE on another
   * host that the launcher names no host for, or one out of range). The launcher's name for
   * the node where it has a map of the job, else this machine's hostname for the PEs of
   * this host. Callable from any thread, also after a finalize. Appended within ABI v2:
   * read it through the accessor of the same name.
   */
  int (*host_name)(int pe, char *buf, size_t len);
} shmem_plugin_core_t;

/**
 * The descriptor the plugin's one exported function, `shmem_plugin_descriptor`, returns. It
 * must be static: the core reads it for as long as the process runs. Every ABI version starts
 * it with `abi_version`, so the core reads that alone first and stops when it differs.
 */
typedef struct {
  /**
   * `SHMEM_PLUGIN_ABI_VERSION` as the plugin was built.
   */
  uint32_t abi_version;
  /**
   * A `SHMEM_PLUGIN_FRAMEWORK_*` value.
   */
  uint32_t framework;
  /**
   * `sizeof` the descriptor as the plugin was built.
   */
  size_t struct_size;
  /**
   * The component's name (`[a-z0-9_]`, unique within its framework): what
   * `SHMEM_MCA_<framework>` lists and `SHMEM_MCA_<framework>_<name>_<param>` names.
   */
  const char *name;
  const char *version;
  /**
   * One line for `shmem_info`.
   */
  const char *description;
  /**
   * The component's parameters (`n_params` of them; NULL when there are none).
   */
  const shmem_plugin_param_t *params;
  size_t n_params;
  /**
   * What the component can do, as the framework's `*_CAP_*` bits; selection skips a
   * component that lacks a capability the job needs, saying which.
   */
  uint64_t caps;
  /**
   * Required. Probe for real whether the component can run here (open the device, create a
   * test segment...) and answer in `result`. Called on every PE at `shmem_init` and by
   * `shmem_info`, possibly more than once; must not keep resources.
   */
  void (*query)(const shmem_plugin_core_t *core, shmem_plugin_query_t *result);
  /**
   * Required. Called once, on the selected component only: return the framework's ops
   * table (`shmem_plugin_spml_ops_t`, `shmem_plugin_sshmem_ops_t`, `shmem_plugin_memheap_ops_t` or `shmem_plugin_scoll_ops_t`), valid until the process
   * ends, or NULL to refuse (after logging why).
   */
  const void *(*open)(const shmem_plugin_core_t *core);
} shmem_plugin_descriptor_t;

/**
 * A symmetric segment as an sshmem component created it. The core zeroes it before `create`
 * and passes the same structure back to `unlink` and `destroy`.
 */
typedef struct {
  /**
   * Where the segment lives in this process. Each PE's may differ; the core learns the
   * smallest base alignment over all PEs and refuses allocations that ask for more.
   */
  void *base;
  /**
   * The usable length, at least what `create` was asked for.
   */
  size_t size;
  /**
   * Opaque bytes from which a peer on this host can map the segment with `attach` (a file
   * name, a handle...). The core sends them to the local peers through the bootstrap.
   */
  uint8_t blob[256];
  /**
   * How many bytes of `blob` are used; 0 when local peers cannot map the segment (then
   * they reach it through the spml, as remote peers do).
   */
  size_t blob_len;
  /**
   * A registration of the memory with the selected spml's transport made while allocating
   * it (a `ucp_mem_h` for `SHMEM_PLUGIN_TRANSPORT_UCX`), or NULL. When set, the core passes it to the
   * spml's `mem_register` so the memory is not registered twice; the sshmem component keeps
   * ownership and releases it in `destroy`, after the core has called `mem_deregister`.
   */
  void *transport_memh;
  /**
   * The component's own bookkeeping for this segment (a name, a file descriptor...). The
   * core never reads it; the component frees it in `destroy`.
   */
  void *handle;
} shmem_plugin_segment_t;

/**
 * sshmem: symmetric segment backends.
 */
typedef struct {
  size_t struct_size;
  /**
   * Create a segment of at least `size` bytes and describe it in `*out`; SHMEM_PLUGIN_RC_OK or SHMEM_PLUGIN_RC_ERROR
   * (after logging why). `hint` is an address the core would like the segment at, or NULL
   * (the core passes NULL today); a component may ignore it, and must never map over
   * existing memory to honour it.
   */
  int (*create)(size_t size, void *hint, shmem_plugin_segment_t *out);
  /**
   * Map a same-host peer's segment from its `blob`; `*addr` gets the local address. Returns
   * SHMEM_PLUGIN_RC_UNSUPPORTED when the segment can only be reached through the transport.
   */
  int (*attach)(const uint8_t *blob, size_t blob_len, size_t size, void **addr);
  /**
   * Undo an `attach` (at finalize).
   */
  void (*detach)(void *addr, size_t size);
  /**
   * Called on the creating PE once every local peer has attached, and before `destroy`:
   * remove whatever name let peers find the segment, so nothing is left behind if the job
   * dies later. The memory stays mapped and in use. Must tolerate a second call.
   */
  void (*unlink)(shmem_plugin_segment_t *seg);
  /**
   * Release a segment the core no longer uses (a memory space destroyed, a start that
   * failed): unmap it and free `handle` and `transport_memh`. Peers have detached by then.
   * The world heap's segment is never destroyed; it lives until the process exits.
   */
  void (*destroy)(shmem_plugin_segment_t *seg);
} shmem_plugin_sshmem_ops_t;

/**
 * One operation of `shmem_plugin_memheap_ops_t.stream_batch`: a `SHMEM_PLUGIN_STREAM_OP_WRITE` of `value` at `addr`,
 * or a `SHMEM_PLUGIN_STREAM_OP_WAIT` until the word at `addr` satisfies `cmp` (a `SHMEM_PLUGIN_STREAM_WAIT_*`) against
 * `value`.
 */
typedef struct {
  uint32_t kind;
  int cmp;
  uint64_t *addr;
  uint64_t value;
} shmem_plugin_stream_word_op_t;

/**
 * memheap: an allocator over one segment. All metadata lives in host memory, never in the
 * segment. Allocation must be deterministic: the same sequence of calls on every PE returns the
 * same offsets, which is what makes the heap symmetric.
 */
typedef struct {
  size_t struct_size;
  void *(*create)(void *base, size_t size);
  /**
   * NULL when the heap cannot satisfy the request. `align` is a power of two.
   */
  void *(*alloc)(void *heap, size_t size, size_t align);
  /**
   * Returns SHMEM_PLUGIN_RC_ERROR when `ptr` is not a live allocation of this heap.
   */
  int (*free)(void *heap, void *ptr);
  /**
   * Resize in place when possible, else allocate, copy and free. NULL (original intact) when
   * the heap cannot satisfy it.
   */
  void *(*realloc)(void *heap, void *ptr, size_t size);
  /**
   * Usable size of a live allocation, 0 if `ptr` is not one.
   */
  size_t (*usable_size)(void *heap, void *ptr);
  void (*destroy)(void *heap);
  /**
   * The memory this heap serves, a `SHMEM_PLUGIN_MEMHEAP_DEVICE_*` value (the `shmem_device_type_t`
   * of the memory-spaces proposals). The core picks one memheap per device type, so a
   * vendor memheap for a device does not replace the CPU one. A table too short to hold it
   * serves CPU memory.
   */
  uint32_t device_type;
  /**
   * For a memheap of device memory: the segments of its memory, as an sshmem table. Its
   * `create` allocates device memory (and a blob from which a same-host peer can map it,
   * such as a CUDA IPC handle), `attach` maps a peer's, and so on, with the contracts of
   * `shmem_plugin_sshmem_ops_t`. The core makes a device space's segment through it instead of the
   * selected sshmem component. NULL for host memory. A device memheap without it, `copy`
   * and `owns` serves no space: the core says so and the space is unavailable.
   */
  const shmem_plugin_sshmem_ops_t *segments;
  /**
   * Copy `len` bytes from `src` to `dst`, each of which is host memory or this memheap's
   * memory (its own segments, segments attached from peers, or a buffer the program
   * allocated on the device). Returns SHMEM_PLUGIN_RC_OK once the bytes are in place at `dst`, SHMEM_PLUGIN_RC_ERROR
   * after logging why. The core never loads from or stores to device memory itself: every
   * byte it moves there goes through this slot (or through an spml whose `memory_types`
   * include the device).
   */
  int (*copy)(void *dst, const void *src, size_t len);
  /**
   * 1 when `ptr` is this memheap's device memory (see `copy`), else 0. The core asks when a
   * local buffer of an RMA operation lies in no symmetric segment.
   */
  int (*owns)(const void *ptr);
  /**
   * For a memheap of device memory: `len` bytes of host memory that `copy` moves to and
   * from the device at full speed (page-locked, such as `cuMemHostAlloc`'s), or NULL when
   * it cannot have them. The core stages device bytes that the spml cannot move through
   * such buffers (ordinary host memory where the slot is NULL or answers NULL), and hands
   * each back to `host_free` before the component's segments are destroyed at finalize.
   * Both slots or neither.
   */
  void *(*host_alloc)(size_t len);
  void (*host_free)(void *ptr);
  /**
   * Optional, appended within ABI v2 (absent from shorter tables; read through
   * `shmem_plugin_memheap_ops_t.block_of_slot`): the live block of `heap` that holds address `addr`, its
   * start in `*start` and its usable size in `*len`: 1, or 0 (nothing written) when `addr`
   * lies in no live block (free space, padding, a freed block). Under SHMEM_DEBUG the core
   * asks for the remote range of every RMA and atomic into a heap, and ends the job when
   * the range leaves the block it starts in.
   */
  int (*block_of)(void *heap, const void *addr, size_t *start, size_t *len);
  /**
   * For a memheap of device memory: page-lock `len` bytes of host memory at `ptr` (page
   * aligned, the core's own, mapped until `host_unregister`), so that `copy` moves them to
   * and from the device at full speed, as it moves `host_alloc`'s (`cuMemHostRegister`).
   * SHMEM_PLUGIN_RC_OK, or SHMEM_PLUGIN_RC_ERROR after logging why (the core then copies through the memory as it
   * is). The core page-locks the host shadows of GPU spaces this way, a range at a time as
   * collectives reach it, and hands each range back to `host_unregister` before it unmaps
   * the shadow. Both slots or neither.
   */
  int (*host_register)(void *ptr, size_t len);
  int (*host_unregister)(void *ptr);
  /**
   * For a memheap of device memory, the operations the core queues on a program's stream
   * (`stream` is the program's handle, a `CUstream`/`cudaStream_t` for CUDA; NULL is the
   * device's default stream) for the `shmemx_*_on_stream` routines. Each returns SHMEM_PLUGIN_RC_OK once
   * the operation is queued (it runs after everything queued on the stream before it), or
   * SHMEM_PLUGIN_RC_UNSUPPORTED when the device cannot do it on a stream (the core then waits for the
   * stream with `stream_sync` and does the operation itself), or SHMEM_PLUGIN_RC_ERROR after logging why.
   * All four slots or none.
   *
   * `stream_copy`: copy `len` bytes from `src` to `dst`, each host memory or this memheap's
   * (its segments, peers' segments attached here, buffers the program allocated).
   */
  int (*stream_copy)(void *stream, void *dst, const void *src, size_t len);
  /**
   * `stream_write_u64`: store `value` in the 8-byte word at `addr`, device memory of this
   * memheap (a peer's attached segment too), after the bytes of every earlier operation on
   * the stream are visible to the word's readers (a signal after its data).
   */
  int (*stream_write_u64)(void *stream, uint64_t *addr, uint64_t value);
  /**
   * `stream_wait_u64`: hold the stream's later operations until the 8-byte word at `addr`
   * (device memory of this memheap) satisfies `cmp`: `SHMEM_PLUGIN_STREAM_WAIT_EQ` (equal to `value`)
   * or `SHMEM_PLUGIN_STREAM_WAIT_GE` (`(int64_t)(word - value) >= 0`, the devices' wrapping comparison,
   * which is `word >= value` while the two are within 2^63 of each other).
   */
  int (*stream_wait_u64)(void *stream, const uint64_t *addr, int cmp, uint64_t value);
  /**
   * `stream_sync`: return when everything queued on the stream so far has finished.
   */
  int (*stream_sync)(void *stream);
  /**
   * For a memheap of device memory: the 16-byte identity of this PE's device in `uuid`
   * (CUDA's device UUID), and in `*shared_server` 1 when the PE's work on it goes through a
   * server that runs several processes' work on the device at once (CUDA MPS), else 0.
   * SHMEM_PLUGIN_RC_OK, or SHMEM_PLUGIN_RC_ERROR. The core compares the identities of a host's PEs at init and warns
   * when some share a device without such a server: the device then switches between their
   * contexts, which costs each operation that involves it hundreds of microseconds.
   */
  int (*device_identity)(uint8_t *uuid, int *shared_server);
  /**
   * For a memheap of device memory: queue `n` word operations on `stream` at once, in
   * order, each as `stream_write_u64` or `stream_wait_u64` would (one submission to the
   * device instead of `n`). SHMEM_PLUGIN_RC_OK, SHMEM_PLUGIN_RC_UNSUPPORTED (the core then queues them one by one),
   * or SHMEM_PLUGIN_RC_ERROR. The core's stream barrier uses it.
   */
  int (*stream_batch)(void *stream, const shmem_plugin_stream_word_op_t *ops, size_t n);
  /**
   * For a memheap of device memory: queue on `stream` (NULL: the device's default stream)
   * `dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[nsrc - 1][i]` for `i < count`, elements
   * of type `dtype` (a `SHMEM_PLUGIN_DT_*`), `op` an `SHMEM_PLUGIN_OP_*`; every array this memheap's memory (peers'
   * attached segments included). SHMEM_PLUGIN_RC_OK once queued; with `count` 0 it queues nothing and
   * answers whether it would (preparing what it needs, such as compiling a kernel);
   * SHMEM_PLUGIN_RC_UNSUPPORTED for a type, operation or number of sources it does not take, or
   * SHMEM_PLUGIN_RC_ERROR. The core reduces GPU buffers of mapped teams with it instead of host shadows,
   * then waits with `stream_sync`.
   */
  int (*reduce)(void *stream,
                void *dst,
                const void *const *srcs,
                size_t nsrc,
                size_t count,
                uint32_t dtype,
                uint32_t op);
} shmem_plugin_memheap_ops_t;

/**
 * Opaque spml context (one per OpenSHMEM context).
 */
typedef void *shmem_plugin_spml_ctx_t;

/**
 * What an spml holds for peers (`shmem_plugin_spml_ops_t.peer_memory`). Private memory is the process's
 * anonymous resident bytes (`rshmem_plugin_api::footprint`).
 */
typedef struct {
  /**
   * Set by the core to the size of the structure it passes.
   */
  size_t struct_size;
  /**
   * Bytes of the spml's tables sized by the number of PEs (every PE has a slot, reached or
   * not), and how many of them are resident now: slots of peers never reached cost only
   * where they share a page with a reached one.
   */
  uint64_t table_bytes;
  uint64_t table_resident;
  /**
   * PEs on this host and on other hosts that this PE has made at least one endpoint to.
   */
  uint64_t peers_local;
  uint64_t peers_remote;
  /**
   * Endpoints made to them (a PE reached from several contexts has one on each).
   */
  uint64_t endpoints_local;
  uint64_t endpoints_remote;
  /**
   * Private memory added while making those endpoints and unpacking their keys.
   */
  uint64_t grown_local;
  uint64_t grown_remote;
} shmem_plugin_spml_peer_memory_t;

/**
 * spml: RMA, ordering and memory keys. Remote memory is named by (pe, segment id, address in
 * the target's address space).
 *
 * The key contract: for each symmetric segment the core calls `mem_register` on every PE,
 * which packs a remote key into bytes; the core carries those bytes, unread, to every PE
 * (through the bootstrap for the world heap, through a collective for later segments) and
 * hands each PE's key to `add_segment(pe, seg, base, len, key)`, this PE's own included. A
 * segment id is the same on every PE and below `SHMEM_PLUGIN_MAX_SEGMENTS`; the id of a removed segment
 * (a destroyed space) may be given to a later one, and `add_segment` then replaces the old key
 * (no operation names the old segment any more). From then on
 * `put`, `get` and `atomic` name memory as (pe, seg, address in that PE's space), and the
 * spml finds the unpacked key from (pe, seg). Every slot but `connect`, `finalize` and the
 * registration slots may be called from any thread the job's thread level allows.
 */
typedef struct {
  size_t struct_size;
  /**
   * The transport other components may share (`SHMEM_PLUGIN_TRANSPORT_NONE` if none).
   */
  shmem_plugin_transport_t transport;
  /**
   * The context used for the default OpenSHMEM context (and for every context when
   * `ctx_create` is absent or fails).
   */
  shmem_plugin_spml_ctx_t default_ctx;
  /**
   * Collective: connect to every PE (addresses were published with `kv_put` during `open`;
   * the core has called `kv_fence`).
   */
  int (*connect)(void);
  /**
   * Register `len` bytes at `base` for remote access. `memh` is the segment's
   * `transport_memh` (or NULL): a registration to reuse, owned by the sshmem. The packed
   * remote key goes to `rkey` (capacity `cap`, 2 KiB or more; its length to
   * `*rkey_len`: keep it under 1.5 KiB, since a memory space's key travels in a 2 KiB
   * record with the segment's `blob`); `*reg` receives a handle for `mem_deregister`.
   */
  int (*mem_register)(void *base,
                      size_t len,
                      void *memh,
                      uint8_t *rkey,
                      size_t cap,
                      size_t *rkey_len,
                      void **reg);
  /**
   * Undo a `mem_register` (before the segment is destroyed).
   */
  void (*mem_deregister)(void *reg);
  /**
   * Learn PE `pe`'s segment `seg`: `base` and `len` in that PE's address space and the key
   * its `mem_register` packed (`rkey_len` bytes, valid for the call only).
   */
  int (*add_segment)(int pe,
                     uint32_t seg,
                     uint64_t base,
                     size_t len,
                     const uint8_t *rkey,
                     size_t rkey_len);
  /**
   * A local address through which this process reaches `raddr` of PE `pe`'s segment `seg`
   * by load and store (a transport that maps peers' memory), or NULL; the core then uses
   * the sshmem's `attach` or the RMA slots.
   */
  void *(*remote_ptr)(int pe, uint32_t seg, uint64_t raddr);
  /**
   * Blocking put: returns when `src` may be reused.
   */
  int (*put)(shmem_plugin_spml_ctx_t ctx,
             int pe,
             uint32_t seg,
             uint64_t raddr,
             const void *src,
             size_t len);
  /**
   * Blocking get: returns when `dst` holds the data.
   */
  int (*get)(shmem_plugin_spml_ctx_t ctx,
             int pe,
             uint32_t seg,
             uint64_t raddr,
             void *dst,
             size_t len);
  /**
   * Non-blocking forms: complete at the next `quiet` on `ctx`.
   */
  int (*put_nbi)(shmem_plugin_spml_ctx_t ctx,
                 int pe,
                 uint32_t seg,
                 uint64_t raddr,
                 const void *src,
                 size_t len);
  int (*get_nbi)(shmem_plugin_spml_ctx_t ctx,
                 int pe,
                 uint32_t seg,
                 uint64_t raddr,
                 void *dst,
                 size_t len);
  int (*quiet)(shmem_plugin_spml_ctx_t ctx);
  int (*fence)(shmem_plugin_spml_ctx_t ctx);
  /**
   * Drive communication once (the core calls it from wait loops).
   */
  void (*progress)(void);
  /**
   * Tear down (collective: the core has synchronised all PEs before).
   */
  void (*finalize)(void);
  /**
   * Atomic `op` (`SHMEM_PLUGIN_AMO_*`) on the `size`-byte (4 or 8) word at `raddr`; the previous value
   * goes to `*fetched` when it is not NULL. With `fetched` NULL the core needs no previous
   * value, and the spml may return as soon as the operation is issued (spml ucx posts ADD,
   * AND, OR and XOR without waiting for a reply); the operation then completes at the next
   * `quiet` on `ctx`. Otherwise it returns when the operation is complete.
   */
  int (*atomic)(shmem_plugin_spml_ctx_t ctx,
                int pe,
                uint32_t seg,
                uint64_t raddr,
                uint32_t op,
                uint32_t size,
                uint64_t value,
                uint64_t cond,
                uint64_t *fetched);
  /**
   * Optional (may be NULL, and absent from shorter tables): a context of its own for an
   * OpenSHMEM context created with `options` (`SHMEM_PLUGIN_SPML_CTX_*`), whose `quiet` and `fence` need
   * not involve other contexts. SHMEM_PLUGIN_RC_OK and the context in `*out`, or nonzero to let the core
   * use the default context instead.
   */
  int (*ctx_create)(long options, shmem_plugin_spml_ctx_t *out);
  /**
   * Optional, paired with `ctx_create`: release a context it made (the core has quieted it).
   */
  void (*ctx_destroy)(shmem_plugin_spml_ctx_t ctx);
  /**
   * Optional (may be NULL, and absent from shorter tables): put `len` bytes from `src` to
   * `raddr` in PE `pe`'s segment `seg`, then add `value` to the 64-bit word `sig_raddr` of
   * its segment `sig_seg`, as one message the target applies: the data is in place before
   * the word changes there, and the target's CPU updates the word with an atomic
   * read-modify-write. Returns when `src` may be reused; the receiver learns of the
   * delivery by waiting on the word, and no `quiet` is needed for it. A word updated through
   * this slot must never be updated through `atomic` as well: a transport's atomics (a
   * NIC's) need not be atomic with respect to the target CPU's. Nothing orders it after the
   * caller's earlier puts to `pe`. SHMEM_PLUGIN_RC_DECLINED (for a size the
   * component does not carry this way, say) lets the core do it another way; the core
   * uses it only for collectives' words, never for an application's signal.
   */
  int (*put_signal)(shmem_plugin_spml_ctx_t ctx,
                    int pe,
                    uint32_t seg,
                    uint64_t raddr,
                    const void *src,
                    size_t len,
                    uint32_t sig_seg,
                    uint64_t sig_raddr,
                    uint64_t value);
  /**
   * Appended within ABI v2 (0 in shorter tables): a bit `1 << SHMEM_PLUGIN_MEMHEAP_DEVICE_*` for each
   * device type whose memory this spml moves itself: `mem_register` takes such a segment
   * and `put`, `get` and their `_nbi` forms accept such memory on either side (UCX built
   * with CUDA support, for GPU memory). Without the bit, the core registers no segment of
   * that device with the spml and stages local device buffers through host memory; a space
   * of such memory then needs every PE to map every peer's copy (same host, IPC).
   */
  uint64_t memory_types;
  /**
   * Optional, appended within ABI v2 (absent from shorter tables; read through
   * `shmem_plugin_spml_ops_t.via_target`): RMA on PE `pe`'s copy of segment `seg` where this spml moves
   * neither that memory nor the memory on this side, carried out by the target's CPU.
   * `put_via_target` sends the `len` host bytes at `src` for bytes `off..off + len` of the
   * segment, and returns once the target has copied them in (remote completion: no `quiet`
   * is needed for them); `get_via_target` returns once `dst` (host memory) holds those
   * bytes. The target's spml hands each transfer to its core's `segment_copy` service, which
   * accepts only the device segments the spml does not register (a GPU space across hosts
   * without a CUDA-aware transport) and refuses any other range. Nonzero when the transfer
   * failed or was refused.
   */
  int (*put_via_target)(shmem_plugin_spml_ctx_t ctx,
                        int pe,
                        uint32_t seg,
                        uint64_t off,
                        void *src,
                        size_t len);
  int (*get_via_target)(shmem_plugin_spml_ctx_t ctx,
                        int pe,
                        uint32_t seg,
                        uint64_t off,
                        void *dst,
                        size_t len);
  /**
   * Optional, appended within ABI v2 (absent from shorter tables; read through
   * `shmem_plugin_spml_ops_t.progress_busy_slot`): `progress`, returning nonzero when that round found
   * something to do (a message arrived or left). The core's wait loops then keep spinning
   * instead of yielding the core: a PE serving a peer's gets answers one round sooner.
   * Without it, waits yield once they have spun a while, whatever `progress` did.
   */
  int (*progress_busy)(void);
  /**
   * Optional, appended within ABI v2 (absent from shorter tables; read through
   * `shmem_plugin_spml_ops_t.suspend_slot`): the library was finalized (`suspended` = 1) but stays ready
   * to be initialized again in this process, as OpenSHMEM 1.6 allows, or it was initialized
   * again (0). The core calls it with 1 at the last `shmem_finalize`, once every operation
   * is complete and every PE has arrived; then it destroys what the program left (contexts,
   * registrations) and keeps the component instead of calling `finalize`, which follows
   * when the process exits. A finalize that does not keep the library calls it with 1 too,
   * before `finalize`. While suspended, peers may end their processes at any moment: losing
   * one is expected and must not end the job. Without the
   * slot the core calls `finalize` at the last `shmem_finalize`, and the library cannot be
   * initialized again.
   */
  void (*suspend)(int suspended);
  /**
   * Optional, appended within ABI v2 (absent from shorter tables; read through
   * `shmem_plugin_spml_ops_t.peer_memory_slot`): what this spml holds for peers, for the core's report
   * (`SHMEM_PEER_MEMORY`). The core calls it with `measure` = 1 and `out` NULL once, before
   * `connect`, when the report is asked for: from then on the spml measures the private
   * memory its own peer state adds as it is made (an endpoint, a key unpacked). At the last
   * `shmem_finalize`, before `suspend`, it calls it with 0 to have `*out` filled; a shorter
   * `shmem_plugin_spml_peer_memory_t` (its `struct_size`) gets only the fields it has room for.
   */
  void (*peer_memory)(int measure, shmem_plugin_spml_peer_memory_t *out);
  /**
   * Appended within ABI v2 (absent from shorter tables; read through
   * `shmem_plugin_spml_ops_t.lacks_host_transport`): nonzero when this spml opened no transport between
   * the PEs of this host, because the core said it maps them all
   * (`shmem_plugin_core_t.maps_host_peers`). The core then never hands it an operation on a
   * peer of this host: where some PE of the host could not map another after all, start-up
   * ends with the reason, and a memory space that some PE cannot map is not created. Zero
   * (reaches them) in a zeroed or shorter table.
   */
  int no_host_transport;
} shmem_plugin_spml_ops_t;

/**
 * A team as scoll components see it: `size` PEs `start, start+stride, ...`.
 */
typedef struct {
  int id;
  int start;
  int stride;
  int size;
  /**
   * This PE's index in the team.
   */
  int my_index;
  /**
   * Symmetric scratch memory reserved for this team's collectives (zeroed at creation),
   * for the exclusive use of the component that enabled the slot.
   */
  void *scratch;
  size_t scratch_len;
  /**
   * `SHMEM_PLUGIN_TEAM_*` flags (appended in ABI v1; components that predate a flag ignore it).
   */
  uint32_t flags;
} shmem_plugin_team_t;

/**
 * scoll: collectives. `enable` is called once per team and returns the component's state for
 * that team (NULL to decline the team). Slots left NULL are provided by another component.
 * A slot may return SHMEM_PLUGIN_RC_DECLINED for a call it cannot serve; the core then calls the next
 * provider.
 */
typedef struct {
  size_t struct_size;
  /**
   * How many bytes of team scratch the component needs.
   */
  size_t scratch_needed;
  void *(*enable)(const shmem_plugin_team_t *team);
  void (*disable)(void *state);
  /**
   * Synchronise the team's PEs (no memory completion: the core quiets first where needed).
   */
  int (*barrier)(void *state);
  /**
   * Copy `nbytes` from `src` on team index `root` to `dest` on every PE of the team
   * (including the root).
   */
  int (*broadcast)(void *state, void *dest, const void *src, size_t nbytes, int root);
  /**
   * Concatenate every team PE's `nbytes` from `src` into `dest` on every PE, in team order.
   * `fixed` (fcollect): every PE gives the same `nbytes`; otherwise (collect) they differ.
   */
  int (*collect)(void *state, void *dest, const void *src, size_t nbytes, int fixed);
  /**
   * All-to-all exchange: team PE `me` sends elements `src[(j * nelems + k) * sst]`
   * (`k < nelems`, elements of `elem_size` bytes) to PE `j`, where they land at
   * `dest[(me * nelems + k) * dst]`. Strides are in elements (1: contiguous).
   */
  int (*alltoall)(void *state,
                  void *dest,
                  const void *src,
                  size_t elem_size,
                  size_t nelems,
                  ptrdiff_t dst,
                  ptrdiff_t sst);
  /**
   * Element-wise reduction (`kind` SHMEM_PLUGIN_REDUCE_ALL) or prefix scan (SHMEM_PLUGIN_REDUCE_INSCAN: over team
   * PEs `0..=me`; SHMEM_PLUGIN_REDUCE_EXSCAN: over `0..me`, `dest` left alone on PE 0, where the core
   * writes the spec's 0 after the call) of `nelems` elements of `dtype` (`SHMEM_PLUGIN_DT_*`) with `op`
   * (`SHMEM_PLUGIN_OP_*`). `dest` may equal `src`.
   */
  int (*reduce)(void *state,
                void *dest,
                const void *src,
                size_t nelems,
                uint32_t dtype,
                uint32_t op,
                uint32_t kind);
  /**
   * As `broadcast`, except that the root's `dest` is left as it is (the active-set form,
   * OpenSHMEM 1.4's `shmem_broadcast32/64`). Appended later in ABI v1; without it the core
   * saves and restores the root's `dest` around `broadcast`.
   */
  int (*broadcast_keep_root)(void *state, void *dest, const void *src, size_t nbytes, int root);
} shmem_plugin_scoll_ops_t;

/* The name of the one symbol a plugin exports, for dlsym. */
#define SHMEM_PLUGIN_DESCRIPTOR_SYMBOL "shmem_plugin_descriptor"

#ifdef __cplusplus
extern "C" {
#endif
/* Defined by the plugin. */
const shmem_plugin_descriptor_t *shmem_plugin_descriptor(void);
#ifdef __cplusplus
}
#endif

#endif  /* SHMEM_PLUGIN_H */
