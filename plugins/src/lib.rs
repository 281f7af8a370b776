//! The rshmem plugin ABI, version 2.
//!
//! A component is a shared object that exports exactly one symbol,
//! [`DESCRIPTOR_SYMBOL`] (`shmem_plugin_descriptor`), a C function that returns a pointer to a
//! static [`PluginDescriptor`]. The core `dlopen`s every candidate file, checks the descriptor's
//! `abi_version` and `struct_size`, calls `query` to learn whether the component can run here
//! (and at what priority, or why not), and calls `open` on the winner, which returns the
//! framework's operations table ([`SpmlOps`], [`SshmemOps`], [`MemheapOps`] or [`ScollOps`]).
//! The core binds that table before using it ([`OpsTable`]): a table shorter than its required
//! slots, or with a required slot NULL, refuses the component with a message naming the slot;
//! optional slots beyond a shorter table read as NULL.
//!
//! Everything here is `#[repr(C)]` and mirrored one-to-one by `plugins/include/shmem_plugin.h`,
//! so vendors can write components in C. Plugins never link `libshmem.so`: whatever they need
//! from the core arrives through the [`CoreServices`] table passed to `query` and `open`.
//!
//! Compatibility rule: within one ABI version, structs only grow at the end, by optional slots
//! (`Option` here, NULL-able in C), and each table starts with its `struct_size`, so the core can
//! tell which slots a plugin knows about. Anything else (a new required slot, a changed field)
//! bumps [`ABI_VERSION`].
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_long, c_void};

/// Helpers for scoll components (not part of the C ABI): the element-wise arithmetic of
/// reductions, so that every Rust component computes the same bits.
pub mod arith;

/// Helpers for memheap components (not part of the C ABI): the deterministic first-fit
/// allocator over offsets, and the memheap slots over it.
pub mod heap_slots;
pub mod offset_heap;

/// Helper for scoll components (not part of the C ABI): the `scoll_component!` macro.
pub mod scoll_component;

/// Bumped on any incompatible change to the structures below. Version 2: the descriptor gained
/// `struct_size` and `caps`, `ParamDecl::kind` is a plain `u32`, and `SpmlOps::atomic_add_u64`
/// is gone (`atomic` with `AMO_ADD` does it).
pub const ABI_VERSION: u32 = 2;
/// The one symbol a plugin exports: `const PluginDescriptor *shmem_plugin_descriptor(void)`.
pub const DESCRIPTOR_SYMBOL: &str = "shmem_plugin_descriptor";
/// The symbol of ABI 1, recognised only to tell its plugins apart from files that are no
/// plugins at all.
pub const DESCRIPTOR_SYMBOL_V1: &str = "shmem_plugin_descriptor_v1";

/// Return codes shared by every framework.
pub const RC_OK: c_int = 0;
pub const RC_ERROR: c_int = -1;
/// A slot declined this call (type, size, team...); the core falls back to the next provider.
pub const RC_DECLINED: c_int = 1;
/// The operation is not supported by this component.
pub const RC_UNSUPPORTED: c_int = -2;

/// The component frameworks.
#[repr(u32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Framework {
    Spml = 1,
    Scoll = 2,
    Sshmem = 3,
    Memheap = 4,
}

impl Framework {
    pub const ALL: [Framework; 4] =
        [Framework::Spml, Framework::Sshmem, Framework::Memheap, Framework::Scoll];

    pub fn from_u32(v: u32) -> Option<Framework> {
        Self::ALL.into_iter().find(|f| *f as u32 == v)
    }

    pub fn name(self) -> &'static str {
        match self {
            Framework::Spml => "spml",
            Framework::Scoll => "scoll",
            Framework::Sshmem => "sshmem",
            Framework::Memheap => "memheap",
        }
    }
}

/// Kinds of configuration parameter a component may declare ([`ParamDecl::kind`]). The core
/// checks every value given for a parameter against its kind at init.
pub const PARAM_STRING: u32 = 0;
pub const PARAM_INT: u32 = 1;
pub const PARAM_BOOL: u32 = 2;
/// A byte count with an optional K, M, G or T suffix (`64K`, `1.5G`).
pub const PARAM_SIZE: u32 = 3;

/// One configuration parameter of a component, settable as
/// `SHMEM_MCA_<framework>_<component>_<name>`.
#[repr(C)]
pub struct ParamDecl {
    pub name: *const c_char,
    /// A `PARAM_*` value.
    pub kind: u32,
    pub default_value: *const c_char,
    pub doc: *const c_char,
}
// SAFETY: descriptors point only at immutable 'static C strings.
unsafe impl Sync for ParamDecl {}

