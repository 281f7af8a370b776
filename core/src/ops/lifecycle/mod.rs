//! Start-up and shutdown: `shmem_init` (bootstrap, component selection, symmetric memory,
//! wiring to peers, the predefined teams and spaces), the implicit finalize at exit, and
//! `shmem_finalize`. The state it builds is published in `crate::symm::runtime`.
//!
//! A first initialization runs as phases that take and return values, each in its own module
//! (docs/architecture.md, "Start-up"): [`job::Job`] (the bootstrap and the settings) →
//! [`components::Components`] → [`memory::Memory`] (this PE's segments, published) →
//! [`peers::Peers`] (every peer's segments learnt) → [`layout::Layout`] (hosts and CPUs) → the
//! `Runtime`, then the teams. A phase that fails returns an [`InitError`]; only the top of
//! [`init`] ends the job with it.

mod components;
mod error;
mod job;
mod layout;
mod memory;
mod peers;
#[cfg(test)]
mod simulate;

pub use error::InitError;

use crate::ops::handles::rshmem_team_world;
use crate::ops::team::TeamState;
use crate::symm::limits::{self, available_cores};
use crate::symm::peers::unmap_host_peers;
use crate::symm::runtime::{self, get, Runtime};
use crate::symm::segments::SegmentTable;
use components::Components;
use job::Job;
use rshmem_boot::{self as bootstrap, Bootstrap};
use rshmem_plugin_api::{Framework, MEMHEAP_DEVICE_CPU};
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

static INIT_LOCK: Mutex<()> = Mutex::new(());

/// Initialisation calls not yet matched by a `shmem_finalize` (spec 9.1: the library is
/// finalized by the last matching call only). Read and written under `INIT_LOCK`.
static INIT_DEPTH: AtomicUsize = AtomicUsize::new(0);

fn fail(routine: &'static CStr, msg: &str) -> ! {
    crate::error::fatal(routine, msg)
}

/// Where `shmem_init` spends its time, by phase (logged at debug level): what grows with the
/// number of PEs shows here first (issue 51).
struct Phases {
    last: std::time::Instant,
    start: std::time::Instant,
    marks: Vec<(&'static str, std::time::Duration)>,
}

impl Phases {
    fn new() -> Phases {
        let now = std::time::Instant::now();
        Phases { last: now, start: now, marks: Vec::new() }
    }

    fn mark(&mut self, what: &'static str) {
        let now = std::time::Instant::now();
        self.marks.push((what, now - self.last));
        self.last = now;
    }

    fn summary(&self) -> String {
        let parts: Vec<String> =
            self.marks.iter().map(|(w, d)| format!("{w} {:.1}", d.as_secs_f64() * 1e3)).collect();
        format!("init took {:.1} ms: {} (ms)", self.start.elapsed().as_secs_f64() * 1e3, parts.join(", "))
    }
}

/// `shmem_init` / `shmem_init_thread` at thread level `requested`; `gpu_heap`: asked for the
/// GPU heap (`SHMEM_DEVICE_HOST_INIT`, `crate::ops::gpu_aux`). Returns the provided thread
/// level.
pub fn init(routine: &'static CStr, requested: i32, gpu_heap: bool) -> i32 {
    let _g = INIT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if runtime::is_initialized() {
        INIT_DEPTH.fetch_add(1, Ordering::Relaxed);
        return get(routine).thread_level();
    }
    if runtime::is_finalized() {
        if let Some(rt) = runtime::dormant() {
            return resume(routine, rt, requested, gpu_heap);
        }
        fail(
            routine,
            "rshmem cannot be initialized again: its last shmem_finalize released the library for good, because SHMEM_REINIT=0 or the spml cannot be suspended (no `suspend` slot, docs/plugin-abi.md). Keep the library initialized, with one more shmem_init than shmem_finalize, until the last use",
        );
    }
    let boot: &'static dyn Bootstrap = match bootstrap::detect() {
        Ok(b) => runtime::set_boot(b),
        Err(e) => {
            eprintln!("rshmem {}: bootstrap failed: {e}", routine.to_string_lossy());
            std::process::exit(1)
        }
    };
    // A PE stopped before or during start-up leaves the others in a fence of the launcher's:
    // they watch for it from here on.
    if let Some(timeout) = pmix_stop_timeout(routine) {
        crate::ops::watch::start_initializing(timeout);
    }
    let level = start(routine, boot, requested, gpu_heap).unwrap_or_else(|e| fail(routine, &e.to_string()));
    INIT_DEPTH.store(1, Ordering::Relaxed);
    // SAFETY: registering an extern "C" fn with glibc's on_exit.
    unsafe { on_exit(at_exit, std::ptr::null_mut()) };
    crate::ops::watch::stop();
    start_watch(routine);
    if boot.rank() == 0 {
        report(routine);
    }
    level
}

