//! spml "ucx": one-sided communication over UCX (`ucp_*_nbx`). It reaches every peer that is not
//! mapped into this process (other nodes, or every PE when `SHMEM_LOCAL_MAP=0`), and publishes
//! its UCX context and worker as the job's transport so that sshmem "ucx" can allocate memory
//! that local peers map through UCX.
//!
//! This file is the C table only: each slot is a thin, panic-proof layer over [`ucx::Ucx`].
//! Failures of RMA, atomics and ordering end the job through the core with a message that names
//! the peer; a peer whose endpoint fails ends the job too (after a short grace, see
//! [`ucx::PEER_FAILURE_GRACE`]) rather than leaving this PE hanging.

mod traffic;
pub mod ucx;

use rshmem_plugin_api::boundary::{self, slot};
use rshmem_plugin_api::{
    cstr, CoreServices, Framework, ParamDecl, QueryResult, SpmlCtx, SpmlOps, SpmlViaTarget, TransportHandle,
    LOG_DEBUG, LOG_ERROR, LOG_WARN, RC_ERROR, RC_OK, TRANSPORT_UCX,
};
use rshmem_ucx_sys as sys;
use std::ffi::{c_int, c_long, c_void, CString};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;
use ucx::{Channel, OpError, Options, Ucx};

/// The key under which each PE publishes its worker address.
const ADDR_KEY: &str = "spml.ucx.addr";

static STATE: AtomicPtr<Ucx> = AtomicPtr::new(std::ptr::null_mut());
const COMPONENT: &str = "spml ucx";

/// End the job through the core with `msg`. From then on `boundary::ending()` holds, so the
/// exit path (the core's at-exit quiet) does not touch UCX again.
#[cold]
fn fatal(msg: &str) -> ! {
    boundary::end_job(msg)
}

/// [`ucx::FatalHook`] for the progress thread.
fn fatal_hook(msg: &str) {
    fatal(msg)
}

fn log(level: c_int, msg: &str) {
    boundary::log(level, COMPONENT, msg)
}

/// The component state (set by `open`, never freed).
#[inline(always)]
fn state() -> &'static Ucx {
    let p = STATE.load(Ordering::Acquire);
    if p.is_null() {
        not_open()
    }
    // SAFETY: `open` leaks the state before publishing it; it is never freed.
    unsafe { &*p }
}

/// The channel an spml context designates: the default channel (the state's own) or one made
/// by `ctx_create`.
#[inline(always)]
fn ctx_state(ctx: SpmlCtx) -> &'static Channel {
    if ctx.is_null() {
        state()
    } else {
        // SAFETY: the contexts this component hands out are `Arc<Channel>`s that live until
        // `ctx_destroy`, after which the core no longer uses them.
        unsafe { &*(ctx as *const Channel) }
    }
}

/// The component state, if `open` has run.
fn state_if_open() -> Option<&'static Ucx> {
    let p = STATE.load(Ordering::Acquire);
    // SAFETY: the leaked state is never freed.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The first endpoint failure of any channel.
fn peer_failure() -> Option<(usize, sys::ucs_status_t)> {
    state_if_open().and_then(Ucx::peer_failure)
}

/// Where a peer is, for messages ([`ucx::heartbeat::where_is`]).
fn where_is(pe: usize) -> String {
    state_if_open().map_or(String::new(), |u| u.where_is(pe))
}

#[cold]
fn not_open() -> ! {
    fatal("spml ucx: called before open")
}

/// Before an operation's failure ends the job: leave the launcher the time to report a dead
/// peer first ([`ucx::Ucx::grace_before_failing`]).
fn wait_for_the_launcher(e: &OpError) {
    if let Some(u) = state_if_open() {
        std::thread::sleep(u.grace_before_failing(e));
    }
}

#[cold]
fn op_failed(_: &Channel, what: &str, pe: c_int, e: OpError) -> ! {
    wait_for_the_launcher(&e);
    let mut msg = format!("spml ucx: {what} PE {pe} failed: {e}");
    if let Some((p, st)) = peer_failure() {
        msg.push_str(&format!(" (the endpoint to PE {p}{} failed: {})", where_is(p), sys::status_string(st)));
    }
    fatal(&msg)
}

#[cold]
fn flush_failed(_: &Channel, what: &str, e: OpError) -> ! {
    wait_for_the_launcher(&e);
    let mut msg = format!("spml ucx: {what} failed: {e}");
    if let Some((p, st)) = peer_failure() {
        msg.push_str(&format!(" (PE {p}{} is unreachable: {})", where_is(p), sys::status_string(st)));
    }
    fatal(&msg)
}