/// What `query` answers.
#[repr(C)]
pub struct QueryResult {
    /// Nonzero when the component can run here.
    pub available: c_int,
    /// Higher wins when several are available.
    pub priority: c_int,
    /// Why the component is unavailable (NUL-terminated), or a short note when available.
    pub reason: [c_char; 256],
}

impl QueryResult {
    pub fn set_reason(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let n = bytes.len().min(self.reason.len() - 1);
        for (dst, src) in self.reason.iter_mut().zip(&bytes[..n]) {
            *dst = *src as c_char;
        }
        self.reason[n] = 0;
    }

    pub fn reason_str(&self) -> String {
        let bytes: Vec<u8> = self.reason.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Default for QueryResult {
    fn default() -> Self {
        QueryResult { available: 0, priority: 0, reason: [0; 256] }
    }
}

pub type QueryFn = unsafe extern "C" fn(core: *const CoreServices, result: *mut QueryResult);
/// Returns the framework's ops table (`*const SpmlOps`, ...) or NULL on failure.
pub type OpenFn = unsafe extern "C" fn(core: *const CoreServices) -> *const c_void;

/// The descriptor a plugin's [`DESCRIPTOR_SYMBOL`] returns. Every ABI version starts it with
/// `abi_version`, so the core can read that first and stop there when it differs.
#[repr(C)]
pub struct PluginDescriptor {
    pub abi_version: u32,
    /// A [`Framework`] value.
    pub framework: u32,
    /// `sizeof` the descriptor as the plugin was built.
    pub struct_size: usize,
    pub name: *const c_char,
    pub version: *const c_char,
    pub description: *const c_char,
    pub params: *const ParamDecl,
    pub n_params: usize,
    /// What the component can do, as the framework's `*_CAP_*` bits; selection skips a
    /// component that lacks a capability the job needs, saying which.
    pub caps: u64,
    pub query: Option<QueryFn>,
    pub open: Option<OpenFn>,
}

/// The names of the capability bits set in `caps` for a component of `framework`, and the bits
/// this ABI does not define (for reports).
pub fn cap_names(framework: Framework, caps: u64) -> Vec<String> {
    let known: &[(u64, &str)] = match framework {
        Framework::Spml => &[
            (SPML_CAP_MULTI_HOST, "SPML_CAP_MULTI_HOST"),
            (SPML_CAP_THREAD_MULTIPLE, "SPML_CAP_THREAD_MULTIPLE"),
        ],
        Framework::Sshmem => &[(SSHMEM_CAP_PEER_ATTACH, "SSHMEM_CAP_PEER_ATTACH")],
        Framework::Scoll => &[(SCOLL_CAP_EPHEMERAL, "SCOLL_CAP_EPHEMERAL")],
        Framework::Memheap => &[],
    };
    let mut out: Vec<String> =
        known.iter().filter(|(b, _)| caps & b != 0).map(|(_, n)| n.to_string()).collect();
    let rest = caps & !known.iter().fold(0, |a, (b, _)| a | b);
    if rest != 0 {
        out.push(format!("unknown bits {rest:#x}"));
    }
    out
}

/// [`PluginDescriptor::caps`] of an spml: it reaches PEs on other hosts (not only this one's).
/// A job that spans hosts selects only spmls with it.
pub const SPML_CAP_MULTI_HOST: u64 = 1 << 0;
/// [`PluginDescriptor::caps`] of an spml: its slots may be called from several threads at once
/// (`SHMEM_THREAD_MULTIPLE`). A job initialised with `SHMEM_THREAD_MULTIPLE` selects only
/// spmls with it.
pub const SPML_CAP_THREAD_MULTIPLE: u64 = 1 << 1;
/// [`PluginDescriptor::caps`] of an sshmem: a local peer can map its segments (`attach` works),
/// so same-host peers reach them by load and store. Without it they go through the spml.
pub const SSHMEM_CAP_PEER_ATTACH: u64 = 1 << 0;
/// [`PluginDescriptor::caps`] of an scoll: it serves [`TEAM_EPHEMERAL`] teams (the active-set
/// routines on a user's pSync), leaving the scratch zeroed as that contract requires. The core
/// enables only such components on those teams.
pub const SCOLL_CAP_EPHEMERAL: u64 = 1 << 0;
// SAFETY: descriptors are immutable statics that point only at other 'static data.
unsafe impl Sync for PluginDescriptor {}

/// Kinds of transport an spml can publish for other components.
pub const TRANSPORT_NONE: u32 = 0;
/// `context` is a `ucp_context_h`, `worker` the default `ucp_worker_h`.
pub const TRANSPORT_UCX: u32 = 1;

/// A typed handle the selected spml publishes so that other components (sshmem "ucx", device
/// memheaps) can allocate or register memory with the same transport instead of reaching into
/// the spml's globals.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct TransportHandle {
    pub kind: u32,
    pub context: *mut c_void,
    pub worker: *mut c_void,
}

impl TransportHandle {
    pub const NONE: TransportHandle =
        TransportHandle { kind: TRANSPORT_NONE, context: std::ptr::null_mut(), worker: std::ptr::null_mut() };
}

/// Log levels for [`CoreServices::log`].
pub const LOG_ERROR: c_int = 0;
pub const LOG_WARN: c_int = 1;
pub const LOG_INFO: c_int = 2;
pub const LOG_DEBUG: c_int = 3;
pub const LOG_TRACE: c_int = 4;

/// Comparison operators (the values of `SHMEM_CMP_*`).
pub const CMP_EQ: c_int = 1;
pub const CMP_NE: c_int = 2;
pub const CMP_GT: c_int = 3;
pub const CMP_LE: c_int = 4;
pub const CMP_LT: c_int = 5;
pub const CMP_GE: c_int = 6;

/// What the core offers every plugin. The pointer stays valid from `query` until the job ends.
#[repr(C)]
pub struct CoreServices {
    pub struct_size: usize,
    pub abi_version: u32,
    pub my_pe: c_int,
    pub n_pes: c_int,
    /// This PE's index among the PEs of its node, and how many PEs the node has.
    pub local_rank: c_int,
    pub local_size: c_int,
    /// A NUL-terminated identifier unique to this job (used to name shared objects).
    pub job_id: *const c_char,
    pub log: unsafe extern "C" fn(level: c_int, component: *const c_char, msg: *const c_char),
    /// Value of the setting `SHMEM_MCA_<framework>_<component>_<name>` (environment or config
    /// file), or NULL when unset. The string lives until the job ends.
    pub param: unsafe extern "C" fn(
        framework: *const c_char,
        component: *const c_char,
        name: *const c_char,
    ) -> *const c_char,
    /// Publish `len` bytes under `key` for this PE; visible to others after `kv_fence`.
    pub kv_put: unsafe extern "C" fn(key: *const c_char, value: *const u8, len: usize) -> c_int,
    /// Read what PE `pe` published under `key` into `buf` (capacity `cap`); `*len` gets the size.
    pub kv_get: unsafe extern "C" fn(
        pe: c_int,
        key: *const c_char,
        buf: *mut u8,
        cap: usize,
        len: *mut usize,
    ) -> c_int,
    /// Collective over all PEs: after it returns every `kv_put` made before it is visible.
    pub kv_fence: unsafe extern "C" fn() -> c_int,
    /// Ends the whole job with `code`, printing `msg`. Does not return.
    pub abort: unsafe extern "C" fn(code: c_int, msg: *const c_char),
    /// Nonzero when PE `pe` runs on this node.
    pub pe_is_local: unsafe extern "C" fn(pe: c_int) -> c_int,
    /// The selected spml's transport ([`TRANSPORT_NONE`] until an spml is open).
    pub transport: unsafe extern "C" fn() -> TransportHandle,
    // --- one-sided services, valid once the symmetric heap exists (scoll uses them) ---
    /// A local address through which PE `pe`'s copy of symmetric `addr` can be loaded and stored,
    /// or NULL.
    pub ptr: unsafe extern "C" fn(addr: *const c_void, pe: c_int) -> *mut c_void,
    pub putmem: unsafe extern "C" fn(dest: *mut c_void, src: *const c_void, len: usize, pe: c_int),
    pub getmem: unsafe extern "C" fn(dest: *mut c_void, src: *const c_void, len: usize, pe: c_int),
    pub quiet: unsafe extern "C" fn(),
    pub fence: unsafe extern "C" fn(),
    /// Atomically add `value` to the 64-bit symmetric word `dest` on PE `pe`.
    pub atomic_add_u64: unsafe extern "C" fn(dest: *mut u64, value: u64, pe: c_int),
    /// Block until `*ivar <cmp> value` holds on this PE (`cmp` is a `CMP_*` value). Waits back
    /// off so that oversubscribed nodes keep making progress.
    pub wait_until_u64: unsafe extern "C" fn(ivar: *const u64, cmp: c_int, value: u64),
}

/// A symmetric segment as an sshmem component created it.
#[repr(C)]
pub struct SegmentDesc {
    pub base: *mut c_void,
    pub size: usize,
    /// What a local peer passes to `attach` to map this segment (empty if it cannot).
    pub blob: [u8; 256],
    pub blob_len: usize,
    /// Transport registration made while allocating (e.g. a `ucp_mem_h`), reused by the spml
    /// instead of registering again; NULL when the memory is plain.
    pub transport_memh: *mut c_void,
    /// The component's own handle for `destroy`.
    pub handle: *mut c_void,
}

impl Default for SegmentDesc {
    fn default() -> Self {
        SegmentDesc {
            base: std::ptr::null_mut(),
            size: 0,
            blob: [0; 256],
            blob_len: 0,
            transport_memh: std::ptr::null_mut(),
            handle: std::ptr::null_mut(),
        }
    }
}

/// sshmem: symmetric segment backends.
#[repr(C)]
pub struct SshmemOps {
    pub struct_size: usize,
    /// Create a segment of at least `size` bytes; `hint` is a preferred address or NULL.
    pub create: unsafe extern "C" fn(size: usize, hint: *mut c_void, out: *mut SegmentDesc) -> c_int,
    /// Map a local peer's segment from its `blob`; `*addr` gets the local address. Returns
    /// RC_UNSUPPORTED when the segment can only be reached through the transport.
    pub attach:
        unsafe extern "C" fn(blob: *const u8, blob_len: usize, size: usize, addr: *mut *mut c_void) -> c_int,
    pub detach: unsafe extern "C" fn(addr: *mut c_void, size: usize),
    /// Called once every local peer has attached: remove names so nothing leaks if the job dies.
    pub unlink: unsafe extern "C" fn(seg: *mut SegmentDesc),
    pub destroy: unsafe extern "C" fn(seg: *mut SegmentDesc),
}

/// memheap: an allocator over one segment. All metadata lives in host memory, never in the
/// segment. Allocation must be deterministic: the same sequence of calls on every PE returns the
/// same offsets, which is what makes the heap symmetric.
#[repr(C)]
pub struct MemheapOps {
    pub struct_size: usize,
    pub create: unsafe extern "C" fn(base: *mut c_void, size: usize) -> *mut c_void,
    /// NULL when the heap cannot satisfy the request. `align` is a power of two.
    pub alloc: unsafe extern "C" fn(heap: *mut c_void, size: usize, align: usize) -> *mut c_void,
    /// Returns RC_ERROR when `ptr` is not a live allocation of this heap.
    pub free: unsafe extern "C" fn(heap: *mut c_void, ptr: *mut c_void) -> c_int,
    /// Resize in place when possible, else allocate, copy and free. NULL (original intact) when
    /// the heap cannot satisfy it.
    pub realloc: unsafe extern "C" fn(heap: *mut c_void, ptr: *mut c_void, size: usize) -> *mut c_void,
    /// Usable size of a live allocation, 0 if `ptr` is not one.
    pub usable_size: unsafe extern "C" fn(heap: *mut c_void, ptr: *mut c_void) -> usize,
    pub destroy: unsafe extern "C" fn(heap: *mut c_void),
    // --- appended in v1 (memory spaces); read only when `struct_size` covers it ---
    /// The memory this heap serves, a `MEMHEAP_DEVICE_*` value (the `shmem_device_type_t`
    /// of the memory-spaces proposals). The core picks one memheap per device type, so a
    /// vendor memheap for a device does not replace the CPU one. A table too short to hold it
    /// serves CPU memory.
    pub device_type: u32,
}

/// Device types of [`MemheapOps::device_type`] (the values of `SHMEM_DEVICE_*`).
pub const MEMHEAP_DEVICE_CPU: u32 = 0;
pub const MEMHEAP_DEVICE_GPU: u32 = 1;

impl MemheapOps {
    /// The device type, [`MEMHEAP_DEVICE_CPU`] for a table from before the field existed.
    pub fn device(&self) -> u32 {
        if self.struct_size >= std::mem::offset_of!(MemheapOps, device_type) + std::mem::size_of::<u32>() {
            self.device_type
        } else {
            MEMHEAP_DEVICE_CPU
        }
    }
}

/// Atomic operations of [`SpmlOps::atomic`]. Values travel as the low `size` bytes of a u64.
pub const AMO_FETCH: u32 = 0;
pub const AMO_SET: u32 = 1;
pub const AMO_SWAP: u32 = 2;
/// Compare-and-swap: `cond` is compared, `value` stored when equal.
pub const AMO_CSWAP: u32 = 3;
pub const AMO_ADD: u32 = 4;
pub const AMO_AND: u32 = 5;
pub const AMO_OR: u32 = 6;
pub const AMO_XOR: u32 = 7;

/// Opaque spml context (one per OpenSHMEM context).
pub type SpmlCtx = *mut c_void;

/// spml: RMA, ordering and memory keys. Remote memory is named by (pe, segment id, address in
/// the target's address space).
#[repr(C)]
pub struct SpmlOps {
    pub struct_size: usize,
    pub transport: TransportHandle,
    /// The context used for the default OpenSHMEM context.
    pub default_ctx: SpmlCtx,
    /// Collective: connect to every PE (addresses were published with kv_put during `open`).
    pub connect: unsafe extern "C" fn() -> c_int,
    /// Register local memory for remote access. `memh` is a registration the allocating sshmem
    /// made (or NULL). The packed remote key goes to `rkey` (capacity `cap`, length `*rkey_len`);
    /// `*reg` receives a handle for `mem_deregister`.
    pub mem_register: unsafe extern "C" fn(
        base: *mut c_void,
        len: usize,
        memh: *mut c_void,
        rkey: *mut u8,
        cap: usize,
        rkey_len: *mut usize,
        reg: *mut *mut c_void,
    ) -> c_int,
    pub mem_deregister: unsafe extern "C" fn(reg: *mut c_void),
    /// Learn PE `pe`'s segment `seg` (`base`, `len` in its address space, packed key).
    pub add_segment: unsafe extern "C" fn(
        pe: c_int,
        seg: u32,
        base: u64,
        len: usize,
        rkey: *const u8,
        rkey_len: usize,
    ) -> c_int,
    /// A local address mapping `raddr` of PE `pe`'s segment `seg`, or NULL.
    pub remote_ptr: unsafe extern "C" fn(pe: c_int, seg: u32, raddr: u64) -> *mut c_void,
    /// Blocking put: returns when `src` may be reused.
    pub put: unsafe extern "C" fn(
        ctx: SpmlCtx,
        pe: c_int,
        seg: u32,
        raddr: u64,
        src: *const c_void,
        len: usize,
    ) -> c_int,
    /// Blocking get: returns when `dst` holds the data.
    pub get: unsafe extern "C" fn(
        ctx: SpmlCtx,
        pe: c_int,
        seg: u32,
        raddr: u64,
        dst: *mut c_void,
        len: usize,
    ) -> c_int,
    /// Non-blocking forms: complete at the next `quiet` on `ctx`.
    pub put_nbi: unsafe extern "C" fn(
        ctx: SpmlCtx,
        pe: c_int,
        seg: u32,
        raddr: u64,
        src: *const c_void,
        len: usize,
    ) -> c_int,
    pub get_nbi: unsafe extern "C" fn(
        ctx: SpmlCtx,
        pe: c_int,
        seg: u32,
        raddr: u64,
        dst: *mut c_void,
        len: usize,
    ) -> c_int,
    pub quiet: unsafe extern "C" fn(ctx: SpmlCtx) -> c_int,
    pub fence: unsafe extern "C" fn(ctx: SpmlCtx) -> c_int,
    /// Drive communication once (the core calls it from wait loops).
    pub progress: unsafe extern "C" fn(),
    /// Tear down (collective: the core has synchronised all PEs before).
    pub finalize: unsafe extern "C" fn(),
    /// Atomic `op` (`AMO_*`) on the `size`-byte (4 or 8) word at `raddr`; the previous value
    /// goes to `*fetched` when it is not NULL. Returns when the operation is complete.
    pub atomic: unsafe extern "C" fn(
        ctx: SpmlCtx,
        pe: c_int,
        seg: u32,
        raddr: u64,
        op: u32,
        size: u32,
        value: u64,
        cond: u64,
        fetched: *mut u64,
    ) -> c_int,
    /// Optional (absent from tables shorter than this field): a context of its own for an
    /// OpenSHMEM context created with `options` (`SPML_CTX_*`), whose `quiet` and `fence` need
    /// not involve other contexts. RC_OK and the context in `*out`, or nonzero to let the core
    /// use the default context instead.
    pub ctx_create: Option<unsafe extern "C" fn(options: c_long, out: *mut SpmlCtx) -> c_int>,
    /// Release a context from `ctx_create` (the core has quieted it).
    pub ctx_destroy: Option<unsafe extern "C" fn(ctx: SpmlCtx)>,
}

/// Options of `SpmlOps::ctx_create` (the values of the matching `SHMEM_CTX_*`).
pub const SPML_CTX_SERIALIZED: c_long = 1 << 0;
pub const SPML_CTX_PRIVATE: c_long = 1 << 1;
pub const SPML_CTX_NOSTORE: c_long = 1 << 2;

impl SpmlOps {
    /// The `ctx_create`/`ctx_destroy` pair, when the component's table has them.
    pub fn ctx_slots(
        &self,
    ) -> Option<(unsafe extern "C" fn(c_long, *mut SpmlCtx) -> c_int, unsafe extern "C" fn(SpmlCtx))> {
        let end = std::mem::offset_of!(SpmlOps, ctx_destroy) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        Some((self.ctx_create?, self.ctx_destroy?))
    }
}

/// A team as scoll components see it: `size` PEs `start, start+stride, ...`.
#[repr(C)]
pub struct TeamDesc {
    pub id: c_int,
    pub start: c_int,
    pub stride: c_int,
    pub size: c_int,
    /// This PE's index in the team.
    pub my_index: c_int,
    /// Symmetric scratch memory reserved for this team's collectives (zeroed at creation),
    /// for the exclusive use of the component that enabled the slot.
    pub scratch: *mut c_void,
    pub scratch_len: usize,
    /// `TEAM_*` flags (appended in ABI v1; components that predate a flag ignore it).
    pub flags: u32,
}

/// `TeamDesc::flags`: the team lives for one active-set collective call (OpenSHMEM's legacy
/// routines with a pSync array) and its scratch is the user's pSync. Each collective must leave
/// the scratch as it found it (all zeros) once every member has returned, and the state from
/// `enable` is not reused.
pub const TEAM_EPHEMERAL: u32 = 1;

/// `TeamDesc::flags`: every member maps every member's symmetric memory for load/store
/// (`CoreServices::ptr` reaches it), and every member sees this flag alike. A component that
/// works by load/store must require it rather than probe `ptr` itself: a transport may map
/// some peers and not others, and members that chose differently would wait on each other.
pub const TEAM_MAPPED: u32 = 2;

impl TeamDesc {
    /// World PE number of team index `i`.
    pub fn pe_of(&self, i: c_int) -> c_int {
        self.start + i * self.stride
    }
}

/// scoll: collectives. `enable` is called once per team and returns the component's state for
/// that team (NULL to decline the team). Slots left NULL are provided by another component.
/// A slot may return RC_DECLINED for a call it cannot serve; the core then calls the next
/// provider.
#[repr(C)]
pub struct ScollOps {
    pub struct_size: usize,
    /// How many bytes of team scratch the component needs.
    pub scratch_needed: usize,
    pub enable: unsafe extern "C" fn(team: *const TeamDesc) -> *mut c_void,
    pub disable: unsafe extern "C" fn(state: *mut c_void),
    /// Synchronise the team's PEs (no memory completion: the core quiets first where needed).
    pub barrier: Option<unsafe extern "C" fn(state: *mut c_void) -> c_int>,
    /// Copy `nbytes` from `src` on team index `root` to `dest` on every PE of the team
    /// (including the root).
    pub broadcast: Option<
        unsafe extern "C" fn(
            state: *mut c_void,
            dest: *mut c_void,
            src: *const c_void,
            nbytes: usize,
            root: c_int,
        ) -> c_int,
    >,
    // Appended in ABI v1 (absent from tables whose struct_size ends before them; see
    // `ScollOps::has`):
    /// Concatenate every team PE's `nbytes` from `src` into `dest` on every PE, in team order.
    /// `fixed` (fcollect): every PE gives the same `nbytes`; otherwise (collect) they differ.
    pub collect: Option<
        unsafe extern "C" fn(
            state: *mut c_void,
            dest: *mut c_void,
            src: *const c_void,
            nbytes: usize,
            fixed: c_int,
        ) -> c_int,
    >,
    /// All-to-all exchange: team PE `me` sends elements `src[(j * nelems + k) * sst]`
    /// (`k < nelems`, elements of `elem_size` bytes) to PE `j`, where they land at
    /// `dest[(me * nelems + k) * dst]`. Strides are in elements (1: contiguous).
    pub alltoall: Option<
        unsafe extern "C" fn(
            state: *mut c_void,
            dest: *mut c_void,
            src: *const c_void,
            elem_size: usize,
            nelems: usize,
            dst: isize,
            sst: isize,
        ) -> c_int,
    >,
    /// Element-wise reduction (`kind` REDUCE_ALL) or prefix scan (REDUCE_INSCAN: over team
    /// PEs `0..=me`; REDUCE_EXSCAN: over `0..me`, `dest` untouched on PE 0) of `nelems`
    /// elements of `dtype` (`DT_*`) with `op` (`OP_*`). `dest` may equal `src`.
    pub reduce: Option<
        unsafe extern "C" fn(
            state: *mut c_void,
            dest: *mut c_void,
            src: *const c_void,
            nelems: usize,
            dtype: u32,
            op: u32,
            kind: u32,
        ) -> c_int,
    >,
    /// As `broadcast`, except that the root's `dest` is left as it is (the active-set form,
    /// OpenSHMEM 1.4's `shmem_broadcast32/64`). Appended later in ABI v1; without it the core
    /// saves and restores the root's `dest` around `broadcast`.
    pub broadcast_keep_root: Option<
        unsafe extern "C" fn(
            state: *mut c_void,
            dest: *mut c_void,
            src: *const c_void,
            nbytes: usize,
            root: c_int,
        ) -> c_int,
    >,
}

impl ScollOps {
    /// Whether the table is long enough to hold the slot that ends at `end` bytes
    /// (`offset_of!(ScollOps, slot) + size_of::<Option<fn()>>()`).
    pub fn has(&self, end: usize) -> bool {
        self.struct_size >= end
    }
}

/// An operations table a plugin's `open` returns, as the core binds it: the framework it belongs
/// to and the slots it must fill (name, offset). A table whose `struct_size` ends before the last
/// required slot, or with one of them NULL, is refused naming the slot; the core copies the
/// rest into a table of its own size, so optional slots a shorter table lacks read as NULL.
///
/// # Safety
/// `REQUIRED` must list every field of `Self` that is a non-nullable function pointer (reading
/// one that is NULL as such is undefined behaviour), and `Self` must start with `struct_size`.
pub unsafe trait OpsTable: Sized + 'static {
    const FRAMEWORK: Framework;
    /// The C name of the table, for messages.
    const C_NAME: &'static str;
    const REQUIRED: &'static [(&'static str, usize)];
}

