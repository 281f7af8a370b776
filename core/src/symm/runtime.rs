//! The runtime state the operations read: the selected components, this PE's place in the job,
//! the symmetric-memory table, and the settings fixed at init. `crate::ops::lifecycle` builds it
//! at `shmem_init` and publishes it here; it is never freed.

use crate::plugin::{self, Selection};
use crate::symm::segments::SegmentTable;
use crate::symm::static_data::DataSegment;
use rshmem_boot::{self as bootstrap, Bootstrap};
use rshmem_plugin_api::{
    CoreServices, Framework, MemheapOps, ScollOps, SegmentDesc, SpmlOps, SshmemOps, TransportHandle,
};
use std::collections::HashSet;
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

pub struct Runtime {
    pub boot: &'static dyn Bootstrap,
    pub my_pe: i32,
    pub n_pes: i32,
    pub spml: &'static SpmlOps,
    pub sshmem: &'static SshmemOps,
    /// The memheap of CPU memory (the default space's and the created CPU spaces').
    pub memheap: &'static MemheapOps,
    /// The memheaps serving other device types, one per type.
    pub device_heaps: Vec<crate::plugin::memheaps::DeviceHeap>,
    /// Why the GPU space is unavailable (which memheap was found, or why none was).
    pub gpu_note: String,
    /// The GPU memheap's data path, when one serves GPU memory and has it.
    pub gpu: Option<crate::plugin::memheaps::DeviceMemory>,
    /// Some segment of device memory exists: RMA checks its buffers (`crate::ops::device`).
    pub(crate) any_device: AtomicBool,
    pub heap: *mut c_void,
    /// Serialises the init heap; holds the program's live blocks in it (`shmem_malloc` and
    /// kin), which the last `shmem_finalize` frees when the program did not.
    pub heap_lock: Mutex<HashSet<usize>>,
    pub segs: SegmentTable,
    /// The thread level provided (`shmem_query_thread`); a later initialization after the
    /// last finalize may raise it.
    pub thread_level: AtomicI32,
    /// The spml serves SHMEM_THREAD_MULTIPLE (`SPML_CAP_THREAD_MULTIPLE`).
    pub spml_thread_multiple: bool,
    pub debug: bool,
    /// Some peer's copy of some segment is reachable only through the spml: wait loops must
    /// drive it. Set at init, and when a space's segment is not mapped everywhere.
    pub(crate) needs_progress: AtomicBool,
    /// Spins before a wait loop starts yielding: none when this node runs more PEs than it has
    /// cores, so a waiting PE hands its core to the PE it waits for at once.
    pub spin_limit: u32,
    pub selected: Vec<(Framework, Vec<String>)>,
    /// SHMEM_LOCAL_MAP: map the segments of PEs on this node.
    pub local_map: bool,
    /// SHMEM_ACTIVE_SET_TEAMS: cache a team per active set and pSync (`active_sets`).
    pub active_set_teams: bool,
    /// Which host each PE is on, and which hosts map their PEs (`crate::symm::hosts`).
    pub hosts: crate::symm::hosts::Hosts,
    /// The CPUs this host's PEs may run on between them (at least 1).
    pub node_cpus: usize,
    /// The team scratch pool, reserved in the heap once the runtime exists
    /// (`crate::ops::team::init_pool`).
    pub team_pool: OnceLock<crate::symm::scratch::Pool>,
    /// The largest power of two dividing the heap's base on every PE: allocations aligned to
    /// at most this (as offsets, which is how the memheap aligns) are aligned addresses on all.
    pub heap_align: usize,
    /// The default heap's size as configured (`shmemx_heap_size`).
    pub heap_size: usize,
    /// Usable bytes of the user's live blocks in the default heap (`shmemx_heap_used`).
    pub heap_used: std::sync::atomic::AtomicUsize,
    pub(crate) heap_seg: Mutex<SegmentDesc>,
    pub(crate) data_seg: Mutex<Option<DataSegment>>,
    pub(crate) spml_regs: Vec<*mut c_void>,
    /// The scoll components teams use, and the teams this PE split and has not destroyed.
    pub teams: TeamRegistry,
    /// The heap of `shmem_malloc` when it is not the init heap (`SHMEM_DEFAULT_SPACE=GPU`):
    /// set once at the end of init, before the program can allocate.
    pub user_heap: OnceLock<UserHeap>,
    /// The locks this PE holds (`crate::ops::lock`): set, test and clear check them.
    pub(crate) locks_held: Mutex<Vec<usize>>,
    /// A collective's signal went through the spml since the core service `quiet` last
    /// completed them (`crate::ops::rma::atomic_add_u64`).
    pub(crate) signals_out: AtomicBool,
    /// The memory spaces made (`crate::ops::spaces`).
    pub(crate) spaces: SpaceList,
    /// The contexts created and not destroyed yet (`crate::ops::ctx`; addresses of their
    /// objects in the context table): destroying one twice, or something that was never a
    /// context, is reported instead of freeing memory again. Create and destroy are rare;
    /// operations on a context do not consult this.
    pub(crate) ctxs_live: Mutex<Vec<usize>>,
    /// What init judged of the GPUs, alike on every PE that needs it (`crate::ops::device`);
    /// the last finalize clears it for the next initialization to judge again.
    pub(crate) gpu_judged: GpuJudged,
    /// What `SHMEM_PEER_MEMORY`'s report prints besides the tables (`crate::ops::peer_memory`).
    pub(crate) peer_memory: PeerMemory,
    /// What the layer above keeps per initialization (`crate::ops::state::OpsState`: the
    /// active-set agreements, the stream barrier, the staging buffers, the page-locked
    /// shadows). This layer cannot name that layer's types, so the value is held as `Any`,
    /// made by start-up, and `crate::ops::state::of` is the one place that knows its type.
    pub(crate) above: Box<dyn std::any::Any + Send + Sync>,
}

