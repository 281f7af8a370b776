//! Where members run and what they wait for, so that waits on a node with more PEs than cores
//! yield the CPU only when that can help.
//!
//! On such a node a waiting PE used to yield its core at once, so that a PE the kernel put on
//! the same core could run and arrive. But when every other member on its core is blocked
//! too, the members still missing run on other cores; yielding then hands the core to PEs
//! that only look and yield back, and costs context switches (about 1 µs each here), while
//! the missing member may arrive a few hundred nanoseconds later. So each member publishes,
//! on a cache line of its scratch, the CPU it waits on and what it waits for (array, sender,
//! call number). A waiter spins, for a bounded time, while the member it waits for is on
//! another CPU and not waiting for a member on this one, and every other member on its CPU is
//! in a wait of the team too (`Team::spin_pays`); otherwise it yields at once, as before. Even
//! a CPU-mate whose wait is over is left to wait: it runs when this PE yields later, and
//! yielding to it now would cost two switches where one does. The spin is bounded
//! (`cross_core_spin_ns`) because longer chains of waits, PEs outside the team and other
//! processes may need the core too, and the knowledge is only used in teams holding every
//! PE of the node. docs/performance.md, "Barriers on an oversubscribed node".

use std::ffi::c_int;
use std::time::{Duration, Instant};

use crate::layout::MAX_PES;

extern "C" {
    // glibc (2.29 and later; Debian 12 has 2.36), answered from the rseq area or the vDSO.
    fn sched_getcpu() -> c_int;
}

/// Words of a member's CPU line: the CPU it last waited on, and its wait (`waiting`) or 0.
pub const CPU_WORD: c_int = 0;
pub const WAIT_WORD: c_int = 1;

/// What a member's CPU word holds when the kernel cannot say where it runs.
pub const UNKNOWN: u64 = u64::MAX;

/// The CPU this thread runs on now, or [`UNKNOWN`].
pub fn current_cpu() -> u64 {
    // SAFETY: a libc call without arguments or side effects.
    let cpu = unsafe { sched_getcpu() };
    u64::try_from(cpu).unwrap_or(UNKNOWN)
}

const FLAG: u64 = 1 << 63;
/// A wait word, below the flag: the array (2 bits), the sender (`F_BITS`), the call number.
const A_SHIFT: u32 = 61;
const F_BITS: u32 = MAX_PES.trailing_zeros();
const E_BITS: u32 = A_SHIFT - F_BITS;
const E_MASK: u64 = (1 << E_BITS) - 1;
const _: () = assert!(MAX_PES.is_power_of_two() && E_BITS >= 48);

/// The wait word for "array `arr` (a multiple of MAX_PES below 4 * MAX_PES), sender `from`,
/// call `e`", or 0 (not waiting: others then yield to this PE) when it does not fit.
pub fn waiting(arr: usize, from: c_int, e: u64) -> u64 {
    let (a, f) = (arr / MAX_PES, from as u64);
    if !arr.is_multiple_of(MAX_PES) || a >= 4 || f >= MAX_PES as u64 || e > E_MASK {
        return 0;
    }
    FLAG | (a as u64) << A_SHIFT | f << E_BITS | e
}

/// The (array, sender, call) of a wait word; None when the member is not waiting.
pub fn waited(w: u64) -> Option<(usize, c_int, u64)> {
    (w & FLAG != 0).then(|| {
        let a = (w >> A_SHIFT) & 3;
        let f = (w >> E_BITS) & (MAX_PES as u64 - 1);
        (a as usize * MAX_PES, f as c_int, w & E_MASK)
    })
}

/// Spin while `pays()` until `done()` or `limit` has passed; whether `done()` held. `pays` is
/// asked every 16 polls, as is the clock.
pub fn spin_while(limit: Duration, done: impl Fn() -> bool, pays: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if !pays() {
            return done();
        }
        for _ in 0..16 {
            if done() {
                return true;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() >= limit {
            return done();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn the_cpu_is_known_on_linux() {
        assert!(current_cpu() < 1 << 20, "{}", current_cpu());
    }

    #[test]
    fn wait_words_round_trip_and_what_does_not_fit_reads_as_not_waiting() {
        let last = MAX_PES as c_int - 1;
        for (arr, from, e) in
            [(0, 0, 1), (MAX_PES, 63, 12345), (2 * MAX_PES, last, 9), (3 * MAX_PES, 7, E_MASK)]
        {
            let w = waiting(arr, from, e);
            assert_ne!(w, 0);
            assert_eq!(waited(w), Some((arr, from, e)));
        }
        assert_eq!(waited(0), None);
        assert_eq!(waiting(4 * MAX_PES, 0, 1), 0);
        assert_eq!(waiting(1, 0, 1), 0);
        assert_eq!(waiting(0, MAX_PES as c_int, 1), 0);
        assert_eq!(waiting(0, 0, E_MASK + 1), 0);
    }

    #[test]
    fn a_spin_ends_when_done_at_its_limit_or_once_it_no_longer_pays() {
        assert!(spin_while(Duration::from_secs(5), || true, || true));
        let t = Instant::now();
        assert!(!spin_while(Duration::from_millis(20), || false, || true));
        assert!(t.elapsed() >= Duration::from_millis(20));
        let t = Instant::now();
        assert!(!spin_while(Duration::from_secs(30), || false, || false));
        assert!(t.elapsed() < Duration::from_secs(1));
        let flag = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(5));
                flag.store(true, Ordering::Release);
            });
            assert!(spin_while(Duration::from_secs(30), || flag.load(Ordering::Acquire), || true));
        });
    }
}
