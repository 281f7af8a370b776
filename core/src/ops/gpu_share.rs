//! Whether PEs of a host share a GPU without a multi-process server (CUDA MPS). Without one the
//! GPU runs one process's work at a time and switches between their contexts, so every
//! operation between such PEs that involves the GPU waits for a switch: an on-stream
//! put-with-signal round trip between two PEs on one H200 took 285 µs, against 9 µs under MPS
//! (docs/performance.md, 2026-12-04). Nothing fails, it is only slow, so init warns, once per
//! group of PEs that share a device, naming them and the remedies.

use crate::symm::runtime::Runtime;
use std::ffi::{c_int, CStr};

/// One PE's record: its device's UUID, then flags (bit 0: known, bit 1: served by MPS).
const RECORD: usize = 24;

/// Collective over the world (at init, once the GPU space exists on every PE): gather every
/// PE's device identity and warn where this PE is the first of a host's PEs that share its
/// device without MPS.
pub fn check(routine: &'static CStr, rt: &Runtime) {
    let n = rt.n_pes as usize;
    let mut mine = [0u8; RECORD];
    if let Some(f) = rt.gpu.as_ref().and_then(|g| g.heap.identity_slot()) {
        let mut mps: c_int = 0;
        // SAFETY: plugin ABI call writing 16 bytes of `mine` and one int.
        if unsafe { f(mine.as_mut_ptr(), &mut mps) } == rshmem_plugin_api::RC_OK {
            mine[16] = 1 | if mps != 0 { 2 } else { 0 };
        }
    }
    let Some(all) = rt.alloc(n * RECORD, 8) else {
        crate::error::fail(
            routine,
            crate::error::ShmemError::NoRoom { what: "the words that compare the PEs' GPUs" },
        )
    };
    // SAFETY: `all` is a symmetric block of n records (allocated alike on every PE); `mine` one.
    unsafe {
        crate::ops::coll::world(routine).collect(routine, all.cast(), mine.as_ptr().cast(), RECORD, true)
    };
    // SAFETY: the fcollect filled the n records.
    let records = unsafe { std::slice::from_raw_parts(all as *const u8, n * RECORD) }.to_vec();
    // SAFETY: the block allocated above; every PE frees it alike after the collective.
    unsafe { rt.free(all) };
    let me = rt.my_pe as usize;
    let local = |pe: usize| pe == me || rt.boot.is_local(pe as c_int);
    if let Some(text) = sharing(&records, me, local) {
        crate::log::log(crate::log::WARN, "gpu", &text);
    }
    // Judged from the same records and the same hosts by every PE of this host.
    let host_shares = (0..n).filter(|&pe| local(pe)).any(|pe| sharing(&records, pe, local).is_some());
    crate::ops::device::set_shared_without_mps(rt, host_shares);
}

/// The warning this PE prints, if any: when it is the lowest-numbered of the PEs on its host
/// (`local`) whose records name its device, there are several, and not all are served by MPS.
fn sharing(records: &[u8], me: usize, local: impl Fn(usize) -> bool) -> Option<String> {
    let rec = |pe: usize| &records[pe * RECORD..(pe + 1) * RECORD];
    let mine = rec(me);
    if mine[16] & 1 == 0 {
        return None;
    }
    let n = records.len() / RECORD;
    let group: Vec<usize> =
        (0..n).filter(|&pe| local(pe) && rec(pe)[16] & 1 != 0 && rec(pe)[..16] == mine[..16]).collect();
    if group.len() < 2 || group[0] != me || group.iter().all(|&pe| rec(pe)[16] & 2 != 0) {
        return None;
    }
    let u = &mine[..16];
    let hex = |r: std::ops::Range<usize>| u[r].iter().map(|b| format!("{b:02x}")).collect::<String>();
    let uuid = format!("GPU-{}-{}-{}-{}-{}", hex(0..4), hex(4..6), hex(6..8), hex(8..10), hex(10..16));
    Some(format!(
        "PEs {group:?} share GPU {uuid} without CUDA MPS: the GPU switches between their contexts, so each operation between them that involves the GPU waits for a switch (an on-stream put-with-signal round trip took 285 us on an H200, 9 us under MPS). Start the MPS control daemon (nvidia-cuda-mps-control -d) before the job, or give each PE a GPU of its own"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(uuid: u8, flags: u8) -> [u8; RECORD] {
        let mut r = [0u8; RECORD];
        r[..16].fill(uuid);
        r[16] = flags;
        r
    }

    fn all(rs: &[[u8; RECORD]]) -> Vec<u8> {
        rs.concat()
    }

    #[test]
    fn the_first_of_a_hosts_pes_on_one_gpu_without_mps_warns() {
        let r = all(&[rec(7, 1), rec(7, 1), rec(9, 1)]);
        let text = sharing(&r, 0, |_| true).expect("PEs 0 and 1 share GPU 7");
        assert!(text.contains("PEs [0, 1] share GPU GPU-07070707-0707-0707-0707-070707070707"), "{text}");
        assert_eq!(sharing(&r, 1, |_| true), None, "only the first of the group says it");
        assert_eq!(sharing(&r, 2, |_| true), None, "PE 2 has a GPU of its own");
    }

    #[test]
    fn mps_other_hosts_and_unknown_devices_are_no_sharing() {
        assert_eq!(sharing(&all(&[rec(7, 3), rec(7, 3)]), 0, |_| true), None, "both under MPS");
        assert!(sharing(&all(&[rec(7, 3), rec(7, 1)]), 0, |_| true).is_some(), "one of them is not");
        assert_eq!(sharing(&all(&[rec(7, 1), rec(7, 1)]), 0, |pe| pe == 0), None, "PE 1 is on another host");
        assert_eq!(sharing(&all(&[rec(0, 0), rec(0, 0)]), 0, |_| true), None, "no identity known");
    }
}