/// A first initialization, phase by phase. Returns the provided thread level.
fn start(
    routine: &'static CStr,
    boot: &'static dyn Bootstrap,
    requested: i32,
    gpu_heap: bool,
) -> Result<i32, InitError> {
    let mut phases = Phases::new();
    let job = Job::new(boot)?;
    let fence_limit = job.init_timeout;
    let comps = Components::open(&job, requested)?;
    phases.mark("components");
    let mut mem = memory::Memory::create(&job, &comps)?;
    phases.mark("segments");
    init_fence(routine, boot, fence_limit)?;
    phases.mark("fence 1");
    peers::agree(boot, &mem.agreed)?;
    phases.mark("agreement");
    let measuring = crate::ops::peer_memory::arm(job.peer_memory, comps.spml);
    peers::connect(&comps)?;
    phases.mark("spml connect");
    let before_mapping = if measuring { rshmem_plugin_api::footprint::private_bytes() } else { 0 };
    let relayed = peers::relayed(&job, &comps, &mut mem);
    phases.mark("relay");
    let mut peers = peers::learn(&job, &comps, &mem, relayed)?;
    phases.mark("peer segments");
    let mut peer_memory = crate::symm::runtime::PeerMemory { who: job.peer_memory, ..Default::default() };
    if measuring {
        peer_memory.mapping_grew =
            rshmem_plugin_api::footprint::private_bytes().saturating_sub(before_mapping);
        let heap = crate::symm::segments::SEG_HEAP;
        peer_memory.mapped_peers =
            job.host_peers().filter(|&pe| !mem.segs.peer(pe as usize, heap).mapped.is_null()).count();
    }
    log_selection(&job, &comps, &mem.segs);

    // Whether this PE maps every same-host peer's segments, and its host, for the others to
    // read after the fence: a transport may map some peers and not others, and every PE must
    // decide alike, from one table of hosts.
    let nseg = mem.segs.count() as u32;
    let unmapped: Vec<i32> = job
        .host_peers()
        .filter(|&pe| (0..nseg).any(|seg| mem.segs.peer(pe as usize, seg).mapped.is_null()))
        .collect();
    let heap_base = mem.segs.local(crate::symm::segments::SEG_HEAP).base as u64;
    let mine = layout::publish(boot, unmapped, limits::cpu_mask(), heap_base)?;
    // Everyone has mapped everything: drop the names so nothing leaks if the job dies.
    init_fence(routine, boot, fence_limit)?;
    phases.mark("fence 2");
    // Every PE has its mappings: the relay's descriptors go.
    if let Some(r) = mem.relay.take() {
        r.stop();
    }
    let local = layout::learn_local(boot, &mine)?;
    if layout::needs_summaries(boot) {
        // The hosts' summaries, which their lowest PEs have just put.
        init_fence(routine, boot, fence_limit)?;
        phases.mark("host summaries");
    }
    let layout = layout::learn_hosts(boot, local)?;
    crate::log::log(
        crate::log::DEBUG,
        "init",
        &format!(
            "hosts from {}",
            if layout.from_map { "the launcher's map of the job" } else { "every PE's record" }
        ),
    );
    let node_cpus = layout.node_cpus.unwrap_or_else(available_cores).max(1);
    let crowded = boot.local_size() as usize > node_cpus;
    crate::log::log(
        crate::log::DEBUG,
        "init",
        &format!(
            "{} PE(s) on this host, {} CPU(s) between them: waits {}",
            boot.local_size(),
            node_cpus,
            if crowded { "yield the CPU at once" } else { "spin first" }
        ),
    );
    if !layout.here_mapped && comps.spml.lacks_host_transport() {
        return Err(unreachable_host_peers(&mine.unmapped, &comps.spml_name));
    }
    if !layout.here_mapped {
        // Some PE of this host could not map a peer here. Mapped or not is then not the same
        // on every PE of the host (the shared team, the atomics path, the space capabilities
        // are decided from it), so none of them uses its mappings of the others.
        if !mine.record.maps_host {
            crate::log::log(
                crate::log::WARN,
                "init",
                &format!(
                    "this PE does not map the symmetric memory of {} on its host (SHMEM_LOCAL_MAP=0 here, or the transport could not): the host's PEs reach each other through the spml {}",
                    few_pes(&mine.unmapped),
                    comps.spml_name
                ),
            );
        }
        peers.needs_progress |= unmap_host_peers(&mem.segs, boot, job.my_pe, job.n_pes, 0..nseg);
    }
    // The heap's and global data's atomics rule (`crate::symm::segments`): every PE decided
    // `needs_progress` alike (a job on several hosts has an unmapped peer everywhere; on one
    // host the agreement above made every PE map all or none).
    peers.settle_keys(&comps)?;
    for seg in 0..nseg {
        mem.segs.set_cpu_atomics(seg, !peers.needs_progress);
    }
    let hosts =
        crate::symm::hosts::Hosts::new(layout.of, layout.here_mapped, layout.all_mapped, layout.peers);
    let placed = Placed { hosts, node_cpus, heap_align: layout.heap_align, crowded, peer_memory };
    runtime::publish(assemble(job, comps, mem, &peers, placed, requested));
    phases.mark("hosts and runtime");
    let rt: &'static Runtime = get(routine);
    teams(routine, rt);
    phases.mark("teams");
    // The closing fence: no PE uses a team (set up above) before every PE has set it up.
    init_fence(routine, boot, fence_limit)?;
    phases.mark("fence 3");
    crate::ops::spaces::init_gpu(rt, gpu_heap);
    phases.mark("gpu");
    give_back_init_garbage();
    crate::ops::peer_memory::init_done(rt);
    if crate::log::enabled(crate::log::DEBUG, "init") {
        crate::log::log(crate::log::DEBUG, "init", &phases.summary());
    }
    if rt.gpu.is_some() && crate::log::enabled(crate::log::INFO, "plugin select") {
        crate::log::log(crate::log::INFO, "plugin select", &rt.gpu_note);
    }
    Ok(rt.thread_level())
}

