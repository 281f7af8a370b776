//! Waiting on local symmetric memory that peers update. Waits spin briefly, then yield the
//! core, so that on an oversubscribed node the PE being waited for gets to run; when some peer
//! is reachable only through the spml, waits also drive its progress.
//!
//! Yielding has a cost on a machine that other programs load: under Linux's EEVDF scheduler
//! (6.6 on) `sched_yield` moves the caller's deadline a whole slice back, so with busy
//! processes beside it a yielding PE gets the core again only after they have each run their
//! slice, about 4 ms here. A ping-pong of 10 000 round trips between 2 PEs, with 8 busy loops
//! on the 2 cores, took 43 s in 13 of 28 runs (0.6-27 s in most others) where OSHMEM took
//! 1.1-1.5 s.
//! So [`give_way`] watches its yields: one that came back after more than [`SLOW_YIELD`] says
//! that others hold the core, and for the next [`CONTENDED_FOR`] this thread's waits sleep for
//! a moment instead (a sleeper keeps its place, and on waking it is run soon): the same
//! ping-pong took 0.27-2.6 s, and 2 000 laps of a token around 8 PEs under that load went from
//! over 50 s to about 3 s (docs/performance.md, "Waits on a loaded machine"). Without other
//! load a yield comes back at once, and waits yield as before.
//!
//! Why not sleep on a futex: the words waited on are written by plain stores from mapped peers
//! and by RDMA or UCX active messages, none of which can issue a FUTEX_WAKE, so a futex sleep
//! would need a timeout and be a slower poll. Yielding lets the writer run at once on an
//! oversubscribed core (4 PEs on 2 cores make progress: tests/c/progress.c).

use crate::symm::runtime;
pub use rshmem_plugin_api::{CMP_EQ, CMP_GE, CMP_GT, CMP_LE, CMP_LT, CMP_NE};
use std::cell::Cell;
use std::ffi::{c_int, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A yield that took longer than this came back only after other tasks had run on the core.
const SLOW_YIELD: Duration = Duration::from_micros(300);
/// How long after such a yield this thread's waits sleep rather than yield.
const CONTENDED_FOR: Duration = Duration::from_millis(100);
/// What a wait sleeps for meanwhile: the shortest sleep, which the default timer slack of
/// 50 us lengthens. (A 1 us slack made 8 PEs on 2 cores wake each other constantly: a ring
/// that takes 0.3 s did not end in 60.)
const NAP: Duration = Duration::from_micros(1);

thread_local! {
    /// When this thread's last slow yield came back.
    static CONTENDED_AT: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Let another task have the core for one round of a wait: a yield, or a nap while others'
/// processes have been seen to hold the core (module documentation).
#[cold]
#[inline(never)]
pub fn give_way() {
    let now = Instant::now();
    if CONTENDED_AT.get().is_some_and(|t| now.duration_since(t) < CONTENDED_FOR) {
        std::thread::sleep(NAP);
        return;
    }
    std::thread::yield_now();
    let back = Instant::now();
    if back.duration_since(now) > SLOW_YIELD {
        CONTENDED_AT.set(Some(back));
    }
}

pub fn compare<T: PartialOrd>(a: T, cmp: c_int, b: T) -> Option<bool> {
    Some(match cmp {
        CMP_EQ => a == b,
        CMP_NE => a != b,
        CMP_GT => a > b,
        CMP_GE => a >= b,
        CMP_LT => a < b,
        CMP_LE => a <= b,
        _ => return None,
    })
}

/// One step of a wait loop. `idle` counts the rounds since the spml last found something to
/// do: the first `spin_limit` of them spin, later ones yield the core.
#[inline]
pub fn backoff(idle: &mut u32, rt: &runtime::Runtime) {
    // Every round: the peer's request may be waiting for this PE's answer (over TCP, a get or
    // an atomic needs the target to progress), and once the wait yields, rounds are a
    // microsecond apart; progressing every 16th round added about 3-4 us to an 8-byte get.
    let drove = rt.needs_progress();
    if drove && drive_spml(rt) {
        // A PE serving a peer spins on: yielding between its answers cost an 8-byte get
        // 0.2-0.4 us over TCP loopback (docs/performance.md, "Waits that serve a peer").
        *idle = 0;
        return;
    }
    *idle = idle.saturating_add(1);
    if *idle > rt.spin_limit {
        give_way();
    } else if !drove {
        // Only a loop that polls memory alone needs the pause; a round of progress is a
        // system call.
        std::hint::spin_loop();
    }
}

/// One round of spml progress; true when the spml says it found something to do (an spml
/// without the `progress_busy` slot never says so).
#[inline]
fn drive_spml(rt: &runtime::Runtime) -> bool {
    match rt.spml.progress_busy_slot() {
        // SAFETY: plugin ABI call with no arguments.
        Some(busy) => unsafe { busy() != 0 },
        None => {
            // SAFETY: as above.
            unsafe { (rt.spml.progress)() };
            false
        }
    }
}

/// A `cmp` that is none of the `SHMEM_CMP_*` values.
pub(crate) fn bad_cmp(cmp: c_int) -> crate::error::ShmemError {
    crate::error::ShmemError::BadValue {
        what: "cmp",
        value: cmp.into(),
        expected: "one of the SHMEM_CMP_* constants",
    }
}

/// Block until `*ivar <cmp> value`: the components' wait service, so the collectives' wait.
/// When its [`crate::ops::stall::Countdown`] says so it lets the stall watch look at the clock.
///
/// # Safety
/// `ivar` must be a valid, 8-byte aligned local address.
pub unsafe fn wait_until_u64(routine: &'static CStr, ivar: *const u64, cmp: c_int, value: u64) {
    let rt = runtime::get(routine);
    if compare(0, cmp, 0).is_none() {
        crate::error::fail(routine, bad_cmp(cmp));
    }
    // SAFETY: the caller guarantees a valid aligned address; peers store to it concurrently,
    // which an atomic load tolerates.
    let a = unsafe { AtomicU64::from_ptr(ivar as *mut u64) };
    let (mut idle, mut countdown) = (0, crate::ops::stall::Countdown::new());
    while !compare(a.load(Ordering::Acquire), cmp, value).unwrap_or(true) {
        backoff(&mut idle, rt);
        // Past the spin limit, the round gave the core away.
        if countdown.tick(idle > rt.spin_limit) {
            crate::ops::stall::check();
        }
    }
    crate::ops::perturb::point();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_follow_the_spec_constants() {
        assert_eq!(compare(1, CMP_EQ, 1), Some(true));
        assert_eq!(compare(1, CMP_NE, 1), Some(false));
        assert_eq!(compare(2, CMP_GT, 1), Some(true));
        assert_eq!(compare(1, CMP_GE, 1), Some(true));
        assert_eq!(compare(0, CMP_LT, 1), Some(true));
        assert_eq!(compare(2, CMP_LE, 1), Some(false));
        assert_eq!(compare(2, 99, 1), None);
    }
}
