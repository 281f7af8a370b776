//! UCX, wrapped in plain Rust: one context, memory registrations, the progress thread, and
//! channels ([`Channel`]: a worker, an endpoint per PE, remote keys indexed `[pe][segment]`, and
//! the RMA/atomic/ordering operations). The default channel is the [`Ucx`]'s own; each created
//! OpenSHMEM context gets another. Nothing here knows the core: `lib.rs` is a thin C table over
//! these types, and the unit tests drive them directly in one process.

mod addrs;
mod am;
mod batch;
mod channel;
mod cpu_atomic;
pub mod footprint;
mod handler;
pub mod heartbeat;
mod mapping;
mod rma_am;
mod standby;
mod target;
mod wake;
pub use addrs::AddrBook;
pub use am::Header as AmHeader;
pub use batch::PUT_MAX as BATCH_PUT_MAX;
pub use channel::{Channel, ChannelList};
pub use handler::Complaint;
pub use target::{Copier, CHUNK as VIA_TARGET_CHUNK};

use rshmem_ucx_sys as sys;
use std::ffi::{c_int, c_void};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Segments per PE the key table holds: every id the core may pass (the ABI's limit).
pub const MAX_SEGMENTS: usize = rshmem_plugin_api::MAX_SEGMENTS as usize;

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
/// The same while a created channel in use has a batch waiting (the thread sends it once the
/// channel stands idle).
const WAITING_POLL_MS: c_int = 1;

/// How long the progress thread stays off the worker once it sees an application thread drive
/// it, before it looks again; the pause doubles, up to [`ACTIVE_PAUSE_MAX`], while the
/// application keeps at it. Two threads driving one worker take turns on its lock, and every
/// wake-up of the thread costs the application a context switch: with the thread competing
/// for every event, an 8-byte put + quiet over TCP took 25-30 us instead of 16 and the put rate
/// fell by a third; waking every 200 us still cost about 10%.
const ACTIVE_PAUSE_MIN: Duration = Duration::from_micros(200);
/// The longest pause: a PE that stops calling the library gets its progress back within it.
const ACTIVE_PAUSE_MAX: Duration = Duration::from_millis(2);

/// How the component is configured (from its parameters).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Run a thread that progresses the worker (target-side progress while the PE computes).
    pub progress_thread: bool,
    /// Every PE is on this host: network transports listen on the loopback device only, so
    /// nothing of the job is reachable from other machines (UCX_NET_DEVICES, when set, wins).
    pub loopback_only: bool,
    /// How many idle rounds a blocking wait drives the worker before it starts yielding.
    pub spin: Spin,
    /// Batch small puts per peer into one active message (see `batch`).
    pub batch_puts: bool,
    /// UCX moves data over sockets only ([`sockets_only`]): it emulates RMA and atomics with
    /// active messages, so atomics follow batches in order, UCX's older protocol layer is
    /// asked for, and device memory is not handed to UCX ([`takes_cuda_memory`]).
    pub sockets_only: bool,
    /// Carry puts, gets and atomics in the spml's own active messages instead of UCX's RMA and
    /// atomics (`rma_am`); only together with `batch_puts`.
    pub rma_in_messages: bool,
    /// Open UCX's shared-memory transports (posix, sysv). Only sshmem "ucx" needs them (its
    /// peers' memory is mapped through them); the spml's own endpoints ask for peer-failure
    /// handling, which UCX 1.13 does not give over them, so they never carry the spml's
    /// traffic. Each one, opened, gives every PE's worker receive queues of about 2 MB it
    /// touches at start-up. Off only where the user has not set `UCX_TLS`.
    pub shm_transports: bool,
    /// In a job on one host (`loopback_only`), open UCX's TCP transport, through which the
    /// host's PEs reach each other when they do not map each other's memory. Off, the context
    /// has UCX's `self` transport only (and the shared-memory ones where `shm_transports` asks):
    /// no PE holds a listening socket ([`self_only`]).
    pub host_tcp: bool,
}

/// Whether the context leaves out every transport between PEs: a job on one host whose PEs
/// need none (`host_tcp` off), where the user has not named UCX's transports (`UCX_TLS`).
/// UCX's TCP transport listens on a port from the moment a worker opens it, and TCP checks
/// no user: any local user could connect and speak UCX's protocol to the PE. With only
/// `self`, nothing listens.
pub fn self_only(opts: &Options) -> bool {
    opts.loopback_only && !opts.host_tcp && std::env::var_os("UCX_TLS").is_none()
}

/// The transports left out of a context that needs no shared-memory transport.
pub const NO_SHM_TRANSPORTS: &str = "^posix,sysv";

/// Idle progress rounds a blocking operation spins before yielding, when every PE of the host
/// has a core (a round is a progress call, a fraction of a microsecond over TCP, so this covers
/// a round trip). Yielding from the first idle round made an 8-byte get across two emulated
/// hosts 1-2% slower (10.83-10.95 against 10.56-10.85 µs, 4 alternating runs, 2026-11-24):
/// the reply waits for the yield's system call to return. With more PEs than cores a waiter
/// yields at once, since the PE that has to answer may be waiting for this very core.
pub const SPIN_ROUNDS: u32 = 64;

/// The idle rounds of a blocking wait before it yields.
#[derive(Clone, Copy, Debug)]
pub enum Spin {
    /// Always this many.
    Fixed(u32),
    /// [`SPIN_ROUNDS`], or none while the hook says the host has more PEs than CPUs. Asked at
    /// every wait: the core counts the host's CPUs only once init gathered them, after the
    /// channels exist (a PE bound to a core of its own would otherwise count its host as
    /// crowded, and yield at every idle round).
    ByHost(CrowdedHook),
}

impl Spin {
    /// The idle rounds to spin now.
    #[inline]
    pub fn rounds(self) -> u32 {
        match self {
            Spin::Fixed(n) => n,
            Spin::ByHost(crowded) if crowded() => 0,
            Spin::ByHost(_) => SPIN_ROUNDS,
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            progress_thread: true,
            loopback_only: false,
            spin: Spin::Fixed(SPIN_ROUNDS),
            batch_puts: true,
            sockets_only: true,
            rma_in_messages: true,
            shm_transports: true,
            host_tcp: true,
        }
    }
}