/// Heartbeats between hosts (`ucx::heartbeat`): sent and watched by the progress thread, for a
/// job whose PEs may be on several hosts, unless `peer_timeout` is 0.
fn start_heartbeat(c: &CoreServices, u: &'static Ucx, opts: &Options) {
    // SAFETY: the table is the one the core passed to open.
    let v = unsafe { rshmem_plugin_api::param(c, "spml", "ucx", "peer_timeout") };
    let secs = match v.as_deref().map(str::trim) {
        None | Some("") => 10.0,
        Some(v) => v.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0).unwrap_or_else(|| {
            log(
                LOG_WARN,
                &format!("SHMEM_MCA_spml_ucx_peer_timeout={v} is not a number of seconds; using 10"),
            );
            10.0
        }),
    };
    // `host_of` is read through the accessor first: a core's table may predate the slot.
    let host_of = c.host_of(0).and(c.host_of);
    let Some(host_of) = host_of.filter(|_| secs > 0.0 && !opts.loopback_only && c.n_pes > 1) else { return };
    let hb = ucx::heartbeat::Heartbeat::new(
        c.my_pe.max(0) as usize,
        c.n_pes as usize,
        host_of,
        std::time::Duration::from_secs_f64(secs),
    );
    if let Err(e) = u.set_heartbeat(Box::leak(Box::new(hb))) {
        log(LOG_WARN, &format!("no heartbeats between hosts: {e}"));
    }
}

/// `SHMEM_MCA_spml_ucx_<name>` as a boolean (the core's spellings: 1/0, yes/no, true/false, on/off).
fn bool_param(core: &CoreServices, name: &str, default: bool) -> bool {
    // SAFETY: the table is the one the core passed to query/open.
    let Some(v) = (unsafe { rshmem_plugin_api::param(core, "spml", "ucx", name) }) else {
        return default;
    };
    rshmem_plugin_api::values::parse_bool(&v).unwrap_or_else(|| {
        log(LOG_WARN, &format!("SHMEM_MCA_spml_ucx_{name}={v} is not a boolean; using {}", default as u8));
        default
    })
}

fn options(c: &CoreServices) -> Options {
    let sockets = ucx::sockets_only(std::env::var("UCX_TLS").ok().as_deref(), rdma_devices());
    let shm_transports = shm_transports(c);
    Options {
        progress_thread: bool_param(c, "progress_thread", true),
        loopback_only: c.n_pes > 0 && c.local_size == c.n_pes,
        spin: ucx::Spin::ByHost(host_crowded),
        batch_puts: auto_param(c, "batch_puts", sockets),
        sockets_only: sockets,
        rma_in_messages: auto_param(c, "rma_in_messages", sockets),
        shm_transports,
        host_tcp: auto_param(c, "one_host_tcp", host_tcp_needed(c.maps_host_peers(), shm_transports)),
    }
}

/// `one_host_tcp`'s `auto`: whether a job on one host needs UCX's TCP transport between its
/// PEs. It does unless the core maps every PE of the host (`maps_host_peers`: SHMEM_LOCAL_MAP
/// on, no GPU memheap, sshmem mmap; None from a core that cannot say) and sshmem ucx, which maps peers'
/// memory through UCX endpoints, may not be chosen (`shm_transports` off).
fn host_tcp_needed(maps_host_peers: Option<bool>, shm_transports: bool) -> bool {
    maps_host_peers != Some(true) || shm_transports
}

/// `SHMEM_MCA_spml_ucx_shm_transports`: a boolean, or `auto` (the default): on when the
/// user's sshmem selection asks for "ucx" (names it in a list, or excludes "mmap"), whose
/// mapping of peers' memory goes through those transports; on also when the core cannot say
/// (a core older than the `selection` service).
fn shm_transports(c: &CoreServices) -> bool {
    auto_param(c, "shm_transports", c.selection("sshmem").is_none_or(|s| asks_for_sshmem_ucx(&s)))
}

/// Whether a `SHMEM_MCA_sshmem` value may choose sshmem "ucx" ahead of "mmap": a list that
/// names "ucx", or one that excludes "mmap" (`^mmap`). Without a selection "mmap" leads.
fn asks_for_sshmem_ucx(selection: &str) -> bool {
    let s = selection.trim();
    let names = |list: &str| list.split(',').map(str::trim).map(str::to_owned).collect::<Vec<_>>();
    match s.strip_prefix('^') {
        Some(excluded) => names(excluded).iter().any(|n| n == "mmap"),
        None => names(s).iter().any(|n| n == "ucx"),
    }
}

/// Whether this host has an RDMA device (`/sys/class/infiniband` lists InfiniBand, RoCE and
/// iWARP devices alike).
fn rdma_devices() -> bool {
    std::fs::read_dir("/sys/class/infiniband").is_ok_and(|mut d| d.next().is_some())
}

