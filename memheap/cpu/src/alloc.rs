//! The allocator proper, in offsets from the segment base.

use std::collections::{BTreeMap, HashMap};

pub const MIN_ALIGN: usize = 16;

pub struct Heap {
    /// Free ranges: offset -> length, never adjacent (coalesced).
    free: BTreeMap<usize, usize>,
    /// Live blocks: offset -> length (rounded up to MIN_ALIGN).
    live: HashMap<usize, usize>,
}

fn round_up(v: usize, a: usize) -> Option<usize> {
    v.checked_add(a - 1).map(|x| x & !(a - 1))
}

impl Heap {
    pub fn new(size: usize) -> Heap {
        let mut free = BTreeMap::new();
        let size = size & !(MIN_ALIGN - 1);
        if size > 0 {
            free.insert(0, size);
        }
        Heap { free, live: HashMap::new() }
    }

    /// First fit by address. Alignment is applied to offsets, so every PE computes the same
    /// offsets whatever its segment's address; the address is aligned as well for any
    /// alignment the segment base has (sshmem components align bases to 2 MiB). `base` only
    /// lets callers check that.
    pub fn alloc(&mut self, size: usize, align: usize, base: usize) -> Option<usize> {
        let _ = base;
        if size == 0 || !align.is_power_of_two() {
            return None;
        }
        let align = align.max(MIN_ALIGN);
        let len = round_up(size, MIN_ALIGN)?;
        let (start, flen, at) = self.free.iter().find_map(|(&start, &flen)| {
            let at = round_up(start, align)?;
            (at.checked_add(len)? <= start + flen).then_some((start, flen, at))
        })?;
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

    fn insert_free(&mut self, mut off: usize, mut len: usize) {
        if let Some((&p, &plen)) = self.free.range(..off).next_back() {
            if p + plen == off {
                self.free.remove(&p);
                off = p;
                len += plen;
            }
        }
        if let Some(&nlen) = self.free.get(&(off + len)) {
            self.free.remove(&(off + len));
            len += nlen;
        }
        self.free.insert(off, len);
    }

    pub fn free(&mut self, off: usize) -> bool {
        match self.live.remove(&off) {
            Some(len) => {
                self.insert_free(off, len);
                true
            }
            None => false,
        }
    }

    pub fn size_of(&self, off: usize) -> Option<usize> {
        self.live.get(&off).copied()
    }

    /// Grow or shrink a live block without moving it, when the following space allows.
    pub fn resize_in_place(&mut self, off: usize, size: usize) -> bool {
        let Some(&len) = self.live.get(&off) else { return false };
        let Some(want) = round_up(size.max(1), MIN_ALIGN) else { return false };
        if want <= len {
            if want < len {
                self.live.insert(off, want);
                self.insert_free(off + want, len - want);
            }
            return true;
        }
        let need = want - len;
        match self.free.get(&(off + len)).copied() {
            Some(flen) if flen >= need => {
                self.free.remove(&(off + len));
                if flen > need {
                    self.free.insert(off + want, flen - need);
                }
                self.live.insert(off, want);
                true
            }
            _ => false,
        }
    }

    pub fn free_bytes(&self) -> usize {
        self.free.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_is_deterministic_and_aligned() {
        let mut a = Heap::new(1 << 20);
        let mut b = Heap::new(1 << 20);
        for (size, align) in [(10, 16), (4096, 4096), (1, 16), (100, 64), (7, 1024)] {
            let x = a.alloc(size, align, 0x10000).unwrap();
            let y = b.alloc(size, align, 0x10000).unwrap();
            assert_eq!(x, y);
            assert_eq!(x % align.max(MIN_ALIGN), 0);
        }
    }

    #[test]
    fn exhaustion_returns_none_and_free_coalesces() {
        let mut h = Heap::new(1024);
        let blocks: Vec<usize> = (0..4).map(|_| h.alloc(256, 16, 0).unwrap()).collect();
        assert!(h.alloc(16, 16, 0).is_none());
        assert!(h.free(blocks[1]));
        assert!(h.free(blocks[2]));
        assert!(!h.free(blocks[2]), "double free is refused");
        assert_eq!(h.alloc(512, 16, 0), Some(blocks[1]), "coalesced neighbours serve a bigger block");
        assert!(h.free(blocks[0]) && h.free(blocks[3]) && h.free(blocks[1]));
        assert_eq!(h.free_bytes(), 1024);
        assert_eq!(h.free.len(), 1);
    }

    #[test]
    fn resize_in_place_grows_and_shrinks() {
        let mut h = Heap::new(4096);
        let a = h.alloc(100, 16, 0).unwrap();
        assert!(h.resize_in_place(a, 1000));
        assert_eq!(h.size_of(a), Some(1008));
        let b = h.alloc(16, 16, 0).unwrap();
        assert_eq!(b, 1008);
        assert!(!h.resize_in_place(a, 2000), "blocked by b");
        assert!(h.resize_in_place(a, 32));
        assert_eq!(h.size_of(a), Some(32));
        assert_eq!(h.alloc(900, 16, 0), Some(32), "the freed tail is reusable");
    }

    #[test]
    fn bad_requests_are_refused() {
        let mut h = Heap::new(4096);
        assert!(h.alloc(0, 16, 0).is_none());
        assert!(h.alloc(16, 3, 0).is_none());
        assert!(h.alloc(usize::MAX, 16, 0).is_none());
        assert!(!h.free(12345));
    }
}