/// Start-up's end where a PE of this host could not map another (agreed over the host, so
/// every PE of it says so) while the spml, told that the core maps them all
/// (`CoreServices::maps_host_peers`), opened no transport between them.
fn unreachable_host_peers(unmapped_here: &[i32], spml: &str) -> InitError {
    let who = if unmapped_here.is_empty() {
        "another PE of this host does not map every PE of it".to_string()
    } else {
        format!(
            "this PE does not map the symmetric memory of {} (SHMEM_LOCAL_MAP=0 here, or the mapping failed)",
            few_pes(unmapped_here)
        )
    };
    InitError::Unreachable(format!(
        "{who}, and spml {spml} opened no transport between the PEs of this host (a job on one host whose PEs map each other needs none, and so holds no network listener: docs/security.md). A setting of the spml opens one (shmem_info lists them): for spml ucx, SHMEM_MCA_spml_ucx_one_host_tcp=1 reaches them through UCX's TCP transport on the loopback device"
    ))
}

/// What the layout phase decided, for the runtime.
struct Placed {
    hosts: crate::symm::hosts::Hosts,
    node_cpus: usize,
    heap_align: usize,
    /// This host runs more PEs than it has CPUs.
    crowded: bool,
    /// `SHMEM_PEER_MEMORY`'s start-up figures.
    peer_memory: crate::symm::runtime::PeerMemory,
}