/// `(slot name, offset)` for each named field of `$ty`.
macro_rules! slots {
    ($ty:ty: $($f:ident),* $(,)?) => {
        &[$((stringify!($f), ::std::mem::offset_of!($ty, $f))),*]
    };
}

// SAFETY: every non-Option function pointer of SpmlOps is listed; struct_size comes first.
unsafe impl OpsTable for SpmlOps {
    const FRAMEWORK: Framework = Framework::Spml;
    const C_NAME: &'static str = "shmem_plugin_spml_ops_t";
    const REQUIRED: &'static [(&'static str, usize)] = slots!(SpmlOps:
        connect, mem_register, mem_deregister, add_segment, remote_ptr, put, get, put_nbi,
        get_nbi, quiet, fence, progress, finalize, atomic);
}

// SAFETY: as above.
unsafe impl OpsTable for SshmemOps {
    const FRAMEWORK: Framework = Framework::Sshmem;
    const C_NAME: &'static str = "shmem_plugin_sshmem_ops_t";
    const REQUIRED: &'static [(&'static str, usize)] =
        slots!(SshmemOps: create, attach, detach, unlink, destroy);
}

// SAFETY: as above.
unsafe impl OpsTable for MemheapOps {
    const FRAMEWORK: Framework = Framework::Memheap;
    const C_NAME: &'static str = "shmem_plugin_memheap_ops_t";
    const REQUIRED: &'static [(&'static str, usize)] =
        slots!(MemheapOps: create, alloc, free, realloc, usable_size, destroy);
}