/// The network devices a job may use, as `UCX_NET_DEVICES` would name them: the user's
/// choice, else loopback only for a job on one host, else UCX's default (every device).
pub fn net_devices(opts: &Options, user: Option<&str>) -> Option<String> {
    match user {
        Some(u) => Some(u.to_string()),
        None if opts.loopback_only => Some("lo".to_string()),
        None => None,
    }
}

/// Whether UCX will move data over sockets only, which is when batching small puts pays (see
/// `batch`): `UCX_TLS` (if set) names TCP and no RDMA transport; unset, this host has no RDMA
/// device. A `UCX_TLS` that excludes transports (`^...`) is judged by the devices.
pub fn sockets_only(tls: Option<&str>, rdma_devices: bool) -> bool {
    const RDMA: &[&str] = &["rc", "ud", "dc", "ib", "rdma", "verbs", "mlx", "gga", "srd", "all"];
    match tls.map(str::trim) {
        Some(t) if !t.is_empty() && !t.starts_with('^') => {
            let names: Vec<&str> = t.split(',').map(str::trim).collect();
            names.iter().any(|n| n.starts_with("tcp"))
                && !names.iter().any(|n| RDMA.iter().any(|r| n.starts_with(r)))
        }
        _ => !rdma_devices,
    }
}

/// Context features: RMA, both atomic widths and active messages (put-with-signal, see `am`);
/// wake-up events when a progress thread will sleep on the worker's fd.
pub fn features(opts: &Options) -> u64 {
    let mut f = sys::UCP_FEATURE_RMA | sys::UCP_FEATURE_AMO32 | sys::UCP_FEATURE_AMO64 | sys::UCP_FEATURE_AM;
    if opts.progress_thread {
        f |= sys::UCP_FEATURE_WAKEUP;
    }
    f as u64
}

/// The version of the UCX library loaded (`ucp_get_version_string`), say "1.13.1".
pub fn version() -> String {
    // SAFETY: UCX returns a pointer to a static NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(sys::ucp_get_version_string()) }.to_string_lossy().into_owned()
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
    /// The target refused a transfer through its CPU (`target`): not memory it copies for
    /// peers, or its copy failed.
    Refused,
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpError::NotConnected => f.write_str("no UCX endpoint to that PE (not connected)"),
            OpError::NoKey => f.write_str("no remote key for that segment of the PE"),
            OpError::Invalid => f.write_str("unsupported atomic operation or size"),
            OpError::Status(s) => f.write_str(sys::status_str(*s)),
            OpError::Refused => {
                f.write_str("the target refused to copy the bytes into or out of its segment")
            }
        }
    }
}

impl OpError {
    /// Whether UCX said the peer is gone or cannot be reached: what operations on a dead
    /// peer's endpoint complete with.
    pub fn peer_lost(&self) -> bool {
        matches!(
            self,
            OpError::Status(s) if [
                sys::UCS_ERR_ENDPOINT_TIMEOUT,
                sys::UCS_ERR_CONNECTION_RESET,
                sys::UCS_ERR_UNREACHABLE,
            ]
            .contains(s)
        )
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

/// UCX settings this spml gives UCX unless the environment sets them, with the reason.
/// - `UCX_TCP_TX_SEG_SIZE` (UCX's default 8 KiB): RMA over TCP moves data in send segments of
///   this size, each a message of its own, and 8 KiB ones held 1 MiB puts and gets between two
///   emulated hosts to 1.2-1.6 GB/s; 64 KiB segments gave 4.8-5.1 GB/s, with 8-byte
///   latencies and the 8-byte put rate unchanged (`tests/bench/netpath.c`, docs/performance.md,
///   2026-11-24). Receive segments (`UCX_TCP_RX_SEG_SIZE`) are 64 KiB already.
pub const TUNING: &[(&str, &str)] = &[("UCX_TCP_TX_SEG_SIZE", "64k")];

/// Put [`TUNING`] into the environment where it is not there, before UCX reads it: UCX reads
/// a transport's settings from the environment when a worker opens the transport, and its
/// `ucp_config_modify` does not reach transport settings (tried with UCX 1.13.1: accepted,
/// without effect).
fn apply_tuning() {
    for &(name, value) in TUNING {
        if std::env::var_os(name).is_none() {
            // Called from the spml's query and open, inside shmem_init, before the spml starts
            // any thread; a program thread reading the environment at that very moment is the
            // risk every library that sets UCX defaults this way takes (Open MPI does too).
            std::env::set_var(name, value);
        }
    }
}

/// Create a context with `features` (multi-thread capable, so sshmem may map memory while the
/// progress thread drives the worker).
fn create_context(features: u64, estimated_eps: usize, opts: &Options) -> Result<sys::ucp_context_h, String> {
    // Without TCP the tuning would be an unused variable, which UCX warns about on every PE.
    if !self_only(opts) {
        apply_tuning();
    }
    let mut config: *mut sys::ucp_config_t = std::ptr::null_mut();
    // SAFETY: NULL prefix and file name select the defaults; `config` is a valid out-pointer.
    check("ucp_config_read", unsafe {
        sys::ucp_config_read(std::ptr::null(), std::ptr::null(), &mut config)
    })?;
    // UCX reads UCX_NET_DEVICES itself; only the loopback restriction is ours to apply.
    if std::env::var_os("UCX_NET_DEVICES").is_none() {
        if let Some(devs) = net_devices(opts, None) {
            let (name, value) = (c"NET_DEVICES", std::ffi::CString::new(devs).expect("no NUL"));
            // SAFETY: a live configuration and two NUL-terminated strings.
            let st = unsafe { sys::ucp_config_modify(config, name.as_ptr(), value.as_ptr()) };
            if st != sys::UCS_OK {
                // SAFETY: the configuration read above, released once.
                unsafe { sys::ucp_config_release(config) };
                return Err(format!("ucp_config_modify NET_DEVICES: {}", sys::status_string(st)));
            }
        }
    }
    let tls = match (self_only(opts), opts.shm_transports) {
        (true, false) => Some("self"),
        (true, true) => Some("self,posix,sysv"),
        (false, false) => Some(NO_SHM_TRANSPORTS),
        (false, true) => None,
    };
    if let Some(tls) = tls.filter(|_| std::env::var_os("UCX_TLS").is_none()) {
        let value = std::ffi::CString::new(tls).expect("no NUL");
        // SAFETY: a live configuration and two NUL-terminated strings.
        let st = unsafe { sys::ucp_config_modify(config, c"TLS".as_ptr(), value.as_ptr()) };
        if st != sys::UCS_OK {
            // SAFETY: the configuration read above, released once.
            unsafe { sys::ucp_config_release(config) };
            return Err(format!("ucp_config_modify TLS: {}", sys::status_string(st)));
        }
    }
    // Over sockets UCX emulates RMA and atomics with active messages. Its newer protocol
    // layer (the default from UCX 1.16 on) did not carry them for us: with UCX 1.18.1 a get
    // or an atomic hung, with 1.22.0 atomics found no protocol (tried 2026-11-25 with the
    // RAPIDS libucx wheels, 2 PEs, SHMEM_LOCAL_MAP=0), while the older layer worked with
    // 1.18.1 and 1.20.1. 1.13.1 (Debian 12) uses the older one anyway. So when the spml
    // still hands RMA to UCX over sockets (`rma_in_messages` off), it asks for the older
    // layer; its own messages need only UCX's active messages, which both layers carry (1.18
    // to 1.22, 2026-11-25). The user's UCX_PROTO_ENABLE wins; a UCX without the setting
    // refuses the change, which is harmless.
    let own_rma = opts.batch_puts && opts.rma_in_messages;
    if opts.sockets_only && !own_rma && std::env::var_os("UCX_PROTO_ENABLE").is_none() {
        // SAFETY: a live configuration and two NUL-terminated strings.
        let _ = unsafe { sys::ucp_config_modify(config, c"PROTO_ENABLE".as_ptr(), c"n".as_ptr()) };
    }
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
pub fn probe(features: u64, opts: &Options) -> Result<(), String> {
    let context = create_context(features, 1, opts)?;
    // SAFETY: the probe context has no workers or registrations.
    unsafe { sys::ucp_cleanup(context) };
    Ok(())
}

/// The first endpoint failure seen, and whether this PE is shutting down or suspended (then
/// failures of peers that already left are expected).
struct Health {
    start: Instant,
    /// Milliseconds after `start` (plus one) at which the first failure was recorded; 0: none.
    failed_at: AtomicU64,
    failed_pe: AtomicUsize,
    failed_status: AtomicI32,
    finalizing: AtomicBool,
    /// [`Phase`] of the library now, and when the first failure was recorded.
    phase: AtomicU8,
    failed_phase: AtomicU8,
}

/// Where the library stands as to `shmem_finalize`, for the message about a lost peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Never suspended: a lost peer died or left without `shmem_finalize`.
    First = 0,
    /// Suspended (finalized, ready to be initialized again): a lost peer left after its last
    /// `shmem_finalize`.
    Suspended = 1,
    /// Initialized again: a peer may also have left after its last `shmem_finalize` instead of
    /// initializing again.
    Again = 2,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            1 => Phase::Suspended,
            2 => Phase::Again,
            _ => Phase::First,
        }
    }
}