/// The runtime the operations read, from the phases' values.
fn assemble(
    job: Job,
    c: Components,
    mem: memory::Memory,
    peers: &peers::Peers,
    placed: Placed,
    requested: i32,
) -> &'static mut Runtime {
    let scolls = c.scolls.iter().map(|(_, n)| n.clone()).collect();
    let teams = crate::symm::runtime::TeamRegistry::new(c.scolls.clone(), c.ephemeral.clone());
    Box::leak(Box::new(Runtime {
        boot: job.boot,
        my_pe: job.my_pe,
        n_pes: job.n_pes,
        spml: c.spml,
        sshmem: c.sshmem,
        memheap: c.memheap,
        device_heaps: c.memheaps.into_iter().filter(|d| d.device != MEMHEAP_DEVICE_CPU).collect(),
        gpu_note: c.gpu_note,
        gpu: c.gpu.and_then(Result::ok),
        any_device: std::sync::atomic::AtomicBool::new(false),
        user_heap: std::sync::OnceLock::new(),
        heap: mem.heap,
        heap_lock: Mutex::new(std::collections::HashSet::new()),
        segs: mem.segs,
        thread_level: std::sync::atomic::AtomicI32::new(
            requested.clamp(crate::ops::THREAD_SINGLE, crate::ops::THREAD_MULTIPLE),
        ),
        spml_thread_multiple: c.spml_thread_multiple,
        debug: job.debug,
        needs_progress: std::sync::atomic::AtomicBool::new(peers.needs_progress),
        spin_limit: if placed.crowded { 0 } else { 128 },
        selected: vec![
            (Framework::Spml, vec![c.spml_name]),
            (Framework::Sshmem, vec![c.sshmem_name]),
            (Framework::Memheap, c.memheap_names),
            (Framework::Scoll, scolls),
        ],
        local_map: job.local_map,
        active_set_teams: job.active_set_teams,
        heap_align: placed.heap_align,
        hosts: placed.hosts,
        node_cpus: placed.node_cpus,
        team_pool: std::sync::OnceLock::new(),
        heap_size: job.heap_size,
        heap_used: std::sync::atomic::AtomicUsize::new(0),
        heap_seg: Mutex::new(mem.heap_seg),
        data_seg: Mutex::new(mem.data),
        spml_regs: mem.spml_regs,
        teams,
        locks_held: Mutex::new(Vec::new()),
        signals_out: std::sync::atomic::AtomicBool::new(false),
        spaces: crate::symm::runtime::SpaceList::new(),
        ctxs_live: Mutex::new(Vec::new()),
        above: Box::new(crate::ops::state::OpsState::new()),
        gpu_judged: Default::default(),
        peer_memory: placed.peer_memory,
    }))
}

/// The team scratch pool (the first heap allocation, so it is symmetric; the world team holds
/// slot 0), the predefined teams and the spaces. No PE uses a team before the closing fence.
fn teams(routine: &'static CStr, rt: &'static Runtime) {
    let scolls = &rt.teams.scolls;
    crate::ops::team::init_pool(routine, rt, scolls);
    let world = TeamState::create(routine, rt, 0, (0, 1, rt.n_pes), scolls);
    rshmem_team_world.state.store(Box::into_raw(Box::new(world)) as *mut c_void, Ordering::Release);
    let shared = crate::ops::teams::init_shared(routine, rt, rshmem_team_world.state.load(Ordering::Acquire));
    crate::ops::handles::rshmem_team_shared.state.store(shared, Ordering::Release);
    let node =
        crate::ops::teams::init_node(routine, rt, rshmem_team_world.state.load(Ordering::Acquire), shared);
    crate::ops::handles::rshmem_team_node.state.store(node, Ordering::Release);
    crate::ops::spaces::init(rt);
    // SAFETY: plugin ABI call on our own segment.
    unsafe { (rt.sshmem.unlink)(&mut *rt.heap_seg.lock().unwrap()) };
    if let Some(d) = rt.data_seg.lock().unwrap().as_mut() {
        d.unlink();
    }
}