// SAFETY: as above (every collective slot is optional).
unsafe impl OpsTable for ScollOps {
    const FRAMEWORK: Framework = Framework::Scoll;
    const C_NAME: &'static str = "shmem_plugin_scoll_ops_t";
    const REQUIRED: &'static [(&'static str, usize)] = slots!(ScollOps: enable, disable);
}

/// Element types of `ScollOps::reduce`.
pub const DT_I8: u32 = 0;
pub const DT_I16: u32 = 1;
pub const DT_I32: u32 = 2;
pub const DT_I64: u32 = 3;
pub const DT_U8: u32 = 4;
pub const DT_U16: u32 = 5;
pub const DT_U32: u32 = 6;
pub const DT_U64: u32 = 7;
pub const DT_F32: u32 = 8;
pub const DT_F64: u32 = 9;
/// C `long double` (x87 80-bit extended, 16 bytes in memory on x86-64).
pub const DT_LONGDOUBLE: u32 = 10;
/// C `float _Complex` / `double _Complex` (sum and prod only).
pub const DT_COMPLEXF: u32 = 11;
pub const DT_COMPLEXD: u32 = 12;

/// Operations of `ScollOps::reduce`.
pub const OP_AND: u32 = 0;
pub const OP_OR: u32 = 1;
pub const OP_XOR: u32 = 2;
pub const OP_MAX: u32 = 3;
pub const OP_MIN: u32 = 4;
pub const OP_SUM: u32 = 5;
pub const OP_PROD: u32 = 6;

