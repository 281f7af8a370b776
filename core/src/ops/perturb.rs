//! `SHMEM_PERTURB`, for testing: at about one in N of the points where a PE stores to or
//! loads from memory other PEs see through mappings (puts, gets, put-with-signal between the
//! data and the signal, atomics, the end of a wait), this thread gives up the core, and one
//! time in four sleeps for a moment, so that stress runs reach interleavings that a quiet
//! machine, where each PE runs uninterrupted on a core of its own, never shows. Off (0) by
//! default: a point then costs one load and a branch.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// One point in this many perturbs; 0: none.
static EVERY: AtomicU32 = AtomicU32::new(0);

thread_local! {
    /// This thread's xorshift state (0: not seeded yet).
    static STATE: Cell<u64> = const { Cell::new(0) };
}

pub fn configure(every: u32) {
    EVERY.store(every, Ordering::Relaxed);
}

/// A point where a perturbation may happen.
#[inline(always)]
pub fn point() {
    let every = EVERY.load(Ordering::Relaxed);
    if every != 0 {
        perturb(every);
    }
}

#[cold]
#[inline(never)]
fn perturb(every: u32) {
    let r = next();
    if !r.is_multiple_of(every as u64) {
        return;
    }
    if (r >> 32).is_multiple_of(4) {
        std::thread::sleep(Duration::from_micros(1));
    } else {
        std::thread::yield_now();
    }
}

/// The next number of this thread's sequence, seeded from its stack address, the process
/// id and the clock (threads and PEs differ; runs differ).
fn next() -> u64 {
    let mut x = STATE.get();
    if x == 0 {
        let here = &x as *const u64 as u64;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        x = (here ^ nanos ^ ((std::process::id() as u64) << 32)) | 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.set(x);
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_not_stuck_and_hits_about_one_in_n() {
        let n = 8u64;
        let hits = (0..80_000).filter(|_| next().is_multiple_of(n)).count();
        assert!((8_000..12_000).contains(&hits), "{hits} of 80000");
        let a = next();
        assert_ne!(a, next());
    }
}
