//! The symmetric segment table: which local ranges are symmetric, and for every peer where its
//! copy of each segment lives (its base address for the spml, and a local mapping when the peer
//! is on this node). Lookups scan at most `MAX_SEGMENTS` ranges, heap first: O(1) in practice.

pub const MAX_SEGMENTS: usize = 4;
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

pub struct SegmentTable {
    pub local: [LocalSeg; MAX_SEGMENTS],
    pub count: usize,
    n_pes: usize,
    /// `peers[pe * MAX_SEGMENTS + seg]`.
    peers: Vec<PeerSeg>,
}

// SAFETY: the raw pointers are addresses of shared mappings valid for the job; the table is
// read-only after initialisation.
unsafe impl Send for SegmentTable {}
unsafe impl Sync for SegmentTable {}

impl SegmentTable {
    pub fn new(n_pes: usize) -> SegmentTable {
        SegmentTable {
            local: [LocalSeg::default(); MAX_SEGMENTS],
            count: 0,
            n_pes,
            peers: vec![PeerSeg::default(); n_pes * MAX_SEGMENTS],
        }
    }

    pub fn add_local(&mut self, base: usize, len: usize) -> u32 {
        assert!(self.count < MAX_SEGMENTS, "too many symmetric segments");
        self.local[self.count] = LocalSeg { base, len };
        self.count += 1;
        (self.count - 1) as u32
    }

    pub fn set_peer(&mut self, pe: usize, seg: u32, p: PeerSeg) {
        self.peers[pe * MAX_SEGMENTS + seg as usize] = p;
    }

    /// The segment holding `addr` and the offset in it.
    #[inline(always)]
    pub fn lookup(&self, addr: usize) -> Option<(u32, usize)> {
        for (i, s) in self.local[..self.count].iter().enumerate() {
            let off = addr.wrapping_sub(s.base);
            if off < s.len {
                return Some((i as u32, off));
            }
        }
        None
    }

    /// Whether `[addr, addr+len)` lies inside one segment.
    pub fn contains_range(&self, addr: usize, len: usize) -> bool {
        match self.lookup(addr) {
            Some((seg, off)) => len <= self.local[seg as usize].len - off,
            None => false,
        }
    }

    #[inline(always)]
    pub fn peer(&self, pe: usize, seg: u32) -> &PeerSeg {
        &self.peers[pe * MAX_SEGMENTS + seg as usize]
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
        let mut t = SegmentTable::new(2);
        t.add_local(0x1000, 0x100);
        t.add_local(0x8000, 0x10);
        assert_eq!(t.lookup(0x1000), Some((0, 0)));
        assert_eq!(t.lookup(0x10ff), Some((0, 0xff)));
        assert_eq!(t.lookup(0x1100), None);
        assert_eq!(t.lookup(0x8008), Some((1, 8)));
        assert_eq!(t.lookup(0x0fff), None);
        assert!(t.contains_range(0x10f0, 0x10));
        assert!(!t.contains_range(0x10f0, 0x11));
    }

    #[test]
    fn peers_are_per_pe_and_segment() {
        let mut t = SegmentTable::new(3);
        t.add_local(0x1000, 0x100);
        t.set_peer(2, 0, PeerSeg { remote_base: 77, mapped: std::ptr::null_mut() });
        assert_eq!(t.peer(2, 0).remote_base, 77);
        assert_eq!(t.peer(1, 0).remote_base, 0);
    }
}
