//! The target's side of a remote atomic carried in a message (`rma_am`, `batch`): the CPU
//! applies it to its own memory, with the same instructions the core uses on mapped memory, so
//! the two are atomic with respect to each other.

use rshmem_plugin_api::{AMO_ADD, AMO_AND, AMO_CSWAP, AMO_FETCH, AMO_OR, AMO_SET, AMO_SWAP, AMO_XOR};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Whether `op` on a `size`-byte word at `addr` is an atomic this module applies.
pub fn valid(addr: u64, size: u32, op: u32) -> bool {
    (size == 4 || size == 8) && addr.is_multiple_of(u64::from(size)) && op <= AMO_XOR
}

/// Apply atomic `op` to the `size`-byte word at `addr` and return its old value, in the low
/// bytes of the result (the same bytes the sender's reply buffer reads).
///
/// # Safety
/// `addr` is an aligned `size`-byte word (4 or 8) that stays valid and is only accessed
/// atomically while this runs.
pub unsafe fn apply(addr: usize, size: usize, op: u32, value: u64, cond: u64) -> u64 {
    macro_rules! on {
        ($a:expr, $v:expr, $c:expr) => {{
            let a = $a;
            let (v, c) = ($v, $c);
            let o = Ordering::AcqRel;
            match op {
                AMO_FETCH => a.load(Ordering::Acquire),
                AMO_SET | AMO_SWAP => a.swap(v, o),
                AMO_CSWAP => a.compare_exchange(c, v, o, Ordering::Acquire).unwrap_or_else(|x| x),
                AMO_ADD => a.fetch_add(v, o),
                AMO_AND => a.fetch_and(v, o),
                AMO_OR => a.fetch_or(v, o),
                _ => a.fetch_xor(v, o),
            }
        }};
    }
    if size == 4 {
        // SAFETY: an aligned 4-byte word (caller).
        u64::from(on!(unsafe { AtomicU32::from_ptr(addr as *mut u32) }, value as u32, cond as u32))
    } else {
        // SAFETY: an aligned 8-byte word (caller).
        on!(unsafe { AtomicU64::from_ptr(addr as *mut u64) }, value, cond)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomics_return_the_old_value_at_both_widths() {
        let mut w64 = 10u64;
        let mut w32 = 0xf0u32;
        let p64 = &mut w64 as *mut u64 as usize;
        let p32 = &mut w32 as *mut u32 as usize;
        // SAFETY: aligned words of this test, nothing else touches them.
        unsafe {
            assert_eq!(apply(p64, 8, AMO_ADD, 5, 0), 10);
            assert_eq!(apply(p64, 8, AMO_FETCH, 0, 0), 15);
            assert_eq!(apply(p64, 8, AMO_CSWAP, 99, 14), 15, "no swap when the condition differs");
            assert_eq!(apply(p64, 8, AMO_CSWAP, 99, 15), 15);
            assert_eq!(apply(p64, 8, AMO_SWAP, 1, 0), 99);
            assert_eq!(apply(p32, 4, AMO_AND, 0x3c, 0), 0xf0);
            assert_eq!(apply(p32, 4, AMO_OR, 0x1, 0), 0x30);
            assert_eq!(apply(p32, 4, AMO_XOR, 0x31, 0), 0x31);
            assert_eq!(apply(p32, 4, AMO_SET, 7, 0), 0);
        }
        assert_eq!((w64, w32), (1, 7));
    }
    #[test]
    fn only_aligned_words_of_four_or_eight_bytes_and_known_operations_are_valid() {
        assert!(valid(8, 8, AMO_ADD) && valid(4, 4, AMO_XOR) && valid(0, 8, AMO_FETCH));
        assert!(!valid(4, 8, AMO_ADD), "misaligned");
        assert!(!valid(8, 2, AMO_ADD), "no 2-byte atomics");
        assert!(!valid(8, 8, AMO_XOR + 1), "unknown operation");
    }
}
