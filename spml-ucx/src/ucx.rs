//! UCX, wrapped in plain Rust: one context with one multi-thread-mode worker, an endpoint per PE,
//! memory registrations, remote keys indexed `[pe][segment]`, the RMA/atomic/ordering
//! operations, and the progress thread. Nothing here knows the core: `lib.rs` is a thin C table
//! over [`Ucx`], and the unit tests drive [`Ucx`] directly in one process.
//!
//! Hot paths ([`Ucx::put`], [`Ucx::get`], [`Ucx::atomic_add_u64`], [`Ucx::atomic`]) neither
//! allocate, lock (beyond UCX's own worker lock in multi-thread mode) nor log: they report
//! failures as a `Copy` [`OpError`] that the caller formats on its cold error path.

use rshmem_plugin_api::{AMO_ADD, AMO_AND, AMO_CSWAP, AMO_FETCH, AMO_OR, AMO_SET, AMO_SWAP, AMO_XOR};
use rshmem_ucx_sys as sys;
use std::ffi::{c_int, c_void};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Segments per PE the key table holds (the core uses a handful: heap, global data, ...).
pub const MAX_SEGMENTS: usize = 16;

/// How long a peer may stay unreachable before a waiting PE gives up on the job. Peers leave
/// right after the final barrier, possibly before this PE has entered `finalize`; a short grace
/// keeps that normal race from turning into an abort, while a real failure still ends the job
/// instead of leaving it hanging.
pub const PEER_FAILURE_GRACE: Duration = Duration::from_secs(2);

/// How long `connect` waits for the endpoints to be wired up.
pub const WIREUP_TIMEOUT: Duration = Duration::from_secs(10);

/// How long `finalize` waits for outstanding operations and endpoint closes.
pub const FINALIZE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long the idle progress thread sleeps on the worker's event fd before looking again.
const IDLE_POLL_MS: c_int = 10;

/// How the component is configured (from its parameters).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Run a thread that progresses the worker (target-side progress while the PE computes).
    pub progress_thread: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { progress_thread: true }
    }
}

/// Context features: RMA and both atomic widths; wake-up events when a progress thread will
/// sleep on the worker's fd.
pub fn features(opts: &Options) -> u64 {
    let mut f = sys::UCP_FEATURE_RMA | sys::UCP_FEATURE_AMO32 | sys::UCP_FEATURE_AMO64;
    if opts.progress_thread {
        f |= sys::UCP_FEATURE_WAKEUP;
    }
    f as u64
}

/// Why an operation failed. `Copy` and allocation-free so that hot paths can return it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OpError {
    /// No endpoint to that PE (out of range, or `connect` has not run).
    NotConnected,
    /// No remote key for that PE and segment (`add_segment` has not run for it).
    NoKey,
    /// An atomic operation or width this component does not know.
    Invalid,
    /// UCX reported this status.
    Status(sys::ucs_status_t),
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpError::NotConnected => f.write_str("no UCX endpoint to that PE (not connected)"),
            OpError::NoKey => f.write_str("no remote key for that segment of the PE"),
            OpError::Invalid => f.write_str("unsupported atomic operation or size"),
            OpError::Status(s) => f.write_str(sys::status_str(*s)),
        }
    }
}

fn check(what: &str, s: sys::ucs_status_t) -> Result<(), String> {
    if s == sys::UCS_OK {
        Ok(())
    } else {
        Err(format!("{what}: {}", sys::status_string(s)))
    }
}

#[inline(always)]
fn status(s: sys::ucs_status_t) -> Result<(), OpError> {
    if s == sys::UCS_OK {
        Ok(())
    } else {
        Err(OpError::Status(s))
    }
}

/// Create a context with `features` (multi-thread capable, so sshmem may map memory while the
/// progress thread drives the worker).
fn create_context(features: u64, estimated_eps: usize) -> Result<sys::ucp_context_h, String> {
    let mut config: *mut sys::ucp_config_t = std::ptr::null_mut();
    // SAFETY: NULL prefix and file name select the defaults; `config` is a valid out-pointer.
    check("ucp_config_read", unsafe {
        sys::ucp_config_read(std::ptr::null(), std::ptr::null(), &mut config)
    })?;
    let params = sys::ucp_params_t {
        field_mask: (sys::UCP_PARAM_FIELD_FEATURES
            | sys::UCP_PARAM_FIELD_MT_WORKERS_SHARED
            | sys::UCP_PARAM_FIELD_ESTIMATED_NUM_EPS) as u64,
        features,
        mt_workers_shared: 1,
        estimated_num_eps: estimated_eps.max(1),
        ..Default::default()
    };
    let mut context: sys::ucp_context_h = std::ptr::null_mut();
    // SAFETY: valid parameters, the configuration just read, and a valid out-pointer.
    let st = unsafe { sys::ucp_init(&params, config, &mut context) };
    // SAFETY: the configuration is no longer needed once ucp_init returned.
    unsafe { sys::ucp_config_release(config) };
    check("ucp_init", st)?;
    Ok(context)
}

