//! The symmetric segment table: which local ranges are symmetric, for every peer where its
//! copy of each segment lives (its base address for the spml, and a local mapping when the peer
//! is on this node), and per segment how its words are updated atomically. Lookups scan the
//! live segments, heap first: O(1) in practice.
//!
//! The atomics rule, per segment: CPU atomics on the mapped copies only when every PE maps
//! every PE's copy of the segment, so that every PE that can update one of its words does so
//! with CPU atomics; otherwise the spml's atomics serve every target of the segment, this PE
//! included. CPU atomics and a transport's atomics are not atomic with each other, so one
//! word never sees both. The flag is decided collectively (at init for the heap and global
//! data, when a space is created for its segment), so it is the same on every PE.
//!
//! Segments are added after init too (memory spaces), while other threads look addresses up,
//! so entries are atomics: a new segment's entries are written first and published by the
//! count (Release); a removed one has its length set to 0 and may be reused later.
//!
//! A segment of device memory (a GPU space's) records its device type, and its peers' copies
//! mapped here (CUDA IPC) are kept apart from `PeerSeg::mapped`, which stays null for it: every
//! path that loads or stores through `mapped` therefore never touches device memory, and the
//! paths that go to the spml check the device type first (`crate::ops::device`).

use rshmem_plugin_api::MemheapOps;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The plugin ABI's limit, which the spml sizes its key tables by.
pub const MAX_SEGMENTS: usize = rshmem_plugin_api::MAX_SEGMENTS as usize;
pub const SEG_HEAP: u32 = 0;
pub const SEG_DATA: u32 = 1;

#[derive(Copy, Clone, Default, Debug)]
pub struct LocalSeg {
    pub base: usize,
    pub len: usize,
}

#[derive(Copy, Clone, Debug)]
pub struct PeerSeg {
    /// The segment's base in the peer's address space.
    pub remote_base: u64,
    /// Where the peer's copy is mapped here, or null when only the spml reaches it.
    pub mapped: *mut u8,
}

impl Default for PeerSeg {
    fn default() -> Self {
        PeerSeg { remote_base: 0, mapped: std::ptr::null_mut() }
    }
}

#[derive(Default)]
struct LocalCell {
    base: AtomicUsize,
    len: AtomicUsize,
    /// CPU atomics serve this segment's words (see the module's rule).
    cpu_atomics: AtomicBool,
    /// The segment's memory: `MEMHEAP_DEVICE_CPU` (0) or a device type.
    device: AtomicU32,
    /// When the segment is a heap (the default one, a space's): the memheap over it and its
    /// heap handle, which SHMEM_DEBUG's check asks which block holds an address. Null else.
    memheap: AtomicPtr<MemheapOps>,
    heap: AtomicPtr<c_void>,
    /// For a device segment: its host shadow's base (0: none, so no collectives on it), ...
    shadow: AtomicUsize,
    /// ... the address of its `crate::ops::device::LOCKS` lock words in the default heap
    /// (symmetric), by which its atomics are emulated (0: none), ...
    lock_words: AtomicUsize,
    /// ... and whether every PE of every host maps the copies of all the PEs of its host
    /// (agreed by all PEs when the segment is made).
    host_mapped: AtomicBool,
}

#[derive(Default)]
struct PeerCell {
    remote_base: AtomicU64,
    mapped: AtomicPtr<u8>,
    /// For a device segment: where the peer's copy is mapped here, reachable only through the
    /// device memheap's `copy` (null when it is not mapped).
    device_map: AtomicPtr<u8>,
}

/// `len` cells in zeroed memory (for a large table, fresh pages: untouched ones cost nothing).
fn zeroed_cells(len: usize) -> Box<[PeerCell]> {
    // SAFETY: every field of a `PeerCell` is an atomic integer or pointer, for which all-zero
    // bytes are a valid value (0, null), the same as `PeerCell::default()`.
    unsafe { Box::<[PeerCell]>::new_zeroed_slice(len).assume_init() }
}

pub struct SegmentTable {
    local: [LocalCell; MAX_SEGMENTS],
    count: AtomicUsize,
    n_pes: usize,
    /// `peers[seg * n_pes + pe]`: segment-major, so that the pages of segment ids never used
    /// are never touched (zeroed memory: a large table is fresh pages the kernel backs on first
    /// write). Peer-major, every PE held 384 bytes per peer for 16 ids of which two are used.
    peers: Box<[PeerCell]>,
    /// Serialises adding and removing segments.
    writer: Mutex<()>,
}