/// `SHMEM_PEER_MEMORY` and what start-up measured for its report (`crate::ops::peer_memory`).
#[derive(Default)]
pub struct PeerMemory {
    /// 0: no report, 1: PE 0 reports, 2: every PE.
    pub(crate) who: usize,
    /// This host's peers mapped at start-up, and what mapping them added to private memory.
    pub(crate) mapped_peers: usize,
    pub(crate) mapping_grew: u64,
    /// Private memory at the end of `shmem_init`.
    pub(crate) after_init: std::sync::atomic::AtomicU64,
}

/// The memory spaces `crate::ops::spaces` made, and what their agreements use.
#[derive(Default)]
pub struct SpaceList {
    /// The handles (addresses of `Space` values, never freed) of every space made, destroyed
    /// or not, predefined GPU spaces included: a handle is recognised only if listed here.
    pub(crate) made: Mutex<Vec<usize>>,
    /// The next created space's id (teams split from its team carry it; 0 is the CPU space).
    pub(crate) next_id: std::sync::atomic::AtomicU64,
    /// Two symmetric words of the default heap for the agreements of create and destroy.
    pub(crate) agree: OnceLock<usize>,
}

impl SpaceList {
    pub(crate) fn new() -> SpaceList {
        SpaceList { next_id: std::sync::atomic::AtomicU64::new(1), ..Default::default() }
    }
}

/// What init judged of the GPUs (`crate::ops::device`, `crate::ops::gpu_share`).
#[derive(Default)]
pub struct GpuJudged {
    /// Some PEs of this host share a GPU without MPS (the same on every PE of the host).
    pub(crate) shared_without_mps: AtomicBool,
    /// Every PE's device memheap compiled and runs a reduction kernel (agreed by all PEs).
    pub(crate) reduce_kernels: AtomicBool,
}