/// Can UCX run here with these features? Creates a context and cleans it up again.
pub fn probe(features: u64) -> Result<(), String> {
    let context = create_context(features, 1)?;
    // SAFETY: the probe context has no workers or registrations.
    unsafe { sys::ucp_cleanup(context) };
    Ok(())
}

/// The first endpoint failure seen, and whether this PE is shutting down (then failures of
/// peers that already left are expected).
struct Health {
    start: Instant,
    /// Milliseconds after `start` (plus one) at which the first failure was recorded; 0: none.
    failed_at: AtomicU64,
    failed_pe: AtomicUsize,
    failed_status: AtomicI32,
    finalizing: AtomicBool,
}

impl Health {
    fn new() -> Health {
        Health {
            start: Instant::now(),
            failed_at: AtomicU64::new(0),
            failed_pe: AtomicUsize::new(usize::MAX),
            failed_status: AtomicI32::new(0),
            finalizing: AtomicBool::new(false),
        }
    }

    fn record(&self, pe: usize, st: sys::ucs_status_t) {
        if self.failed_pe.compare_exchange(usize::MAX, pe, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            self.failed_status.store(st as i32, Ordering::Relaxed);
            let ms = self.start.elapsed().as_millis() as u64 + 1;
            self.failed_at.store(ms, Ordering::Release);
        }
    }

    #[inline(always)]
    fn failure(&self) -> Option<(usize, sys::ucs_status_t, Duration)> {
        let at = self.failed_at.load(Ordering::Acquire);
        if at == 0 {
            return None;
        }
        let pe = self.failed_pe.load(Ordering::Acquire);
        let st = self.failed_status.load(Ordering::Relaxed) as sys::ucs_status_t;
        let since = self.start.elapsed().saturating_sub(Duration::from_millis(at - 1));
        Some((pe, st, since))
    }

    /// A failure that is neither explained by this PE's shutdown nor younger than the grace.
    #[inline(always)]
    fn overdue(&self) -> Option<(usize, sys::ucs_status_t)> {
        match self.failure() {
            Some((pe, st, since))
                if since >= PEER_FAILURE_GRACE && !self.finalizing.load(Ordering::Acquire) =>
            {
                Some((pe, st))
            }
            _ => None,
        }
    }
}

/// What an endpoint's error callback receives: the PE it leads to and where to record failures
/// (the `Ucx`'s `Health`, which outlives its endpoints).
struct EpArg {
    pe: usize,
    health: *const Health,
}

/// UCX calls this (from whichever thread progresses the worker) when the endpoint to a peer
/// fails, e.g. because the peer process died. Only records the failure: the operations that were
/// in flight complete with an error status (their callers abort, naming the PE), and a PE left
/// waiting is aborted by [`Ucx::overdue_failure`] checks after [`PEER_FAILURE_GRACE`].
unsafe extern "C" fn ep_error(arg: *mut c_void, _ep: sys::ucp_ep_h, st: sys::ucs_status_t) {
    let r = std::panic::catch_unwind(|| {
        // SAFETY: `arg` is one of the `EpArg`s owned by the `Ucx` that owns this endpoint.
        let a = unsafe { &*(arg as *const EpArg) };
        // SAFETY: the `Ucx` holds the `Health` until after its endpoints are closed.
        unsafe { &*a.health }.record(a.pe, st);
    });
    if r.is_err() {
        std::process::abort();
    }
}

/// Called by the progress thread with a message when the job cannot go on (a peer failed
/// beyond the grace, or the thread itself panicked). `lib.rs` aborts the job through the core.
pub type FatalHook = fn(&str);