impl Health {
    fn new() -> Health {
        Health {
            start: Instant::now(),
            failed_at: AtomicU64::new(0),
            failed_pe: AtomicUsize::new(usize::MAX),
            failed_status: AtomicI32::new(0),
            finalizing: AtomicBool::new(false),
            phase: AtomicU8::new(Phase::First as u8),
            failed_phase: AtomicU8::new(Phase::First as u8),
        }
    }

    fn record(&self, pe: usize, st: sys::ucs_status_t) {
        if self.failed_pe.compare_exchange(usize::MAX, pe, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            self.failed_status.store(st as i32, Ordering::Relaxed);
            self.failed_phase.store(self.phase.load(Ordering::Acquire), Ordering::Relaxed);
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

    /// How long an operation that failed (`peer_lost`: with a peer-gone status) should still
    /// wait before ending the job: the rest of the grace since the recorded failure, or the
    /// whole grace when the endpoint's own report has not come yet.
    fn grace_left(&self, peer_lost: bool) -> Duration {
        match self.failure() {
            Some((_, _, since)) => PEER_FAILURE_GRACE.saturating_sub(since),
            None if peer_lost => PEER_FAILURE_GRACE,
            None => Duration::ZERO,
        }
    }

    /// A failure that is neither explained by this PE's shutdown nor younger than the grace,
    /// and the library's [`Phase`] when it was recorded.
    #[inline(always)]
    fn overdue(&self) -> Option<(usize, sys::ucs_status_t, Phase)> {
        match self.failure() {
            Some((pe, st, since))
                if since >= PEER_FAILURE_GRACE && !self.finalizing.load(Ordering::Acquire) =>
            {
                Some((pe, st, self.failed_when()))
            }
            _ => None,
        }
    }

    /// The phase in which the recorded failure happened. One recorded before this PE was first
    /// suspended, by a PE suspended since, happened while finalizing: the suspension follows
    /// the finalize fence, which every PE had reached, so the lost peer had finalized. The
    /// failure of a peer that finalized fast and exited often arrives while this PE is still
    /// in the fence (under load, by milliseconds), and was reported as a death.
    fn failed_when(&self) -> Phase {
        match Phase::from_u8(self.failed_phase.load(Ordering::Relaxed)) {
            Phase::First if self.phase.load(Ordering::Acquire) != Phase::First as u8 => Phase::Suspended,
            p => p,
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

/// Whether this host has more PEs than CPUs: asked by the progress thread before it stands by
/// (`standby`) and by waits ([`Spin::ByHost`]). `lib.rs` answers from the core, which knows
/// only once init has gathered the host's CPUs, after the thread and the channels exist.
pub type CrowdedHook = fn() -> bool;

struct ProgressThread {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
    /// The thread's kernel id, once it runs (0 before): tests read its policy by it.
    #[cfg_attr(not(test), allow(dead_code))]
    tid: Arc<AtomicI32>,
}

/// What the progress thread uses; the `Ucx` joins the thread before destroying the worker.
struct ThreadShared {
    health: Arc<Health>,
    /// The default channel's activity counter.
    activity: Arc<std::sync::atomic::AtomicU64>,
    /// The default channel (whose worker the thread drives) and the created ones, whose
    /// waiting batches the thread sends.
    chan: Arc<Channel>,
    extra: ChannelList,
    /// Set while the thread sleeps on the event fd (a first waiting put then signals it).
    wake: &'static batch::Wake,
    /// Whether this host has more PEs than CPUs (then the thread never stands by).
    crowded: Option<CrowdedHook>,
    /// Heartbeats between hosts, when enabled (`heartbeat`).
    heartbeat: Option<&'static heartbeat::Heartbeat>,
}
impl ThreadShared {
    /// Whether a created channel has a batch waiting.
    fn extra_batches(&self) -> bool {
        self.extra.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|c| c.batch_waiting())
    }
}

/// A UCX context, its default channel (shared by the application threads and the progress
/// thread, `UCS_THREAD_MODE_MULTI`), the channels of created contexts, and what a new channel
/// needs to reach the peers: their worker addresses and packed remote keys.
pub struct Ucx {
    context: sys::ucp_context_h,
    chan: Arc<Channel>,
    address: Vec<u8>,
    n_pes: usize,
    wakeup: bool,
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
    /// Heartbeats between hosts (`heartbeat`), set before the progress thread starts.
    heartbeat: OnceLock<&'static heartbeat::Heartbeat>,
    peers: Mutex<Peers>,
    /// The default worker's put-with-signal handler and the memory it may write. Leaked: a
    /// worker left to the process exit (see [`Ucx::finalize`]) may still call its handler.
    receiver: &'static am::Receiver,
    /// Whether the handler is installed (else why not): `put_signal` is offered only then.
    am_ready: Result<(), String>,
    /// The default worker's handlers for transfers through this PE's CPU (`target`), and
    /// whether they and the reply handler are installed. Leaked, like `receiver`.
    server: &'static target::Server,
    target_ready: Result<(), String>,
    /// The created channels, whose workers the waits of the default channel and
    /// [`Ucx::progress_all`] drive too (not the progress thread: a second thread driving a
    /// worker its context's thread is busy with made operations on it 10-40 times slower,
    /// measured over TCP; it only sends their waiting batches while they are idle).
    channel_workers: ChannelList,
    /// Whether `channel_workers` holds any: read without its lock by [`Ucx::progress_all`],
    /// which every round of a wait calls (a created channel is seen at the next round).
    any_channel: AtomicBool,
    /// Whether channels batch small puts (the option, where this context allows it).
    batching: bool,
    /// Whether channels carry RMA and atomics in the spml's own messages (`rma_am`).
    rma_in_messages: bool,
    sockets_only: bool,
    wake: &'static batch::Wake,
}

/// Kept for channels created after `connect` (contexts are created at any time).
#[derive(Default)]
struct Peers {
    addrs: Arc<AddrBook>,
    /// `(pe, seg, packed key)` of every key announced so far, latest last.
    keys: Vec<(usize, usize, Vec<u8>)>,
    /// Every created channel (in use or pooled), closed by `finalize`.
    extra: Vec<Arc<Channel>>,
    /// Channels of destroyed contexts, flushed and ready for the next context.
    pool: Vec<Arc<Channel>>,
    /// Keys unpacked to map peers' segments for load/store.
    map: mapping::Mappings,
}

// SAFETY: the default worker is created in UCS_THREAD_MODE_MULTI and the context with
// mt_workers_shared, so UCX serialises concurrent calls; channels are Sync (see there).
unsafe impl Send for Ucx {}
// SAFETY: as above.
unsafe impl Sync for Ucx {}

/// A `Ucx` is used as its default channel (the default OpenSHMEM context).
impl std::ops::Deref for Ucx {
    type Target = Channel;
    fn deref(&self) -> &Channel {
        &self.chan
    }
}

impl Ucx {
    /// Read UCX's configuration and create a context and a multi-thread-mode worker for a job of
    /// `n_pes` PEs.
    pub fn new(n_pes: usize, opts: &Options) -> Result<Ucx, String> {
        let context = create_context(features(opts), n_pes, opts)?;
        let health = Arc::new(Health::new());
        let channel_workers = Arc::new(Mutex::new(Vec::new()));
        let mut chan = match Channel::new(context, n_pes, health.clone(), opts.spin) {
            Ok(c) => c,
            Err(e) => {
                // SAFETY: the context has nothing else attached.
                unsafe { sys::ucp_cleanup(context) };
                return Err(e);
            }
        };
        let address = match chan.address() {
            Ok(a) => a,
            Err(e) => {
                // SAFETY: releasing what was created above, worker first.
                unsafe {
                    sys::ucp_worker_destroy(chan.worker());
                    sys::ucp_cleanup(context);
                }
                return Err(e);
            }
        };
        let receiver: &'static am::Receiver = Box::leak(Box::new(am::Receiver::new(chan.worker())));
        let am_ready = receiver.install();
        let server: &'static target::Server = Box::leak(Box::new(target::Server::new()));
        // Answers to this PE's requests (gets, fetching atomics, transfers through a target).
        let answers = chan.enable_answers();
        let target_ready = answers.clone().and_then(|()| server.install(chan.worker()));
        let wake: &'static batch::Wake = Box::leak(Box::new(batch::Wake {
            worker: chan.worker() as usize,
            sleeping: AtomicBool::new(false),
        }));
        // Peers may batch whatever this PE does, so the handler is always there. Batches are
        // copied by the target's CPU into host memory: not where UCX moves device memory.
        let requests = rma_am::install_requests(receiver, chan.worker());
        let batching = batch::install_receiver(receiver, chan.worker()).is_ok()
            && opts.batch_puts
            && !takes_cuda_memory(context, opts.sockets_only);
        let rma_in_messages = batching && opts.rma_in_messages && requests.is_ok() && answers.is_ok();
        let batching =
            batching && chan.enable_batching(n_pes, opts.sockets_only, rma_in_messages, Some(wake)).is_ok();
        Ok(Ucx {
            context,
            receiver,
            am_ready,
            server,
            target_ready,
            address,
            n_pes,
            wakeup: opts.progress_thread,
            health,
            connected: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            own_regs: AtomicUsize::new(0),
            borrowed_regs: AtomicUsize::new(0),
            context_released: AtomicBool::new(false),
            progress: Mutex::new(None),
            heartbeat: OnceLock::new(),
            peers: Mutex::new(Peers::default()),
            chan: Arc::new(chan.with_companions(channel_workers.clone())),
            channel_workers,
            any_channel: AtomicBool::new(false),
            batching,
            rma_in_messages: batching && rma_in_messages,
            sockets_only: opts.sockets_only,
            wake,
        })
    }

    pub fn context(&self) -> sys::ucp_context_h {
        self.context
    }

    /// Whether UCX is given peers' CUDA device memory to move (see [`takes_cuda_memory`]): the
    /// spml then declares GPU memory in `memory_types`.
    pub fn moves_cuda_memory(&self) -> bool {
        takes_cuda_memory(self.context, self.sockets_only)
    }

    /// Whether small puts are batched (see `batch`).
    pub fn batching(&self) -> bool {
        self.batching
    }

    /// Whether a registration of this context is ordinary host memory (not device memory).
    ///
    /// # Safety
    /// `memh` must be a live registration of this context.
    pub unsafe fn is_host_memory(&self, memh: sys::ucp_mem_h) -> bool {
        let mut attr =
            sys::ucp_mem_attr_t { field_mask: sys::UCP_MEM_ATTR_FIELD_MEM_TYPE as u64, ..Default::default() };
        // SAFETY: a live registration (caller); valid out-pointer.
        let st = unsafe { sys::ucp_mem_query(memh, &mut attr) };
        st == sys::UCS_OK && attr.mem_type == sys::UCS_MEMORY_TYPE_HOST
    }

    /// The default channel's worker address, which peers need to create their endpoints to it.
    pub fn address(&self) -> &[u8] {
        &self.address
    }

    pub fn n_pes(&self) -> usize {
        self.n_pes
    }

    /// Whether peers can send this PE put-with-signal messages (else why not).
    pub fn put_signal_ready(&self) -> Result<(), &str> {
        self.am_ready.as_ref().map(|_| ()).map_err(|e| e.as_str())
    }

    /// Who hears of a refused put-with-signal message (a destination outside the registered
    /// memory): `lib.rs` ends the job.
    pub fn on_refused_message(&self, f: Complaint) {
        self.receiver.on_complaint(f);
    }

    /// How many put-with-signal messages this PE refused.
    pub fn refused_messages(&self) -> usize {
        self.receiver.refused()
    }

    /// Whether this PE can send and serve transfers through a target's CPU (else why not).
    pub fn via_target_ready(&self) -> Result<(), &str> {
        self.target_ready.as_ref().map(|_| ()).map_err(|e| e.as_str())
    }

    /// Who copies into and out of this PE's memory for peers' transfers through its CPU.
    pub fn set_target_copier(&self, f: Copier) {
        self.server.set_copier(f);
    }

    /// Who hears of a refused transfer request (`lib.rs` ends the job).
    pub fn on_refused_transfer(&self, f: Complaint) {
        self.server.on_complaint(f);
    }

    /// How many transfer requests this PE refused.
    pub fn refused_transfers(&self) -> usize {
        self.server.refused()
    }

    /// Move `len` bytes between host buffer `buf` and bytes `off..off + len` of PE `pe`'s
    /// segment `seg`, which the target's CPU copies (see `target`): a put when `put`, else a
    /// get. Returns when the target has the bytes (put) or `buf` holds them (get).
    ///
    /// # Safety
    /// `buf` readable (put) or writable (get) for `len` bytes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn via_target(
        &self,
        ch: &Channel,
        pe: usize,
        put: bool,
        seg: u32,
        off: u64,
        buf: *mut u8,
        len: usize,
    ) -> Result<(), OpError> {
        if self.target_ready.is_err() {
            return Err(OpError::Invalid);
        }
        ch.settle_pe(pe, channel::Path::Am)?;
        // SAFETY: the caller's contract.
        unsafe { target::transfer(ch, pe, put, seg, off, buf, len) }
    }

