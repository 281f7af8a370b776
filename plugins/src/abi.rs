//! The C ABI itself: every `#[repr(C)]` structure and constant a plugin and the core share.
//! `plugins/include/shmem_plugin.h` is generated from this file (build.rs, with cbindgen), so
//! what is written here, doc comments included, is what C plugin authors read.

use std::ffi::{c_char, c_int, c_long, c_void};

/// Bumped on any incompatible change to the structures below. Version 2: the descriptor gained
/// `struct_size` and `caps`, `ParamDecl::kind` is a plain 32-bit integer, and `SpmlOps::atomic_add_u64`
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

/// The component frameworks, as [`PluginDescriptor::framework`] names them.
pub const FRAMEWORK_SPML: u32 = 1;
pub const FRAMEWORK_SCOLL: u32 = 2;
pub const FRAMEWORK_SSHMEM: u32 = 3;
pub const FRAMEWORK_MEMHEAP: u32 = 4;

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

/// The descriptor the plugin's one exported function, `shmem_plugin_descriptor`, returns. It
/// must be static: the core reads it for as long as the process runs. Every ABI version starts
/// it with `abi_version`, so the core reads that alone first and stops when it differs.
#[repr(C)]
pub struct PluginDescriptor {
    /// `ABI_VERSION` as the plugin was built.
    pub abi_version: u32,
    /// A `FRAMEWORK_*` value.
    pub framework: u32,
    /// `sizeof` the descriptor as the plugin was built.
    pub struct_size: usize,
    /// The component's name (`[a-z0-9_]`, unique within its framework): what
    /// `SHMEM_MCA_<framework>` lists and `SHMEM_MCA_<framework>_<name>_<param>` names.
    pub name: *const c_char,
    pub version: *const c_char,
    /// One line for `shmem_info`.
    pub description: *const c_char,
    /// The component's parameters (`n_params` of them; NULL when there are none).
    pub params: *const ParamDecl,
    pub n_params: usize,
    /// What the component can do, as the framework's `*_CAP_*` bits; selection skips a
    /// component that lacks a capability the job needs, saying which.
    pub caps: u64,
    /// Required. Probe for real whether the component can run here (open the device, create a
    /// test segment...) and answer in `result`. Called on every PE at `shmem_init` and by
    /// `shmem_info`, possibly more than once; must not keep resources.
    pub query: Option<unsafe extern "C" fn(core: *const CoreServices, result: *mut QueryResult)>,
    /// Required. Called once, on the selected component only: return the framework's ops
    /// table (`SpmlOps`, `SshmemOps`, `MemheapOps` or `ScollOps`), valid until the process
    /// ends, or NULL to refuse (after logging why).
    pub open: Option<unsafe extern "C" fn(core: *const CoreServices) -> *const c_void>,
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
/// [`PluginDescriptor::caps`] of a memheap: it serves GPU memory ([`MEMHEAP_DEVICE_GPU`];
/// without it, CPU memory). The core opens, per device type, only the best memheap that
/// declares it, so a memheap that is not used is never opened.
pub const MEMHEAP_CAP_GPU: u64 = 1 << 0;
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
#[derive(Clone, Copy)]
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
    /// Atomically add `value` to the 64-bit symmetric word `dest` on PE `pe`. Through the spml
    /// it may return before the add is done there; the next `quiet` of this table completes it
    /// (the application's `shmem_quiet` does not: a collective's signals are not its operations).
    pub atomic_add_u64: unsafe extern "C" fn(dest: *mut u64, value: u64, pe: c_int),
    /// Block until `*ivar <cmp> value` holds on this PE (`cmp` is a `CMP_*` value). Waits back
    /// off so that oversubscribed nodes keep making progress.
    pub wait_until_u64: unsafe extern "C" fn(ivar: *const u64, cmp: c_int, value: u64),
    /// The host PE `pe` runs on, named by the lowest PE on that host: `a` and `b` share a host
    /// exactly when `host_of(a) == host_of(b)`, and every PE gets the same answers (from the
    /// launcher's host identity, agreed at init). -1 for a PE out of range. Valid once the
    /// symmetric heap exists. Appended within ABI v2, so a plugin checks that `struct_size`
    /// covers the slot before reading it (the Rust accessor of the same name does).
    pub host_of: Option<unsafe extern "C" fn(pe: c_int) -> c_int>,
    /// Put `len` bytes from `src` to symmetric `dest` on PE `pe`, then add `value` to the
    /// 64-bit symmetric word `sig` there, which changes only once the data is in place. Returns
    /// when `src` may be reused; the receiver learns of the delivery by waiting on `sig`, and
    /// this table's `quiet` completes whatever the sender still has in flight. Through an spml
    /// with `SpmlOps::put_signal` (spml ucx: a UCX active message) this is one message instead
    /// of a put and an atomic. A word signalled through this service must be updated through
    /// it alone (or by local loads, stores and waits), never through `atomic_add_u64`: the
    /// target's CPU applies these signals, and a transport's atomics need not be atomic with
    /// its CPU's. Nothing orders it after the caller's earlier puts to `pe` (a `quiet` does).
    /// Appended within ABI v2, like `host_of`: read it through the accessor of the same name.
    pub put_signal_u64: Option<
        unsafe extern "C" fn(
            dest: *mut c_void,
            src: *const c_void,
            len: usize,
            sig: *mut u64,
            value: u64,
            pe: c_int,
        ),
    >,
    /// Copy between the host buffer `buf` and bytes `off..off + len` of this PE's segment
    /// `seg` (into the segment when `into_segment` is nonzero, else out of it), where `seg` is
    /// a device segment that the spml does not register: the target side of
    /// `SpmlOps::put_via_target` and `get_via_target`. The device memheap's `copy` moves the
    /// bytes. Nonzero, with nothing copied, for any other segment or a range that leaves it: a
    /// message naming one is refused. Callable from any thread, including inside the spml's
    /// progress. Appended within ABI v2: read it through the accessor of the same name.
    pub segment_copy: Option<
        unsafe extern "C" fn(seg: u32, off: u64, buf: *mut c_void, len: usize, into_segment: c_int) -> c_int,
    >,
    /// How many CPUs the PEs of this node may run on between them: the union of their CPU
    /// affinities, gathered at init. The node has more PEs than CPUs when `local_size` exceeds
    /// it (a PE bound to one core of its own sees one CPU, which alone says nothing). Valid
    /// once the symmetric heap exists. Appended within ABI v2: read it through the accessor of
    /// the same name.
    pub node_cpus: Option<unsafe extern "C" fn() -> c_int>,
    /// The user's selection for `framework` ("spml", "sshmem", "memheap", "scoll"): the value
    /// of `SHMEM_MCA_<framework>` (environment or configuration file) that the core selects
    /// that framework's components by, such as "ucx", "^mmap" or "mmap,ucx"; "" when the user
    /// chose nothing; NULL for an unknown framework. The string lives for the process. So a
    /// component can prepare for a later framework's choice at its own `open` (spml ucx opens
    /// UCX's shared-memory transports, which only sshmem "ucx" uses, when the user asks for
    /// that component). Appended within ABI v2: read it through the accessor of the same name.
    pub selection: Option<unsafe extern "C" fn(framework: *const c_char) -> *const c_char>,
    /// Nonzero when the core means to map the memory of every PE on this host (the
    /// `SHMEM_LOCAL_MAP` setting, on by default) and serves no device memory that the spml could
    /// be asked to reach for them (no GPU memheap is open): the PEs of a host then reach each
    /// other through loads, stores and the sshmem's mappings, and the spml carries nothing
    /// between them. Zero otherwise. Known before the spml opens, so an spml can leave out a
    /// transport between the PEs of one host (spml ucx: UCX's TCP transport in a job on one
    /// host, whose listener any local user could connect to). A mapping can still fail; the
    /// spml then says so in [`SpmlOps::no_host_transport`] and the core ends the start-up with
    /// the reason. Appended within ABI v2: read it through the accessor of the same name.
    pub maps_host_peers: Option<unsafe extern "C" fn() -> c_int>,
    /// The name of PE `pe`'s host, for messages (a peer that became unreachable is named with
    /// its host): written NUL-terminated into `buf` of `len` bytes, cut to fit. Returns the
    /// name's full length, or -1 when the core knows no name for that PE (a PE on another
    /// host that the launcher names no host for, or one out of range). The launcher's name for
    /// the node where it has a map of the job, else this machine's hostname for the PEs of
    /// this host. Callable from any thread, also after a finalize. Appended within ABI v2:
    /// read it through the accessor of the same name.
    pub host_name: Option<unsafe extern "C" fn(pe: c_int, buf: *mut c_char, len: usize) -> c_int>,
}

