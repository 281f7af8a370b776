//! Each PE's record of a symmetric segment (address, length, attach blob, memory key) as
//! exchanged through the bootstrap, and how a peer's copy is reached: mapped for load/store, or
//! only through the spml.

use crate::symm::segments::{PeerSeg, SegmentTable, SEG_DATA};
use crate::symm::static_data;
use rshmem_boot::Bootstrap;
use rshmem_plugin_api::{SpmlOps, SshmemOps, RC_UNSUPPORTED};

pub(crate) fn encode_segment(base: u64, len: u64, blob: &[u8], rkey: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(24 + blob.len() + rkey.len());
    v.extend_from_slice(&base.to_le_bytes());
    v.extend_from_slice(&len.to_le_bytes());
    v.extend_from_slice(&(blob.len() as u32).to_le_bytes());
    v.extend_from_slice(blob);
    v.extend_from_slice(rkey);
    v
}

pub(crate) fn decode_segment(v: &[u8]) -> Option<(u64, u64, &[u8], &[u8])> {
    let base = u64::from_le_bytes(v.get(0..8)?.try_into().ok()?);
    let len = u64::from_le_bytes(v.get(8..16)?.try_into().ok()?);
    let bl = u32::from_le_bytes(v.get(16..20)?.try_into().ok()?) as usize;
    let blob = v.get(20..20 + bl)?;
    Some((base, len, blob, &v[20 + bl..]))
}

pub(crate) fn map_peer(
    sshmem: &SshmemOps,
    spml: &SpmlOps,
    pe: i32,
    seg: u32,
    base: u64,
    len: usize,
    blob: &[u8],
) -> *mut u8 {
    if seg == SEG_DATA {
        match static_data::attach(blob, len) {
            Ok(p) => return p,
            Err(e) => crate::log::log(
                crate::log::WARN,
                "init",
                &format!("could not map PE {pe}'s global data ({e}); using the spml"),
            ),
        }
    } else if !blob.is_empty() {
        let mut addr = std::ptr::null_mut();
        // SAFETY: plugin ABI call with the peer's attach blob.
        let rc = unsafe { (sshmem.attach)(blob.as_ptr(), blob.len(), len, &mut addr) };
        if rc == 0 && !addr.is_null() {
            return addr as *mut u8;
        }
        if rc != RC_UNSUPPORTED {
            crate::log::log(
                crate::log::WARN,
                "init",
                &format!("could not map PE {pe}'s heap; using the spml"),
            );
        }
    }
    // SAFETY: plugin ABI call; NULL when the transport cannot map it.
    unsafe { (spml.remote_ptr)(pe, seg, base) as *mut u8 }
}

/// Stop using the mappings of this host's other PEs for segments `segs_ids` (they stay mapped,
/// unused, until detached or exit); whether some peer is now reached through the spml.
pub(crate) fn unmap_host_peers(
    segs: &SegmentTable,
    boot: &dyn Bootstrap,
    my_pe: i32,
    n_pes: i32,
    seg_ids: std::ops::Range<u32>,
) -> bool {
    let mut any = false;
    for pe in (0..n_pes).filter(|&pe| pe != my_pe && boot.is_local(pe)) {
        for seg in seg_ids.clone() {
            let p = segs.peer(pe as usize, seg);
            segs.set_peer(
                pe as usize,
                seg,
                PeerSeg { remote_base: p.remote_base, mapped: std::ptr::null_mut() },
            );
            any = true;
        }
    }
    any
}
