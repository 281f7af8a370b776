//! Start-up and shutdown: `shmem_init` (bootstrap, component selection, symmetric memory,
//! wiring to peers, the predefined teams and spaces), the implicit finalize at exit, and
//! `shmem_finalize`. The state it builds is published in `crate::symm::runtime`.

use crate::ops::handles::{rshmem_ctx_default, rshmem_team_world};
use crate::ops::services;
use crate::ops::team::TeamState;
use crate::plugin::{self, Selection};
use crate::symm::limits::{self, available_cores, check_heap_fits};
use crate::symm::peers::{decode_segment, encode_segment, map_peer, unmap_host_peers};
use crate::symm::runtime::{self, get, Runtime};
use crate::symm::segments::{PeerSeg, SegmentTable, SEG_DATA, SEG_HEAP};
use crate::symm::static_data;
use rshmem_boot::{self as bootstrap, Bootstrap};
use rshmem_plugin_api::{
    CoreServices, Framework, ScollOps, SegmentDesc, SpmlOps, SshmemOps, MEMHEAP_DEVICE_CPU,
};
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Heap bytes the core reserves for its own use on top of SHMEM_SYMMETRIC_SIZE, besides the
/// team scratch the scoll components ask for (`team::pool_bytes`).
const INTERNAL_HEAP: usize = 1 << 20;

static INIT_LOCK: Mutex<()> = Mutex::new(());

/// Initialisation calls not yet matched by a `shmem_finalize` (spec 9.1: the library is
/// finalized by the last matching call only). Read and written under `INIT_LOCK`.
static INIT_DEPTH: AtomicUsize = AtomicUsize::new(0);

fn fail(routine: &CStr, msg: &str) -> ! {
    crate::error::fatal(routine, msg)
}

