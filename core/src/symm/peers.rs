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

/// Every PE's copy of a segment is as long as this PE's: the same program with the same
/// settings. (The settings' agreement names a heap size that differs first.)
pub(crate) fn check_length(pe: i32, seg: u32, len: u64, mine: usize) -> Result<(), String> {
    if len as usize == mine {
        return Ok(());
    }
    Err(format!(
        "symmetric segment {seg} is {len} bytes on PE {pe} but {mine} bytes here: every PE must run the same program with the same SHMEM_SYMMETRIC_SIZE"
    ))
}

/// Serialises the first uses of peers' records: each is read once, whichever thread asks.
static LEARNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// PE `pe`'s copy of segment `seg` on its first use, for a peer this PE does not map: start-up
/// reads only the records of the peers it maps (issue 51: one bootstrap lookup per PE and
/// segment at start-up grew with the job), and an operation that finds a peer's entry unset
/// (no mapping, no remote base: no heap or global data is at address 0) reads its record here,
/// gives its key to the spml and sets the entry. The entry's remote base is stored after the
/// spml has the key, with release ordering, and [`SegmentTable::peer`] loads it with acquire
/// ordering: a thread that sees the base also sees the key the spml was given.
pub(crate) fn learn_on_first_use(
    segs: &SegmentTable,
    boot: &dyn Bootstrap,
    spml: &SpmlOps,
    pe: i32,
    seg: u32,
) -> Result<PeerSeg, String> {
    let _g = LEARNING.lock().unwrap_or_else(|e| e.into_inner());
    let known = segs.peer(pe as usize, seg);
    if known.remote_base != 0 || !known.mapped.is_null() {
        return Ok(known);
    }
    let v = boot
        .get(pe, &format!("seg.{seg}"))
        .map_err(|e| format!("bootstrap: {e}"))?
        .ok_or_else(|| format!("PE {pe} did not publish symmetric segment {seg}"))?;
    let (base, len, _, rkey) =
        decode_segment(&v).ok_or_else(|| format!("PE {pe}: malformed segment record"))?;
    check_length(pe, seg, len, segs.local(seg).len)?;
    if base == 0 {
        return Err(format!("PE {pe} published symmetric segment {seg} at address 0"));
    }
    // SAFETY: plugin ABI call with the peer's packed key.
    if unsafe { (spml.add_segment)(pe, seg, base, len as usize, rkey.as_ptr(), rkey.len()) } != 0 {
        return Err(format!("the spml could not unpack PE {pe}'s key for segment {seg}"));
    }
    let p = PeerSeg { remote_base: base, mapped: std::ptr::null_mut() };
    segs.set_peer(pe as usize, seg, p);
    if crate::log::enabled(crate::log::DEBUG, "init") {
        crate::log::log(crate::log::DEBUG, "init", &format!("PE {pe}'s segment {seg} learnt on first use"));
    }
    Ok(p)
}