/// The signature of [`CoreServices::segment_copy`]: `(seg, off, buf, len, into_segment)`.
pub type SegmentCopy = unsafe extern "C" fn(u32, u64, *mut c_void, usize, c_int) -> c_int;

/// The signature of [`CoreServices::put_signal_u64`].
pub type PutSignalU64 = unsafe extern "C" fn(*mut c_void, *const c_void, usize, *mut u64, u64, c_int);

impl CoreServices {
    /// `host_of(pe)`, or None when the core's table predates the slot or leaves it NULL.
    pub fn host_of(&self, pe: c_int) -> Option<c_int> {
        let end = std::mem::offset_of!(CoreServices, host_of) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        // SAFETY: the slot lies inside the table the core described by `struct_size`, and the
        // core's service takes any PE number.
        self.host_of.map(|f| unsafe { f(pe) })
    }

    /// The `put_signal_u64` service, or None when the core's table predates it.
    pub fn put_signal_u64(&self) -> Option<PutSignalU64> {
        let end = std::mem::offset_of!(CoreServices, put_signal_u64) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        self.put_signal_u64
    }

    /// `selection(framework)`, or None when the core's table predates the slot, leaves it
    /// NULL, or knows no such framework.
    pub fn selection(&self, framework: &str) -> Option<String> {
        let end = std::mem::offset_of!(CoreServices, selection) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        let f = self.selection?;
        let name = std::ffi::CString::new(framework).ok()?;
        // SAFETY: the slot lies inside the table the core described by `struct_size`; the
        // argument is NUL-terminated.
        let list = unsafe { f(name.as_ptr()) };
        if list.is_null() {
            return None;
        }
        // SAFETY: the core returns a NUL-terminated string valid for the process.
        Some(unsafe { std::ffi::CStr::from_ptr(list) }.to_string_lossy().into_owned())
    }