/// What was chosen, and how many peers' heaps are mapped (info level).
fn log_selection(job: &Job, c: &Components, segs: &SegmentTable) {
    if crate::log::enabled(crate::log::INFO, "plugin select") {
        crate::log::log(
            crate::log::INFO,
            "plugin select",
            &format!(
                "spml {}, sshmem {}, memheap {}, scoll {}",
                c.spml_name,
                c.sshmem_name,
                c.memheap_names.join(","),
                c.scolls.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>().join(",")
            ),
        );
    }
    if crate::log::enabled(crate::log::INFO, "init") {
        let mapped = (0..job.n_pes)
            .filter(|&pe| {
                pe != job.my_pe && !segs.peer(pe as usize, crate::symm::segments::SEG_HEAP).mapped.is_null()
            })
            .count();
        crate::log::log(
            crate::log::INFO,
            "init",
            &format!(
                "spml {}, sshmem {}: {mapped} of {} peer heaps mapped for load/store; segment records of {} of {} PEs read at start-up (the others' on first use)",
                c.spml_name,
                c.sshmem_name,
                job.n_pes - 1,
                mapped + 1,
                job.n_pes
            ),
        );
    }
}

/// PE 0's report at the end of a first initialization: settings it did not know, and what
/// `SHMEM_VERSION` and `SHMEM_INFO` ask for.
fn report(routine: &'static CStr) {
    let rt = get(routine);
    for w in crate::config::unknown_warnings() {
        crate::log::log(crate::log::WARN, "settings", &w);
    }
    if crate::config::get_bool("SHMEM_VERSION").unwrap_or(false) {
        eprintln!("rshmem {} (OpenSHMEM 1.6)", env!("CARGO_PKG_VERSION"));
    }
    if !crate::config::get_bool("SHMEM_INFO").unwrap_or(false) {
        return;
    }
    eprint!("{}", crate::ops::info::settings_report());
    for (fw, names) in &rt.selected {
        eprintln!("  selected {}: {}", fw.name(), names.join(", "));
    }
    if let Some(g) = rt.gpu.as_ref() {
        eprintln!("  GPU memory of PE 0: {}", rt.gpu_note);
        // Which data path peers' device memory takes (core/src/ops/device.rs).
        let path = if rt.spml.moves_device_memory(g.device) {
            "by the spml, which moves device memory itself"
        } else {
            "through CUDA IPC mappings where peers map it, else through the peers' CPUs"
        };
        eprintln!("  peers' GPU memory reached {path}");
    }
    let w = crate::ops::coll::world(routine);
    let first = |v: &[String]| v.first().cloned().unwrap_or_default();
    eprintln!(
        "  world team collectives: barrier by {}, broadcast by {}",
        first(&w.barrier.iter().map(|p| p.2.clone()).collect::<Vec<_>>()),
        first(&w.broadcast.iter().map(|p| p.2.clone()).collect::<Vec<_>>())
    );
}

/// The liveness watch (`ops::watch`) of a PE a PMIx launcher started; oshrun watches its PEs
/// itself, and a PE alone has nobody to watch.
fn start_watch(routine: &'static CStr) {
    if let Some(timeout) = pmix_stop_timeout(routine) {
        crate::ops::watch::start(timeout);
    }
}

/// `SHMEM_STOP_TIMEOUT` for a PE a PMIx launcher started, or None for any other.
fn pmix_stop_timeout(routine: &'static CStr) -> Option<std::time::Duration> {
    if !matches!(rshmem_boot::origin(|v| std::env::var(v).ok()), rshmem_boot::Origin::Pmix(_)) {
        return None;
    }
    let s = crate::config::get_int("SHMEM_STOP_TIMEOUT").unwrap_or_else(|e| fail(routine, &e));
    Some(std::time::Duration::from_secs(s.max(0) as u64))
}