struct ProgressThread {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

/// What the progress thread uses; the `Ucx` joins the thread before destroying the worker.
struct ThreadShared {
    worker: sys::ucp_worker_h,
    health: Arc<Health>,
}
// SAFETY: the worker is in UCS_THREAD_MODE_MULTI (UCX serialises access to it) and outlives the
// thread (joined in `stop_progress_thread`); `Health` is made of atomics.
unsafe impl Send for ThreadShared {}

/// A UCX context with one worker, shared by the application threads and the progress thread
/// (`UCS_THREAD_MODE_MULTI`), its endpoints and the peers' remote keys.
pub struct Ucx {
    context: sys::ucp_context_h,
    worker: sys::ucp_worker_h,
    address: Vec<u8>,
    n_pes: usize,
    wakeup: bool,
    eps: Box<[AtomicPtr<sys::ucp_ep>]>,
    /// `rkeys[pe * MAX_SEGMENTS + seg]`.
    rkeys: Box<[AtomicPtr<sys::ucp_rkey>]>,
    ep_args: Box<[EpArg]>,
    health: Arc<Health>,
    connected: AtomicBool,
    closed: AtomicBool,
    /// Live registrations made through [`Ucx::mem_map`], and registrations of the context made
    /// by someone else (sshmem "ucx") that the spml was handed: UCX cannot release a context
    /// while any of them is live.
    own_regs: AtomicUsize,
    borrowed_regs: AtomicUsize,
    context_released: AtomicBool,
    progress: Mutex<Option<ProgressThread>>,
}

// SAFETY: the worker is created in UCS_THREAD_MODE_MULTI and the context with mt_workers_shared,
// so UCX serialises concurrent calls; the endpoint and key tables are atomics; `EpArg`'s raw
// pointer only refers to the `Health` box owned by the same `Ucx`.
unsafe impl Send for Ucx {}
// SAFETY: as above.
unsafe impl Sync for Ucx {}

impl Ucx {
    /// Read UCX's configuration and create a context and a multi-thread-mode worker for a job of
    /// `n_pes` PEs.
    pub fn new(n_pes: usize, opts: &Options) -> Result<Ucx, String> {
        let context = create_context(features(opts), n_pes)?;
        let wparams = sys::ucp_worker_params_t {
            field_mask: sys::UCP_WORKER_PARAM_FIELD_THREAD_MODE as u64,
            thread_mode: sys::UCS_THREAD_MODE_MULTI,
            ..Default::default()
        };
        let mut worker: sys::ucp_worker_h = std::ptr::null_mut();
        // SAFETY: a live context, valid parameters and out-pointer.
        if let Err(e) =
            check("ucp_worker_create", unsafe { sys::ucp_worker_create(context, &wparams, &mut worker) })
        {
            // SAFETY: the context has nothing else attached.
            unsafe { sys::ucp_cleanup(context) };
            return Err(e);
        }
        let mut attr = sys::ucp_worker_attr_t {
            field_mask: sys::UCP_WORKER_ATTR_FIELD_THREAD_MODE as u64,
            ..Default::default()
        };
        // SAFETY: our live worker; valid out-pointer.
        let mt = unsafe { sys::ucp_worker_query(worker, &mut attr) } == sys::UCS_OK
            && attr.thread_mode == sys::UCS_THREAD_MODE_MULTI;
        let mut addr: *mut sys::ucp_address_t = std::ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: our live worker; valid out-pointers.
        let st = unsafe { sys::ucp_worker_get_address(worker, &mut addr, &mut len) };
        if !mt || st != sys::UCS_OK {
            // SAFETY: releasing what was created above, worker first.
            unsafe {
                sys::ucp_worker_destroy(worker);
                sys::ucp_cleanup(context);
            }
            return Err(if mt {
                format!("ucp_worker_get_address: {}", sys::status_string(st))
            } else {
                "UCX cannot provide a multi-thread worker (UCS_THREAD_MODE_MULTI)".to_string()
            });
        }
        // SAFETY: UCX returned `len` readable bytes at `addr`; released right after the copy.
        let address = unsafe { std::slice::from_raw_parts(addr as *const u8, len) }.to_vec();
        // SAFETY: the address came from this worker.
        unsafe { sys::ucp_worker_release_address(worker, addr) };
        let health = Arc::new(Health::new());
        let hp = Arc::as_ptr(&health);
        Ok(Ucx {
            context,
            worker,
            address,
            n_pes,
            wakeup: opts.progress_thread,
            eps: (0..n_pes).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect(),
            rkeys: (0..n_pes * MAX_SEGMENTS).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect(),
            ep_args: (0..n_pes).map(|pe| EpArg { pe, health: hp }).collect(),
            health,
            connected: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            own_regs: AtomicUsize::new(0),
            borrowed_regs: AtomicUsize::new(0),
            context_released: AtomicBool::new(false),
            progress: Mutex::new(None),
        })
    }

    pub fn context(&self) -> sys::ucp_context_h {
        self.context
    }

    pub fn worker(&self) -> sys::ucp_worker_h {
        self.worker
    }

    /// This worker's address, which peers need to create their endpoints to it.
    pub fn address(&self) -> &[u8] {
        &self.address
    }

    pub fn n_pes(&self) -> usize {
        self.n_pes
    }