    /// `host_name(pe)`, or None when the core knows no name or its table predates the slot.
    pub fn host_name(&self, pe: c_int) -> Option<String> {
        let end = std::mem::offset_of!(CoreServices, host_name) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        let f = self.host_name?;
        let mut buf = [0u8; 256];
        // SAFETY: the slot lies inside the table the core described by `struct_size`; the
        // buffer is writable for the length given.
        let n = unsafe { f(pe, buf.as_mut_ptr().cast(), buf.len()) };
        let n = usize::try_from(n).ok()?.min(buf.len() - 1);
        (n > 0).then(|| String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    /// `maps_host_peers()`, or None when the core's table predates the slot or leaves it NULL.
    pub fn maps_host_peers(&self) -> Option<bool> {
        let end = std::mem::offset_of!(CoreServices, maps_host_peers) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        // SAFETY: the slot lies inside the table the core described by `struct_size`; the
        // service takes no arguments.
        self.maps_host_peers.map(|f| unsafe { f() } != 0)
    }

    /// `node_cpus()`, or None when the core's table predates the slot or leaves it NULL.
    pub fn node_cpus(&self) -> Option<c_int> {
        let end = std::mem::offset_of!(CoreServices, node_cpus) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        // SAFETY: the slot lies inside the table the core described by `struct_size`; the
        // service takes no arguments.
        self.node_cpus.map(|f| unsafe { f() })
    }

    /// Whether this node has more PEs than CPUs between them: `local_size` against
    /// [`CoreServices::node_cpus`], or against the CPUs this process may use where the core
    /// does not say (a table that predates the slot).
    pub fn node_crowded(&self) -> bool {
        let cpus = self.node_cpus().and_then(|v| usize::try_from(v).ok()).filter(|&v| v > 0);
        let cpus = cpus.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |v| v.get()));
        usize::try_from(self.local_size).is_ok_and(|n| n > cpus)
    }

    /// The `segment_copy` service, or None when the core's table predates it.
    pub fn segment_copy(&self) -> Option<SegmentCopy> {
        let end = std::mem::offset_of!(CoreServices, segment_copy) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        self.segment_copy
    }
}