/// The scoll components, and the split teams this PE has not destroyed (`crate::ops::teams`).
pub struct TeamRegistry {
    /// The stacked scoll components, best first.
    pub scolls: Vec<(&'static ScollOps, String)>,
    /// The components with `SCOLL_CAP_EPHEMERAL`, for the active-set (pSync) teams.
    pub ephemeral: Vec<(&'static ScollOps, String)>,
    /// Handles of the teams splits made that are not destroyed yet.
    pub live: Mutex<Vec<usize>>,
    /// Scratch-pool slots this PE's live teams use (bit 0: the world).
    pub used: Mutex<u64>,
}

impl TeamRegistry {
    pub fn new(
        scolls: Vec<(&'static ScollOps, String)>,
        ephemeral: Vec<(&'static ScollOps, String)>,
    ) -> Self {
        TeamRegistry { scolls, ephemeral, live: Mutex::new(Vec::new()), used: Mutex::new(1) }
    }
}

/// Another space's heap serving `shmem_malloc` and its kin: the space's own routines, so that
/// the space's lock serialises its heap whichever routine reaches it.
pub struct UserHeap {
    /// A block of `size` bytes at an offset aligned to `align`, or null (not collective).
    pub alloc: fn(usize, usize) -> *mut u8,
    /// Return a live block of this heap that nothing uses any more (the caller's contract).
    pub free: unsafe fn(*mut c_void),
    /// The memheap's realloc of a live block that nothing else uses (the caller's contract):
    /// the block moved (contents kept) or resized, or null.
    pub realloc: unsafe fn(*mut c_void, usize) -> *mut c_void,
    /// A live block's usable size, 0 for anything else.
    pub usable: fn(*mut c_void) -> usize,
    /// Whether its memory is device memory (zeroed through the device memheap).
    pub device: bool,
    /// The largest alignment whose offsets are aligned addresses on every PE.
    pub align: usize,
    /// Bytes per PE (`shmemx_heap_size`).
    pub size: usize,
}

// SAFETY: the raw pointers are plugin handles and mappings valid for the job; mutation after
// init goes through the Mutex fields.
unsafe impl Send for Runtime {}
// SAFETY: as for Send.
unsafe impl Sync for Runtime {}

impl Runtime {
    /// Whether wait loops must drive the spml (some peer's copy is reached only through it).
    #[inline(always)]
    pub fn needs_progress(&self) -> bool {
        self.needs_progress.load(Ordering::Relaxed)
    }

    /// From now on some peer's copy is reached only through the spml.
    pub(crate) fn set_needs_progress(&self) {
        self.needs_progress.store(true, Ordering::Release);
    }

    /// The thread level provided.
    #[inline(always)]
    pub fn thread_level(&self) -> i32 {
        self.thread_level.load(Ordering::Relaxed)
    }

    /// A block of the init heap for the program (not the library's own data): like
    /// [`Runtime::alloc`], and recorded until [`Runtime::free`] or the last finalize.
    pub fn alloc_user(&self, size: usize, align: usize) -> Option<*mut u8> {
        self.heap_alloc(size, align, true)
    }

    /// Resize a block of [`Runtime::alloc_user`]'s (the memheap's realloc: moved with its
    /// contents, or resized in place; NULL leaves it as it was).
    ///
    /// # Safety
    /// As for [`Runtime::free`].
    pub unsafe fn realloc_user(&self, p: *mut c_void, size: usize) -> *mut c_void {
        let mut live = self.heap_lock.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: plugin ABI call on a live block (the caller's contract); it stays live on failure.
        let q = unsafe { (self.memheap.realloc)(self.heap, p, size) };
        if !q.is_null() {
            live.remove(&(p as usize));
            live.insert(q as usize);
        }
        q
    }

    /// At the last finalize: free every block the program left in the init heap, so that the
    /// library initialized again starts with the heap the first initialization had. Returns
    /// how many there were.
    pub(crate) fn free_user_blocks(&self) -> usize {
        let mut live = self.heap_lock.lock().unwrap_or_else(|e| e.into_inner());
        let n = live.len();
        for p in live.drain() {
            // SAFETY: plugin ABI call on a live block; every PE has finalized, nothing uses it.
            unsafe { (self.memheap.free)(self.heap, p as *mut c_void) };
        }
        self.heap_used.store(0, Ordering::Relaxed);
        n
    }

    /// `size` bytes of the default heap aligned to `align`, by the memheap; not collective:
    /// callers keep the heap symmetric by allocating alike on every PE.
    pub fn alloc(&self, size: usize, align: usize) -> Option<*mut u8> {
        self.heap_alloc(size, align, false)
    }

    fn heap_alloc(&self, size: usize, align: usize, user: bool) -> Option<*mut u8> {
        let mut live = self.heap_lock.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: plugin ABI call on the heap created at init.
        let p = unsafe { (self.memheap.alloc)(self.heap, size, align) };
        if p.is_null() {
            return None;
        }
        if user {
            live.insert(p as usize);
        }
        Some(p.cast())
    }

    /// Return a block of [`Runtime::alloc`]'s or [`Runtime::alloc_user`]'s.
    ///
    /// # Safety
    /// `p` must be a live block of the default heap that nothing uses any more.
    pub unsafe fn free(&self, p: *mut u8) {
        let mut live = self.heap_lock.lock().unwrap_or_else(|e| e.into_inner());
        live.remove(&(p as usize));
        // SAFETY: plugin ABI call on a live block of the heap created at init (the caller's contract).
        unsafe { (self.memheap.free)(self.heap, p.cast()) };
    }
}

static RT: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
/// The runtime while the library is finalized but ready to be initialized again
/// (`crate::ops::lifecycle`): its components and connections stay until the process exits.
static DORMANT: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
/// The runtime of the last initialization, live or finalized: what stays true of the job after
/// a finalize (its hosts) is read from it.
static LAST: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static BOOT: OnceLock<Box<dyn Bootstrap>> = OnceLock::new();
/// The selected spml's transport, published for other components.
struct Published(TransportHandle);
// SAFETY: the handle's pointers are UCX objects that are safe to share by the transport's contract.
unsafe impl Send for Published {}
static TRANSPORT: Mutex<Published> = Mutex::new(Published(TransportHandle::NONE));
const NOT_STARTED: u8 = 0;
const RUNNING: u8 = 1;
const FINALIZED: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(NOT_STARTED);

/// The runtime, or a fatal error naming `routine` when the library is not initialized.
#[inline(always)]
pub fn get(routine: &'static CStr) -> &'static Runtime {
    use crate::error::OrEnd;
    live().or_end(routine)
}

/// The live runtime, or why there is none.
#[inline(always)]
pub fn live() -> Result<&'static Runtime, crate::error::ShmemError> {
    let p = RT.load(Ordering::Acquire);
    if p.is_null() {
        return Err(not_initialized());
    }
    // SAFETY: once published the runtime is never freed.
    Ok(unsafe { &*p })
}

#[cold]
#[inline(never)]
fn not_initialized() -> crate::error::ShmemError {
    crate::error::ShmemError::NotInitialized { finalized: STATE.load(Ordering::Acquire) == FINALIZED }
}

pub fn try_get() -> Option<&'static Runtime> {
    let p = RT.load(Ordering::Acquire);
    // SAFETY: as in `get`.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The runtime of the last initialization, live or finalized (None before the first).
pub fn last() -> Option<&'static Runtime> {
    let p = LAST.load(Ordering::Acquire);
    // SAFETY: as in `get`.
    (!p.is_null()).then(|| unsafe { &*p })
}

pub fn is_initialized() -> bool {
    STATE.load(Ordering::Acquire) == RUNNING
}

/// The bootstrap (exists from the start of init, before the runtime is complete).
pub fn boot() -> &'static dyn Bootstrap {
    BOOT.get().map(|b| b.as_ref()).expect("bootstrap used before shmem_init")
}

/// The bootstrap, once init has made one (it stays after a finalize).
pub fn boot_if_any() -> Option<&'static dyn Bootstrap> {
    BOOT.get().map(|b| b.as_ref())
}

pub fn transport() -> TransportHandle {
    TRANSPORT.lock().unwrap_or_else(|e| e.into_inner()).0
}

pub fn is_finalized() -> bool {
    STATE.load(Ordering::Acquire) == FINALIZED
}

/// Install the job's bootstrap (the first one stays: init runs once per process).
pub(crate) fn set_boot(b: Box<dyn Bootstrap>) -> &'static dyn Bootstrap {
    BOOT.get_or_init(|| b).as_ref()
}

pub(crate) fn set_transport(t: TransportHandle) {
    TRANSPORT.lock().unwrap_or_else(|e| e.into_inner()).0 = t;
}

/// Publish the runtime built by init: from here the API may run, and a fatal error ends the
/// whole job through the bootstrap.
pub(crate) fn publish(rt: &'static mut Runtime) {
    LAST.store(rt, Ordering::Release);
    RT.store(rt, Ordering::Release);
    STATE.store(RUNNING, Ordering::Release);
    crate::error::set_job_abort(abort_job);
}

/// Withdraw the runtime at finalize (it stays allocated: late readers hold references).
pub(crate) fn withdraw() {
    STATE.store(FINALIZED, Ordering::Release);
    RT.store(std::ptr::null_mut(), Ordering::Release);
}

/// Withdraw the runtime at a finalize that keeps it for a later initialization.
pub(crate) fn suspend(rt: &'static Runtime) {
    DORMANT.store(rt as *const Runtime as *mut Runtime, Ordering::Release);
    withdraw();
}

/// The runtime a finalize kept, while the library is finalized.
pub fn dormant() -> Option<&'static Runtime> {
    let p = DORMANT.load(Ordering::Acquire);
    // SAFETY: a published runtime is never freed.
    (!p.is_null() && is_finalized()).then(|| unsafe { &*p })
}