/// `SHMEM_MCA_spml_ucx_<name>`: a boolean, or `auto` (the default), which is `auto_value`. For
/// `batch_puts` and `rma_in_messages` that is whether UCX can only use sockets, i.e. this host
/// has no RDMA device, or `UCX_TLS` names TCP and no RDMA transport (over RDMA a put or an
/// atomic is a network operation of its own without a system call, and carrying it in
/// messages would move the work onto the target's CPU); for `shm_transports`, whether sshmem
/// "ucx" may be chosen.
fn auto_param(c: &CoreServices, name: &str, auto_value: bool) -> bool {
    // SAFETY: the table is the one the core passed to query/open.
    let v = unsafe { rshmem_plugin_api::param(c, "spml", "ucx", name) };
    match v.as_deref().map(str::trim) {
        None | Some("auto") | Some("") => auto_value,
        Some(v) => rshmem_plugin_api::values::parse_bool(v).unwrap_or_else(|| {
            log(LOG_WARN, &format!("SHMEM_MCA_spml_ucx_{name}={v} is not auto or a boolean; using auto"));
            auto_value
        }),
    }
}

/// Whether this host has more PEs than CPUs between them, as the core counts them once init has
/// gathered the PEs' CPUs (`node_cpus`); before that, by this process's own CPUs.
fn host_crowded() -> bool {
    boundary::core().is_some_and(|c| c.node_crowded())
}

fn query(c: &'static CoreServices, r: &mut QueryResult) {
    let opts = options(c);
    match ucx::probe(ucx::features(&opts), &opts) {
        Ok(()) => {
            r.available = 1;
            r.priority = 50;
            r.set_reason(&format!("UCX {}: context created (RMA, 32/64-bit atomics)", ucx::version()));
        }
        Err(e) => {
            r.available = 0;
            r.priority = 0;
            r.set_reason(&format!("UCX unusable: {e}"));
        }
    }
}

/// Stops the progress thread when the process exits without `shmem_finalize` (or aborts), so
/// that it is not inside UCX while UCX's own destructors run.
extern "C" fn stop_at_exit() {
    // The process is ending anyway: a panic here only must not unwind into libc.
    let _ = boundary::catch(|| {
        let p = STATE.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: the leaked state is never freed.
            unsafe { &*p }.stop_progress_thread();
        }
    });
}

fn open(c: &'static CoreServices) -> *const c_void {
    if !STATE.load(Ordering::Acquire).is_null() {
        log(LOG_ERROR, "opened twice");
        return std::ptr::null();
    }
    let opts = options(c);
    let u = match Ucx::new(c.n_pes.max(1) as usize, &opts) {
        Ok(u) => u,
        Err(e) => {
            log(LOG_ERROR, &e);
            return std::ptr::null();
        }
    };
    let key = CString::new(ADDR_KEY).expect("no NUL in the key");
    // SAFETY: core service; the address bytes are valid for the call.
    if unsafe { (c.kv_put)(key.as_ptr(), u.address().as_ptr(), u.address().len()) } != 0 {
        log(LOG_ERROR, "could not publish the UCX worker address");
        return std::ptr::null();
    }
    let u: &'static Ucx = Box::leak(Box::new(u));
    STATE.store(u as *const Ucx as *mut Ucx, Ordering::Release);
    if bool_param(c, "traffic", false) {
        traffic::arm(c.pe_is_local);
    }
    // Without a transport to any peer (`self_only`) nothing can arrive for the thread to serve:
    // it would only wake up, hundreds of times a second on every PE (at 128 PEs on 2 cores,
    // 0.6 s of start-up's 3.2 s of CPU time, docs/performance.md).
    if opts.progress_thread && !ucx::self_only(&opts) {
        start_heartbeat(c, u, &opts);
        match u.start_progress_thread(Some(fatal_hook), Some(host_crowded)) {
            // SAFETY: registering an extern "C" fn with no arguments.
            Ok(()) => unsafe {
                libc::atexit(stop_at_exit);
            },
            Err(e) => log(LOG_WARN, &format!("{e}; continuing without a progress thread")),
        }
    }
    // Peers' transfers through this PE are served whenever the core can copy; whether this PE
    // sends any is the parameter's choice (the core agrees on it before making a space).
    if c.segment_copy().is_some() {
        u.set_target_copier(copy_through_core);
    }
    let via_target = match u.via_target_ready() {
        Ok(()) => c.segment_copy().is_some() && bool_param(c, "via_target", true),
        Err(e) => {
            log(LOG_WARN, &format!("no transfers through a target's CPU: {e}"));
            false
        }
    };
    let ops: &'static SpmlOps = Box::leak(Box::new(SpmlOps {
        struct_size: std::mem::size_of::<SpmlOps>(),
        transport: TransportHandle {
            kind: TRANSPORT_UCX,
            context: u.context() as *mut c_void,
            worker: u.worker() as *mut c_void,
        },
        default_ctx: std::ptr::null_mut(),
        connect,
        mem_register,
        mem_deregister,
        add_segment,
        remote_ptr,
        put,
        get,
        put_nbi,
        get_nbi,
        quiet,
        fence,
        progress,
        finalize,
        atomic,
        ctx_create: Some(ctx_create),
        ctx_destroy: Some(ctx_destroy),
        put_signal: match u.put_signal_ready() {
            Ok(()) => Some(put_signal),
            Err(e) => {
                log(LOG_WARN, &format!("no put-with-signal messages: {e}"));
                None
            }
        },
        memory_types: if u.moves_cuda_memory() { 1 << rshmem_plugin_api::MEMHEAP_DEVICE_GPU } else { 0 },
        put_via_target: via_target.then_some(put_via_target as SpmlViaTarget),
        get_via_target: via_target.then_some(get_via_target as SpmlViaTarget),
        progress_busy: Some(progress_busy),
        suspend: Some(suspend),
        peer_memory: Some(peer_memory),
        no_host_transport: c_int::from(ucx::self_only(&opts)),
    }));
    u.on_refused_message(fatal_hook);
    u.on_refused_transfer(fatal_hook);
    ops as *const SpmlOps as *const c_void
}