/// `shmem_init` after the last `shmem_finalize` kept the runtime (`finalize_keeping`):
/// collective, like the first initialization. The components, connections, heaps and
/// predefined teams are the first initialization's; what the program made in between was
/// released at that finalize; the GPU space is made again. Returns the provided thread level.
fn resume(routine: &'static CStr, rt: &'static Runtime, requested: i32, gpu_heap: bool) -> i32 {
    let suspend = rt.spml.suspend_slot().expect("a runtime is kept only with an spml that can be suspended");
    rt.boot.resume();
    // SAFETY: plugin ABI call; the spml was suspended by the last finalize.
    unsafe { suspend(0) };
    let mut level = requested.clamp(crate::ops::THREAD_SINGLE, crate::ops::THREAD_MULTIPLE);
    if level == crate::ops::THREAD_MULTIPLE && !rt.spml_thread_multiple {
        // The spml was chosen at the first initialization, which did not need the level.
        crate::log::log(
            crate::log::WARN,
            &routine.to_string_lossy(),
            "SHMEM_THREAD_MULTIPLE requested, but the spml chosen at the first initialization does not serve it: SHMEM_THREAD_SERIALIZED provided",
        );
        level = crate::ops::THREAD_SERIALIZED;
    }
    rt.thread_level.store(level, Ordering::Relaxed);
    runtime::resume(rt);
    // Every PE is back before any of them communicates again; the GPU space is made below
    // with collectives. A PE of this host that left instead would leave this fence waiting
    // under a PMIx launcher: it is looked for while waiting.
    fence_checking(routine, rt, None, true);
    crate::ops::spaces::init_gpu(rt, gpu_heap);
    INIT_DEPTH.store(1, Ordering::Relaxed);
    start_watch(routine);
    if crate::log::enabled(crate::log::INFO, "init") {
        crate::log::log(crate::log::INFO, "init", "initialized again after the last shmem_finalize");
    }
    level
}

extern "C" {
    /// glibc: like `atexit`, but the handler receives the exit status.
    fn on_exit(f: extern "C" fn(std::ffi::c_int, *mut c_void), arg: *mut c_void) -> std::ffi::c_int;
}

/// The implicit `shmem_finalize` of a program that exits without calling it, as OSHMEM and
/// Sandia OpenSHMEM do (and the spec's own example programs rely on). On a normal exit
/// (status 0) it is the real, collective finalize, so no PE leaves while others may still reach
/// its memory; but the others must get there soon: a PE that left `main` while the rest still
/// compute, or wait for it, would otherwise hang the job. After `SHMEM_EXIT_WAIT_MS` the PE
/// ends the job, naming itself. On an error exit it only completes this PE's communication:
/// it must not block, and the launcher, not told of a finalize, stops the job.
extern "C" fn at_exit(status: std::ffi::c_int, _arg: *mut c_void) {
    if let Some(rt) = runtime::take_dormant() {
        // Finalized, every PE synchronised then: only the components are left to release.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| release_components(rt)));
        return;
    }
    if !runtime::is_initialized() {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        if status == 0 && !crate::error::is_exiting() {
            let ms = crate::config::raw("SHMEM_EXIT_WAIT_MS").trim().parse::<u64>().unwrap_or(750);
            let limit = (ms > 0).then(|| std::time::Duration::from_millis(ms));
            finalize_within(c"shmem_finalize (implicit, at exit)", limit, true);
        } else {
            // SAFETY: the default context is always live.
            unsafe { crate::ops::ctx::quiet(c"exit", crate::ops::ctx::default()) };
        }
    });
}

/// A fence of the first initialization, marked for a lost peer's message; `limit` seconds
/// (`SHMEM_INIT_TIMEOUT`, 0: none) of waiting in it end the job.
fn init_fence(routine: &'static CStr, boot: &'static dyn Bootstrap, limit: u64) -> Result<(), InitError> {
    let _blocked = crate::ops::blocked::step(routine, crate::ops::blocked::Blocking::Fence, -1);
    crate::ops::stall::fence_warning(routine, limit, move || boot.fence())
        .map_err(|e| InitError::boot("fence", e))
}