fn open<T: rshmem_plugin_api::OpsTable>(
    sel: &Selection,
    core: *const CoreServices,
    routine: &CStr,
) -> (&'static T, String) {
    let mut errors = Vec::new();
    for c in &sel.ranked {
        // SAFETY: `core` is the services table; `c` is of T's framework.
        match unsafe { plugin::bind::open::<T>(c, core) } {
            Ok(ops) => {
                for e in &errors {
                    crate::log::log(
                        crate::log::WARN,
                        "plugin select",
                        &format!("using {} instead: {e}", c.name),
                    );
                }
                return (ops, c.name.clone());
            }
            Err(e) => errors.push(e),
        }
    }
    fail(routine, &format!("no {} component could be opened ({})", sel.framework.name(), errors.join("; ")))
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

/// `shmem_init` / `shmem_init_thread`. Returns the provided thread level.
pub fn init(routine: &CStr, requested: i32) -> i32 {
    let _g = INIT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if runtime::is_initialized() {
        INIT_DEPTH.fetch_add(1, Ordering::Relaxed);
        return get(routine).thread_level();
    }
    if runtime::is_finalized() {
        if let Some(rt) = runtime::dormant() {
            return resume(routine, rt, requested);
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
    let (my_pe, n_pes) = (boot.rank(), boot.size());
    crate::log::set_pe(my_pe);
    let mut phases = Phases::new();
    let cfg = |r: Result<bool, String>| r.unwrap_or_else(|e| fail(routine, &e));
    crate::config::check().unwrap_or_else(|e| fail(routine, &e));
    crate::ops::spaces::check_config().unwrap_or_else(|e| fail(routine, &e));
    // The init heap is the CPU space's, whose own size variable takes precedence; the
    // default space's variable (SHMEM_SYMMETRIC_SIZE) sizes it when it is the default.
    let heap_size = if !crate::config::raw("SHMEM_CPU_SYMMETRIC_SIZE").is_empty() {
        crate::config::get_size("SHMEM_CPU_SYMMETRIC_SIZE")
    } else if crate::ops::spaces::gpu_is_default() {
        let d = crate::config::lookup("SHMEM_SYMMETRIC_SIZE").default;
        crate::config::parse_size(d).ok_or_else(|| format!("bad default size {d}"))
    } else {
        crate::config::get_size("SHMEM_SYMMETRIC_SIZE")
    }
    .unwrap_or_else(|e| fail(routine, &e));
    check_heap_fits(
        heap_size,
        "a symmetric heap (SHMEM_SYMMETRIC_SIZE)",
        boot.local_size(),
        boot.local_rank() == 0,
    )
    .unwrap_or_else(|e| fail(routine, &e));
    let debug = cfg(crate::config::get_bool("SHMEM_DEBUG"));
    let stall = crate::config::get_int("SHMEM_COLL_STALL_WARN").unwrap_or_else(|e| fail(routine, &e));
    crate::ops::stall::configure(stall.max(0) as u64);
    let wait_stall = crate::config::get_int("SHMEM_WAIT_STALL_WARN").unwrap_or_else(|e| fail(routine, &e));
    crate::ops::stall::configure_waits(wait_stall.max(0) as u64);
    let perturb = crate::config::get_int("SHMEM_PERTURB").unwrap_or_else(|e| fail(routine, &e));
    crate::ops::perturb::configure(perturb.clamp(0, u32::MAX as i64) as u32);
    let local_map = cfg(crate::config::get_bool("SHMEM_LOCAL_MAP"));
    let active_set_teams = cfg(crate::config::get_bool("SHMEM_ACTIVE_SET_TEAMS"));
    // Shared-memory names carry the job id (so a launcher can find a dead job's leftovers) and
    // a random tag of this PE (so nobody can create them first and make the job fail, or
    // hand it memory they control: names are also created exclusively).
    let name_tag = format!("{}-{}", boot.job_id(), bootstrap::secret::random_hex(6));
    let core = services::table(my_pe, n_pes, boot.local_rank(), boot.local_size(), &name_tag);

    // Components.
    let found = Box::leak(Box::new(plugin::discover()));
    if crate::log::enabled(crate::log::DEBUG, "plugin loader") {
        for c in &found.components {
            crate::log::log(
                crate::log::DEBUG,
                "plugin loader",
                &format!("found {} {} in {}", c.framework.name(), c.name, c.path.display()),
            );
        }
    }
    let param_warnings = crate::config::params::check(&plugin::loader::param_tables(&found.components))
        .unwrap_or_else(|e| fail(routine, &e));
    if my_pe == 0 {
        for w in &param_warnings {
            crate::log::log(crate::log::WARN, "settings", w);
        }
    }
    // Every file in a plugin directory is meant to be a plugin: one that did not load (another
    // ABI version, a short descriptor, a library of its own missing) or is hidden by one of
    // the same name is a warning, said once (by PE 0).
    let lvl = if my_pe == 0 { crate::log::WARN } else { crate::log::DEBUG };
    for (dir, why) in &found.unreadable {
        crate::log::log(
            lvl,
            "plugin loader",
            &format!(
                "SHMEM_MCA_plugin_path names {}, which cannot be read ({why}): no plugins come from there",
                dir.display()
            ),
        );
    }
    for (path, why) in &found.skipped {
        crate::log::log(lvl, "plugin loader", &format!("skipped {}: {why}", path.display()));
    }
    // What the job needs of its components, by capability bit.
    let mut spml_needs = Vec::new();
    if boot.local_size() < n_pes {
        spml_needs.push(plugin::select::Need {
            cap: rshmem_plugin_api::SPML_CAP_MULTI_HOST,
            name: "SPML_CAP_MULTI_HOST",
            why: "its PEs span several hosts",
        });
    }
    if requested >= crate::ops::THREAD_MULTIPLE {
        spml_needs.push(plugin::select::Need {
            cap: rshmem_plugin_api::SPML_CAP_THREAD_MULTIPLE,
            name: "SPML_CAP_THREAD_MULTIPLE",
            why: "it was initialised with SHMEM_THREAD_MULTIPLE",
        });
    }
    let sel = |fw: Framework| {
        let needs = if fw == Framework::Spml { spml_needs.as_slice() } else { &[] };
        let spec = crate::config::raw(&format!("SHMEM_MCA_{}", fw.name()));
        let chosen = plugin::select(fw, &found.components, &spec, core, needs).unwrap_or_else(|e| {
            // A component that exists but did not load (a missing or broken library of its
            // own, say) is the likely reason: say why, not only that none was found.
            // Files named for this framework first; else any file that did not load (a
            // vendor's plugin may be named anyhow).
            let tag = format!("{}_", fw.name());
            let failed = || found.skipped.iter().filter(|(_, why)| !why.contains(" is shadowed by "));
            let mut why: Vec<String> = failed()
                .filter(|(p, _)| p.file_name().is_some_and(|n| n.to_string_lossy().contains(&tag)))
                .map(|(p, why)| format!("{}: {why}", p.display()))
                .collect();
            if why.is_empty() {
                why = failed().map(|(p, why)| format!("{}: {why}", p.display())).collect();
            }
            if why.is_empty() {
                fail(routine, &e)
            } else {
                fail(routine, &format!("{e}; skipped: {}", why.join("; ")))
            }
        });
        if my_pe == 0 {
            for note in plugin::select::shadowing_notes(&chosen, &found.hidden, &spec, core) {
                crate::log::log(crate::log::WARN, "plugin select", &note);
            }
        }
        chosen
    };
    let spml_sel = sel(Framework::Spml);
    let (spml, spml_name): (&'static SpmlOps, _) = open(&spml_sel, core, routine);
    let spml_thread_multiple = spml_sel
        .ranked
        .iter()
        .find(|c| c.name == spml_name)
        .is_some_and(|c| c.desc.caps & rshmem_plugin_api::SPML_CAP_THREAD_MULTIPLE != 0);
    runtime::set_transport(spml.transport);
    let sshmem_sel = sel(Framework::Sshmem);
    let (sshmem, sshmem_name): (&'static SshmemOps, _) = open(&sshmem_sel, core, routine);
    // Without SSHMEM_CAP_PEER_ATTACH, same-host peers' heaps are reached through the spml.
    let peer_attach = sshmem_sel
        .ranked
        .iter()
        .find(|c| c.name == sshmem_name)
        .is_some_and(|c| c.desc.caps & rshmem_plugin_api::SSHMEM_CAP_PEER_ATTACH != 0);
    let memheap_sel = sel(Framework::Memheap);
    // SAFETY: `core` is the services table built above, alive for the job.
    let memheaps =
        unsafe { plugin::memheaps::resolve(&memheap_sel, core) }.unwrap_or_else(|e| fail(routine, &e));
    let cpu_heap = memheaps.iter().find(|d| d.device == MEMHEAP_DEVICE_CPU).expect("resolve requires one");
    let (memheap, memheap_name) = (cpu_heap.ops, cpu_heap.name.clone());
    // Why there is no GPU space here, for the logs of SHMEM_ENABLE_GPU_SPACE and space creation.
    let gpu = memheaps
        .iter()
        .find(|d| d.device == rshmem_plugin_api::MEMHEAP_DEVICE_GPU)
        .map(plugin::memheaps::device_memory);
    let gpu_note = match &gpu {
        // The component's own account of its device (which one, and why that one).
        Some(Ok(g)) => {
            let said = memheap_sel.answers.iter().find(|a| a.available && a.component.name == g.name);
            format!("memheap {}: {}", g.name, said.map_or("serves GPU memory", |a| a.reason.as_str()))
        }
        Some(Err(e)) => e.clone(),
        None => {
            let why: Vec<String> = memheap_sel
                .answers
                .iter()
                .filter(|a| !a.available)
                .map(|a| format!("{}: {}", a.component.name, a.reason))
                .collect();
            format!(
                "no memheap component serves GPU memory here{}",
                if why.is_empty() { String::new() } else { format!(" ({})", why.join("; ")) }
            )
        }
    };
    let memheap_names: Vec<String> = memheaps
        .iter()
        .map(|d| format!("{} ({} memory)", d.name, plugin::memheaps::device_name(d.device)))
        .collect();
    let scoll_sel = sel(Framework::Scoll);
    let mut scolls: Vec<(&'static ScollOps, String)> = Vec::new();
    let mut ephemeral: Vec<(&'static ScollOps, String)> = Vec::new();
    let mut scoll_errors = Vec::new();
    for c in &scoll_sel.ranked {
        // SAFETY: `core` is the services table; `c` is an scoll component.
        match unsafe { plugin::bind::open::<ScollOps>(c, core) } {
            Ok(ops) => {
                scolls.push((ops, c.name.clone()));
                // Only components that keep the active-set contract serve pSync teams.
                if c.desc.caps & rshmem_plugin_api::SCOLL_CAP_EPHEMERAL != 0 {
                    ephemeral.push((ops, c.name.clone()));
                }
            }
            Err(e) => {
                if my_pe == 0 {
                    crate::log::log(crate::log::WARN, "plugin select", &e);
                }
                scoll_errors.push(e);
            }
        }
    }
    if scolls.is_empty() {
        fail(routine, &format!("no scoll component could be opened ({})", scoll_errors.join("; ")));
    }
    phases.mark("components");

    // Symmetric memory: the heap from sshmem, and the program's global data.
    let mut heap_seg = SegmentDesc::default();
    let heap_bytes = heap_size + INTERNAL_HEAP + crate::ops::team::pool_bytes(&scolls);
    // SAFETY: plugin ABI call with a valid out-pointer.
    if unsafe { (sshmem.create)(heap_bytes, std::ptr::null_mut(), &mut heap_seg) } != 0 {
        fail(
            routine,
            &format!("sshmem {sshmem_name} could not create a symmetric heap of {heap_bytes} bytes"),
        );
    }
    // SAFETY: the segment sshmem just created and mapped.
    unsafe { crate::symm::placement::place("the symmetric heap", heap_seg.base.cast(), heap_seg.size) };
    // SAFETY: plugin ABI call over the segment just created.
    let heap = unsafe { (memheap.create)(heap_seg.base, heap_seg.size) };
    if heap.is_null() {
        fail(routine, &format!("memheap {memheap_name} could not manage the symmetric heap"));
    }
    let data = static_data::remap(&name_tag, my_pe)
        .unwrap_or_else(|e| fail(routine, &format!("cannot make global data symmetric: {e}")));
    let segs = SegmentTable::new(n_pes as usize);
    let heap_id = segs.add_local(heap_seg.base as usize, heap_seg.size);
    debug_assert_eq!(heap_id, SEG_HEAP);
    let mut spml_regs = Vec::new();
    let mut publish = |seg: u32, base: usize, len: usize, memh: *mut c_void, blob: &[u8]| {
        let mut rkey = vec![0u8; 4096];
        let mut rkey_len = 0usize;
        let mut reg = std::ptr::null_mut();
        // SAFETY: plugin ABI call; buffers are valid for the given capacities.
        let rc = unsafe {
            (spml.mem_register)(
                base as *mut c_void,
                len,
                memh,
                rkey.as_mut_ptr(),
                rkey.len(),
                &mut rkey_len,
                &mut reg,
            )
        };
        if rc != 0 {
            fail(routine, &format!("spml {spml_name} could not register symmetric segment {seg}"));
        }
        spml_regs.push(reg);
        let v = encode_segment(base as u64, len as u64, blob, &rkey[..rkey_len]);
        boot.put(&format!("seg.{seg}"), &v).unwrap_or_else(|e| fail(routine, &format!("bootstrap: {e}")));
    };
    publish(
        SEG_HEAP,
        heap_seg.base as usize,
        heap_seg.size,
        heap_seg.transport_memh,
        &heap_seg.blob[..heap_seg.blob_len],
    );
    if let Some(d) = &data {
        let id = segs.add_local(d.base, d.len);
        debug_assert_eq!(id, SEG_DATA);
        publish(SEG_DATA, d.base, d.len, std::ptr::null_mut(), &d.ticket);
    }
    let nseg = segs.count() as u32;
    let scoll_params: Vec<(&str, crate::config::params::Declared)> = found
        .components
        .iter()
        .filter(|c| c.framework == rshmem_plugin_api::Framework::Scoll)
        .flat_map(|c| c.params().into_iter().map(move |d| (c.name.as_str(), d)))
        .collect();
    let agree = crate::config::agree::fingerprint(&scoll_params);
    boot.put(crate::config::agree::KEY, agree.as_bytes())
        .unwrap_or_else(|e| fail(routine, &format!("bootstrap: {e}")));
    let relay_on = cfg(crate::config::get_bool("SHMEM_LOCAL_MAP_RELAY"));
    // Only a leader that maps its peers relays: one that does not would never hand anything out.
    let mut relay = crate::symm::relay::start(boot, my_pe, n_pes, relay_on && local_map, &name_tag);
    phases.mark("segments");
    boot.fence().unwrap_or_else(|e| fail(routine, &format!("bootstrap fence: {e}")));
    phases.mark("fence 1");
    // The agreed settings first: a heap size that differs is named as the variable it is.
    // Each PE compares PE 0's with its own; one that differs ends the job, naming both.
    if my_pe != 0 {
        let v = boot
            .get(0, crate::config::agree::KEY)
            .ok()
            .flatten()
            .unwrap_or_else(|| fail(routine, "PE 0 did not publish the settings every PE must agree on"));
        let first = String::from_utf8_lossy(&v);
        crate::config::agree::compare_pes(&[(0, &first), (my_pe as usize, &agree)])
            .unwrap_or_else(|e| fail(routine, &e));
    }
    phases.mark("agreement");

    // Wire up every peer.
    // SAFETY: plugin ABI call; every PE's address was published before the fence.
    if unsafe { (spml.connect)() } != 0 {
        fail(routine, &format!("spml {spml_name} could not connect the PEs"));
    }
    phases.mark("spml connect");
    // This host's peers' heaps and global data, through the host's relay where they can.
    let mut relayed = if local_map && relay_on {
        let lens: Vec<usize> = (0..nseg).map(|seg| segs.local(seg).len).collect();
        crate::symm::relay::map_host(boot, my_pe, n_pes, &lens, relay.as_mut(), |pe, seg| {
            if seg != SEG_DATA && !peer_attach {
                return None;
            }
            let v = boot.get(pe, &format!("seg.{seg}")).ok().flatten()?;
            decode_segment(&v).map(|(_, _, blob, _)| blob.to_vec())
        })
    } else {
        crate::symm::relay::Mapped::new()
    };
    phases.mark("relay");
    let mut needs_progress = false;
    let mut heap_align = usize::MAX;
    // Starting with the next PE, not with PE 0: each same-host peer's thread hands its
    // segments to every other PE, and all PEs beginning at PE 0 queue on one thread at a time.
    for pe in (my_pe + 1..n_pes).chain(0..=my_pe) {
        for seg in 0..nseg {
            let v = boot.get(pe, &format!("seg.{seg}")).ok().flatten().unwrap_or_else(|| {
                fail(routine, &format!("PE {pe} did not publish symmetric segment {seg}"))
            });
            let (base, len, blob, rkey) = decode_segment(&v)
                .unwrap_or_else(|| fail(routine, &format!("PE {pe}: malformed segment record")));
            if seg == SEG_HEAP && base != 0 {
                heap_align = heap_align.min(1usize << base.trailing_zeros().min(62));
            }
            if len as usize != segs.local(seg).len {
                fail(
                    routine,
                    &format!(
                        "symmetric segment {seg} is {} bytes on PE {pe} but {} bytes here: every PE must run the same program with the same SHMEM_SYMMETRIC_SIZE",
                        len,
                        segs.local(seg).len
                    ),
                );
            }
            // SAFETY: plugin ABI call with the peer's packed key.
            if unsafe { (spml.add_segment)(pe, seg, base, len as usize, rkey.as_ptr(), rkey.len()) } != 0 {
                fail(routine, &format!("spml {spml_name} could not unpack PE {pe}'s key for segment {seg}"));
            }
            let mapped: *mut u8 = if pe == my_pe {
                segs.local(seg).base as *mut u8
            } else if local_map && boot.is_local(pe) {
                match relayed.remove(&(pe, seg)) {
                    Some(p) => p,
                    None => {
                        let blob = if peer_attach || seg == SEG_DATA { blob } else { &[] };
                        map_peer(sshmem, spml, pe, seg, base, len as usize, blob)
                    }
                }
            } else {
                std::ptr::null_mut()
            };
            needs_progress |= mapped.is_null();
            segs.set_peer(pe as usize, seg, PeerSeg { remote_base: base, mapped });
        }
    }
    rshmem_ctx_default.spml.store(spml.default_ctx, Ordering::Release);
    phases.mark("peer segments");
    if crate::log::enabled(crate::log::INFO, "plugin select") {
        crate::log::log(
            crate::log::INFO,
            "plugin select",
            &format!(
                "spml {spml_name}, sshmem {sshmem_name}, memheap {}, scoll {}",
                memheap_names.join(","),
                scolls.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>().join(",")
            ),
        );
    }
    if crate::log::enabled(crate::log::INFO, "init") {
        let mapped = (0..n_pes)
            .filter(|&pe| pe != my_pe && !segs.peer(pe as usize, SEG_HEAP).mapped.is_null())
            .count();
        crate::log::log(
            crate::log::INFO,
            "init",
            &format!(
                "spml {spml_name}, sshmem {sshmem_name}: {mapped} of {} peer heaps mapped for load/store",
                n_pes - 1
            ),
        );
    }

    // Whether this PE maps every same-host peer's segments, and its host (the lowest PE on it),
    // for the others to read after the fence: a transport may map some peers and not others,
    // and every PE must decide alike, from one table of hosts.
    let unmapped: Vec<i32> = (0..n_pes)
        .filter(|&pe| pe != my_pe && boot.is_local(pe))
        .filter(|&pe| (0..nseg).any(|seg| segs.peer(pe as usize, seg).mapped.is_null()))
        .collect();
    let maps_host = unmapped.is_empty();
    let my_host = (0..n_pes).find(|&pe| pe == my_pe || boot.is_local(pe)).unwrap_or(my_pe);
    let my_record = crate::symm::hosts::Record { maps_host, host: my_host, pid: std::process::id() };
    boot.put(crate::symm::hosts::KEY, &crate::symm::hosts::record(my_record))
        .unwrap_or_else(|e| fail(routine, &format!("bootstrap put: {e}")));
    // The CPUs this PE may use, so that the host's PEs learn how many CPUs they have between
    // them: a PE bound to a core of its own sees one, which alone would make every host look
    // oversubscribed (and every wait yield at once). Always published (a mask of no CPU when
    // the kernel does not say), so that no PE asks for a key another never put.
    let my_cpus = limits::cpu_mask().filter(|m| m.iter().any(|&b| b != 0));
    boot.put(limits::CPUS_KEY, my_cpus.as_deref().unwrap_or(&[0]))
        .unwrap_or_else(|e| fail(routine, &format!("bootstrap put: {e}")));

    // Everyone has mapped everything: drop the names so nothing leaks if the job dies.
    boot.fence().unwrap_or_else(|e| fail(routine, &format!("bootstrap fence: {e}")));
    phases.mark("fence 2");
    // Every PE has its mappings: the relay's descriptors go.
    if let Some(r) = relay.take() {
        r.stop();
    }
    let hosts: Vec<crate::symm::hosts::Record> = (0..n_pes)
        .map(|pe| {
            if pe == my_pe {
                return my_record;
            }
            let v = boot.get(pe, crate::symm::hosts::KEY).ok().flatten();
            let r = v.as_deref().and_then(crate::symm::hosts::parse);
            r.unwrap_or_else(|| fail(routine, &format!("PE {pe} published no valid host record")))
        })
        .collect();
    if let Some(pe) = (0..n_pes).find(|&pe| boot.is_local(pe) != (hosts[pe as usize].host == my_host)) {
        fail(
            routine,
            &format!(
                "the launcher's host layout is inconsistent: PE {pe} is on host {} and local to this PE: {}",
                hosts[pe as usize].host,
                boot.is_local(pe)
            ),
        );
    }
    crate::symm::hosts::set(&hosts, my_pe);
    let masks: Option<Vec<Vec<u8>>> = (0..n_pes)
        .filter(|&pe| pe == my_pe || boot.is_local(pe))
        .map(|pe| {
            let m = if pe == my_pe { my_cpus.clone() } else { boot.get(pe, limits::CPUS_KEY).ok().flatten() };
            m.filter(|m| m.iter().any(|&b| b != 0))
        })
        .collect();
    limits::set_node_cpus(match masks {
        Some(m) => limits::union_count(m.iter().map(Vec::as_slice)),
        None => available_cores(),
    });
    let crowded = boot.local_size() as usize > limits::node_cpus();
    crate::log::log(
        crate::log::DEBUG,
        "init",
        &format!(
            "{} PE(s) on this host, {} CPU(s) between them: waits {}",
            boot.local_size(),
            limits::node_cpus(),
            if crowded { "yield the CPU at once" } else { "spin first" }
        ),
    );
    if !crate::symm::hosts::here_mapped() {
        // Some PE of this host could not map a peer here. Mapped or not is then not the same
        // on every PE of the host (the shared team, the atomics path, the space capabilities
        // are decided from it), so none of them uses its mappings of the others.
        if !maps_host {
            crate::log::log(
                crate::log::WARN,
                "init",
                &format!(
                    "this PE does not map the symmetric memory of {} on its host (SHMEM_LOCAL_MAP=0 here, or the transport could not): the host's PEs reach each other through the spml {spml_name}",
                    few_pes(&unmapped)
                ),
            );
        }
        needs_progress |= unmap_host_peers(&segs, boot, my_pe, n_pes, 0..nseg);
    }

    // The heap's and global data's atomics rule (`crate::symm::segments`): every PE decided
    // `needs_progress` alike (a job on several hosts has an unmapped peer everywhere; on one
    // host the agreement above made every PE map all or none).
    for seg in 0..nseg {
        segs.set_cpu_atomics(seg, !needs_progress);
    }
    let rt = Box::leak(Box::new(Runtime {
        boot,
        my_pe,
        n_pes,
        spml,
        sshmem,
        memheap,
        device_heaps: memheaps.into_iter().filter(|d| d.device != MEMHEAP_DEVICE_CPU).collect(),
        gpu_note,
        gpu: gpu.and_then(Result::ok),
        any_device: std::sync::atomic::AtomicBool::new(false),
        user_heap: std::sync::OnceLock::new(),
        heap,
        heap_lock: Mutex::new(std::collections::HashSet::new()),
        segs,
        thread_level: std::sync::atomic::AtomicI32::new(
            requested.clamp(crate::ops::THREAD_SINGLE, crate::ops::THREAD_MULTIPLE),
        ),
        spml_thread_multiple,
        debug,
        needs_progress: std::sync::atomic::AtomicBool::new(needs_progress),
        spin_limit: if crowded { 0 } else { 128 },
        selected: vec![
            (Framework::Spml, vec![spml_name]),
            (Framework::Sshmem, vec![sshmem_name]),
            (Framework::Memheap, memheap_names),
            (Framework::Scoll, scolls.iter().map(|(_, n)| n.clone()).collect()),
        ],
        local_map,
        active_set_teams,
        heap_align,
        heap_size,
        heap_used: std::sync::atomic::AtomicUsize::new(0),
        heap_seg: Mutex::new(heap_seg),
        data_seg: Mutex::new(data),
        spml_regs,
    }));
    runtime::publish(rt);
    phases.mark("hosts and runtime");
    let rt: &'static Runtime = get(routine);

    // The team scratch pool is the first heap allocation, so it is symmetric; the world team
    // holds slot 0. No PE uses a team before the closing fence below.
    crate::ops::team::init_pool(routine, rt, &scolls);
    crate::ops::teams::init(&scolls, &ephemeral);
    let world = TeamState::create(routine, rt, 0, (0, 1, n_pes), &scolls);
    rshmem_team_world.state.store(Box::into_raw(Box::new(world)) as *mut c_void, Ordering::Release);
    let shared = crate::ops::teams::init_shared(routine, rt, rshmem_team_world.state.load(Ordering::Acquire));
    crate::ops::handles::rshmem_team_shared.state.store(shared, Ordering::Release);
    let node =
        crate::ops::teams::init_node(routine, rt, rshmem_team_world.state.load(Ordering::Acquire), shared);
    crate::ops::handles::rshmem_team_node.state.store(node, Ordering::Release);
    crate::ops::spaces::init(rt);
    // RMA sits below the spaces, so it learns how to find a space's blocks here.
    crate::ops::rma::set_space_blocks(crate::ops::spaces::block_in_space);
    // SAFETY: plugin ABI call on our own segment.
    unsafe { (sshmem.unlink)(&mut *rt.heap_seg.lock().unwrap()) };
    if let Some(d) = rt.data_seg.lock().unwrap().as_mut() {
        d.unlink();
    }
    phases.mark("teams");
    // The closing fence: no PE uses a team (set up above) before every PE has set it up.
    boot.fence().unwrap_or_else(|e| fail(routine, &format!("bootstrap fence: {e}")));
    phases.mark("fence 3");
    crate::ops::spaces::init_gpu(rt);
    phases.mark("gpu");
    give_back_init_garbage();
    if crate::log::enabled(crate::log::DEBUG, "init") {
        crate::log::log(crate::log::DEBUG, "init", &phases.summary());
    }
    if rt.gpu.is_some() && crate::log::enabled(crate::log::INFO, "plugin select") {
        crate::log::log(crate::log::INFO, "plugin select", &rt.gpu_note);
    }
    INIT_DEPTH.store(1, Ordering::Relaxed);
    // SAFETY: registering an extern "C" fn with glibc's on_exit.
    unsafe { on_exit(at_exit, std::ptr::null_mut()) };
    start_watch(routine);
    if my_pe == 0 {
        for w in crate::config::unknown_warnings() {
            crate::log::log(crate::log::WARN, "settings", &w);
        }
        if crate::config::get_bool("SHMEM_VERSION").unwrap_or(false) {
            eprintln!("rshmem {} (OpenSHMEM 1.6)", env!("CARGO_PKG_VERSION"));
        }
        if crate::config::get_bool("SHMEM_INFO").unwrap_or(false) {
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
    }
    rt.thread_level()
}

/// The liveness watch (`ops::watch`) of a PE a PMIx launcher started; oshrun watches its PEs
/// itself, and a PE alone has nobody to watch.
fn start_watch(routine: &CStr) {
    if matches!(rshmem_boot::origin(|v| std::env::var(v).ok()), rshmem_boot::Origin::Pmix(_)) {
        let s = crate::config::get_int("SHMEM_STOP_TIMEOUT").unwrap_or_else(|e| fail(routine, &e));
        crate::ops::watch::start(std::time::Duration::from_secs(s.max(0) as u64));
    }
}

/// `shmem_init` after the last `shmem_finalize` kept the runtime (`finalize_keeping`):
/// collective, like the first initialization. The components, connections, heaps and
/// predefined teams are the first initialization's; what the program made in between was
/// released at that finalize; the GPU space is made again. Returns the provided thread level.
fn resume(routine: &CStr, rt: &'static Runtime, requested: i32) -> i32 {
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
    crate::ops::spaces::init_gpu(rt);
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

/// The bootstrap's fence for finalize, given up after `limit` (then the job is ended from
/// here). While it waits, this PE keeps driving the spml: a peer still completing its last
/// operations may need this PE's progress (a team barrier did that before the fence replaced
/// it; without it, two PEs across hosts deadlocked at finalize).
fn fence_within(routine: &CStr, rt: &'static Runtime, limit: Option<std::time::Duration>) {
    fence_checking(routine, rt, limit, false)
}

/// [`fence_within`], looking every [`crate::ops::watch::TICK`] for a PE of this host that has
/// left (`departures`: a fence of an initialization after the last finalize).
fn fence_checking(
    routine: &CStr,
    rt: &'static Runtime,
    limit: Option<std::time::Duration>,
    departures: bool,
) {
    let boot = rt.boot;
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
pub fn finalize(routine: &CStr) {
    finalize_within(routine, None, false)
}

/// Finalize, the synchronisation bounded by `limit` when given (the implicit finalize at exit).
/// Finalize synchronises through the bootstrap, not with a team barrier: a PE finalizing must
/// never complete another PE's `shmem_barrier_all` (it would then leave while that PE still
/// counts on it).
fn finalize_within(routine: &CStr, limit: Option<std::time::Duration>, at_exit: bool) {
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
fn finalize_keeping(routine: &CStr, rt: &'static Runtime) {
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