/// PE `pe`'s UCX worker address, through the core's bootstrap.
fn worker_address(c: &'static CoreServices, pe: usize) -> Result<Vec<u8>, String> {
    let key = CString::new(ADDR_KEY).expect("no NUL in the key");
    let mut buf = vec![0u8; 4096];
    let mut len = 0usize;
    // SAFETY: core service with a buffer of the given capacity and a valid out-pointer.
    let mut rc = unsafe { (c.kv_get)(pe as c_int, key.as_ptr(), buf.as_mut_ptr(), buf.len(), &mut len) };
    if rc != 0 && len > buf.len() {
        buf.resize(len, 0);
        // SAFETY: as above, with the size the core asked for.
        rc = unsafe { (c.kv_get)(pe as c_int, key.as_ptr(), buf.as_mut_ptr(), buf.len(), &mut len) };
    }
    if rc != 0 {
        return Err(format!("PE {pe} did not publish its UCX worker address"));
    }
    buf.truncate(len);
    Ok(buf)
}

unsafe extern "C" fn connect() -> c_int {
    slot(COMPONENT, "connect", || {
        let Some(c) = boundary::core() else { not_open() };
        let u = state();
        // Endpoints are made at their first use, their addresses looked up then (issue 51: an
        // endpoint and a lookup per PE at start-up, O(N) per PE, 2.9-3.0 s of `shmem_init` at
        // 128 PEs over 4 emulated hosts), except those to the PEs this PE sends heartbeats to
        // (2, on other hosts): made and wired up now, they are how a PE that ends is noticed
        // at once by its watchers, whose endpoints to it fail when its connections close (a PE
        // that left while the others initialize again, in 2.6 s; made at the first heartbeat
        // instead, the endpoint of such a PE was never connected and only the heartbeats'
        // silence found it, after 11 s). Otherwise a peer's end is noticed without endpoints
        // made ahead: oshrun watches its PEs itself; under mpirun and srun the core watches the
        // host's PEs by pid (a stop; a PE that left while the others initialize again), and
        // between hosts the heartbeats do (`ucx::heartbeat`); an operation on a peer that is
        // gone fails on its own endpoint.
        // SAFETY: the core's table, valid while the plugin is loaded.
        let local = |pe: usize| unsafe { (c.pe_is_local)(pe as c_int) } != 0;
        let me = c.my_pe.max(0) as usize;
        let here: Vec<usize> = (0..u.n_pes()).filter(|&pe| pe == me || local(pe)).collect();
        let watched = ucx::heartbeat::targets(me, u.n_pes(), &here);
        let book = ucx::AddrBook::new(
            u.n_pes(),
            Vec::new(),
            Box::new(|pe| {
                let c = boundary::core().ok_or("the plugin is not open")?;
                worker_address(c, pe)
            }),
        );
        if let Err(e) = u.connect_book(book, &|pe| watched.contains(&pe)) {
            log(LOG_ERROR, &e);
            return RC_ERROR;
        }
        // After the endpoints exist: the progress thread's first send would otherwise make one
        // itself while `connect_book` makes the same.
        u.heartbeat_send_early(&watched);
        // Only with progress threads: a peer that finished its own wire-up waits in the core's
        // bootstrap fence without progressing UCX, and could not answer us.
        if !watched.is_empty() && u.progress_thread_running() && !u.wireup(ucx::WIREUP_TIMEOUT) {
            log(LOG_DEBUG, "not every endpoint was wired up during connect; UCX finishes it lazily");
        }
        RC_OK
    })
}