impl SegmentTable {
    pub fn new(n_pes: usize) -> SegmentTable {
        SegmentTable {
            local: Default::default(),
            count: AtomicUsize::new(0),
            n_pes,
            peers: zeroed_cells(n_pes * MAX_SEGMENTS),
            writer: Mutex::new(()),
        }
    }

    /// `(bytes, resident bytes)` of the peers' cells (a cell per PE and segment id).
    pub fn tables(&self) -> (u64, u64) {
        (
            std::mem::size_of_val(&*self.peers) as u64,
            rshmem_plugin_api::footprint::resident_bytes(&self.peers),
        )
    }

    #[inline(always)]
    fn cell(&self, pe: usize, seg: u32) -> usize {
        seg as usize * self.n_pes + pe
    }

    /// Reserve a segment id for `[base, base + len)` (reusing a removed one), not yet visible
    /// to lookups: fill in the peers, then [`SegmentTable::publish`] it. None when full.
    pub fn reserve(&self) -> Option<u32> {
        let _g = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let n = self.count.load(Ordering::Acquire);
        // Ids 0 and 1 (heap, global data) are never reused.
        let free = (2..n).find(|&i| {
            self.local[i].len.load(Ordering::Acquire) == 0 && self.local[i].base.load(Ordering::Acquire) == 0
        });
        match free {
            Some(i) => {
                self.local[i].base.store(usize::MAX, Ordering::Release); // taken, still empty
                Some(i as u32)
            }
            None if n < MAX_SEGMENTS => {
                self.local[n].base.store(usize::MAX, Ordering::Release);
                self.count.store(n + 1, Ordering::Release);
                Some(n as u32)
            }
            None => None,
        }
    }

    /// Make segment `seg` visible to lookups as `[base, base + len)`.
    pub fn publish(&self, seg: u32, base: usize, len: usize) {
        let c = &self.local[seg as usize];
        c.base.store(base, Ordering::Release);
        c.len.store(len, Ordering::Release);
    }

    /// Reserve and publish at once (init: nobody looks up concurrently).
    pub fn add_local(&self, base: usize, len: usize) -> u32 {
        let id = self.reserve().expect("too many symmetric segments");
        self.publish(id, base, len);
        id
    }

    /// Withdraw segment `seg` from lookups and free its id.
    pub fn remove(&self, seg: u32) {
        let _g = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let c = &self.local[seg as usize];
        c.len.store(0, Ordering::Release);
        c.base.store(0, Ordering::Release);
        c.cpu_atomics.store(false, Ordering::Release);
        c.device.store(0, Ordering::Release);
        c.memheap.store(std::ptr::null_mut(), Ordering::Release);
        c.heap.store(std::ptr::null_mut(), Ordering::Release);
        c.shadow.store(0, Ordering::Release);
        c.lock_words.store(0, Ordering::Release);
        c.host_mapped.store(false, Ordering::Release);
        for pe in 0..self.n_pes {
            self.set_peer(pe, seg, PeerSeg::default());
            self.set_device_map(pe, seg, std::ptr::null_mut());
        }
    }

    pub fn local(&self, seg: u32) -> LocalSeg {
        let c = &self.local[seg as usize];
        LocalSeg { base: c.base.load(Ordering::Acquire), len: c.len.load(Ordering::Acquire) }
    }

    /// Set before the segment is published (or, at init, before the runtime is).
    pub fn set_cpu_atomics(&self, seg: u32, cpu: bool) {
        self.local[seg as usize].cpu_atomics.store(cpu, Ordering::Release);
    }

    /// Whether CPU atomics serve segment `seg`'s words (else the spml's, for every target).
    #[inline(always)]
    pub fn cpu_atomics(&self, seg: u32) -> bool {
        self.local[seg as usize].cpu_atomics.load(Ordering::Relaxed)
    }

    /// Set before the segment is published: its memory is of device type `device`.
    pub fn set_device(&self, seg: u32, device: u32) {
        self.local[seg as usize].device.store(device, Ordering::Release);
    }

    /// The device type of segment `seg`'s memory (0: host memory).
    #[inline(always)]
    pub fn device(&self, seg: u32) -> u32 {
        self.local[seg as usize].device.load(Ordering::Relaxed)
    }

