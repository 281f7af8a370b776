//! A created space's symmetric segment, made like the heap at init: the sshmem component
//! creates it, the memheap component manages it, the spml registers it, every PE learns every
//! other PE's record (base, length, attach blob, packed key) through an fcollect on the world
//! team and maps the ones on its host, and the segment table publishes it, so RMA, atomics and
//! collectives find it by address like any symmetric memory.
//!
//! Creation is split so that it can fail cleanly on every PE: [`prepare`] does everything that
//! can fail for reasons of this PE alone (memory, segment slots, components) and touches no
//! peer; the caller agrees on the outcome; then [`connect`] exchanges and maps, or [`discard`]
//! undoes a preparation the job gave up.
//!
//! A device space's segment is made the same way through the device memheap's own segments
//! table (device memory, CUDA IPC handles as attach blobs) instead of the sshmem component.
//! Its peers' mappings go to the segment table's device maps, never to the load/store ones;
//! the spml registers it only when it moves that device's memory, and then a peer that cannot
//! map it reaches it through the spml. Otherwise such a peer reaches it through the spml's
//! transfers that the target's CPU copies, when every PE's spml offers them; where neither
//! holds, the space is unreachable and creation returns nonzero on every PE.

use crate::plugin::memheaps::DeviceMemory;
use crate::symm::runtime::Runtime;
use crate::symm::segments::PeerSeg;
use rshmem_plugin_api::{MemheapOps, SegmentDesc, SshmemOps};
use std::ffi::{c_int, c_void, CStr};

/// Bytes of each PE's record in the exchange, and what fits in it.
const RECORD: usize = 2048;
/// Segments are made in whole multiples of this.
const GRANULE: usize = 1 << 16;

/// Who makes and manages a segment: the sshmem component and the CPU memheap, or a device
/// memheap with its segments table.
#[derive(Copy, Clone)]
struct Makers {
    segments: &'static SshmemOps,
    heap: &'static MemheapOps,
    /// 0 for host memory, else the device type.
    device: u32,
}

impl Makers {
    fn of(rt: &Runtime, device: Option<&DeviceMemory>) -> Makers {
        match device {
            Some(d) => Makers { segments: d.segments, heap: d.heap, device: d.device },
            None => Makers { segments: rt.sshmem, heap: rt.memheap, device: 0 },
        }
    }

    /// Whether the spml registers and moves this memory itself.
    fn spml_moves(&self, rt: &Runtime) -> bool {
        self.device == 0 || rt.spml.moves_device_memory(self.device)
    }
}

/// This PE's half of a segment, before any peer knows of it.
pub struct Prepared {
    seg: u32,
    desc: SegmentDesc,
    heap: *mut c_void,
    spml_reg: *mut c_void,
    rkey: Vec<u8>,
    makers: Makers,
}

/// A connected segment with its heap.
pub struct Owned {
    pub(super) seg: u32,
    desc: SegmentDesc,
    heap: *mut c_void,
    spml_reg: *mut c_void,
    makers: Makers,
    /// False when some PE can reach some copy neither by mapping nor through the spml (device
    /// memory the spml cannot move): the caller releases it and reports failure everywhere.
    pub reachable: bool,
    /// Peers' mappings of the segment on this host, to detach at destroy.
    mapped: Vec<*mut u8>,
    /// Whether every PE maps every PE's copy (agreed: the same on every PE). CPU atomics then
    /// serve the segment, and the space offers load/store access.
    pub all_mapped: bool,
    /// Whether every PE's copy starts at the same address.
    pub ident: bool,
    /// A device segment's host shadow, through which collectives on it run
    /// (`crate::ops::device::Shadow`); released with it.
    shadow: Option<Box<Owned>>,
}

// SAFETY: the raw pointers are plugin handles and mappings owned by this value; the space
// keeps it behind a mutex and the spec makes destroy exclusive of other uses.
unsafe impl Send for Owned {}