/// A symmetric segment as an sshmem component created it. The core zeroes it before `create`
/// and passes the same structure back to `unlink` and `destroy`.
#[repr(C)]
pub struct SegmentDesc {
    /// Where the segment lives in this process. Each PE's may differ; the core learns the
    /// smallest base alignment over all PEs and refuses allocations that ask for more.
    pub base: *mut c_void,
    /// The usable length, at least what `create` was asked for.
    pub size: usize,
    /// Opaque bytes from which a peer on this host can map the segment with `attach` (a file
    /// name, a handle...). The core sends them to the local peers through the bootstrap.
    pub blob: [u8; 256],
    /// How many bytes of `blob` are used; 0 when local peers cannot map the segment (then
    /// they reach it through the spml, as remote peers do).
    pub blob_len: usize,
    /// A registration of the memory with the selected spml's transport made while allocating
    /// it (a `ucp_mem_h` for `TRANSPORT_UCX`), or NULL. When set, the core passes it to the
    /// spml's `mem_register` so the memory is not registered twice; the sshmem component keeps
    /// ownership and releases it in `destroy`, after the core has called `mem_deregister`.
    pub transport_memh: *mut c_void,
    /// The component's own bookkeeping for this segment (a name, a file descriptor...). The
    /// core never reads it; the component frees it in `destroy`.
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
    /// Create a segment of at least `size` bytes and describe it in `*out`; RC_OK or RC_ERROR
    /// (after logging why). `hint` is an address the core would like the segment at, or NULL
    /// (the core passes NULL today); a component may ignore it, and must never map over
    /// existing memory to honour it.
    pub create: unsafe extern "C" fn(size: usize, hint: *mut c_void, out: *mut SegmentDesc) -> c_int,
    /// Map a same-host peer's segment from its `blob`; `*addr` gets the local address. Returns
    /// RC_UNSUPPORTED when the segment can only be reached through the transport.
    pub attach:
        unsafe extern "C" fn(blob: *const u8, blob_len: usize, size: usize, addr: *mut *mut c_void) -> c_int,
    /// Undo an `attach` (at finalize).
    pub detach: unsafe extern "C" fn(addr: *mut c_void, size: usize),
    /// Called on the creating PE once every local peer has attached, and before `destroy`:
    /// remove whatever name let peers find the segment, so nothing is left behind if the job
    /// dies later. The memory stays mapped and in use. Must tolerate a second call.
    pub unlink: unsafe extern "C" fn(seg: *mut SegmentDesc),
    /// Release a segment the core no longer uses (a memory space destroyed, a start that
    /// failed): unmap it and free `handle` and `transport_memh`. Peers have detached by then.
    /// The world heap's segment is never destroyed; it lives until the process exits.
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
    // --- appended within ABI v2 (device memory); NULL in shorter tables ---
    /// For a memheap of device memory: the segments of its memory, as an sshmem table. Its
    /// `create` allocates device memory (and a blob from which a same-host peer can map it,
    /// such as a CUDA IPC handle), `attach` maps a peer's, and so on, with the contracts of
    /// [`SshmemOps`]. The core makes a device space's segment through it instead of the
    /// selected sshmem component. NULL for host memory. A device memheap without it, `copy`
    /// and `owns` serves no space: the core says so and the space is unavailable.
    pub segments: *const SshmemOps,
    /// Copy `len` bytes from `src` to `dst`, each of which is host memory or this memheap's
    /// memory (its own segments, segments attached from peers, or a buffer the program
    /// allocated on the device). Returns RC_OK once the bytes are in place at `dst`, RC_ERROR
    /// after logging why. The core never loads from or stores to device memory itself: every
    /// byte it moves there goes through this slot (or through an spml whose `memory_types`
    /// include the device).
    pub copy: Option<unsafe extern "C" fn(dst: *mut c_void, src: *const c_void, len: usize) -> c_int>,
    /// 1 when `ptr` is this memheap's device memory (see `copy`), else 0. The core asks when a
    /// local buffer of an RMA operation lies in no symmetric segment.
    pub owns: Option<unsafe extern "C" fn(ptr: *const c_void) -> c_int>,
    // --- appended within ABI v2 (pinned staging); NULL in shorter tables ---
    /// For a memheap of device memory: `len` bytes of host memory that `copy` moves to and
    /// from the device at full speed (page-locked, such as `cuMemHostAlloc`'s), or NULL when
    /// it cannot have them. The core stages device bytes that the spml cannot move through
    /// such buffers (ordinary host memory where the slot is NULL or answers NULL), and hands
    /// each back to `host_free` before the component's segments are destroyed at finalize.
    /// Both slots or neither.
    pub host_alloc: Option<unsafe extern "C" fn(len: usize) -> *mut c_void>,
    pub host_free: Option<unsafe extern "C" fn(ptr: *mut c_void)>,
    /// Optional, appended within ABI v2 (absent from shorter tables; read through
    /// [`MemheapOps::block_of_slot`]): the live block of `heap` that holds address `addr`, its
    /// start in `*start` and its usable size in `*len`: 1, or 0 (nothing written) when `addr`
    /// lies in no live block (free space, padding, a freed block). Under SHMEM_DEBUG the core
    /// asks for the remote range of every RMA and atomic into a heap, and ends the job when
    /// the range leaves the block it starts in.
    pub block_of: Option<
        unsafe extern "C" fn(
            heap: *mut c_void,
            addr: *const c_void,
            start: *mut usize,
            len: *mut usize,
        ) -> c_int,
    >,
    // --- appended within ABI v2 (page-locked shadows); NULL in shorter tables ---
    /// For a memheap of device memory: page-lock `len` bytes of host memory at `ptr` (page
    /// aligned, the core's own, mapped until `host_unregister`), so that `copy` moves them to
    /// and from the device at full speed, as it moves `host_alloc`'s (`cuMemHostRegister`).
    /// RC_OK, or RC_ERROR after logging why (the core then copies through the memory as it
    /// is). The core page-locks the host shadows of GPU spaces this way, a range at a time as
    /// collectives reach it, and hands each range back to `host_unregister` before it unmaps
    /// the shadow. Both slots or neither.
    pub host_register: Option<unsafe extern "C" fn(ptr: *mut c_void, len: usize) -> c_int>,
    pub host_unregister: Option<unsafe extern "C" fn(ptr: *mut c_void) -> c_int>,
    // --- appended within ABI v2 (stream-ordered operations); NULL in shorter tables ---
    /// For a memheap of device memory, the operations the core queues on a program's stream
    /// (`stream` is the program's handle, a `CUstream`/`cudaStream_t` for CUDA; NULL is the
    /// device's default stream) for the `shmemx_*_on_stream` routines. Each returns RC_OK once
    /// the operation is queued (it runs after everything queued on the stream before it), or
    /// RC_UNSUPPORTED when the device cannot do it on a stream (the core then waits for the
    /// stream with `stream_sync` and does the operation itself), or RC_ERROR after logging why.
    /// All four slots or none.
    ///
    /// `stream_copy`: copy `len` bytes from `src` to `dst`, each host memory or this memheap's
    /// (its segments, peers' segments attached here, buffers the program allocated).
    pub stream_copy: Option<
        unsafe extern "C" fn(stream: *mut c_void, dst: *mut c_void, src: *const c_void, len: usize) -> c_int,
    >,
    /// `stream_write_u64`: store `value` in the 8-byte word at `addr`, device memory of this
    /// memheap (a peer's attached segment too), after the bytes of every earlier operation on
    /// the stream are visible to the word's readers (a signal after its data).
    pub stream_write_u64:
        Option<unsafe extern "C" fn(stream: *mut c_void, addr: *mut u64, value: u64) -> c_int>,
    /// `stream_wait_u64`: hold the stream's later operations until the 8-byte word at `addr`
    /// (device memory of this memheap) satisfies `cmp`: [`STREAM_WAIT_EQ`] (equal to `value`)
    /// or [`STREAM_WAIT_GE`] (`(int64_t)(word - value) >= 0`, the devices' wrapping comparison,
    /// which is `word >= value` while the two are within 2^63 of each other).
    pub stream_wait_u64:
        Option<unsafe extern "C" fn(stream: *mut c_void, addr: *const u64, cmp: c_int, value: u64) -> c_int>,
    /// `stream_sync`: return when everything queued on the stream so far has finished.
    pub stream_sync: Option<unsafe extern "C" fn(stream: *mut c_void) -> c_int>,
    // --- appended within ABI v2 (device identity); NULL in shorter tables ---
    /// For a memheap of device memory: the 16-byte identity of this PE's device in `uuid`
    /// (CUDA's device UUID), and in `*shared_server` 1 when the PE's work on it goes through a
    /// server that runs several processes' work on the device at once (CUDA MPS), else 0.
    /// RC_OK, or RC_ERROR. The core compares the identities of a host's PEs at init and warns
    /// when some share a device without such a server: the device then switches between their
    /// contexts, which costs each operation that involves it hundreds of microseconds.
    pub device_identity: Option<unsafe extern "C" fn(uuid: *mut u8, shared_server: *mut c_int) -> c_int>,
    // --- appended within ABI v2 (batched stream operations); NULL in shorter tables ---
    /// For a memheap of device memory: queue `n` word operations on `stream` at once, in
    /// order, each as `stream_write_u64` or `stream_wait_u64` would (one submission to the
    /// device instead of `n`). RC_OK, RC_UNSUPPORTED (the core then queues them one by one),
    /// or RC_ERROR. The core's stream barrier uses it.
    pub stream_batch:
        Option<unsafe extern "C" fn(stream: *mut c_void, ops: *const StreamWordOp, n: usize) -> c_int>,
    // --- appended within ABI v2 (reductions on the device); NULL in shorter tables ---
    /// For a memheap of device memory: queue on `stream` (NULL: the device's default stream)
    /// `dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[nsrc - 1][i]` for `i < count`, elements
    /// of type `dtype` (a `DT_*`), `op` an `OP_*`; every array this memheap's memory (peers'
    /// attached segments included). RC_OK once queued; with `count` 0 it queues nothing and
    /// answers whether it would (preparing what it needs, such as compiling a kernel);
    /// RC_UNSUPPORTED for a type, operation or number of sources it does not take, or
    /// RC_ERROR. The core reduces GPU buffers of mapped teams with it instead of host shadows,
    /// then waits with `stream_sync`.
    pub reduce: Option<
        unsafe extern "C" fn(
            stream: *mut c_void,
            dst: *mut c_void,
            srcs: *const *const c_void,
            nsrc: usize,
            count: usize,
            dtype: u32,
            op: u32,
        ) -> c_int,
    >,
}