/// The bootstrap's fence for finalize, given up after `limit` (then the job is ended from
/// here). While it waits, this PE keeps driving the spml: a peer still completing its last
/// operations may need this PE's progress (a team barrier did that before the fence replaced
/// it; without it, two PEs across hosts deadlocked at finalize).
fn fence_within(routine: &'static CStr, rt: &'static Runtime, limit: Option<std::time::Duration>) {
    fence_checking(routine, rt, limit, false)
}

/// [`fence_within`], looking every [`crate::ops::watch::TICK`] for a PE of this host that has
/// left (`departures`: a fence of an initialization after the last finalize).
fn fence_checking(
    routine: &'static CStr,
    rt: &'static Runtime,
    limit: Option<std::time::Duration>,
    departures: bool,
) {
    let boot = rt.boot;
    let _blocked = crate::ops::blocked::step(routine, crate::ops::blocked::Blocking::Fence, -1);
    let mut looked = std::time::Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(boot.fence());
    });
    let start = std::time::Instant::now();
    loop {
        match rx.recv_timeout(std::time::Duration::from_micros(200)) {
            Ok(r) => return r.unwrap_or_else(|e| fail(routine, &format!("bootstrap fence: {e}"))),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                fail(routine, "bootstrap fence: its thread ended")
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if rt.needs_progress() {
            // SAFETY: plugin ABI call; the spml is live until finalize tears it down below.
            unsafe { (rt.spml.progress)() };
        }
        if departures && looked.elapsed() >= crate::ops::watch::TICK {
            looked = std::time::Instant::now();
            if let Some((pe, pid)) = crate::ops::watch::departed() {
                fail(
                    routine,
                    &format!(
                        "PE {pe} left after the last shmem_finalize (pid {pid}, on this host), but this PE initialized the library again; an initialization after the last shmem_finalize is collective: every PE must call it"
                    ),
                );
            }
        }
        if let Some(limit) = limit.filter(|l| start.elapsed() > *l) {
            crate::log::line(&format!(
                "{} {}: this PE returned from main (or called exit) without calling shmem_finalize, and the other PEs did not finalize within {} ms (SHMEM_EXIT_WAIT_MS): they still run or wait for this PE, so the job is ended",
                crate::log::prefix(),
                routine.to_string_lossy(),
                limit.as_millis()
            ));
            // Inside an exit handler: exit() again is undefined, and the bootstrap connection
            // is held by the fence. The launcher sees status 1 from this PE and stops the job.
            // SAFETY: _exit ends the process at once; nothing here needs unwinding.
            unsafe { libc::_exit(1) }
        }
    }
}

/// `shmem_finalize`: complete communication, synchronise, release the components.
pub fn finalize(routine: &'static CStr) {
    finalize_within(routine, None, false)
}

/// Finalize, the synchronisation bounded by `limit` when given (the implicit finalize at exit).
/// Finalize synchronises through the bootstrap, not with a team barrier: a PE finalizing must
/// never complete another PE's `shmem_barrier_all` (it would then leave while that PE still
/// counts on it).
fn finalize_within(routine: &'static CStr, limit: Option<std::time::Duration>, at_exit: bool) {
    let _g = INIT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if !runtime::is_initialized() {
        return;
    }
    // An explicit finalize matching one of several initialisations only counts; the exit
    // handler finalizes whatever the count.
    if !at_exit && INIT_DEPTH.fetch_sub(1, Ordering::Relaxed) > 1 {
        return;
    }
    let rt = get(routine);
    crate::ops::rma::quiet_with_signals(routine);
    fence_within(routine, rt, limit);
    // Every PE has arrived: a peer stopped or gone from here on holds nobody up.
    crate::ops::watch::stop();
    crate::ops::peer_memory::report(rt);
    // Nor is a peer's loss from here a failure: a fast PE may release everything and exit
    // while this one still releases what the program left.
    let suspend = rt.spml.suspend_slot();
    if let Some(suspend) = suspend {
        // SAFETY: plugin ABI call; every PE passed the fence and nothing is in flight.
        unsafe { suspend(1) };
    }
    let keep = !at_exit && crate::config::get_bool("SHMEM_REINIT").unwrap_or(true);
    if suspend.is_some() && keep {
        return finalize_keeping(routine, rt);
    }
    crate::ops::device::release_stages(rt);
    // At exit the process gives its device memory back anyway, and the driver may already
    // have run its own exit handlers (its calls would then fail), so only an explicit
    // finalize calls it; both fence alike, since PEs may finalize either way in one job.
    let fence = || fence_within(routine, rt, limit);
    crate::ops::spaces::release_at_finalize(routine, rt, !at_exit, false, fence);
    runtime::withdraw();
    release_components(rt);
    // The host heaps stay mapped: peers that have not finished exiting may still read
    // through their mappings, and the pages go with the process. Device memory was given
    // back above, after a fence of its own.
}