unsafe extern "C" fn mem_register(
    base: *mut c_void,
    len: usize,
    memh: *mut c_void,
    rkey: *mut u8,
    cap: usize,
    rkey_len: *mut usize,
    reg: *mut *mut c_void,
) -> c_int {
    slot(COMPONENT, "mem_register", || {
        let u = state();
        // Reuse the registration sshmem "ucx" made while allocating; map anything else here.
        let (handle, ours) = if memh.is_null() {
            match u.mem_map(base, len, false) {
                Ok((h, _)) => (h, true),
                Err(e) => {
                    log(LOG_ERROR, &format!("registering {len} bytes at {base:p}: {e}"));
                    return RC_ERROR;
                }
            }
        } else {
            (memh as sys::ucp_mem_h, false)
        };
        let undo = || {
            if ours {
                // SAFETY: the registration made just above, not published.
                unsafe { u.mem_unmap(handle) };
            }
        };
        // SAFETY: `handle` is a live registration of our context.
        let packed = match unsafe { u.rkey_pack(handle) } {
            Ok(p) => p,
            Err(e) => {
                undo();
                log(LOG_ERROR, &e);
                return RC_ERROR;
            }
        };
        if packed.len() > cap {
            undo();
            log(LOG_ERROR, &format!("the packed key needs {} bytes, the core offers {cap}", packed.len()));
            return RC_ERROR;
        }
        // SAFETY: the core's key buffer holds `cap` bytes; `rkey_len` and `reg` are valid.
        unsafe {
            std::ptr::copy_nonoverlapping(packed.as_ptr(), rkey, packed.len());
            *rkey_len = packed.len();
        }
        if !ours {
            u.borrow_registration();
        }
        // SAFETY: `handle` is a live registration of our context.
        u.add_region(base as usize, len, unsafe { u.is_host_memory(handle) });
        let record = Registration { memh: ours.then_some(handle), base: base as usize, len };
        // SAFETY: `reg` is a valid out-pointer (core).
        unsafe { *reg = Box::into_raw(Box::new(record)) as *mut c_void };
        RC_OK
    })
}

/// What `mem_register` hands the core as `reg`: the range (which put-with-signal messages may
/// write until `mem_deregister`) and the registration made here, if any (a borrowed sshmem
/// registration stays with sshmem).
struct Registration {
    memh: Option<sys::ucp_mem_h>,
    base: usize,
    len: usize,
}

unsafe extern "C" fn mem_deregister(reg: *mut c_void) {
    slot(COMPONENT, "mem_deregister", || {
        if reg.is_null() {
            return;
        }
        // SAFETY: handles are the records `mem_register` boxed, each released once by the core.
        let r = unsafe { Box::from_raw(reg as *mut Registration) };
        let u = state();
        u.remove_region(r.base, r.len);
        if let Some(memh) = r.memh {
            // SAFETY: the registration `mem_register` made, no longer used by any peer.
            unsafe { u.mem_unmap(memh) };
        }
    })
}

unsafe extern "C" fn add_segment(
    pe: c_int,
    seg: u32,
    _base: u64,
    _len: usize,
    rkey: *const u8,
    rkey_len: usize,
) -> c_int {
    slot(COMPONENT, "add_segment", || {
        if pe < 0 || rkey.is_null() {
            return RC_ERROR;
        }
        // SAFETY: the core passes the packed key with its length.
        let packed = unsafe { std::slice::from_raw_parts(rkey, rkey_len) };
        match state().add_rkey(pe as usize, seg as usize, packed) {
            Ok(()) => RC_OK,
            Err(e) => {
                log(LOG_ERROR, &e);
                RC_ERROR
            }
        }
    })
}

unsafe extern "C" fn remote_ptr(pe: c_int, seg: u32, raddr: u64) -> *mut c_void {
    slot(COMPONENT, "remote_ptr", || {
        if pe < 0 {
            return std::ptr::null_mut();
        }
        state().remote_ptr(pe as usize, seg as usize, raddr)
    })
}

unsafe extern "C" fn put(
    ctx: SpmlCtx,
    pe: c_int,
    seg: u32,
    raddr: u64,
    src: *const c_void,
    len: usize,
) -> c_int {
    slot(COMPONENT, "put", || {
        traffic::count(pe, traffic::Kind::Put, len);
        let u = ctx_state(ctx);
        // SAFETY: the core guarantees `src` is readable for `len` bytes.
        match unsafe { u.put(pe as usize, seg as usize, raddr, src, len, true) } {
            Ok(()) => RC_OK,
            Err(e) => op_failed(u, "put to", pe, e),
        }
    })
}

unsafe extern "C" fn get(
    ctx: SpmlCtx,
    pe: c_int,
    seg: u32,
    raddr: u64,
    dst: *mut c_void,
    len: usize,
) -> c_int {
    slot(COMPONENT, "get", || {
        traffic::count(pe, traffic::Kind::Get, len);
        let u = ctx_state(ctx);
        // SAFETY: the core guarantees `dst` is writable for `len` bytes.
        match unsafe { u.get(pe as usize, seg as usize, raddr, dst, len, true) } {
            Ok(()) => RC_OK,
            Err(e) => op_failed(u, "get from", pe, e),
        }
    })
}

unsafe extern "C" fn put_nbi(
    ctx: SpmlCtx,
    pe: c_int,
    seg: u32,
    raddr: u64,
    src: *const c_void,
    len: usize,
) -> c_int {
    slot(COMPONENT, "put_nbi", || {
        traffic::count(pe, traffic::Kind::Put, len);
        let u = ctx_state(ctx);
        // SAFETY: the caller keeps `src` readable until the next quiet.
        match unsafe { u.put(pe as usize, seg as usize, raddr, src, len, false) } {
            Ok(()) => RC_OK,
            Err(e) => op_failed(u, "put_nbi to", pe, e),
        }
    })
}