    /// Create the endpoint to every PE (`addrs[pe]` is its worker address; ours included), with
    /// peer failure detection. Once only.
    pub fn connect(&self, addrs: &[Vec<u8>]) -> Result<(), String> {
        if addrs.len() != self.n_pes {
            return Err(format!("{} worker addresses for {} PEs", addrs.len(), self.n_pes));
        }
        if self.connected.swap(true, Ordering::AcqRel) {
            return Err("already connected".into());
        }
        for (pe, a) in addrs.iter().enumerate() {
            let params = sys::ucp_ep_params_t {
                field_mask: (sys::UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
                    | sys::UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
                    | sys::UCP_EP_PARAM_FIELD_ERR_HANDLER) as u64,
                address: a.as_ptr() as *const sys::ucp_address_t,
                err_mode: sys::UCP_ERR_HANDLING_MODE_PEER,
                err_handler: sys::ucp_err_handler_t {
                    cb: Some(ep_error),
                    arg: &self.ep_args[pe] as *const EpArg as *mut c_void,
                },
                ..Default::default()
            };
            let mut ep: sys::ucp_ep_h = std::ptr::null_mut();
            // SAFETY: our worker; the address bytes outlive the call; the error handler's argument
            // lives as long as `self`, which closes the endpoint before dropping it.
            check(&format!("ucp_ep_create to PE {pe}"), unsafe {
                sys::ucp_ep_create(self.worker, &params, &mut ep)
            })?;
            self.eps[pe].store(ep, Ordering::Release);
        }
        Ok(())
    }

    /// Wait (at most `timeout`) until every endpoint is wired up, by flushing the worker: UCX
    /// connects endpoints lazily, and a peer dying while operations are queued on an endpoint
    /// still being wired up trips an assertion inside UCX 1.13 instead of failing the operations.
    /// Needs the peers to progress (their progress threads, or their own `wireup`). True when
    /// everything was connected in time; else the flush is left to complete on its own.
    pub fn wireup(&self, timeout: Duration) -> bool {
        let param = sys::ucp_request_param_t::default();
        // SAFETY: our own worker.
        let r = unsafe { sys::ucp_worker_flush_nbx(self.worker, &param) };
        match self.wait_until(r, Instant::now() + timeout) {
            Ok(st) => st == sys::UCS_OK,
            Err(r) => {
                // SAFETY: a live request; UCX releases it when it completes.
                unsafe { sys::ucp_request_free(r) };
                false
            }
        }
    }

    /// Register `[base, base + len)` for remote access; with `allocate`, UCX allocates the memory
    /// itself (`base` is then a hint or NULL). Returns the registration and the address.
    pub fn mem_map(
        &self,
        base: *mut c_void,
        len: usize,
        allocate: bool,
    ) -> Result<(sys::ucp_mem_h, *mut c_void), String> {
        let r = mem_map(self.context, base, len, allocate)?;
        self.own_regs.fetch_add(1, Ordering::AcqRel);
        Ok(r)
    }

    /// Release a registration made by [`Ucx::mem_map`].
    ///
    /// # Safety
    /// `memh` must be a live registration made by [`Ucx::mem_map`] that no peer still uses.
    pub unsafe fn mem_unmap(&self, memh: sys::ucp_mem_h) {
        // SAFETY: guaranteed by the caller.
        unsafe { sys::ucp_mem_unmap(self.context, memh) };
        self.own_regs.fetch_sub(1, Ordering::AcqRel);
    }