    /// Note memory registered for remote access: put-with-signal messages may write it, and
    /// batched puts too when it is `host` memory.
    pub fn add_region(&self, base: usize, len: usize, host: bool) {
        self.receiver.regions.add(base, len, host);
    }

    /// Undo one [`Ucx::add_region`].
    pub fn remove_region(&self, base: usize, len: usize) {
        self.receiver.regions.remove(base, len);
    }

    fn peers(&self) -> std::sync::MutexGuard<'_, Peers> {
        self.peers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Connect the default channel to every PE (`addrs[pe]` is its worker address; ours
    /// included), with peer failure detection: the endpoints to the PEs `eager` names now, the
    /// others at their first use. Once only.
    pub fn connect(&self, addrs: &[Vec<u8>], eager: &dyn Fn(usize) -> bool) -> Result<(), String> {
        self.connect_book(AddrBook::complete(addrs), eager)
    }

    /// [`Ucx::connect`] with the addresses in a book that looks up the ones it lacks when an
    /// endpoint is first made (`AddrBook`).
    pub fn connect_book(&self, addrs: Arc<AddrBook>, eager: &dyn Fn(usize) -> bool) -> Result<(), String> {
        if addrs.pes() != self.n_pes {
            return Err(format!("{} worker addresses for {} PEs", addrs.pes(), self.n_pes));
        }
        if self.connected.swap(true, Ordering::AcqRel) {
            return Err("already connected".into());
        }
        self.peers().addrs = addrs.clone();
        self.chan.connect(addrs, eager)
    }

    /// A channel with endpoints to every PE's default worker and every key announced so far
    /// (later keys reach it too): a pooled one if any, else a new one.
    /// Release it with [`Ucx::destroy_channel`].
    pub fn create_channel(&self) -> Result<Arc<Channel>, String> {
        let mut peers = self.peers();
        if !self.connected.load(Ordering::Acquire) || self.closed.load(Ordering::Acquire) {
            return Err("the spml is not connected".into());
        }
        if let Some(ch) = peers.pool.pop() {
            return Ok(ch);
        }
        let mut ch = Channel::new(self.context, self.n_pes, self.health.clone(), self.chan.spin())?
            .with_home(self.chan.worker());
        // Acknowledgements of batches, and answers to requests, come back to the worker that
        // sent.
        let mut replies = ch.enable_answers();
        if replies.is_ok() && self.batching {
            replies =
                ch.enable_batching(self.n_pes, self.sockets_only, self.rma_in_messages, Some(self.wake));
        }
        let ch = Arc::new(ch);
        // A created channel makes every endpoint at its first use.
        let setup = replies.and_then(|()| ch.connect(peers.addrs.clone(), &|_| false)).and_then(|()| {
            peers.keys.iter().try_for_each(|(pe, seg, packed)| ch.add_rkey(*pe, *seg, packed))
        });
        if let Err(e) = setup {
            let _ = ch.close(Instant::now() + FINALIZE_TIMEOUT);
            return Err(e);
        }
        peers.extra.push(ch.clone());
        self.channel_workers.lock().unwrap_or_else(|e| e.into_inner()).push(ch.clone());
        self.any_channel.store(true, Ordering::Release);
        Ok(ch)
    }

    /// Complete a created channel's operations and keep it for the next context. Channels
    /// are not closed during the job: a worker costs milliseconds to create and to close, and
    /// closing endpoints while peers keep using theirs was seen to leave a later flush of the
    /// default worker waiting forever (UCX 1.13, TCP, 4 PEs on 2 cores). `finalize` closes
    /// them all.
    pub fn destroy_channel(&self, ch: Arc<Channel>) -> Result<(), String> {
        ch.flush().map_err(|e| format!("completing a destroyed context's operations: {e}"))?;
        self.peers().pool.push(ch);
        Ok(())
    }

    /// How many channels exist, and how many of them are pooled.
    pub fn channels(&self) -> (usize, usize) {
        let p = self.peers();
        (p.extra.len(), p.pool.len())
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

    /// Unpack PE `pe`'s packed key for its segment `seg` (replacing an earlier one) on every
    /// channel, and keep it for channels created later.
    pub fn add_rkey(&self, pe: usize, seg: usize, packed: &[u8]) -> Result<(), String> {
        let mut peers = self.peers();
        self.chan.add_rkey(pe, seg, packed)?;
        for ch in &peers.extra {
            ch.add_rkey(pe, seg, packed)?;
        }
        peers.keys.retain(|(p, s, _)| (*p, *s) != (pe, seg));
        peers.keys.push((pe, seg, packed.to_vec()));
        peers.map.forget(pe, seg);
        Ok(())
    }

    /// A pointer through which this process reaches `raddr` in PE `pe`'s segment `seg` by load
    /// and store, or null when no transport maps it (see `mapping`).
    pub fn remote_ptr(&self, pe: usize, seg: usize, raddr: u64) -> *mut c_void {
        let mut guard = self.peers();
        let peers = &mut *guard;
        let Ok(addr) = peers.addrs.get(pe) else { return std::ptr::null_mut() };
        let Some((_, _, packed)) = peers.keys.iter().rev().find(|k| (k.0, k.1) == (pe, seg)) else {
            return std::ptr::null_mut();
        };
        peers.map.ptr(&self.chan, &addr, pe, seg, packed, raddr)
    }

    /// Wait (at most `timeout`) until every endpoint is wired up, by flushing the worker: UCX
    /// connects endpoints lazily, and a peer dying while operations are queued on an endpoint
    /// still being wired up trips an assertion inside UCX 1.13 instead of failing the operations.
    /// Needs the peers to progress (their progress threads, or their own `wireup`). True when
    /// everything was connected in time; else the flush is left to complete on its own.
    pub fn wireup(&self, timeout: Duration) -> bool {
        let param = sys::ucp_request_param_t::default();
        // SAFETY: our own worker.
        let r = unsafe { sys::ucp_worker_flush_nbx(self.chan.worker(), &param) };
        match self.chan.wait_until(r, Instant::now() + timeout) {
            Ok(st) => st == sys::UCS_OK,
            Err(r) => {
                // SAFETY: a live request; UCX releases it when it completes.
                unsafe { sys::ucp_request_free(r) };
                false
            }
        }
    }

    /// Drive every worker once (the default one and the created channels'): a peer's flush of
    /// its default worker may wait for one of our channels to answer (wire-up, acknowledgements),
    /// so channels need progress even while their contexts are idle.
    pub fn progress_all(&self) -> bool {
        let mut busy = self.chan.progress();
        if self.any_channel.load(Ordering::Acquire) {
            let chans = self.channel_workers.lock().unwrap_or_else(|e| e.into_inner());
            for ch in chans.iter() {
                busy |= ch.progress();
            }
        }
        busy
    }

    /// While the library is suspended (finalized, but ready to be initialized again) peers may
    /// end their processes: a lost peer is then expected, as while finalizing. Once resumed, a
    /// peer lost meanwhile is reported again like any other.
    pub fn set_suspended(&self, on: bool) {
        let phase = if on { Phase::Suspended } else { Phase::Again };
        self.health.phase.store(phase as u8, Ordering::Release);
        self.health.finalizing.store(on, Ordering::Release);
    }

    /// The first peer whose endpoint failed, with UCX's status, if any.
    pub fn peer_failure(&self) -> Option<(usize, sys::ucs_status_t)> {
        self.health.failure().map(|(pe, st, _)| (pe, st))
    }

    /// How long an operation that failed with `e` waits before it ends the job. A peer that
    /// went away most likely died, and its launcher ends the job naming it with the real cause
    /// (the signal that killed it); ending it here at once would race that and report only
    /// "endpoint timeout". So it waits out [`PEER_FAILURE_GRACE`], as a waiting PE does, and
    /// reports the failure itself if the job is still alive then.
    pub fn grace_before_failing(&self, e: &OpError) -> Duration {
        self.health.grace_left(e.peer_lost())
    }

    /// A peer failure that this PE should not wait out: older than [`PEER_FAILURE_GRACE`] and
    /// not explained by this PE's own shutdown, and the library's [`Phase`] when the peer was
    /// lost (see [`peer_lost_message`]). One atomic load when there is none.
    #[inline(always)]
    pub fn overdue_failure(&self) -> Option<(usize, sys::ucs_status_t, Phase)> {
        self.health.overdue()
    }

    /// Heartbeats to `targets` from now on, until the plan is made
    /// ([`heartbeat::Heartbeat::send_early`]); nothing when there are no heartbeats.
    pub fn heartbeat_send_early(&self, targets: &[usize]) {
        if let Some(hb) = self.heartbeat.get() {
            hb.send_early(targets.to_vec());
        }
    }

    /// Where `pe` is, for messages ([`heartbeat::where_is`]).
    pub fn where_is(&self, pe: usize) -> String {
        heartbeat::where_is(self.heartbeat.get().copied(), pe)
    }

    /// What this spml holds for peers, for the core's report (see `footprint`): the tables of
    /// every channel and of the heartbeats, the PEs that some channel has an endpoint to, and
    /// what making endpoints and keys added since the report was armed. `me` is this PE.
    pub fn peer_memory(&self, me: usize) -> rshmem_plugin_api::SpmlPeerMemory {
        let mut m = rshmem_plugin_api::SpmlPeerMemory::default();
        let mut chans = vec![self.chan.clone()];
        chans.extend(self.peers.lock().unwrap_or_else(|e| e.into_inner()).extra.iter().cloned());
        for ch in &chans {
            let (bytes, resident) = ch.tables();
            m.table_bytes += bytes;
            m.table_resident += resident;
        }
        if let Some(hb) = self.heartbeat.get() {
            let (bytes, resident) = hb.tables();
            m.table_bytes += bytes;
            m.table_resident += resident;
        }
        for pe in (0..self.n_pes).filter(|&pe| pe != me && chans.iter().any(|c| c.reaches(pe))) {
            if footprint::is_local(pe) {
                m.peers_local += 1;
            } else {
                m.peers_remote += 1;
            }
        }
        let (eps, grown) = footprint::measured();
        [m.endpoints_local, m.endpoints_remote] = eps;
        [m.grown_local, m.grown_remote] = grown;
        m
    }

    /// Send and expect heartbeats between hosts (`heartbeat`); before the progress thread
    /// starts, which does the sending and the looking.
    pub fn set_heartbeat(&self, hb: &'static heartbeat::Heartbeat) -> Result<(), String> {
        hb.listen(self.chan.worker())?;
        let _ = self.heartbeat.set(hb);
        Ok(())
    }

    /// Start the thread that gives this PE target-side progress while the application computes:
    /// it progresses the default worker while there is work and, when idle, arms the worker and
    /// sleeps on its event fd (at most [`IDLE_POLL_MS`] at a time). Peers reach this PE only
    /// through default workers, so created channels need no such thread. `fatal` is called with
    /// a message when a peer failure is overdue or the thread panics; `crowded` says whether the
    /// host has more PEs than CPUs (none: it has not).
    pub fn start_progress_thread(
        &self,
        fatal: Option<FatalHook>,
        crowded: Option<CrowdedHook>,
    ) -> Result<(), String> {
        if !self.wakeup {
            return Err("the context was created without wake-up events (progress_thread=0)".into());
        }
        let mut slot = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            return Ok(());
        }
        let worker = self.chan.worker();
        let mut efd: c_int = -1;
        // SAFETY: our worker, created with UCP_FEATURE_WAKEUP; valid out-pointer.
        check("ucp_worker_get_efd", unsafe { sys::ucp_worker_get_efd(worker, &mut efd) })?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let shared = ThreadShared {
            health: self.health.clone(),
            activity: self.chan.activity(),
            chan: self.chan.clone(),
            extra: self.channel_workers.clone(),
            wake: self.wake,
            crowded,
            heartbeat: self.heartbeat.get().copied(),
        };
        let tid = Arc::new(AtomicI32::new(0));
        let tid2 = tid.clone();
        let handle = std::thread::Builder::new()
            .name("rshmem-ucx-progress".into())
            .spawn(move || {
                // SAFETY: no arguments.
                tid2.store(unsafe { libc::gettid() }, Ordering::Release);
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
        *slot = Some(ProgressThread { stop, handle, tid });
        Ok(())
    }

    /// The progress thread's scheduling policy now (`standby` switches it), once it runs.
    #[cfg(test)]
    fn progress_thread_policy(&self) -> Option<c_int> {
        let slot = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        let tid = slot.as_ref()?.tid.load(Ordering::Acquire);
        // SAFETY: no pointers; a thread not yet joined (its handle is held under the lock).
        let p = unsafe { libc::sched_getscheduler(tid) };
        (tid != 0 && p >= 0).then_some(p)
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
            unsafe { sys::ucp_worker_signal(self.chan.worker()) };
            let _ = t.handle.join();
        }
    }

    /// Tear everything down: stop the progress thread, close the created channels that are
    /// still open and then the default one (completing outstanding operations, destroying the
    /// keys, force-closing the endpoints since peers may be gone already, destroying the
    /// workers), then release the context, unless a registration of it is still live (UCX
    /// asserts on that; at the end of a job the symmetric heap sshmem "ucx" allocated stays
    /// mapped, and the process exit reclaims both). Every wait is bounded by
    /// [`FINALIZE_TIMEOUT`]: a peer that neither answers nor is detected as gone must not hang
    /// the exit; what could not be completed is then left to the process exit, and the error
    /// says so. Peer failures from now on are expected and ignored. Idempotent; nothing but
    /// [`Ucx::mem_unmap`] may be called afterwards, and only while the context was kept.
    pub fn finalize(&self) -> Result<(), String> {
        self.health.finalizing.store(true, Ordering::Release);
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.stop_progress_thread();
        let deadline = Instant::now() + FINALIZE_TIMEOUT;
        self.any_channel.store(false, Ordering::Release);
        self.channel_workers.lock().unwrap_or_else(|e| e.into_inner()).clear();
        let extra = std::mem::take(&mut self.peers().extra);
        self.peers().pool.clear();
        let mut errors = Vec::new();
        for ch in extra {
            // Contexts cannot be used after shmem_finalize; `close` is idempotent should one be
            // destroyed later anyway.
            if let Err(e) = ch.close(deadline) {
                errors.push(e);
            }
        }
        self.peers().map.close(&self.chan, deadline);
        if let Err(e) = self.chan.close(deadline) {
            errors.push(e);
        }
        if !errors.is_empty() {
            return Err(format!("within {FINALIZE_TIMEOUT:?}: {}", errors.join("; ")));
        }
        if self.own_regs.load(Ordering::Acquire) == 0 && self.borrowed_regs.load(Ordering::Acquire) == 0 {
            // SAFETY: every worker is gone and no registration of the context is live.
            unsafe { sys::ucp_cleanup(self.context) };
            self.context_released.store(true, Ordering::Release);
        }
        Ok(())
    }
}

impl Drop for Ucx {
    fn drop(&mut self) {
        let _ = self.finalize();
    }
}

/// The progress thread: drives the worker only while no application thread does. An application
/// thread that is inside the library (waiting, issuing operations) progresses the worker itself;
/// the thread then stays off it, looking again after a pause that grows from [`ACTIVE_PAUSE_MIN`] to
/// [`ACTIVE_PAUSE_MAX`], and takes over once the
/// activity counter stopped moving, i.e. when the PE computes or waits outside the library.
/// While it stays off, its looks do not preempt the PE (`standby`).
fn progress_loop(shared: &ThreadShared, efd: c_int, stop: &AtomicBool, fatal: Option<FatalHook>) {
    let health = &*shared.health;
    let mut reported = false;
    let mut ticker = heartbeat::Ticker::default();
    let mut seen = shared.activity.load(Ordering::Relaxed);
    let mut pause = ACTIVE_PAUSE_MIN;
    let mut manner = standby::Manner::of_this_thread();
    while !stop.load(Ordering::Acquire) {
        if let Some(hb) = shared.heartbeat {
            let finalizing = health.finalizing.load(Ordering::Acquire);
            if let Some(pe) = hb.tick(&mut ticker, &shared.chan, finalizing) {
                health.record(pe, sys::UCS_ERR_ENDPOINT_TIMEOUT);
            }
        }
        if !reported {
            if let (Some((pe, st, phase)), Some(f)) = (health.overdue(), fatal) {
                reported = true;
                f(&peer_lost_message(pe, &heartbeat::where_is(shared.heartbeat, pe), st, phase));
            }
        }
        let now = shared.activity.load(Ordering::Relaxed);
        if now != seen {
            seen = now;
            // On a crowded host the PE is often descheduled in the middle of its work, and the
            // thread answers its peers meanwhile: it must notice and preempt at once.
            if shared.crowded.is_some_and(|f| f()) {
                manner.serve();
            } else {
                manner.stand_by();
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(ACTIVE_PAUSE_MAX);
            continue;
        }
        pause = ACTIVE_PAUSE_MIN;
        manner.serve();
        // The application left its batches waiting and went on computing: send them.
        let mut waiting = shared.chan.drain_if_idle(true);
        if shared.extra_batches() {
            // A copy of the list: sending may wait, and the application's waits need the list.
            let extra = shared.extra.lock().unwrap_or_else(|e| e.into_inner()).clone();
            for ch in extra {
                waiting |= ch.drain_if_idle(false);
            }
        }
        // SAFETY: a multi-thread-mode worker that outlives this thread.
        if unsafe { sys::ucp_worker_progress(shared.chan.worker()) } != 0 {
            continue;
        }
        // SAFETY: as above; arming after a progress call that found nothing to do.
        match unsafe { sys::ucp_worker_arm(shared.chan.worker()) } {
            sys::UCS_OK => {
                // Marked sleeping before looking for waiting batches once more: a put that
                // left the first one after this look sees the mark and signals the worker.
                waiting |= wake::to_sleep(&shared.wake.sleeping, || {
                    shared.chan.batch_waiting() || shared.extra_batches()
                });
                // A created channel in use is looked at again soon rather than at the idle pace.
                let timeout = if waiting { WAITING_POLL_MS } else { IDLE_POLL_MS };
                let mut pfd = libc::pollfd { fd: efd, events: libc::POLLIN, revents: 0 };
                // SAFETY: one valid pollfd; the fd belongs to the worker, which outlives us.
                unsafe { libc::poll(&mut pfd, 1, timeout) };
                wake::woke(&shared.wake.sleeping);
            }
            sys::UCS_ERR_BUSY => {}
            _ => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// The message for a peer that became unreachable, by the library's [`Phase`] when it was lost
/// (reported only once this PE is no longer suspended). A PE that leaves after the last
/// `shmem_finalize` while the others initialize again is found this way under PMIx launchers,
/// whose bootstrap fence would wait for it forever (oshrun names it itself).
pub fn peer_lost_message(pe: usize, where_: &str, st: sys::ucs_status_t, phase: Phase) -> String {
    if let Some(m) = heartbeat::message(pe, where_) {
        return m;
    }
    let st = sys::status_string(st);
    const COLLECTIVE: &str =
        "an initialization after the last shmem_finalize is collective: every PE must call it";
    match phase {
        Phase::First => format!("spml ucx: PE {pe}{where_} is unreachable ({st}): it died or left without shmem_finalize"),
        Phase::Suspended => format!(
            "spml ucx: PE {pe} left after the last shmem_finalize ({st}), but this PE initialized the library again; {COLLECTIVE}"
        ),
        Phase::Again => format!(
            "spml ucx: PE {pe}{where_} is unreachable ({st}): it died, left without shmem_finalize, or left after the last shmem_finalize while this PE initialized the library again ({COLLECTIVE})"
        ),
    }
}

/// Whether UCX moves CUDA device memory for this job: `context` supports it (UCX built with
/// CUDA support, its CUDA transports loaded) and RMA does not go over `sockets` only. Over
/// sockets UCX emulates RMA with active messages whose target copies with its CPU: with UCX
/// 1.18.1's CUDA build, a put into a peer's device memory crashed the target in that copy
/// (`ucp_put_handler`, NVIDIA H100, 2026-11-25). The core then reaches device memory through
/// the target's CPU with the device memheap's copy instead (`put_via_target`).
fn takes_cuda_memory(context: sys::ucp_context_h, sockets: bool) -> bool {
    !sockets && context_moves_cuda(context)
}

/// Whether `context` moves CUDA device memory itself (UCX built with CUDA support).
fn context_moves_cuda(context: sys::ucp_context_h) -> bool {
    let mut attr =
        sys::ucp_context_attr_t { field_mask: sys::UCP_ATTR_FIELD_MEMORY_TYPES as u64, ..Default::default() };
    // SAFETY: a live context and an attribute struct asking for one plain field.
    let st = unsafe { sys::ucp_context_query(context, &mut attr) };
    st == sys::UCS_OK && attr.memory_types & (1u64 << sys::UCS_MEMORY_TYPE_CUDA) != 0
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
