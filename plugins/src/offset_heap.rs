//! The allocator proper, in offsets from the segment base. It never sees the segment's memory,
//! only numbers, so it is pure, testable, and identical on every PE: with the same call
//! sequence every PE computes the same offsets, which is what keeps the heap symmetric.
//!
//! Policy: first fit by address (the lowest offset that fits), and freed blocks merge with
//! free neighbours at once, so the free map never holds two adjacent ranges.

use std::collections::BTreeMap;

/// Every block starts and ends on this boundary (the OpenSHMEM heap's natural alignment).
pub const MIN_ALIGN: usize = 16;

pub struct Heap {
    /// Free ranges: offset -> length, never adjacent (always coalesced), never empty.
    free: BTreeMap<usize, usize>,
    /// Live blocks: offset -> length (the request rounded up to MIN_ALIGN); ordered, so that
    /// the block holding any offset can be found (`block_at`).
    live: BTreeMap<usize, usize>,
    /// Bytes the heap manages (the segment size rounded down to MIN_ALIGN).
    size: usize,
}

/// What `realloc` decided; the caller moves the bytes when the block moved.
#[derive(Debug, PartialEq, Eq)]
pub enum Resized {
    InPlace,
    /// The block now lives at `to`; the first `keep` bytes must be copied there from the old
    /// block (which is already free in the metadata, but its bytes are untouched).
    Moved {
        to: usize,
        keep: usize,
    },
}

fn round_up(v: usize, a: usize) -> Option<usize> {
    v.checked_add(a - 1).map(|x| x & !(a - 1))
}

/// The rounded length of a request, or None when it cannot be represented.
fn block_len(size: usize) -> Option<usize> {
    round_up(size, MIN_ALIGN)
}

impl Heap {
    pub fn new(size: usize) -> Heap {
        let size = size & !(MIN_ALIGN - 1);
        let mut free = BTreeMap::new();
        if size > 0 {
            free.insert(0, size);
        }
        Heap { free, live: BTreeMap::new(), size }
    }

    /// First fit by address for `size` bytes at an offset that is a multiple of `align` (a
    /// power of two; raised to MIN_ALIGN). None for size 0, a bad alignment, or no room.
    pub fn alloc(&mut self, size: usize, align: usize) -> Option<usize> {
        if size == 0 || !align.is_power_of_two() {
            return None;
        }
        let align = align.max(MIN_ALIGN);
        let len = block_len(size)?;
        let (start, flen, at) = self.free.iter().find_map(|(&start, &flen)| {
            let at = round_up(start, align)?;
            (at.checked_add(len)? <= start + flen).then_some((start, flen, at))
        })?;
        // Split the free range into the padding before the block and the rest after it.
        self.free.remove(&start);
        if at > start {
            self.free.insert(start, at - start);
        }
        if at + len < start + flen {
            self.free.insert(at + len, start + flen - at - len);
        }
        self.live.insert(at, len);
        Some(at)
    }

    /// Give `[off, off+len)` back, merging it with the free ranges on either side.
    fn insert_free(&mut self, mut off: usize, mut len: usize) {
        if let Some((&prev, &plen)) = self.free.range(..off).next_back() {
            if prev + plen == off {
                self.free.remove(&prev);
                off = prev;
                len += plen;
            }
        }
        if let Some(nlen) = self.free.remove(&(off + len)) {
            len += nlen;
        }
        self.free.insert(off, len);
    }

    /// Free the live block at `off`; false (nothing changes) when there is none, which is how
    /// double frees and foreign pointers are caught.
    pub fn free(&mut self, off: usize) -> bool {
        match self.live.remove(&off) {
            Some(len) => {
                self.insert_free(off, len);
                true
            }
            None => false,
        }
    }

    /// Usable size of the live block at `off`.
    pub fn size_of(&self, off: usize) -> Option<usize> {
        self.live.get(&off).copied()
    }