/// Kinds of `ScollOps::reduce`.
pub const REDUCE_ALL: u32 = 0;
pub const REDUCE_INSCAN: u32 = 1;
pub const REDUCE_EXSCAN: u32 = 2;

/// Declare a Rust plugin's descriptor and export it as the one symbol
/// `shmem_plugin_descriptor`:
///
/// ```ignore
/// rshmem_plugin_api::export_plugin! {
///     framework: Framework::Sshmem, name: "mmap", description: "...",
///     params: &[], caps: SSHMEM_CAP_PEER_ATTACH, query: query, open: open,
/// }
/// ```
#[macro_export]
macro_rules! export_plugin {
    (framework: $fw:expr, name: $name:literal, description: $desc:literal, params: $params:expr, caps: $caps:expr, query: $query:expr, open: $open:expr $(,)?) => {
        struct __RshmemParams(&'static [$crate::ParamDecl]);
        // SAFETY: the table holds only pointers to static strings.
        unsafe impl Sync for __RshmemParams {}
        static __RSHMEM_PARAMS: __RshmemParams = __RshmemParams($params);
        static __RSHMEM_DESCRIPTOR: $crate::PluginDescriptor = $crate::PluginDescriptor {
            abi_version: $crate::ABI_VERSION,
            framework: $fw as u32,
            struct_size: ::std::mem::size_of::<$crate::PluginDescriptor>(),
            name: $crate::cstr!($name),
            version: $crate::cstr!(env!("CARGO_PKG_VERSION")),
            description: $crate::cstr!($desc),
            params: __RSHMEM_PARAMS.0.as_ptr(),
            n_params: __RSHMEM_PARAMS.0.len(),
            caps: $caps,
            query: Some($query),
            open: Some($open),
        };
        /// The plugin's one exported symbol.
        #[no_mangle]
        pub extern "C" fn shmem_plugin_descriptor() -> *const $crate::PluginDescriptor {
            &__RSHMEM_DESCRIPTOR
        }
    };
}

/// Helper for Rust plugins: a `'static` C string literal.
#[macro_export]
macro_rules! cstr {
    ($s:expr) => {
        concat!($s, "\0").as_ptr() as *const ::std::ffi::c_char
    };
}

/// Read a NUL-terminated C string (lossy). NULL gives `None`.
///
/// # Safety
/// `p` must be NULL or point at a NUL-terminated string.
pub unsafe fn c_str(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        // SAFETY: the caller guarantees a NUL-terminated string.
        Some(unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

/// Convenience for Rust plugins: read a component parameter through the core.
///
/// # Safety
/// `core` must be the pointer the core passed to `query`/`open`.
pub unsafe fn param(
    core: *const CoreServices,
    framework: &str,
    component: &str,
    name: &str,
) -> Option<String> {
    let f = std::ffi::CString::new(framework).ok()?;
    let c = std::ffi::CString::new(component).ok()?;
    let n = std::ffi::CString::new(name).ok()?;
    // SAFETY: the core table is valid for the job's lifetime; strings are NUL-terminated.
    unsafe { c_str(((*core).param)(f.as_ptr(), c.as_ptr(), n.as_ptr())) }
}

/// Convenience for Rust plugins: log through the core.
///
/// # Safety
/// `core` must be the pointer the core passed to `query`/`open`.
pub unsafe fn log(core: *const CoreServices, level: c_int, component: &str, msg: &str) {
    let c = std::ffi::CString::new(component).unwrap_or_default();
    let m = std::ffi::CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // SAFETY: as above.
    unsafe { ((*core).log)(level, c.as_ptr(), m.as_ptr()) }
}

/// The panic boundary of Rust components: a panic must never unwind into the core (through a
/// C ABI that is undefined behaviour, and the core may be C).
pub mod boundary {
    use crate::CoreServices;
    use std::ffi::{c_int, CStr};
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// Run a slot whose failure the core can handle (a probe, `enable`, `disable`): a panic
    /// becomes `fallback`, which must mean "declined" or "failed" to the core.
    pub fn guard<R>(fallback: R, body: impl FnOnce() -> R) -> R {
        catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
    }

    /// Run a slot of a component that has no core table to abort through (a memheap): a panic
    /// is reported on stderr, naming the component and slot, and the process aborts, which
    /// the launcher sees as a failed PE and ends the job. Nothing is swallowed, so a bug never
    /// passes for "out of memory".
    pub fn or_die<R>(component: &str, slot: &str, body: impl FnOnce() -> R) -> R {
        match catch_unwind(AssertUnwindSafe(body)) {
            Ok(r) => r,
            Err(_) => {
                eprintln!("rshmem: {component} {slot} panicked; this PE ends");
                std::process::abort()
            }
        }
    }

    /// Run a slot that other PEs depend on (a collective, a transfer): after a panic in the
    /// middle, peers would wait for signals that never come, so the job ends with `what` in
    /// the message instead of returning. Without the core's table it returns `RC_ERROR`.
    pub fn or_abort(
        core: Option<&CoreServices>,
        what: &CStr,
        body: impl FnOnce(&CoreServices) -> c_int,
    ) -> c_int {
        let Some(c) = core else { return crate::RC_ERROR };
        match catch_unwind(AssertUnwindSafe(|| body(c))) {
            Ok(rc) => rc,
            Err(_) => {
                // SAFETY: the core's abort with a NUL-terminated message; it does not return.
                unsafe { (c.abort)(1, what.as_ptr()) };
                crate::RC_ERROR
            }
        }
    }
}