/// Make this PE's segment of at least `size` bytes (of `device`'s memory, or host memory),
/// its heap, a segment id and its registration. Nothing is visible to peers or lookups yet.
pub fn prepare(rt: &Runtime, size: usize, device: Option<&DeviceMemory>) -> Result<Prepared, String> {
    let makers = Makers::of(rt, device);
    let size = size
        .checked_next_multiple_of(GRANULE)
        .ok_or_else(|| format!("a space of {size} bytes per PE cannot be represented"))?;
    if makers.device == 0 {
        // Device memory is checked by its allocation, which fails when the device is full.
        crate::symm::limits::check_heap_fits(
            size,
            "a space",
            rt.boot.local_size(),
            rt.boot.local_rank() == 0,
        )?;
    }
    let seg = rt.segs.reserve().ok_or_else(|| {
        format!(
            "no room for another symmetric segment ({} at most, the heap and global data included): destroy spaces that are no longer needed",
            crate::symm::segments::MAX_SEGMENTS
        )
    })?;
    let mut desc = SegmentDesc::default();
    // SAFETY: plugin ABI call with a valid out-pointer.
    if unsafe { (makers.segments.create)(size, std::ptr::null_mut(), &mut desc) } != 0 {
        rt.segs.remove(seg);
        return Err(match device {
            Some(d) => format!("memheap {} could not allocate {size} bytes of device memory", d.name),
            None => format!("the sshmem component could not create a {size}-byte segment"),
        });
    }
    if makers.device == 0 {
        // SAFETY: the segment sshmem just created and mapped.
        unsafe { crate::symm::placement::place("a space's segment", desc.base.cast(), desc.size) };
    }
    let mut p = Prepared {
        seg,
        desc,
        heap: std::ptr::null_mut(),
        spml_reg: std::ptr::null_mut(),
        rkey: Vec::new(),
        makers,
    };
    // SAFETY: plugin ABI call over the segment just created.
    p.heap = unsafe { (makers.heap.create)(p.desc.base, p.desc.size) };
    if p.heap.is_null() {
        discard(rt, p);
        return Err("the memheap component could not manage the space's segment".into());
    }
    if !makers.spml_moves(rt) {
        return Ok(p);
    }
    let mut rkey = vec![0u8; RECORD];
    let mut rkey_len = 0usize;
    // SAFETY: plugin ABI call; buffers valid for their capacities.
    let rc = unsafe {
        (rt.spml.mem_register)(
            p.desc.base,
            p.desc.size,
            p.desc.transport_memh,
            rkey.as_mut_ptr(),
            rkey.len(),
            &mut rkey_len,
            &mut p.spml_reg,
        )
    };
    if rc != 0 {
        p.spml_reg = std::ptr::null_mut();
        discard(rt, p);
        return Err("the spml could not register the space's segment".into());
    }
    rkey.truncate(rkey_len);
    p.rkey = rkey;
    Ok(p)
}

/// Undo a preparation no peer has seen.
pub fn discard(rt: &Runtime, mut p: Prepared) {
    // SAFETY: plugin ABI calls releasing what `prepare` made, seen by nobody else.
    unsafe {
        if !p.spml_reg.is_null() {
            (rt.spml.mem_deregister)(p.spml_reg);
        }
        if !p.heap.is_null() {
            (p.makers.heap.destroy)(p.heap);
        }
        (p.makers.segments.unlink)(&mut p.desc);
        (p.makers.segments.destroy)(&mut p.desc);
    }
    rt.segs.remove(p.seg);
}