    /// Resize the live block at `off` to `size` bytes (size > 0): shrink in place, grow in place
    /// into the free range right after it, or else move it (first fit, MIN_ALIGN). None, with
    /// nothing changed, when `off` is not live or there is no room.
    pub fn realloc(&mut self, off: usize, size: usize) -> Option<Resized> {
        let len = self.size_of(off)?;
        let want = block_len(size.max(1))?;
        if want <= len {
            if want < len {
                self.live.insert(off, want);
                self.insert_free(off + want, len - want);
            }
            return Some(Resized::InPlace);
        }
        let need = want - len;
        if let Some(&flen) = self.free.get(&(off + len)) {
            if flen >= need {
                self.free.remove(&(off + len));
                if flen > need {
                    self.free.insert(off + want, flen - need);
                }
                self.live.insert(off, want);
                return Some(Resized::InPlace);
            }
        }
        // Allocate while the old block is still live, so the two never overlap and the caller
        // can copy without care for overlap.
        let to = self.alloc(size, MIN_ALIGN)?;
        self.free(off);
        Some(Resized::Moved { to, keep: len })
    }

    /// The live block holding offset `off` (its offset and length), if any.
    pub fn block_at(&self, off: usize) -> Option<(usize, usize)> {
        let (&start, &len) = self.live.range(..=off).next_back()?;
        (off - start < len).then_some((start, len))
    }

    pub fn free_bytes(&self) -> usize {
        self.free.values().sum()
    }