    /// Segment `seg` is heap `heap` of `memheap` (set before it is published, or at init).
    pub fn set_heap(&self, seg: u32, memheap: &'static MemheapOps, heap: *mut c_void) {
        let c = &self.local[seg as usize];
        c.heap.store(heap, Ordering::Release);
        c.memheap.store(memheap as *const MemheapOps as *mut MemheapOps, Ordering::Release);
    }

    /// The memheap and heap handle of segment `seg`, when it is a heap.
    pub fn heap(&self, seg: u32) -> Option<(&'static MemheapOps, *mut c_void)> {
        let c = &self.local[seg as usize];
        let m = c.memheap.load(Ordering::Acquire);
        // SAFETY: only `set_heap` stores a non-null pointer, from a `&'static MemheapOps`.
        (!m.is_null()).then(|| (unsafe { &*m }, c.heap.load(Ordering::Acquire)))
    }

    /// Device segment `seg`'s host shadow's base (null: none), before the space is handed
    /// out; null again forgets it.
    pub fn set_shadow(&self, seg: u32, base: *mut u8) {
        self.local[seg as usize].shadow.store(base as usize, Ordering::Release);
    }

    /// The base of device segment `seg`'s host shadow (0: none).
    #[inline]
    pub fn shadow(&self, seg: u32) -> usize {
        self.local[seg as usize].shadow.load(Ordering::Acquire)
    }

    /// Device segment `seg`'s lock words (zeroed, symmetric), before it is published.
    pub fn set_lock_words(&self, seg: u32, words: *mut u64) {
        self.local[seg as usize].lock_words.store(words as usize, Ordering::Release);
    }

    /// Device segment `seg`'s lock words (null: none).
    #[inline]
    pub fn lock_words(&self, seg: u32) -> *mut u64 {
        self.local[seg as usize].lock_words.load(Ordering::Acquire) as *mut u64
    }

    /// Forget segment `seg`'s lock words and return them (to be freed), at release.
    pub fn take_lock_words(&self, seg: u32) -> *mut u64 {
        self.local[seg as usize].lock_words.swap(0, Ordering::AcqRel) as *mut u64
    }

    /// Record whether device segment `seg` is mapped between the PEs of every host (agreed).
    pub fn set_host_mapped(&self, seg: u32, all: bool) {
        self.local[seg as usize].host_mapped.store(all, Ordering::Release);
    }

    /// Whether every PE of every host maps its host's copies of device segment `seg`.
    #[inline]
    pub fn host_mapped(&self, seg: u32) -> bool {
        self.local[seg as usize].host_mapped.load(Ordering::Acquire)
    }

    /// Where PE `pe`'s copy of device segment `seg` is mapped here (null: not mapped).
    pub fn set_device_map(&self, pe: usize, seg: u32, at: *mut u8) {
        self.peers[self.cell(pe, seg)].device_map.store(at, Ordering::Release);
    }

    #[inline(always)]
    pub fn device_map(&self, pe: usize, seg: u32) -> *mut u8 {
        self.peers[self.cell(pe, seg)].device_map.load(Ordering::Relaxed)
    }

    pub fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    pub fn set_peer(&self, pe: usize, seg: u32, p: PeerSeg) {
        let c = &self.peers[self.cell(pe, seg)];
        c.remote_base.store(p.remote_base, Ordering::Release);
        c.mapped.store(p.mapped, Ordering::Release);
    }

    /// The segment holding `addr` and the offset in it.
    #[inline(always)]
    pub fn lookup(&self, addr: usize) -> Option<(u32, usize)> {
        let n = self.count.load(Ordering::Acquire);
        for (i, s) in self.local[..n].iter().enumerate() {
            let off = addr.wrapping_sub(s.base.load(Ordering::Relaxed));
            if off < s.len.load(Ordering::Relaxed) {
                return Some((i as u32, off));
            }
        }
        None
    }

    /// The segment holding `addr`, the offset in it, and the bytes from there to its end.
    #[inline(always)]
    pub fn locate(&self, addr: usize) -> Option<(u32, usize, usize)> {
        let n = self.count.load(Ordering::Acquire);
        for (i, s) in self.local[..n].iter().enumerate() {
            let off = addr.wrapping_sub(s.base.load(Ordering::Relaxed));
            let len = s.len.load(Ordering::Relaxed);
            if off < len {
                return Some((i as u32, off, len - off));
            }
        }
        None
    }