/// Exchange every PE's record, map the peers on this host and publish the segment. Collective
/// over the world; an error here means the PEs did not create spaces in the same order.
pub fn connect(routine: &'static CStr, rt: &Runtime, mut p: Prepared) -> Result<Owned, String> {
    let mut rec = (p.seg as u64).to_le_bytes().to_vec();
    rec.extend(crate::symm::peers::encode_segment(
        p.desc.base as u64,
        p.desc.size as u64,
        &p.desc.blob[..p.desc.blob_len],
        &p.rkey,
    ));
    if rec.len() + 4 > RECORD {
        return Err(format!("the space's segment record needs {} bytes, more than {RECORD}", rec.len()));
    }
    let n = rt.n_pes as usize;
    let all = rt.alloc(n * RECORD, 64).ok_or("no room in the symmetric heap")?;
    let Some(all_flags) = rt.alloc(n * 8, 64) else {
        // SAFETY: the block just allocated, seen by nobody.
        unsafe { rt.free(all) };
        return Err("no room in the symmetric heap".into());
    };
    let mut mine = vec![0u8; RECORD];
    mine[..4].copy_from_slice(&(rec.len() as u32).to_le_bytes());
    mine[4..4 + rec.len()].copy_from_slice(&rec);
    let world = crate::ops::coll::world(routine);
    // SAFETY: `all` is a symmetric block of `n_pes` records, `mine` one record.
    unsafe { world.collect(routine, all.cast(), mine.as_ptr().cast(), RECORD, true) };
    let (seg, size, makers) = (p.seg, p.desc.size, p.makers);
    let device = makers.device != 0;
    let mut mapped = Vec::new();
    let (mut all_mapped, mut ident) = (true, true);
    for pe in 0..n {
        // SAFETY: the fcollect filled `n` records of RECORD bytes.
        let r = unsafe { std::slice::from_raw_parts(all.add(pe * RECORD), RECORD) };
        let len = u32::from_le_bytes(r[..4].try_into().expect("4 bytes")) as usize;
        let body = r.get(4..4 + len).ok_or_else(|| format!("PE {pe}: malformed space record"))?;
        let their_seg = u64::from_le_bytes(body[..8].try_into().expect("8 bytes")) as u32;
        let (base, slen, blob, key) = crate::symm::peers::decode_segment(&body[8..])
            .ok_or_else(|| format!("PE {pe}: malformed space record"))?;
        if their_seg != seg || slen as usize != size {
            return Err(format!(
                "PE {pe} made segment {their_seg} of {slen} bytes for this space, this PE segment {seg} of {size} bytes: spaces must be created and destroyed in the same order with the same sizes on every PE"
            ));
        }
        ident &= base == p.desc.base as u64;
        let add = || {
            // SAFETY: plugin ABI call with the peer's packed key.
            unsafe { (rt.spml.add_segment)(pe as c_int, seg, base, slen as usize, key.as_ptr(), key.len()) }
        };
        if makers.spml_moves(rt) && add() != 0 {
            return Err(format!("the spml could not unpack PE {pe}'s key for the space"));
        }
        let at: *mut u8 = if pe == rt.my_pe as usize {
            p.desc.base as *mut u8
        } else if device && rt.local_map && rt.boot.is_local(pe as c_int) {
            let m = attach(makers.segments, blob, slen as usize);
            if !m.is_null() {
                mapped.push(m);
            }
            m
        } else if rt.local_map && rt.boot.is_local(pe as c_int) {
            let m =
                crate::symm::peers::map_peer(rt.sshmem, rt.spml, pe as c_int, seg, base, slen as usize, blob);
            if !m.is_null() {
                mapped.push(m);
            }
            m
        } else {
            std::ptr::null_mut()
        };
        all_mapped &= !at.is_null();
        if device {
            rt.segs.set_device_map(pe, seg, at);
            rt.segs.set_peer(pe, seg, PeerSeg { remote_base: base, mapped: std::ptr::null_mut() });
        } else {
            rt.segs.set_peer(pe, seg, PeerSeg { remote_base: base, mapped: at });
        }
    }
    // What every PE maps decides how the segment is reached, alike everywhere (the rule of
    // `crate::symm::segments`): the PEs of a host where one does not map every same-host
    // peer's copy (SHMEM_LOCAL_MAP=0 there, or a mapping that failed) use none of their
    // mappings of each other, and CPU atomics serve the segment only if every PE maps every
    // copy. Otherwise PEs would update one word some with CPU atomics, some through the spml.
    // Device memory takes neither CPU atomics nor load/store, so its mappings stay as made.
    let me = rt.my_pe as c_int;
    let on_host = |pe: usize| pe as c_int == me || rt.boot.is_local(pe as c_int);
    let maps = |pe: usize| {
        if device {
            !rt.segs.device_map(pe, seg).is_null()
        } else {
            !rt.segs.peer(pe, seg).mapped.is_null()
        }
    };
    let maps_host = (0..n).filter(|&pe| on_host(pe)).all(maps);
    let via_target = device && rt.spml.via_target().is_some();
    let mine = u64::from(maps_host) | u64::from(all_mapped) << 1 | u64::from(via_target) << 2;
    let flags = gather_flags(routine, rt, mine, all_flags);
    if !device && !(0..n).filter(|&pe| on_host(pe)).all(|pe| flags[pe] & 1 != 0) {
        crate::symm::peers::unmap_host_peers(&rt.segs, rt.boot, me, rt.n_pes, seg..seg + 1);
        crate::log::log(
            crate::log::DEBUG,
            "spaces",
            &format!("segment {seg}: a PE of this host does not map its peers' copies; the host's PEs reach each other's through the spml"),
        );
    }
    all_mapped = (0..n).all(|pe| flags[pe] & 2 != 0);
    // Device memory some PE cannot map is reached through the spml: moved by it, or, when every
    // PE's spml offers it, copied by the target's CPU (`crate::ops::device::through_target`).
    // An spml with no transport between this host's PEs (`SpmlOps::no_host_transport`, only
    // in a job on one host) reaches none of the copies a PE could not map.
    let through_spml =
        !rt.spml.lacks_host_transport() && (makers.spml_moves(rt) || (0..n).all(|pe| flags[pe] & 4 != 0));
    let reachable = all_mapped || through_spml;
    if (0..n).any(|pe| pe as c_int != me && !maps(pe)) {
        rt.set_needs_progress();
    }
    if device && reachable {
        // Symmetric: every PE allocates them here, in the same order.
        let words = crate::ops::device::LOCKS;
        match rt.alloc(words * 8, 64) {
            Some(l) => {
                // SAFETY: a fresh block of `words` u64s; nobody takes a lock before the barrier below.
                unsafe { std::ptr::write_bytes(l, 0, words * 8) };
                rt.segs.set_lock_words(seg, l.cast());
            }
            None => fatal_no_room(routine),
        }
        rt.segs.set_device(seg, makers.device);
        rt.segs.set_host_mapped(seg, (0..n).all(|pe| flags[pe] & 1 != 0));
    }
    rt.segs.set_cpu_atomics(seg, all_mapped && !device);
    if reachable {
        rt.segs.publish(seg, p.desc.base as usize, size);
        if device {
            rt.any_device.store(true, std::sync::atomic::Ordering::Release);
        }
    }
    // Everyone has mapped everyone's segment: the names can go.
    world.barrier(routine);
    // SAFETY: plugin ABI call on our own segment; the exchange buffers, which every PE is done
    // with (the barrier).
    unsafe {
        (makers.segments.unlink)(&mut p.desc);
        rt.free(all_flags);
        rt.free(all);
    }
    Ok(Owned {
        seg,
        desc: p.desc,
        heap: p.heap,
        spml_reg: p.spml_reg,
        makers,
        reachable,
        mapped,
        all_mapped,
        ident,
        shadow: None,
    })
}