/// [`MemheapOps::reduce`].
pub type ReduceSlot =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *const *const c_void, usize, usize, u32, u32) -> c_int;

/// One operation of [`MemheapOps::stream_batch`]: a [`STREAM_OP_WRITE`] of `value` at `addr`,
/// or a [`STREAM_OP_WAIT`] until the word at `addr` satisfies `cmp` (a `STREAM_WAIT_*`) against
/// `value`.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct StreamWordOp {
    pub kind: u32,
    pub cmp: c_int,
    pub addr: *mut u64,
    pub value: u64,
}

/// Kinds of [`StreamWordOp`].
pub const STREAM_OP_WRITE: u32 = 0;
pub const STREAM_OP_WAIT: u32 = 1;

/// Comparisons of [`MemheapOps::stream_wait_u64`].
pub const STREAM_WAIT_EQ: c_int = 0;
pub const STREAM_WAIT_GE: c_int = 1;

// SAFETY: `segments` points at a component's immutable static table.
unsafe impl Sync for MemheapOps {}
// SAFETY: as for Sync.
unsafe impl Send for MemheapOps {}

/// A device memheap's [`MemheapOps::segments`], [`MemheapOps::copy`] and [`MemheapOps::owns`].
#[derive(Copy, Clone)]
pub struct DeviceSlots {
    pub segments: *const SshmemOps,
    pub copy: unsafe extern "C" fn(dst: *mut c_void, src: *const c_void, len: usize) -> c_int,
    pub owns: unsafe extern "C" fn(ptr: *const c_void) -> c_int,
}

/// A device memheap's [`MemheapOps::host_alloc`] and [`MemheapOps::host_free`].
#[derive(Copy, Clone)]
pub struct HostSlots {
    pub alloc: unsafe extern "C" fn(len: usize) -> *mut c_void,
    pub free: unsafe extern "C" fn(ptr: *mut c_void),
}

/// A device memheap's stream-ordered slots ([`MemheapOps::stream_copy`] and the three after it).
#[derive(Copy, Clone)]
pub struct StreamSlots {
    pub copy:
        unsafe extern "C" fn(stream: *mut c_void, dst: *mut c_void, src: *const c_void, len: usize) -> c_int,
    pub write_u64: unsafe extern "C" fn(stream: *mut c_void, addr: *mut u64, value: u64) -> c_int,
    pub wait_u64:
        unsafe extern "C" fn(stream: *mut c_void, addr: *const u64, cmp: c_int, value: u64) -> c_int,
    pub sync: unsafe extern "C" fn(stream: *mut c_void) -> c_int,
}

/// A device memheap's [`MemheapOps::host_register`] and [`MemheapOps::host_unregister`].
#[derive(Copy, Clone)]
pub struct PinSlots {
    pub register: unsafe extern "C" fn(ptr: *mut c_void, len: usize) -> c_int,
    pub unregister: unsafe extern "C" fn(ptr: *mut c_void) -> c_int,
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

    /// The device-memory slots (`segments`, `copy`, `owns`), when the table has all three.
    pub fn device_slots(&self) -> Option<DeviceSlots> {
        let end = std::mem::offset_of!(MemheapOps, owns) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end || self.segments.is_null() {
            return None;
        }
        Some(DeviceSlots { segments: self.segments, copy: self.copy?, owns: self.owns? })
    }

    /// The pinned host-memory slots (`host_alloc`, `host_free`), when the table has both.
    pub fn host_slots(&self) -> Option<HostSlots> {
        let end = std::mem::offset_of!(MemheapOps, host_free) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        Some(HostSlots { alloc: self.host_alloc?, free: self.host_free? })
    }