unsafe extern "C" fn get_nbi(
    ctx: SpmlCtx,
    pe: c_int,
    seg: u32,
    raddr: u64,
    dst: *mut c_void,
    len: usize,
) -> c_int {
    slot(COMPONENT, "get_nbi", || {
        traffic::count(pe, traffic::Kind::Get, len);
        let u = ctx_state(ctx);
        // SAFETY: the caller keeps `dst` writable until the next quiet.
        match unsafe { u.get(pe as usize, seg as usize, raddr, dst, len, false) } {
            Ok(()) => RC_OK,
            Err(e) => op_failed(u, "get_nbi from", pe, e),
        }
    })
}

/// Put-with-signal as one UCX active message (collectives' signal words only: the target's
/// CPU applies the signal, see `ucx::am`).
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn put_signal(
    ctx: SpmlCtx,
    pe: c_int,
    _seg: u32,
    raddr: u64,
    src: *const c_void,
    len: usize,
    _sig_seg: u32,
    sig_raddr: u64,
    value: u64,
) -> c_int {
    slot(COMPONENT, "put_signal", || {
        traffic::count(pe, traffic::Kind::PutSignal, len);
        let u = ctx_state(ctx);
        // SAFETY: the core guarantees `src` is readable for `len` bytes.
        match unsafe { u.put_signal(pe as usize, raddr, src, len, sig_raddr, value) } {
            Ok(()) => RC_OK,
            Err(e) => op_failed(u, "put with signal to", pe, e),
        }
    })
}

/// The target side of `put_via_target` and `get_via_target`: the core's `segment_copy`.
fn copy_through_core(seg: u32, off: u64, buf: *mut u8, len: usize, into: bool) -> Result<(), String> {
    let f =
        boundary::core().and_then(CoreServices::segment_copy).ok_or("the core copies no segment memory")?;
    // SAFETY: core service; `buf` is valid for `len` bytes in the direction asked (the caller).
    match unsafe { f(seg, off, buf.cast(), len, c_int::from(into)) } {
        0 => Ok(()),
        _ => Err(format!(
            "{len} bytes at offset {off} of segment {seg} are not device memory this PE copies for peers"
        )),
    }
}

unsafe extern "C" fn put_via_target(
    ctx: SpmlCtx,
    pe: c_int,
    seg: u32,
    off: u64,
    src: *mut c_void,
    len: usize,
) -> c_int {
    slot(COMPONENT, "put_via_target", || {
        traffic::count(pe, traffic::Kind::Put, len);
        let ch = ctx_state(ctx);
        // SAFETY: the core guarantees `src` is readable for `len` bytes.
        match unsafe { state().via_target(ch, pe as usize, true, seg, off, src.cast(), len) } {
            Ok(()) => RC_OK,
            Err(e) => op_failed(ch, "put (through the target's CPU) to", pe, e),
        }
    })
}