    /// Note that a registration of this context made elsewhere (sshmem "ucx") is in use; it
    /// keeps [`Ucx::finalize`] from releasing the context under it.
    pub fn borrow_registration(&self) {
        self.borrowed_regs.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether [`Ucx::finalize`] released the context (it does only when no registration of it
    /// is live).
    pub fn context_released(&self) -> bool {
        self.context_released.load(Ordering::Acquire)
    }

    /// The packed remote key of a registration.
    ///
    /// # Safety
    /// `memh` must be a live registration of this context.
    pub unsafe fn rkey_pack(&self, memh: sys::ucp_mem_h) -> Result<Vec<u8>, String> {
        let mut buf: *mut c_void = std::ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: a live registration (caller) and valid out-pointers.
        check("ucp_rkey_pack", unsafe { sys::ucp_rkey_pack(self.context, memh, &mut buf, &mut len) })?;
        // SAFETY: UCX returned `len` readable bytes at `buf`.
        let v = unsafe { std::slice::from_raw_parts(buf as *const u8, len) }.to_vec();
        // SAFETY: the buffer came from ucp_rkey_pack and is released once.
        unsafe { sys::ucp_rkey_buffer_release(buf) };
        Ok(v)
    }

    /// Unpack PE `pe`'s packed key for its segment `seg` (replacing an earlier one).
    pub fn add_rkey(&self, pe: usize, seg: usize, packed: &[u8]) -> Result<(), String> {
        if seg >= MAX_SEGMENTS {
            return Err(format!("segment {seg} is beyond the {MAX_SEGMENTS} this spml supports"));
        }
        let ep = self.ep(pe).map_err(|e| format!("PE {pe}: {e}"))?;
        let mut rkey: sys::ucp_rkey_h = std::ptr::null_mut();
        // SAFETY: a live endpoint; the packed key outlives the call; valid out-pointer.
        check(&format!("ucp_ep_rkey_unpack for PE {pe} segment {seg}"), unsafe {
            sys::ucp_ep_rkey_unpack(ep, packed.as_ptr() as *const c_void, &mut rkey)
        })?;
        let old = self.rkeys[pe * MAX_SEGMENTS + seg].swap(rkey, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: the key we replaced; segments are (re)announced before they are used.
            unsafe { sys::ucp_rkey_destroy(old) };
        }
        Ok(())
    }

    #[inline(always)]
    fn ep(&self, pe: usize) -> Result<sys::ucp_ep_h, OpError> {
        match self.eps.get(pe).map(|e| e.load(Ordering::Acquire)) {
            Some(ep) if !ep.is_null() => Ok(ep),
            _ => Err(OpError::NotConnected),
        }
    }

    #[inline(always)]
    fn target(&self, pe: usize, seg: usize) -> Result<(sys::ucp_ep_h, sys::ucp_rkey_h), OpError> {
        let ep = self.ep(pe)?;
        if seg >= MAX_SEGMENTS {
            return Err(OpError::NoKey);
        }
        let rkey = self.rkeys[pe * MAX_SEGMENTS + seg].load(Ordering::Acquire);
        if rkey.is_null() {
            return Err(OpError::NoKey);
        }
        Ok((ep, rkey))
    }

    /// A local address through which `raddr` of PE `pe`'s segment `seg` can be loaded and
    /// stored (shared-memory transports), or NULL.
    pub fn remote_ptr(&self, pe: usize, seg: usize, raddr: u64) -> *mut c_void {
        let Ok((_, rkey)) = self.target(pe, seg) else {
            return std::ptr::null_mut();
        };
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: a live key; valid out-pointer.
        match unsafe { sys::ucp_rkey_ptr(rkey, raddr, &mut p) } {
            sys::UCS_OK => p,
            _ => std::ptr::null_mut(),
        }
    }

    /// Wait for what a `*_nbx` call returned: progress until the request completes, then free it.
    #[inline(always)]
    fn wait(&self, r: sys::ucs_status_ptr_t) -> sys::ucs_status_t {
        if !sys::ptr_is_request(r) {
            return sys::ptr_status(r);
        }
        loop {
            // SAFETY: a live request of our worker (freed only below).
            let st = unsafe { sys::ucp_request_check_status(r) };
            if st != sys::UCS_INPROGRESS {
                // SAFETY: completed, freed exactly once.
                unsafe { sys::ucp_request_free(r) };
                return st;
            }
            // SAFETY: our own multi-thread-mode worker.
            unsafe { sys::ucp_worker_progress(self.worker) };
        }
    }

    /// Non-blocking: hand the request back to UCX at once; completion is observed by a flush.
    #[inline(always)]
    fn release(r: sys::ucs_status_ptr_t) -> sys::ucs_status_t {
        if sys::ptr_is_request(r) {
            // SAFETY: a live request; UCX completes and recycles it by itself after this.
            unsafe { sys::ucp_request_free(r) };
            sys::UCS_OK
        } else {
            sys::ptr_status(r)
        }
    }

    /// Put `len` bytes from `src` to `raddr` in PE `pe`'s segment `seg`. Blocking: returns when
    /// `src` may be reused; else completes at the next [`Ucx::flush`].
    ///
    /// # Safety
    /// `src` must be readable for `len` bytes (until the next flush when not blocking).
    #[inline(always)]
    pub unsafe fn put(
        &self,
        pe: usize,
        seg: usize,
        raddr: u64,
        src: *const c_void,
        len: usize,
        blocking: bool,
    ) -> Result<(), OpError> {
        let (ep, rkey) = self.target(pe, seg)?;
        let param = sys::ucp_request_param_t::default();
        // SAFETY: live endpoint and key; `src` readable for `len` (caller).
        let r = unsafe { sys::ucp_put_nbx(ep, src, len, raddr, rkey, &param) };
        status(if blocking { self.wait(r) } else { Self::release(r) })
    }

    /// Get `len` bytes at `raddr` of PE `pe`'s segment `seg` into `dst`. Blocking: returns when
    /// `dst` holds the data; else `dst` is valid after the next [`Ucx::flush`].
    ///
    /// # Safety
    /// `dst` must be writable for `len` bytes (until the next flush when not blocking).
    #[inline(always)]
    pub unsafe fn get(
        &self,
        pe: usize,
        seg: usize,
        raddr: u64,
        dst: *mut c_void,
        len: usize,
        blocking: bool,
    ) -> Result<(), OpError> {
        let (ep, rkey) = self.target(pe, seg)?;
        let param = sys::ucp_request_param_t::default();
        // SAFETY: live endpoint and key; `dst` writable for `len` (caller).
        let r = unsafe { sys::ucp_get_nbx(ep, dst, len, raddr, rkey, &param) };
        status(if blocking { self.wait(r) } else { Self::release(r) })
    }

    /// Atomically add `value` to the 64-bit word at `raddr` (no fetch). Returns once UCX no
    /// longer needs the operand; the update is remotely complete at the next flush.
    #[inline(always)]
    pub fn atomic_add_u64(&self, pe: usize, seg: usize, raddr: u64, value: u64) -> Result<(), OpError> {
        let (ep, rkey) = self.target(pe, seg)?;
        let param = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_DATATYPE,
            datatype: sys::ucp_dt_make_contig(8),
            ..Default::default()
        };
        // SAFETY: live endpoint and key; `value` outlives the request (waited for below).
        let r = unsafe {
            sys::ucp_atomic_op_nbx(
                ep,
                sys::UCP_ATOMIC_OP_ADD,
                &value as *const u64 as *const c_void,
                1,
                raddr,
                rkey,
                &param,
            )
        };
        status(self.wait(r))
    }

    /// A 4- or 8-byte atomic `op` (`AMO_*` of the plugin ABI) at `raddr`. Returns the previous
    /// value (fetched when `fetch` is set or the operation needs it, else 0) once complete.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn atomic(
        &self,
        pe: usize,
        seg: usize,
        raddr: u64,
        op: u32,
        size: u32,
        value: u64,
        cond: u64,
        fetch: bool,
    ) -> Result<u64, OpError> {
        match size {
            4 => self.amo::<u32>(pe, seg, raddr, op, value as u32, cond as u32, fetch).map(u64::from),
            8 => self.amo::<u64>(pe, seg, raddr, op, value, cond, fetch),
            _ => Err(OpError::Invalid),
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn amo<T: Copy + Default>(
        &self,
        pe: usize,
        seg: usize,
        raddr: u64,
        op: u32,
        value: T,
        cond: T,
        fetch: bool,
    ) -> Result<T, OpError> {
        let zero = T::default();
        // UCX's table: ADD/AND/OR/XOR: Y op= X (reply optional); SWAP: Result=Y, Y=X (reply
        // required); CSWAP: Result=Y, if X==Y then Y=Z with X in `buffer` and Z passed in the reply
        // buffer, which then receives the result.
        let (uop, operand, reply_in, fetch) = match op {
            AMO_FETCH => (sys::UCP_ATOMIC_OP_ADD, zero, zero, true),
            AMO_SET | AMO_SWAP => (sys::UCP_ATOMIC_OP_SWAP, value, zero, true),
            AMO_CSWAP => (sys::UCP_ATOMIC_OP_CSWAP, cond, value, true),
            AMO_ADD => (sys::UCP_ATOMIC_OP_ADD, value, zero, fetch),
            AMO_AND => (sys::UCP_ATOMIC_OP_AND, value, zero, fetch),
            AMO_OR => (sys::UCP_ATOMIC_OP_OR, value, zero, fetch),
            AMO_XOR => (sys::UCP_ATOMIC_OP_XOR, value, zero, fetch),
            _ => return Err(OpError::Invalid),
        };
        let (ep, rkey) = self.target(pe, seg)?;
        let mut reply = reply_in;
        let mut param = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_DATATYPE,
            datatype: sys::ucp_dt_make_contig(std::mem::size_of::<T>()),
            ..Default::default()
        };
        if fetch {
            param.op_attr_mask |= sys::UCP_OP_ATTR_FIELD_REPLY_BUFFER;
            param.reply_buffer = &mut reply as *mut T as *mut c_void;
        }
        // SAFETY: live endpoint and key; `operand` and `reply` outlive the request (waited for).
        let r = unsafe {
            sys::ucp_atomic_op_nbx(ep, uop, &operand as *const T as *const c_void, 1, raddr, rkey, &param)
        };
        status(self.wait(r))?;
        Ok(if fetch { reply } else { zero })
    }

    /// Complete every operation issued on this worker (remote completion included).
    pub fn flush(&self) -> Result<(), OpError> {
        let param = sys::ucp_request_param_t::default();
        // SAFETY: our own worker.
        let r = unsafe { sys::ucp_worker_flush_nbx(self.worker, &param) };
        status(self.wait(r))
    }

    /// Order operations issued before against those issued after, per target.
    pub fn fence(&self) -> Result<(), OpError> {
        // SAFETY: our own worker.
        status(unsafe { sys::ucp_worker_fence(self.worker) })
    }

    /// Drive communication once; true when something happened.
    #[inline(always)]
    pub fn progress(&self) -> bool {
        // SAFETY: our own multi-thread-mode worker.
        unsafe { sys::ucp_worker_progress(self.worker) != 0 }
    }

    /// The first peer whose endpoint failed, with UCX's status, if any.
    pub fn peer_failure(&self) -> Option<(usize, sys::ucs_status_t)> {
        self.health.failure().map(|(pe, st, _)| (pe, st))
    }

    /// A peer failure that this PE should not wait out: older than [`PEER_FAILURE_GRACE`] and
    /// not explained by this PE's own shutdown. One atomic load when there is none.
    #[inline(always)]
    pub fn overdue_failure(&self) -> Option<(usize, sys::ucs_status_t)> {
        self.health.overdue()
    }

    /// Start the thread that gives this PE target-side progress while the application computes:
    /// it progresses the worker while there is work and, when idle, arms the worker and sleeps
    /// on its event fd (at most [`IDLE_POLL_MS`] at a time). `fatal` is called with a message
    /// when a peer failure is overdue or the thread panics.
    pub fn start_progress_thread(&self, fatal: Option<FatalHook>) -> Result<(), String> {
        if !self.wakeup {
            return Err("the context was created without wake-up events (progress_thread=0)".into());
        }
        let mut slot = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            return Ok(());
        }
        let mut efd: c_int = -1;
        // SAFETY: our worker, created with UCP_FEATURE_WAKEUP; valid out-pointer.
        check("ucp_worker_get_efd", unsafe { sys::ucp_worker_get_efd(self.worker, &mut efd) })?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let shared = ThreadShared { worker: self.worker, health: self.health.clone() };
        let handle = std::thread::Builder::new()
            .name("rshmem-ucx-progress".into())
            .spawn(move || {
                let shared = shared;
                let body = std::panic::AssertUnwindSafe(|| progress_loop(&shared, efd, &stop2, fatal));
                if std::panic::catch_unwind(body).is_err() {
                    match fatal {
                        Some(f) => f("spml ucx: the progress thread panicked"),
                        None => std::process::abort(),
                    }
                }
            })
            .map_err(|e| format!("cannot start the progress thread: {e}"))?;
        *slot = Some(ProgressThread { stop, handle });
        Ok(())
    }