    /// The `block_of` slot, when the table has it.
    pub fn block_of_slot(
        &self,
    ) -> Option<unsafe extern "C" fn(*mut c_void, *const c_void, *mut usize, *mut usize) -> c_int> {
        let end = std::mem::offset_of!(MemheapOps, block_of) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        self.block_of
    }

    /// The page-locking slots (`host_register`, `host_unregister`), when the table has both.
    pub fn pin_slots(&self) -> Option<PinSlots> {
        let end = std::mem::offset_of!(MemheapOps, host_unregister) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        Some(PinSlots { register: self.host_register?, unregister: self.host_unregister? })
    }

    /// The `device_identity` slot, when the table has it.
    pub fn identity_slot(&self) -> Option<unsafe extern "C" fn(*mut u8, *mut c_int) -> c_int> {
        let end = std::mem::offset_of!(MemheapOps, device_identity) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        self.device_identity
    }

    /// The `reduce` slot, when the table has it.
    pub fn reduce_slot(&self) -> Option<ReduceSlot> {
        let end = std::mem::offset_of!(MemheapOps, reduce) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        self.reduce
    }

    /// The `stream_batch` slot, when the table has it.
    pub fn batch_slot(
        &self,
    ) -> Option<unsafe extern "C" fn(*mut c_void, *const StreamWordOp, usize) -> c_int> {
        let end = std::mem::offset_of!(MemheapOps, stream_batch) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        self.stream_batch
    }

