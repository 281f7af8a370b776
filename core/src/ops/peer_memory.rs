//! `SHMEM_PEER_MEMORY`: what a PE holds for its peers, printed at the last `shmem_finalize`
//! (issue 51). Three figures, each from what this process did, not from a model:
//! - the tables sized by the job (a slot for every PE, reached or not: the core's hosts and
//!   segment tables, the spml's endpoint, key, batch and heartbeat tables), their bytes and
//!   how many of them the kernel backs now (`mincore`): a peer never reached costs only where
//!   its slots share a page with a reached one's;
//! - this host's peers mapped at start-up: the private memory the phases that learn and map
//!   their segments added, per peer;
//! - the peers reached through the spml (on this host when they are not mapped, and on other
//!   hosts): the private memory that making their endpoints and unpacking their keys added,
//!   measured by the spml as it makes them (`SpmlOps::peer_memory`).
//!
//! Private memory is the process's anonymous resident bytes (`rshmem_plugin_api::footprint`).
//! Growth is page-granular and process-wide, so a figure per peer means something averaged over
//! many peers; with a handful it is a bound, and the report says how many it divides by.

use crate::symm::runtime::Runtime;
use rshmem_plugin_api::{footprint, SpmlOps, SpmlPeerMemory};
use std::sync::atomic::Ordering;

/// `SHMEM_PEER_MEMORY`'s value, read with the other settings (`Job`): who prints the report.
pub fn who(v: i64) -> Result<usize, String> {
    match v {
        0..=2 => Ok(v as usize),
        _ => Err(format!("SHMEM_PEER_MEMORY={v}: use 0 (no report), 1 (PE 0 reports) or 2 (every PE)")),
    }
}

/// When a report is wanted (`who` nonzero), have the spml measure from now on (before
/// `connect`, which may make endpoints). Returns whether this PE measures, and so whether
/// start-up measures its mapping phases.
pub fn arm(who: usize, spml: &SpmlOps) -> bool {
    if who == 0 {
        return false;
    }
    if let Some(slot) = spml.peer_memory_slot() {
        // SAFETY: plugin ABI call; the spml is open and not yet connected.
        unsafe { slot(1, std::ptr::null_mut()) };
    }
    true
}

/// The end of `shmem_init`.
pub fn init_done(rt: &Runtime) {
    if rt.peer_memory.who != 0 {
        rt.peer_memory.after_init.store(footprint::private_bytes(), Ordering::Relaxed);
    }
}

fn kib(b: u64) -> String {
    format!("{:.1} KiB", b as f64 / 1024.0)
}

/// `grew` over `n` as "N B each", or what there was none of.
fn each(grew: u64, n: u64) -> String {
    match grew.checked_div(n) {
        Some(per) => format!("+{} private, {per} B each", kib(grew)),
        None => "none".to_string(),
    }
}

/// The report's text for this PE: lines that each start with the PE's prefix, so that the
/// reports of PEs whose output a launcher interleaves still read apart.
fn text(rt: &Runtime, spml: &SpmlPeerMemory, now: u64) -> String {
    let (seg_bytes, seg_resident) = rt.segs.tables();
    let (host_bytes, host_resident) = rt.hosts.tables();
    let bytes = seg_bytes + host_bytes + spml.table_bytes;
    let resident = seg_resident + host_resident + spml.table_resident;
    let n = rt.n_pes.max(1) as u64;
    let pm = &rt.peer_memory;
    let mapped = pm.mapped_peers as u64;
    let lines = [
        format!(
            "peer memory (SHMEM_PEER_MEMORY): {} PEs, {} others on this host; private memory {} after init, {} now",
            rt.n_pes,
            rt.hosts.local_peers().len(),
            kib(pm.after_init.load(Ordering::Relaxed)),
            kib(now)
        ),
        format!(
            "  tables with a slot per PE: {} B per PE, {} of their {} resident ({} B per PE, reached or not; the core's {} of {}, the spml's {} of {})",
            bytes / n,
            kib(resident),
            kib(bytes),
            resident / n,
            kib(seg_resident + host_resident),
            kib(seg_bytes + host_bytes),
            kib(spml.table_resident),
            kib(spml.table_bytes)
        ),
        format!(
            "  peers on this host mapped at start-up: {mapped}: {}",
            each(pm.mapping_grew, mapped)
        ),
        format!(
            "  peers reached through the spml, on this host: {} ({} endpoints): {}",
            spml.peers_local,
            spml.endpoints_local,
            each(spml.grown_local, spml.peers_local)
        ),
        format!(
            "  peers reached through the spml, on other hosts: {} ({} endpoints): {}",
            spml.peers_remote,
            spml.endpoints_remote,
            each(spml.grown_remote, spml.peers_remote)
        ),
    ];
    let prefix = crate::log::prefix();
    lines.iter().map(|l| format!("{prefix} {l}")).collect::<Vec<_>>().join("\n")
}

/// At the last `shmem_finalize`, every PE having arrived and before the spml is suspended:
/// print the report where the setting asks for it.
pub fn report(rt: &Runtime) {
    let who = rt.peer_memory.who;
    if who == 0 || (who == 1 && rt.my_pe != 0) {
        return;
    }
    let mut spml =
        SpmlPeerMemory { struct_size: std::mem::size_of::<SpmlPeerMemory>(), ..Default::default() };
    if let Some(slot) = rt.spml.peer_memory_slot() {
        // SAFETY: plugin ABI call with a structure of the size it states.
        unsafe { slot(0, &mut spml) };
    }
    crate::log::line(&text(rt, &spml, footprint::private_bytes()));
}