#[cold]
fn fatal_no_room(routine: &'static CStr) -> ! {
    crate::error::fail(routine, crate::error::ShmemError::NoRoom { what: "a device space's lock words" })
}

/// Map a same-host peer's device segment through the device memheap (null when it cannot).
fn attach(segments: &SshmemOps, blob: &[u8], len: usize) -> *mut u8 {
    if blob.is_empty() {
        return std::ptr::null_mut();
    }
    let mut addr = std::ptr::null_mut();
    // SAFETY: plugin ABI call with the peer's attach blob and a valid out-pointer.
    let rc = unsafe { (segments.attach)(blob.as_ptr(), blob.len(), len, &mut addr) };
    if rc == 0 {
        addr.cast()
    } else {
        std::ptr::null_mut()
    }
}

/// Every PE's `mine`, through an fcollect on the world team into `buf` (symmetric, `n_pes`
/// words, not to be reused before the next world barrier: a peer may still read it).
fn gather_flags(routine: &'static CStr, rt: &Runtime, mine: u64, buf: *mut u8) -> Vec<u64> {
    let n = rt.n_pes as usize;
    // SAFETY: `buf` is symmetric with `n` words (the caller's), `mine` one word.
    unsafe {
        crate::ops::coll::world(routine).collect(routine, buf.cast(), (&mine as *const u64).cast(), 8, true)
    };
    // SAFETY: the fcollect filled `n` words of `buf`.
    unsafe { std::slice::from_raw_parts(buf as *const u64, n) }.to_vec()
}