    /// The stream-ordered slots, when the table has all four.
    pub fn stream_slots(&self) -> Option<StreamSlots> {
        let end = std::mem::offset_of!(MemheapOps, stream_sync) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        Some(StreamSlots {
            copy: self.stream_copy?,
            write_u64: self.stream_write_u64?,
            wait_u64: self.stream_wait_u64?,
            sync: self.stream_sync?,
        })
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

/// Segment ids the core passes (to `add_segment`, `put`, `get`, `atomic`...) are below this:
/// the heap, the global data and the segments of memory spaces. An spml may size per-segment
/// tables by it.
pub const MAX_SEGMENTS: u32 = 16;

/// Opaque spml context (one per OpenSHMEM context).
pub type SpmlCtx = *mut c_void;

/// spml: RMA, ordering and memory keys. Remote memory is named by (pe, segment id, address in
/// the target's address space).
///
/// The key contract: for each symmetric segment the core calls `mem_register` on every PE,
/// which packs a remote key into bytes; the core carries those bytes, unread, to every PE
/// (through the bootstrap for the world heap, through a collective for later segments) and
/// hands each PE's key to `add_segment(pe, seg, base, len, key)`, this PE's own included. A
/// segment id is the same on every PE and below [`MAX_SEGMENTS`]; the id of a removed segment
/// (a destroyed space) may be given to a later one, and `add_segment` then replaces the old key
/// (no operation names the old segment any more). From then on
/// `put`, `get` and `atomic` name memory as (pe, seg, address in that PE's space), and the
/// spml finds the unpacked key from (pe, seg). Every slot but `connect`, `finalize` and the
/// registration slots may be called from any thread the job's thread level allows.
#[repr(C)]
pub struct SpmlOps {
    pub struct_size: usize,
    /// The transport other components may share (`TRANSPORT_NONE` if none).
    pub transport: TransportHandle,
    /// The context used for the default OpenSHMEM context (and for every context when
    /// `ctx_create` is absent or fails).
    pub default_ctx: SpmlCtx,
    /// Collective: connect to every PE (addresses were published with `kv_put` during `open`;
    /// the core has called `kv_fence`).
    pub connect: unsafe extern "C" fn() -> c_int,
    /// Register `len` bytes at `base` for remote access. `memh` is the segment's
    /// `transport_memh` (or NULL): a registration to reuse, owned by the sshmem. The packed
    /// remote key goes to `rkey` (capacity `cap`, 2 KiB or more; its length to
    /// `*rkey_len`: keep it under 1.5 KiB, since a memory space's key travels in a 2 KiB
    /// record with the segment's `blob`); `*reg` receives a handle for `mem_deregister`.
    pub mem_register: unsafe extern "C" fn(
        base: *mut c_void,
        len: usize,
        memh: *mut c_void,
        rkey: *mut u8,
        cap: usize,
        rkey_len: *mut usize,
        reg: *mut *mut c_void,
    ) -> c_int,
    /// Undo a `mem_register` (before the segment is destroyed).
    pub mem_deregister: unsafe extern "C" fn(reg: *mut c_void),
    /// Learn PE `pe`'s segment `seg`: `base` and `len` in that PE's address space and the key
    /// its `mem_register` packed (`rkey_len` bytes, valid for the call only).
    pub add_segment: unsafe extern "C" fn(
        pe: c_int,
        seg: u32,
        base: u64,
        len: usize,
        rkey: *const u8,
        rkey_len: usize,
    ) -> c_int,
    /// A local address through which this process reaches `raddr` of PE `pe`'s segment `seg`
    /// by load and store (a transport that maps peers' memory), or NULL; the core then uses
    /// the sshmem's `attach` or the RMA slots.
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
    /// goes to `*fetched` when it is not NULL. With `fetched` NULL the core needs no previous
    /// value, and the spml may return as soon as the operation is issued (spml ucx posts ADD,
    /// AND, OR and XOR without waiting for a reply); the operation then completes at the next
    /// `quiet` on `ctx`. Otherwise it returns when the operation is complete.
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
    /// Optional (may be NULL, and absent from shorter tables): a context of its own for an
    /// OpenSHMEM context created with `options` (`SPML_CTX_*`), whose `quiet` and `fence` need
    /// not involve other contexts. RC_OK and the context in `*out`, or nonzero to let the core
    /// use the default context instead.
    pub ctx_create: Option<unsafe extern "C" fn(options: c_long, out: *mut SpmlCtx) -> c_int>,
    /// Optional, paired with `ctx_create`: release a context it made (the core has quieted it).
    pub ctx_destroy: Option<unsafe extern "C" fn(ctx: SpmlCtx)>,
    /// Optional (may be NULL, and absent from shorter tables): put `len` bytes from `src` to
    /// `raddr` in PE `pe`'s segment `seg`, then add `value` to the 64-bit word `sig_raddr` of
    /// its segment `sig_seg`, as one message the target applies: the data is in place before
    /// the word changes there, and the target's CPU updates the word with an atomic
    /// read-modify-write. Returns when `src` may be reused; the receiver learns of the
    /// delivery by waiting on the word, and no `quiet` is needed for it. A word updated through
    /// this slot must never be updated through `atomic` as well: a transport's atomics (a
    /// NIC's) need not be atomic with respect to the target CPU's. Nothing orders it after the
    /// caller's earlier puts to `pe`. RC_DECLINED (for a size the
    /// component does not carry this way, say) lets the core do it another way; the core
    /// uses it only for collectives' words, never for an application's signal.
    pub put_signal: Option<
        unsafe extern "C" fn(
            ctx: SpmlCtx,
            pe: c_int,
            seg: u32,
            raddr: u64,
            src: *const c_void,
            len: usize,
            sig_seg: u32,
            sig_raddr: u64,
            value: u64,
        ) -> c_int,
    >,
    /// Appended within ABI v2 (0 in shorter tables): a bit `1 << MEMHEAP_DEVICE_*` for each
    /// device type whose memory this spml moves itself: `mem_register` takes such a segment
    /// and `put`, `get` and their `_nbi` forms accept such memory on either side (UCX built
    /// with CUDA support, for GPU memory). Without the bit, the core registers no segment of
    /// that device with the spml and stages local device buffers through host memory; a space
    /// of such memory then needs every PE to map every peer's copy (same host, IPC).
    pub memory_types: u64,
    /// Optional, appended within ABI v2 (absent from shorter tables; read through
    /// [`SpmlOps::via_target`]): RMA on PE `pe`'s copy of segment `seg` where this spml moves
    /// neither that memory nor the memory on this side, carried out by the target's CPU.
    /// `put_via_target` sends the `len` host bytes at `src` for bytes `off..off + len` of the
    /// segment, and returns once the target has copied them in (remote completion: no `quiet`
    /// is needed for them); `get_via_target` returns once `dst` (host memory) holds those
    /// bytes. The target's spml hands each transfer to its core's `segment_copy` service, which
    /// accepts only the device segments the spml does not register (a GPU space across hosts
    /// without a CUDA-aware transport) and refuses any other range. Nonzero when the transfer
    /// failed or was refused.
    pub put_via_target: Option<
        unsafe extern "C" fn(
            ctx: SpmlCtx,
            pe: c_int,
            seg: u32,
            off: u64,
            src: *mut c_void,
            len: usize,
        ) -> c_int,
    >,
    pub get_via_target: Option<
        unsafe extern "C" fn(
            ctx: SpmlCtx,
            pe: c_int,
            seg: u32,
            off: u64,
            dst: *mut c_void,
            len: usize,
        ) -> c_int,
    >,
    /// Optional, appended within ABI v2 (absent from shorter tables; read through
    /// [`SpmlOps::progress_busy_slot`]): `progress`, returning nonzero when that round found
    /// something to do (a message arrived or left). The core's wait loops then keep spinning
    /// instead of yielding the core: a PE serving a peer's gets answers one round sooner.
    /// Without it, waits yield once they have spun a while, whatever `progress` did.
    pub progress_busy: Option<unsafe extern "C" fn() -> c_int>,
    /// Optional, appended within ABI v2 (absent from shorter tables; read through
    /// [`SpmlOps::suspend_slot`]): the library was finalized (`suspended` = 1) but stays ready
    /// to be initialized again in this process, as OpenSHMEM 1.6 allows, or it was initialized
    /// again (0). The core calls it with 1 at the last `shmem_finalize`, once every operation
    /// is complete and every PE has arrived; then it destroys what the program left (contexts,
    /// registrations) and keeps the component instead of calling `finalize`, which follows
    /// when the process exits. A finalize that does not keep the library calls it with 1 too,
    /// before `finalize`. While suspended, peers may end their processes at any moment: losing
    /// one is expected and must not end the job. Without the
    /// slot the core calls `finalize` at the last `shmem_finalize`, and the library cannot be
    /// initialized again.
    pub suspend: Option<unsafe extern "C" fn(suspended: c_int)>,
    /// Optional, appended within ABI v2 (absent from shorter tables; read through
    /// [`SpmlOps::peer_memory_slot`]): what this spml holds for peers, for the core's report
    /// (`SHMEM_PEER_MEMORY`). The core calls it with `measure` = 1 and `out` NULL once, before
    /// `connect`, when the report is asked for: from then on the spml measures the private
    /// memory its own peer state adds as it is made (an endpoint, a key unpacked). At the last
    /// `shmem_finalize`, before `suspend`, it calls it with 0 to have `*out` filled; a shorter
    /// [`SpmlPeerMemory`] (its `struct_size`) gets only the fields it has room for.
    pub peer_memory: Option<unsafe extern "C" fn(measure: c_int, out: *mut SpmlPeerMemory)>,
    /// Appended within ABI v2 (absent from shorter tables; read through
    /// [`SpmlOps::lacks_host_transport`]): nonzero when this spml opened no transport between
    /// the PEs of this host, because the core said it maps them all
    /// ([`CoreServices::maps_host_peers`]). The core then never hands it an operation on a
    /// peer of this host: where some PE of the host could not map another after all, start-up
    /// ends with the reason, and a memory space that some PE cannot map is not created. Zero
    /// (reaches them) in a zeroed or shorter table.
    pub no_host_transport: c_int,
}

/// What an spml holds for peers ([`SpmlOps::peer_memory`]). Private memory is the process's
/// anonymous resident bytes (`rshmem_plugin_api::footprint`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct SpmlPeerMemory {
    /// Set by the core to the size of the structure it passes.
    pub struct_size: usize,
    /// Bytes of the spml's tables sized by the number of PEs (every PE has a slot, reached or
    /// not), and how many of them are resident now: slots of peers never reached cost only
    /// where they share a page with a reached one.
    pub table_bytes: u64,
    pub table_resident: u64,
    /// PEs on this host and on other hosts that this PE has made at least one endpoint to.
    pub peers_local: u64,
    pub peers_remote: u64,
    /// Endpoints made to them (a PE reached from several contexts has one on each).
    pub endpoints_local: u64,
    pub endpoints_remote: u64,
    /// Private memory added while making those endpoints and unpacking their keys.
    pub grown_local: u64,
    pub grown_remote: u64,
}

/// The signature of [`SpmlOps::put_via_target`] and [`SpmlOps::get_via_target`]: `(ctx, pe,
/// seg, off, buf, len)`; `buf` is the host source of a put or the host destination of a get.
pub type SpmlViaTarget = unsafe extern "C" fn(SpmlCtx, c_int, u32, u64, *mut c_void, usize) -> c_int;

/// The signature of [`SpmlOps::put_signal`].
pub type SpmlPutSignal =
    unsafe extern "C" fn(SpmlCtx, c_int, u32, u64, *const c_void, usize, u32, u64, u64) -> c_int;

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