/// Publish a kept runtime again (an initialization after the last finalize).
pub(crate) fn resume(rt: &'static Runtime) {
    DORMANT.store(std::ptr::null_mut(), Ordering::Release);
    RT.store(rt as *const Runtime as *mut Runtime, Ordering::Release);
    STATE.store(RUNNING, Ordering::Release);
}

/// Forget the kept runtime: the process is exiting and tears it down.
pub(crate) fn take_dormant() -> Option<&'static Runtime> {
    let p = DORMANT.swap(std::ptr::null_mut(), Ordering::AcqRel);
    // SAFETY: as in `dormant`.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// `crate::error`'s way to end the job: through the bootstrap while the runtime is live or
/// kept by the last finalize. A PE failing as it initializes again must end the job through
/// the launcher too: exiting with its status instead ran the exit handler, which finalizes
/// the kept bootstrap, and mpirun then took the PE's exit for a normal one (status 0, seen
/// under load).
fn abort_job(code: i32, msg: &str) {
    if let Some(rt) = try_get().or_else(dormant) {
        rt.boot.abort(code, msg)
    }
}

/// For tools (`shmem_info`): a one-PE bootstrap without initializing the library.
pub fn use_singleton_bootstrap() {
    BOOT.get_or_init(|| Box::new(bootstrap::singleton::Singleton::new()));
}

/// For tools: open the selected spml so that components needing its transport can be probed.
///
/// # Safety
/// `core` must be the core services table.
pub unsafe fn open_spml_for_tools(sel: &Selection, core: *const CoreServices) {
    if let Some(c) = sel.ranked.first() {
        // SAFETY: the caller's services table; `c` is an spml component.
        if let Ok(ops) = unsafe { plugin::bind::open::<SpmlOps>(c, core) } {
            set_transport(ops.transport);
        }
    }
}