unsafe extern "C" fn get_via_target(
    ctx: SpmlCtx,
    pe: c_int,
    seg: u32,
    off: u64,
    dst: *mut c_void,
    len: usize,
) -> c_int {
    slot(COMPONENT, "get_via_target", || {
        traffic::count(pe, traffic::Kind::Get, len);
        let ch = ctx_state(ctx);
        // SAFETY: the core guarantees `dst` is writable for `len` bytes.
        match unsafe { state().via_target(ch, pe as usize, false, seg, off, dst.cast(), len) } {
            Ok(()) => RC_OK,
            Err(e) => op_failed(ch, "get (through the target's CPU) from", pe, e),
        }
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn atomic(
    ctx: SpmlCtx,
    pe: c_int,
    seg: u32,
    raddr: u64,
    op: u32,
    size: u32,
    value: u64,
    cond: u64,
    fetched: *mut u64,
) -> c_int {
    slot(COMPONENT, "atomic", || {
        traffic::count(pe, traffic::Kind::Atomic, size as usize);
        let u = ctx_state(ctx);
        match u.atomic(pe as usize, seg as usize, raddr, op, size, value, cond, !fetched.is_null()) {
            Ok(v) => {
                if !fetched.is_null() {
                    // SAFETY: the core passes a valid out-pointer or NULL.
                    unsafe { *fetched = v };
                }
                RC_OK
            }
            Err(OpError::Invalid) => RC_ERROR,
            Err(e) => op_failed(u, "atomic operation on", pe, e),
        }
    })
}

unsafe extern "C" fn quiet(ctx: SpmlCtx) -> c_int {
    slot(COMPONENT, "quiet", || {
        if boundary::ending() {
            return RC_OK;
        }
        let u = ctx_state(ctx);
        match u.flush() {
            Ok(()) => RC_OK,
            Err(e) => flush_failed(u, "quiet", e),
        }
    })
}

unsafe extern "C" fn fence(ctx: SpmlCtx) -> c_int {
    slot(COMPONENT, "fence", || {
        let u = ctx_state(ctx);
        match u.fence() {
            Ok(()) => RC_OK,
            Err(e) => flush_failed(u, "fence", e),
        }
    })
}

/// A channel of its own for a created context, so that it completes independently.
unsafe extern "C" fn ctx_create(options: c_long, out: *mut SpmlCtx) -> c_int {
    slot(COMPONENT, "ctx_create", || {
        if out.is_null() {
            return RC_ERROR;
        }
        // Every channel is multi-threaded (see `Channel`), so the options change nothing here.
        let _ = options;
        match state().create_channel() {
            Ok(ch) => {
                // SAFETY: checked non-null.
                unsafe { *out = Arc::into_raw(ch) as SpmlCtx };
                RC_OK
            }
            Err(e) => {
                log(LOG_DEBUG, &format!("cannot create a context's channel: {e}"));
                RC_ERROR
            }
        }
    })
}

unsafe extern "C" fn ctx_destroy(ctx: SpmlCtx) {
    slot(COMPONENT, "ctx_destroy", || {
        if ctx.is_null() || boundary::ending() {
            return;
        }
        // SAFETY: a channel `ctx_create` handed out, destroyed once by the core.
        let ch = unsafe { Arc::from_raw(ctx as *const Channel) };
        if let Err(e) = state().destroy_channel(ch) {
            log(LOG_WARN, &format!("destroying a context: {e}"));
        }
    })
}

unsafe extern "C" fn progress() {
    slot(COMPONENT, "progress", || {
        drive();
    })
}

unsafe extern "C" fn progress_busy() -> c_int {
    slot(COMPONENT, "progress_busy", || c_int::from(drive()))
}

/// One round of progress on every worker; true when it found something to do.
fn drive() -> bool {
    if boundary::ending() {
        return false;
    }
    let u = state();
    let busy = u.progress_all();
    if let Some((pe, st, phase)) = u.overdue_failure() {
        fatal(&ucx::peer_lost_message(pe, &u.where_is(pe), st, phase));
    }
    busy
}

unsafe extern "C" fn finalize() {
    slot(COMPONENT, "finalize", || {
        if !boundary::ending() {
            if let Some(r) = traffic::report() {
                let me = boundary::core().map_or(-1, |c| c.my_pe);
                // One write, so that lines of PEs sharing the launcher's pipe do not interleave.
                let line = format!(
                    "rshmem[PE {me}] spml ucx: operations handed to UCX (SHMEM_MCA_spml_ucx_traffic) {r}\n"
                );
                let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            }
            if let Err(e) = state().finalize() {
                log(LOG_WARN, &format!("finalize: {e}"));
            }
        }
    })
}

/// The library was finalized but may be initialized again in this process (1), or it was (0).
/// Peers may end their processes while it is suspended: their loss is then expected.
unsafe extern "C" fn suspend(suspended: c_int) {
    slot(COMPONENT, "suspend", || state().set_suspended(suspended != 0))
}

/// The per-peer memory report (`SpmlOps::peer_memory`): arm the measuring (1), or fill `out`
/// (0) with what this spml holds for peers.
unsafe extern "C" fn peer_memory(measure: c_int, out: *mut rshmem_plugin_api::SpmlPeerMemory) {
    slot(COMPONENT, "peer_memory", || {
        let Some(c) = boundary::core() else { not_open() };
        let me = c.my_pe.max(0) as usize;
        if measure != 0 {
            let pe_is_local = c.pe_is_local;
            // SAFETY: a core service, valid while the plugin is loaded.
            ucx::footprint::arm(me, Box::new(move |pe| unsafe { pe_is_local(pe as c_int) } != 0));
            return;
        }
        if out.is_null() {
            return;
        }
        let m = state().peer_memory(me);
        // SAFETY: the core passes a structure of `struct_size` bytes (at least that field);
        // only the leading bytes both sides know are written.
        unsafe {
            let room = (*out).struct_size.min(std::mem::size_of_val(&m));
            let src = (&m as *const rshmem_plugin_api::SpmlPeerMemory).cast::<u8>();
            let skip = std::mem::size_of::<usize>();
            if room > skip {
                std::ptr::copy_nonoverlapping(src.add(skip), out.cast::<u8>().add(skip), room - skip);
            }
        }
    })
}

rshmem_plugin_api::export_plugin! {
    framework: Framework::Spml,
    name: "ucx",
    description: "RMA, atomics and ordering over UCX (ucp_*_nbx), with an optional progress thread",
    params: &[
        ParamDecl {
            name: cstr!("progress_thread"),
            kind: rshmem_plugin_api::PARAM_BOOL,
            default_value: cstr!("1"),
            doc: cstr!("Run a thread that progresses the UCX worker (sleeping on its event fd when idle), so that RMA and atomics targeting this PE complete while it computes; with UCX, RMA into memory UCX did not allocate needs target-side progress. None where UCX has no transport to any peer (one_host_tcp off)"),
        },
        ParamDecl {
            name: cstr!("batch_puts"),
            kind: rshmem_plugin_api::PARAM_STRING,
            default_value: cstr!("auto"),
            doc: cstr!("Carry puts of up to 256 bytes to a peer in one active message per peer, sent when full, before any other operation to that peer, at quiet, whenever the PE waits in the library, and by the progress thread once the PE computes; quiet waits for the target's acknowledgement. auto: on where UCX can only use sockets (no RDMA device here, or UCX_TLS names TCP and no RDMA transport); 1/0: always/never"),
        },
        ParamDecl {
            name: cstr!("rma_in_messages"),
            kind: rshmem_plugin_api::PARAM_STRING,
            default_value: cstr!("auto"),
            doc: cstr!("Carry puts larger than a batch entry, gets and atomics in the component's own active messages, which the target applies with its CPU (atomics that fetch nothing travel in the batches; needs batch_puts): UCX then needs no RMA or atomics of its own, which it only emulates over sockets and newer UCX versions no longer do. auto: on where UCX can only use sockets, as batch_puts; 1/0: always/never"),
        },
        ParamDecl {
            name: cstr!("peer_timeout"),
            kind: rshmem_plugin_api::PARAM_STRING,
            default_value: cstr!("10"),
            doc: cstr!("Seconds after which a PE on another host that has sent no heartbeat ends the job, naming it (a cut link, a stopped or lost PE); each PE sends an 8-byte heartbeat to two PEs on other hosts every tenth of this, from the progress thread (needs progress_thread); 0: no heartbeats"),
        },
        ParamDecl {
            name: cstr!("shm_transports"),
            kind: rshmem_plugin_api::PARAM_STRING,
            default_value: cstr!("auto"),
            doc: cstr!("Open UCX's shared-memory transports (posix, sysv), whose receive queues take about 2 MB of each PE's memory apiece and time at start-up. Only sshmem ucx maps peers' memory through them; the component's own endpoints (with peer-failure handling) do not use them. auto: on when SHMEM_MCA_sshmem asks for ucx (names it, or excludes mmap); 1/0: always/never. A UCX_TLS set by the user wins"),
        },
        ParamDecl {
            name: cstr!("one_host_tcp"),
            kind: rshmem_plugin_api::PARAM_STRING,
            default_value: cstr!("auto"),
            doc: cstr!("In a job whose PEs are all on one host, open UCX's TCP transport (on the loopback device), through which those PEs reach each other when they do not map each other's memory. Off, UCX gets only its self transport: no PE holds a listening socket that another local user could connect to, and a PE of the host that cannot map another ends start-up with the reason. auto: on unless the core maps every PE of the host by itself (SHMEM_LOCAL_MAP on, no GPU memheap open, sshmem mmap the choice) and shm_transports is off; 1/0: always/never. Jobs across hosts always open it; a UCX_TLS set by the user wins"),
        },
        ParamDecl {
            name: cstr!("traffic"),
            kind: rshmem_plugin_api::PARAM_BOOL,
            default_value: cstr!("0"),
            doc: cstr!("Count the operations the core hands to this component (puts, gets, atomics, puts with signal, and their bytes), apart for PEs on other hosts and on this host, and print each PE's counts at shmem_finalize; one relaxed load per operation when off. Operations, not wire messages: small puts share batches, and heartbeats are not counted"),
        },
        ParamDecl {
            name: cstr!("via_target"),
            kind: rshmem_plugin_api::PARAM_BOOL,
            default_value: cstr!("1"),
            doc: cstr!("Offer RMA on device memory that UCX cannot move (UCX without CUDA support) as active messages whose target copies the bytes with its CPU, so that a GPU space spans PEs that cannot map each other's device memory (other hosts); 0: such a space is not created"),
        },
    ],
    caps: rshmem_plugin_api::SPML_CAP_MULTI_HOST | rshmem_plugin_api::SPML_CAP_THREAD_MULTIPLE,
    query: query,
    open: open,
}

#[cfg(test)]
mod tests {
    use super::{asks_for_sshmem_ucx, host_tcp_needed};

    #[test]
    fn a_one_host_job_leaves_tcp_out_only_where_the_core_maps_every_peer_and_sshmem_ucx_is_not_asked_for() {
        assert!(!host_tcp_needed(Some(true), false));
        // SHMEM_LOCAL_MAP=0 or a GPU memheap; a core that cannot say; sshmem ucx.
        assert!(host_tcp_needed(Some(false), false));
        assert!(host_tcp_needed(None, false));
        assert!(host_tcp_needed(Some(true), true));
    }

    #[test]
    fn only_a_selection_that_may_put_sshmem_ucx_first_keeps_the_shared_memory_transports() {
        for s in ["ucx", "ucx,mmap", "mmap, ucx", " ucx ", "^mmap", "^mmap,other"] {
            assert!(asks_for_sshmem_ucx(s), "{s:?}");
        }
        for s in ["", "mmap", "^ucx", "^other", "ucxx", "mmap,other"] {
            assert!(!asks_for_sshmem_ucx(s), "{s:?}");
        }
    }
}