    pub fn progress_thread_running(&self) -> bool {
        self.progress.lock().map(|s| s.is_some()).unwrap_or(false)
    }

    /// Stop and join the progress thread (only signal it when called from that thread itself,
    /// e.g. when it ends the process).
    pub fn stop_progress_thread(&self) {
        let t = self.progress.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = t {
            t.stop.store(true, Ordering::Release);
            if t.handle.thread().id() == std::thread::current().id() {
                return;
            }
            // SAFETY: our worker; wakes the thread from poll() at once.
            unsafe { sys::ucp_worker_signal(self.worker) };
            let _ = t.handle.join();
        }
    }

    /// Tear everything down: stop the progress thread, complete outstanding operations, destroy
    /// the keys, force-close the endpoints (peers may be gone already), destroy the worker and
    /// then the context, unless a registration of it is still live (UCX asserts on that; at the
    /// end of a job the symmetric heap sshmem "ucx" allocated stays mapped, and the process exit
    /// reclaims both). Every wait is bounded by [`FINALIZE_TIMEOUT`]: a peer that neither answers
    /// nor is detected as gone must not hang the exit; what could not be completed is then left
    /// to the process exit, and the error says so. Peer failures from now on are expected and
    /// ignored. Idempotent; nothing but [`Ucx::mem_unmap`] may be called afterwards, and only
    /// while the context was kept.
    pub fn finalize(&self) -> Result<(), String> {
        self.health.finalizing.store(true, Ordering::Release);
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.stop_progress_thread();
        let deadline = Instant::now() + FINALIZE_TIMEOUT;
        let mut pending: Vec<sys::ucs_status_ptr_t> = Vec::new();
        let param = sys::ucp_request_param_t::default();
        // SAFETY: our own worker.
        let r = unsafe { sys::ucp_worker_flush_nbx(self.worker, &param) };
        // An error status here means a peer has left already, which is normal at this point.
        if let Err(r) = self.wait_until(r, deadline) {
            pending.push(r);
        }
        for k in self.rkeys.iter() {
            let rkey = k.swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !rkey.is_null() {
                // SAFETY: a key we unpacked, destroyed once.
                unsafe { sys::ucp_rkey_destroy(rkey) };
            }
        }
        let close = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_FLAGS,
            flags: sys::UCP_EP_CLOSE_FLAG_FORCE,
            ..Default::default()
        };
        for e in self.eps.iter() {
            let ep = e.swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !ep.is_null() {
                // SAFETY: an endpoint we created, closed once; a forced close needs no peer and
                // cancels what is still outstanding on it.
                let r = unsafe { sys::ucp_ep_close_nbx(ep, &close) };
                if let Err(r) = self.wait_until(r, deadline) {
                    pending.push(r);
                }
            }
        }
        // Requests that were waiting for the closed endpoints complete now (cancelled).
        let grace = Instant::now() + Duration::from_millis(100);
        pending.retain(|&r| self.wait_until(r, deadline.max(grace)).is_err());
        if !pending.is_empty() {
            return Err(format!(
                "{} request(s) did not complete within {:?}; the UCX worker and context are left to the process exit",
                pending.len(),
                FINALIZE_TIMEOUT
            ));
        }
        // SAFETY: no endpoints, keys, requests or threads use the worker any more.
        unsafe { sys::ucp_worker_destroy(self.worker) };
        if self.own_regs.load(Ordering::Acquire) == 0 && self.borrowed_regs.load(Ordering::Acquire) == 0 {
            // SAFETY: the worker is gone and no registration of the context is live.
            unsafe { sys::ucp_cleanup(self.context) };
            self.context_released.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// [`Ucx::wait`] with a deadline (teardown only): the request back when it is still running.
    fn wait_until(
        &self,
        r: sys::ucs_status_ptr_t,
        deadline: Instant,
    ) -> Result<sys::ucs_status_t, sys::ucs_status_ptr_t> {
        if !sys::ptr_is_request(r) {
            return Ok(sys::ptr_status(r));
        }
        loop {
            // SAFETY: a live request of our worker (freed only below).
            let st = unsafe { sys::ucp_request_check_status(r) };
            if st != sys::UCS_INPROGRESS {
                // SAFETY: completed, freed exactly once.
                unsafe { sys::ucp_request_free(r) };
                return Ok(st);
            }
            if Instant::now() >= deadline {
                return Err(r);
            }
            // SAFETY: our own multi-thread-mode worker.
            unsafe { sys::ucp_worker_progress(self.worker) };
        }
    }
}

impl Drop for Ucx {
    fn drop(&mut self) {
        let _ = self.finalize();
    }
}

fn progress_loop(shared: &ThreadShared, efd: c_int, stop: &AtomicBool, fatal: Option<FatalHook>) {
    let health = &*shared.health;
    let mut reported = false;
    while !stop.load(Ordering::Acquire) {
        // SAFETY: a multi-thread-mode worker that outlives this thread.
        if unsafe { sys::ucp_worker_progress(shared.worker) } != 0 {
            continue;
        }
        if !reported {
            if let (Some((pe, st)), Some(f)) = (health.overdue(), fatal) {
                reported = true;
                f(&peer_lost_message(pe, st));
            }
        }
        // SAFETY: as above; arming after a progress call that found nothing to do.
        match unsafe { sys::ucp_worker_arm(shared.worker) } {
            sys::UCS_OK => {
                let mut pfd = libc::pollfd { fd: efd, events: libc::POLLIN, revents: 0 };
                // SAFETY: one valid pollfd; the fd belongs to the worker, which outlives us.
                unsafe { libc::poll(&mut pfd, 1, IDLE_POLL_MS) };
            }
            sys::UCS_ERR_BUSY => {}
            _ => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// The message for a peer that became unreachable.
pub fn peer_lost_message(pe: usize, st: sys::ucs_status_t) -> String {
    format!(
        "spml ucx: PE {pe} is unreachable ({}): it died or left without shmem_finalize",
        sys::status_string(st)
    )
}

/// `ucp_mem_map` of `[base, base + len)` (or an allocation of `len` bytes with `allocate`,
/// `base` then being a hint or NULL), and the address of the mapped memory.
fn mem_map(
    context: sys::ucp_context_h,
    base: *mut c_void,
    len: usize,
    allocate: bool,
) -> Result<(sys::ucp_mem_h, *mut c_void), String> {
    let params = sys::ucp_mem_map_params_t {
        field_mask: (sys::UCP_MEM_MAP_PARAM_FIELD_ADDRESS
            | sys::UCP_MEM_MAP_PARAM_FIELD_LENGTH
            | sys::UCP_MEM_MAP_PARAM_FIELD_FLAGS) as u64,
        address: base,
        length: len,
        flags: if allocate { sys::UCP_MEM_MAP_ALLOCATE } else { 0 },
        ..Default::default()
    };
    let mut memh: sys::ucp_mem_h = std::ptr::null_mut();
    // SAFETY: a live context (caller), valid parameters and out-pointer.
    check(&format!("ucp_mem_map of {len} bytes"), unsafe { sys::ucp_mem_map(context, &params, &mut memh) })?;
    let mut attr =
        sys::ucp_mem_attr_t { field_mask: sys::UCP_MEM_ATTR_FIELD_ADDRESS as u64, ..Default::default() };
    // SAFETY: the registration just made; valid out-pointer.
    if let Err(e) = check("ucp_mem_query", unsafe { sys::ucp_mem_query(memh, &mut attr) }) {
        // SAFETY: undoing our own registration.
        unsafe { sys::ucp_mem_unmap(context, memh) };
        return Err(e);
    }
    Ok((memh, attr.address))
}

#[cfg(test)]
mod tests;