/// Release a connected segment nobody uses any more (the caller synchronised).
pub fn release(_routine: &'static CStr, rt: &Runtime, mut o: Owned) {
    if let Some(shadow) = o.shadow.take() {
        rt.segs.set_shadow(o.seg, std::ptr::null_mut());
        crate::ops::shadow_pin::untrack(rt, o.seg);
        release(_routine, rt, *shadow);
    }
    // Taken before the segment's facts are cleared with it.
    let locks = rt.segs.take_lock_words(o.seg);
    rt.segs.remove(o.seg);
    // SAFETY: plugin ABI calls releasing what `prepare` and `connect` made, now unused
    // everywhere; the lock words are a block of the default heap freed alike on every PE.
    unsafe {
        if !o.spml_reg.is_null() {
            (rt.spml.mem_deregister)(o.spml_reg);
        }
        for &m in &o.mapped {
            (o.makers.segments.detach)(m.cast(), o.desc.size);
        }
        (o.makers.heap.destroy)(o.heap);
        (o.makers.segments.destroy)(&mut o.desc);
        if !locks.is_null() {
            rt.free(locks.cast());
        }
    }
}

impl Owned {
    /// Detach this host's peers' copies (and its shadow's), leaving this PE's own to free:
    /// the first half of `release` where every PE must detach before any PE frees.
    pub fn detach_peers(&mut self) {
        for m in self.mapped.drain(..) {
            // SAFETY: plugin ABI call on a mapping `connect` made; nothing uses it any more.
            unsafe { (self.makers.segments.detach)(m.cast(), self.desc.size) };
        }
        if let Some(shadow) = self.shadow.as_mut() {
            shadow.detach_peers();
        }
    }

    /// Bytes of the segment per PE.
    pub fn len(&self) -> usize {
        self.desc.size
    }

    /// Give device segment `self` its host shadow `shadow` (agreed: on every PE), so that
    /// collectives run on it.
    pub fn set_shadow(&mut self, rt: &Runtime, shadow: Owned) {
        rt.segs.set_shadow(self.seg, shadow.desc.base.cast());
        crate::ops::shadow_pin::track(rt, self.seg, shadow.desc.base.cast(), shadow.desc.size);
        self.shadow = Some(Box::new(shadow));
    }

    /// A block from the space's heap, or null when it has no room. The caller holds the
    /// space's lock.
    pub fn alloc(&self, size: usize, align: usize) -> *mut u8 {
        // SAFETY: plugin ABI call on the space's heap.
        (unsafe { (self.makers.heap.alloc)(self.heap, size, align) }) as *mut u8
    }

    /// Record in the segment table that the segment is this heap, which SHMEM_DEBUG's check
    /// of a transfer's range asks (a space's own segment; not a host shadow, whose heap holds
    /// no allocations). Cleared with the segment at release.
    pub fn record_heap(&self, rt: &Runtime) {
        rt.segs.set_heap(self.seg, self.makers.heap, self.heap);
    }

    /// Whether the segment is device memory (zeroed through the device memheap's `copy`).
    pub fn is_device(&self) -> bool {
        self.makers.device != 0
    }

    /// Whether `ptr` is a live block of this space's heap.
    pub fn owns(&self, rt: &Runtime, ptr: *mut c_void) -> bool {
        let inside = rt.segs.lookup(ptr as usize).is_some_and(|(seg, _)| seg == self.seg);
        // SAFETY: plugin ABI call; only looks the pointer up.
        inside && unsafe { (self.makers.heap.usable_size)(self.heap, ptr) } != 0
    }

    /// A live block's usable size (0: none of this heap's).
    pub fn usable(&self, ptr: *mut c_void) -> usize {
        // SAFETY: plugin ABI call; only looks the pointer up.
        unsafe { (self.makers.heap.usable_size)(self.heap, ptr) }
    }

    /// The memheap's realloc of a live block (contents kept; null when it cannot).
    ///
    /// # Safety
    /// `ptr` must be a live block of this space that nothing else uses during the call.
    pub unsafe fn realloc(&self, ptr: *mut c_void, size: usize) -> *mut c_void {
        // SAFETY: plugin ABI call on a live allocation (the caller's contract); a device
        // memheap copies a moved block with its own copy.
        unsafe { (self.makers.heap.realloc)(self.heap, ptr, size) }
    }

    /// Return a block to the space's memheap.
    ///
    /// # Safety
    /// `ptr` must be a live block of this space that nothing uses any more.
    pub unsafe fn free(&self, ptr: *mut c_void) {
        // SAFETY: plugin ABI call on a live allocation of this space (the caller's contract).
        unsafe { (self.makers.heap.free)(self.heap, ptr) };
    }
}