/// The last explicit `shmem_finalize` with an spml that can be suspended (every PE has
/// arrived, every operation is complete). OpenSHMEM 1.6 lets the program initialize the
/// library again afterwards, so the components, connections and heaps stay, suspended, until
/// the process exits (`at_exit` releases them then) or an initialization resumes them
/// (`resume`). What the program made goes now, as the spec has the last finalize release it:
/// contexts, teams, the blocks left in the heaps, created spaces and the GPU space's memory.
fn finalize_keeping(routine: &'static CStr, rt: &'static Runtime) {
    let contexts = crate::ops::ctx::destroy_all(routine);
    let teams = crate::ops::teams::release_all();
    crate::ops::spaces::release_at_finalize(routine, rt, true, true, || fence_within(routine, rt, None));
    let blocks = rt.free_user_blocks();
    crate::ops::device::release_stages(rt);
    if crate::log::enabled(crate::log::DEBUG, "finalize") {
        crate::log::log(
            crate::log::DEBUG,
            "finalize",
            &format!("released what the program left: {contexts} context(s), {teams} team(s), {blocks} heap block(s)"),
        );
    }
    rt.boot.suspend();
    runtime::suspend(rt);
}

/// PEs for a message, the first few of a long list: "PE(s) [3, 5]", or "128 PEs (0, 1, ..., 7
/// and 120 more)". Every PE of a large job prints a message like this; it must not print N
/// numbers each.
fn few_pes(pes: &[i32]) -> String {
    const SHOWN: usize = 8;
    if pes.len() <= SHOWN {
        return format!("PE(s) {pes:?}");
    }
    let first: Vec<String> = pes[..SHOWN].iter().map(i32::to_string).collect();
    format!("{} PEs ({} and {} more)", pes.len(), first.join(", "), pes.len() - SHOWN)
}

/// Start-up fetched every peer's records (addresses, segments, settings, hosts) and freed
/// them again; malloc keeps such pages for later use, about 5 KB per peer at 128 PEs
/// (tests/bench/footprint.c, 2026-11-28). Give them back once, so that what a PE holds after
/// init grows only by what it keeps per peer.
fn give_back_init_garbage() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only returns free heap pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Release the components at the end: the spml's registrations and the spml itself, then
/// the bootstrap (the launcher now takes this PE's exit as normal).
fn release_components(rt: &Runtime) {
    for reg in &rt.spml_regs {
        // SAFETY: plugin ABI call on registrations made at init.
        unsafe { (rt.spml.mem_deregister)(*reg) };
    }
    // SAFETY: plugin ABI call; every PE passed the finalize fence before.
    unsafe { (rt.spml.finalize)() };
    rt.boot.finalize();
}

#[cfg(test)]
mod tests {
    use super::few_pes;

    #[test]
    fn a_long_list_of_pes_is_cut_short_in_messages() {
        assert_eq!(few_pes(&[3, 5]), "PE(s) [3, 5]");
        let many: Vec<i32> = (0..128).collect();
        assert_eq!(few_pes(&many), "128 PEs (0, 1, 2, 3, 4, 5, 6, 7 and 120 more)");
    }
}