    /// Whether this spml moves memory of device type `device` itself (see `memory_types`).
    pub fn moves_device_memory(&self, device: u32) -> bool {
        let end = std::mem::offset_of!(SpmlOps, memory_types) + std::mem::size_of::<u64>();
        self.struct_size >= end && device < 64 && self.memory_types & (1 << device) != 0
    }

    /// The `put_signal` slot, when the component's table has it.
    pub fn put_signal_slot(&self) -> Option<SpmlPutSignal> {
        let end = std::mem::offset_of!(SpmlOps, put_signal) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        self.put_signal
    }

    /// The `put_via_target` and `get_via_target` slots, when the component's table has both.
    pub fn via_target(&self) -> Option<(SpmlViaTarget, SpmlViaTarget)> {
        let end = std::mem::offset_of!(SpmlOps, get_via_target) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        Some((self.put_via_target?, self.get_via_target?))
    }

    /// The `suspend` slot, when the component's table has it.
    pub fn suspend_slot(&self) -> Option<unsafe extern "C" fn(c_int)> {
        let end = std::mem::offset_of!(SpmlOps, suspend) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        self.suspend
    }

    /// The `peer_memory` slot, when the component's table has it.
    pub fn peer_memory_slot(&self) -> Option<unsafe extern "C" fn(c_int, *mut SpmlPeerMemory)> {
        let end = std::mem::offset_of!(SpmlOps, peer_memory) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        self.peer_memory
    }

    /// Whether this spml opened no transport between the PEs of this host
    /// ([`SpmlOps::no_host_transport`]); false for a table that predates the field.
    pub fn lacks_host_transport(&self) -> bool {
        let end = std::mem::offset_of!(SpmlOps, no_host_transport) + std::mem::size_of::<c_int>();
        self.struct_size >= end && self.no_host_transport != 0
    }

    /// The `progress_busy` slot, when the component's table has it.
    pub fn progress_busy_slot(&self) -> Option<unsafe extern "C" fn() -> c_int> {
        let end = std::mem::offset_of!(SpmlOps, progress_busy) + std::mem::size_of::<Option<fn()>>();
        if self.struct_size < end {
            return None;
        }
        self.progress_busy
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

/// `TeamDesc::flags`: every member maps the symmetric memory of the members on its own host
/// (the team may span several hosts; [`CoreServices::host_of`] tells them apart), and every
/// member sees this flag alike. A hierarchical component requires it for its load/store phase
/// inside each host.
pub const TEAM_HOSTS_MAPPED: u32 = 4;

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
    /// PEs `0..=me`; REDUCE_EXSCAN: over `0..me`, `dest` left alone on PE 0, where the core
    /// writes the spec's 0 after the call) of `nelems` elements of `dtype` (`DT_*`) with `op`
    /// (`OP_*`). `dest` may equal `src`.
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