    /// Whether `[addr, addr+len)` lies inside one segment.
    pub fn contains_range(&self, addr: usize, len: usize) -> bool {
        match self.lookup(addr) {
            Some((seg, off)) => len <= self.local(seg).len - off,
            None => false,
        }
    }

    #[inline(always)]
    pub fn peer(&self, pe: usize, seg: u32) -> PeerSeg {
        let c = &self.peers[self.cell(pe, seg)];
        PeerSeg {
            // Relaxed: the reader that goes on to the spml with a base set on first use
            // (`peers::learn_on_first_use`) fences first (`ops::rma::target`).
            remote_base: c.remote_base.load(Ordering::Relaxed),
            mapped: c.mapped.load(Ordering::Relaxed),
        }
    }

    pub fn n_pes(&self) -> usize {
        self.n_pes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_segment_and_offset() {
        let t = SegmentTable::new(2);
        t.add_local(0x1000, 0x100);
        t.add_local(0x8000, 0x10);
        assert_eq!(t.lookup(0x1000), Some((0, 0)));
        assert_eq!(t.lookup(0x10ff), Some((0, 0xff)));
        assert_eq!(t.lookup(0x1100), None);
        assert_eq!(t.lookup(0x8008), Some((1, 8)));
        assert_eq!(t.lookup(0x0fff), None);
        assert!(t.contains_range(0x10f0, 0x10));
        assert!(!t.contains_range(0x10f0, 0x11));
        assert_eq!(t.locate(0x10f0), Some((0, 0xf0, 0x10)));
        assert_eq!(t.locate(0x1100), None);
    }

    #[test]
    fn peers_are_per_pe_and_segment() {
        let t = SegmentTable::new(3);
        t.add_local(0x1000, 0x100);
        t.set_peer(2, 0, PeerSeg { remote_base: 77, mapped: std::ptr::null_mut() });
        assert_eq!(t.peer(2, 0).remote_base, 77);
        assert_eq!(t.peer(1, 0).remote_base, 0);
    }

    #[test]
    fn segments_come_and_go_and_ids_are_reused() {
        let t = SegmentTable::new(1);
        t.add_local(0x1000, 0x100);
        t.add_local(0x2000, 0x100);
        let s = t.reserve().unwrap();
        assert_eq!(t.lookup(0x9000), None, "reserved but not published");
        t.publish(s, 0x9000, 0x10);
        assert_eq!(t.lookup(0x9004), Some((s, 4)));
        t.set_cpu_atomics(s, true);
        t.set_device(s, 1);
        t.set_device_map(0, s, 0x5000 as *mut u8);
        unsafe extern "C" fn create(_: *mut c_void, _: usize) -> *mut c_void {
            std::ptr::null_mut()
        }
        static OPS: MemheapOps = rshmem_plugin_api::heap_slots::table(create, 0);
        let ops = &OPS;
        t.set_heap(s, ops, 0x77 as *mut c_void);
        t.set_shadow(s, 0x6000 as *mut u8);
        t.set_lock_words(s, 0x7000 as *mut u64);
        t.set_host_mapped(s, true);
        let (m, h) = t.heap(s).expect("a heap segment");
        assert!(std::ptr::eq(m, ops) && h == 0x77 as *mut c_void);
        assert!(t.heap(0).is_none(), "segment 0 was given no heap");
        assert_eq!((t.shadow(s), t.lock_words(s) as usize, t.host_mapped(s)), (0x6000, 0x7000, true));
        assert!(t.cpu_atomics(s) && !t.cpu_atomics(0));
        assert_eq!((t.device(s), t.device(0)), (1, 0));
        t.remove(s);
        assert_eq!(t.lookup(0x9004), None);
        assert!(!t.cpu_atomics(s), "a removed segment's atomics rule is reset");
        assert_eq!(t.device(s), 0, "and its device type");
        assert!(t.device_map(0, s).is_null(), "and its device mappings");
        assert!(t.heap(s).is_none(), "and its heap");
        assert_eq!(
            (t.shadow(s), t.lock_words(s) as usize, t.host_mapped(s)),
            (0, 0, false),
            "and its device facts"
        );
        assert_eq!(t.reserve(), Some(s), "a removed id is reused");
        while t.reserve().is_some() {}
        assert_eq!(t.count(), MAX_SEGMENTS);
    }
}