    pub fn capacity(&self) -> usize {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Heap {
        /// Free and live ranges tile the heap exactly, and free ranges are coalesced.
        fn check(&self) {
            let mut ranges: Vec<(usize, usize, bool)> =
                self.free.iter().map(|(&o, &l)| (o, l, true)).collect();
            ranges.extend(self.live.iter().map(|(&o, &l)| (o, l, false)));
            ranges.sort();
            let mut at = 0;
            let mut prev_free = false;
            for (o, l, is_free) in ranges {
                assert_eq!(o, at, "gap or overlap at {o}");
                assert!(l > 0 && l % MIN_ALIGN == 0);
                assert!(!(is_free && prev_free), "uncoalesced free ranges at {o}");
                prev_free = is_free;
                at = o + l;
            }
            assert_eq!(at, self.size);
        }
    }

    #[test]
    fn the_block_holding_an_offset_is_found_and_free_space_is_no_block() {
        let mut h = Heap::new(4096);
        let a = h.alloc(40, 16).unwrap();
        let b = h.alloc(100, 256).unwrap();
        assert_eq!((a, b), (0, 256));
        assert_eq!(h.block_at(0), Some((0, 48)));
        assert_eq!(h.block_at(47), Some((0, 48)));
        assert_eq!(h.block_at(48), None, "padding before an aligned block");
        assert_eq!(h.block_at(300), Some((256, 112)));
        assert_eq!(h.block_at(368), None, "past the last block");
        h.free(a);
        assert_eq!(h.block_at(0), None, "a freed block");
        h.check();
    }

    #[test]
    fn sizes_round_up_to_min_align() {
        let mut h = Heap::new(4096);
        let a = h.alloc(1, 16).unwrap();
        let b = h.alloc(17, 16).unwrap();
        assert_eq!((a, b), (0, 16));
        assert_eq!(h.size_of(a), Some(16));
        assert_eq!(h.size_of(b), Some(32));
        assert_eq!(h.alloc(5, 1), Some(48), "alignments below MIN_ALIGN are raised");
        h.check();
    }

    #[test]
    fn large_alignments_are_honoured() {
        let mut h = Heap::new(4 << 20);
        h.alloc(100, 16).unwrap();
        for align in [32, 64, 4096, 65536, 1 << 20] {
            let off = h.alloc(10, align).unwrap();
            assert_eq!(off % align, 0, "align {align}");
            h.check();
        }
        assert!(h.alloc(16, 3).is_none(), "not a power of two");
        assert!(h.alloc(16, 0).is_none());
        assert!(h.alloc(16, 8 << 20).is_none(), "only offset 0 has that alignment, and it is taken");
    }

    #[test]
    fn alignment_padding_stays_usable() {
        let mut h = Heap::new(8192);
        let a = h.alloc(16, 16).unwrap();
        let b = h.alloc(16, 4096).unwrap();
        assert_eq!((a, b), (0, 4096));
        assert_eq!(h.alloc(4000, 16), Some(16), "the gap before the aligned block is first fit");
        h.check();
    }

    #[test]
    fn exhaustion_returns_none() {
        let mut h = Heap::new(1024);
        let blocks: Vec<usize> = (0..4).map(|_| h.alloc(256, 16).unwrap()).collect();
        assert_eq!(blocks, [0, 256, 512, 768]);
        assert!(h.alloc(16, 16).is_none());
        assert!(h.alloc(usize::MAX, 16).is_none());
        assert!(h.alloc(usize::MAX - 3, 4096).is_none());
        assert_eq!(h.free_bytes(), 0);
        h.check();
        let mut tiny = Heap::new(15);
        assert!(tiny.alloc(1, 16).is_none(), "a heap under MIN_ALIGN has no room");
        let mut exact = Heap::new(1000);
        assert_eq!(exact.alloc(992, 16), Some(0), "the whole (rounded) heap in one block");
    }

    #[test]
    fn zero_sized_requests_get_none() {
        let mut h = Heap::new(4096);
        assert!(h.alloc(0, 16).is_none());
        assert_eq!(h.free_bytes(), 4096);
    }

    #[test]
    fn frees_coalesce_in_any_order() {
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2], [2, 0, 3, 1]] {
            let mut h = Heap::new(1024);
            let blocks: Vec<usize> = (0..4).map(|_| h.alloc(256, 16).unwrap()).collect();
            for i in order {
                assert!(h.free(blocks[i]));
                h.check();
            }
            assert_eq!(h.free.len(), 1);
            assert_eq!(h.free_bytes(), 1024);
        }
    }

    #[test]
    fn coalesced_neighbours_serve_a_bigger_block() {
        let mut h = Heap::new(1024);
        let b: Vec<usize> = (0..4).map(|_| h.alloc(256, 16).unwrap()).collect();
        assert!(h.free(b[1]) && h.free(b[2]));
        assert_eq!(h.alloc(512, 16), Some(b[1]));
        h.check();
    }

    #[test]
    fn double_and_foreign_frees_are_refused() {
        let mut h = Heap::new(4096);
        let a = h.alloc(64, 16).unwrap();
        assert!(!h.free(a + 16), "interior pointer");
        assert!(!h.free(12345));
        assert!(h.free(a));
        assert!(!h.free(a), "double free");
        assert_eq!(h.size_of(a), None);
        h.check();
    }

    #[test]
    fn realloc_shrinks_and_grows_in_place() {
        let mut h = Heap::new(4096);
        let a = h.alloc(100, 16).unwrap();
        assert_eq!(h.realloc(a, 1000), Some(Resized::InPlace));
        assert_eq!(h.size_of(a), Some(1008));
        let b = h.alloc(16, 16).unwrap();
        assert_eq!(b, 1008);
        assert_eq!(h.realloc(a, 32), Some(Resized::InPlace));
        assert_eq!(h.size_of(a), Some(32));
        assert_eq!(h.alloc(900, 16), Some(32), "the freed tail is reusable");
        h.check();
    }

    #[test]
    fn realloc_moves_when_blocked_and_fails_cleanly() {
        let mut h = Heap::new(4096);
        let a = h.alloc(64, 16).unwrap();
        let b = h.alloc(64, 16).unwrap();
        assert_eq!(h.realloc(a, 128), Some(Resized::Moved { to: 128, keep: 64 }));
        assert_eq!(h.size_of(a), None, "the old block is free");
        assert_eq!(h.size_of(128), Some(128));
        h.check();
        // No room anywhere: nothing changes.
        let before = h.free_bytes();
        assert_eq!(h.realloc(b, 8192), None);
        assert_eq!(h.size_of(b), Some(64));
        assert_eq!(h.free_bytes(), before);
        assert_eq!(h.realloc(a, 16), None, "not live any more");
        h.check();
    }

    #[test]
    fn the_same_calls_give_the_same_offsets() {
        // A pseudo-random mix of alloc, free and realloc replayed on two heaps.
        fn run() -> Vec<Option<usize>> {
            let mut h = Heap::new(1 << 20);
            let mut live: Vec<usize> = Vec::new();
            let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
            let mut out = Vec::new();
            for _ in 0..2000 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let r = (seed >> 33) as usize;
                match r % 4 {
                    0 | 1 => {
                        let p = h.alloc(1 + r % 5000, 1 << (r % 13));
                        live.extend(p);
                        out.push(p);
                    }
                    2 if !live.is_empty() => {
                        let off = live.swap_remove(r % live.len());
                        assert!(h.free(off));
                        out.push(Some(off));
                    }
                    _ if !live.is_empty() => {
                        let i = r % live.len();
                        let res = h.realloc(live[i], 1 + (r >> 7) % 9000);
                        if let Some(Resized::Moved { to, .. }) = res {
                            live[i] = to;
                        }
                        out.push(Some(live[i]));
                    }
                    _ => {}
                }
            }
            h.check();
            out
        }
        assert_eq!(run(), run());
    }
}
