//! Atomic operations on one local word: what the AMOs do to a mapped copy with CPU atomics,
//! and what the device path does to a word read out of device memory (`crate::ops::device`).

use rshmem_plugin_api::{AMO_ADD, AMO_AND, AMO_CSWAP, AMO_FETCH, AMO_OR, AMO_SET, AMO_SWAP, AMO_XOR};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};

macro_rules! direct {
    ($name:ident, $atomic:ty, $word:ty) => {
        /// # Safety
        /// `a` must be an aligned word of a shared mapping.
        pub(crate) unsafe fn $name(a: *mut $word, op: u32, v: $word, cond: $word) -> $word {
            // SAFETY: the caller guarantees an aligned word; every PE uses atomics on it.
            let a = unsafe { <$atomic>::from_ptr(a) };
            match op {
                AMO_FETCH => a.load(SeqCst),
                AMO_SET => {
                    a.store(v, SeqCst);
                    0
                }
                AMO_SWAP => a.swap(v, SeqCst),
                AMO_CSWAP => match a.compare_exchange(cond, v, SeqCst, SeqCst) {
                    Ok(x) | Err(x) => x,
                },
                AMO_ADD => a.fetch_add(v, SeqCst),
                AMO_AND => a.fetch_and(v, SeqCst),
                AMO_OR => a.fetch_or(v, SeqCst),
                AMO_XOR => a.fetch_xor(v, SeqCst),
                _ => unreachable!("unknown AMO {op}"),
            }
        }
    };
}
direct!(direct32, AtomicU32, u32);
direct!(direct64, AtomicU64, u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_operations_follow_the_spec() {
        let mut w: u64 = 10;
        // SAFETY: a local aligned word.
        unsafe {
            assert_eq!(direct64(&mut w, AMO_ADD, 5, 0), 10);
            assert_eq!(direct64(&mut w, AMO_CSWAP, 99, 14), 15, "failed compare returns the old value");
            assert_eq!(w, 15);
            assert_eq!(direct64(&mut w, AMO_CSWAP, 99, 15), 15);
            assert_eq!(w, 99);
            assert_eq!(direct64(&mut w, AMO_AND, 0b1010, 0), 99);
            assert_eq!(w, 99 & 0b1010);
            assert_eq!(direct64(&mut w, AMO_SWAP, 7, 0), 2);
            assert_eq!(direct64(&mut w, AMO_FETCH, 0, 0), 7);
        }
        let mut v: u32 = u32::MAX;
        // SAFETY: a local aligned word.
        unsafe {
            assert_eq!(direct32(&mut v, AMO_ADD, 1, 0), u32::MAX);
            assert_eq!(v, 0, "32-bit adds wrap at 32 bits");
        }
    }
}
