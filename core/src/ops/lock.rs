//! Distributed locks (spec 9.11): a ticket lock in the symmetric `long` on PE 0. The upper 32
//! bits count tickets handed out, the lower 32 bits the ticket being served. `set_lock` takes a
//! ticket with one fetch-add and waits for its turn, so PEs get the lock in the order they asked
//! for it (no starvation). `clear_lock` completes the holder's communication, then serves the
//! next ticket. Every operation is an AMO, so the lock works through any spml.
//!
//! The ordering the spec promises (a holder sees every store the previous holders made inside
//! the lock): the AMOs on a mapped word are SeqCst (`ops/word.rs`), so the releasing add
//! happens after the holder's mapped stores, and the next holder's fetch that sees it, then
//! an acquire fence, comes before its own accesses; stores that went through the spml are
//! completed by the quiet before the add. The protocol ([`acquire`], [`try_acquire`],
//! [`release`]) is written over [`Word`], so that `tests` runs it under loom: mutual
//! exclusion, service in ticket order, and data written inside the lock never racing.

use crate::error::OrEnd;
use crate::ops::amo;
use crate::ops::ctx;
use crate::ops::wait::backoff;
use crate::symm::runtime;
use std::ffi::{c_int, c_long, CStr};

const TICKET: i64 = 1 << 32;
const SERVING: i64 = 0xffff_ffff;

/// The lock word as the protocol sees it: the AMOs on it, and the fence after a win.
pub trait Word {
    /// Fetch-and-add; the old value.
    fn add(&self, v: i64) -> i64;
    fn fetch(&self) -> i64;
    /// Compare-and-swap; the old value.
    fn compare_swap(&self, cond: i64, v: i64) -> i64;
    /// Order this holder's accesses after the AMO that gave it the lock.
    fn acquired(&self);
}

/// Take a ticket and wait (`wait` between looks) until it is served; the ticket.
pub fn acquire(w: &impl Word, mut wait: impl FnMut()) -> i64 {
    let mine = (w.add(TICKET) >> 32) & SERVING;
    while w.fetch() & SERVING != mine {
        wait();
    }
    w.acquired();
    mine
}

/// The lock if nobody holds it or waits for it: take the next ticket only if it would be
/// served at once (one compare-and-swap); the ticket, or None.
pub fn try_acquire(w: &impl Word) -> Option<i64> {
    let v = w.fetch();
    if (v >> 32) & SERVING != v & SERVING {
        return None; // held, or others are queued
    }
    if w.compare_swap(v, v.wrapping_add(TICKET)) != v {
        return None;
    }
    w.acquired();
    Some(v & SERVING)
}

/// Complete the holder's communication (`complete`: a quiet), then serve the next ticket. The
/// serving count lives in the low half; wrapping it would carry into the ticket count only
/// after 2^32 acquisitions of one lock.
pub fn release(w: &impl Word, complete: impl FnOnce()) {
    complete();
    w.add(1);
}

/// A lock word on PE 0 reached through the AMOs of the default context.
struct Amo {
    routine: &'static CStr,
    lock: *mut c_long,
}

impl Word for Amo {
    fn add(&self, v: i64) -> i64 {
        // SAFETY: a symmetric long checked by `check` (callers); the core checks it again.
        unsafe { amo::rmw(self.routine, ctx::default(), self.lock, amo::ADD, v, home()) }
    }
    fn fetch(&self) -> i64 {
        // SAFETY: as above.
        unsafe { amo::fetch(self.routine, ctx::default(), self.lock, home()) }
    }
    fn compare_swap(&self, cond: i64, v: i64) -> i64 {
        // SAFETY: as above.
        unsafe { amo::compare_swap(self.routine, ctx::default(), self.lock, cond, v, home()) }
    }
    fn acquired(&self) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    }
}

fn home() -> c_int {
    0
}

/// The locks this PE holds, in this initialization's runtime. The spec's lock is not
/// reentrant, and a ticket lock cleared by a PE that does not hold it serves a ticket nobody
/// took: the next PE to ask then waits forever. Both are reported instead (the lock routines
/// each cost a network AMO at least, so this lookup is not felt).
fn held(rt: &runtime::Runtime) -> std::sync::MutexGuard<'_, Vec<usize>> {
    rt.locks_held.lock().unwrap_or_else(|e| e.into_inner())
}

/// Check the lock's address (naming it `lock`), and that this PE does (`want_held`) or does not
/// hold it.
fn check(rt: &runtime::Runtime, routine: &'static CStr, lock: *mut c_long, want_held: bool) {
    crate::ops::rma::target(rt, routine, "lock", lock as usize, std::mem::size_of::<c_long>(), home())
        .or_end(routine);
    if !(lock as usize).is_multiple_of(std::mem::align_of::<c_long>()) {
        crate::error::fail(
            routine,
            crate::error::ShmemError::Misaligned { what: "lock", addr: lock as usize, align: 8 },
        );
    }
    let holds = held(rt).contains(&(lock as usize));
    if let Err(e) = holding(lock as usize, holds, want_held) {
        crate::error::fail(routine, e);
    }
}

/// Whether a routine that wants this PE to hold the lock at `addr` (`want_held`: clear) or
/// not to (set, test) may go on, given whether it `holds` it.
fn holding(addr: usize, holds: bool, want_held: bool) -> Result<(), crate::error::ShmemError> {
    match (holds, want_held) {
        (true, false) => Err(crate::error::ShmemError::LockHeld { addr }),
        (false, true) => Err(crate::error::ShmemError::LockNotHeld { addr }),
        _ => Ok(()),
    }
}

/// # Safety
/// `lock` must be a symmetric `long` initialised to 0.
pub unsafe fn set_lock(routine: &'static CStr, lock: *mut c_long) {
    let rt = runtime::get(routine);
    check(rt, routine, lock, false);
    let mut i = 0;
    // The wait publishes itself and warns (SHMEM_WAIT_STALL_WARN) like a point-to-point wait:
    // a holder that never clears the lock, or a lost PE 0, is then named.
    let mut watch = crate::ops::stall::WaitWatch::new();
    acquire(&Amo { routine, lock }, || {
        backoff(&mut i, rt);
        watch.round(i > rt.spin_limit, routine, || {
            format!("lock {lock:p} on PE 0 to be cleared by the PEs that took their tickets first")
        });
    });
    held(rt).push(lock as usize);
}

/// Returns 0 when the lock was free and is now held, 1 otherwise (never waits).
///
/// # Safety
/// As [`set_lock`].
pub unsafe fn test_lock(routine: &'static CStr, lock: *mut c_long) -> c_int {
    let rt = runtime::get(routine);
    check(rt, routine, lock, false);
    match try_acquire(&Amo { routine, lock }) {
        Some(_) => {
            held(rt).push(lock as usize);
            0
        }
        None => 1,
    }
}

/// # Safety
/// As [`set_lock`]; the caller holds the lock.
pub unsafe fn clear_lock(routine: &'static CStr, lock: *mut c_long) {
    let rt = runtime::get(routine);
    check(rt, routine, lock, true);
    // SAFETY: the default context is always live.
    release(&Amo { routine, lock }, || unsafe { crate::ops::ctx::quiet(routine, ctx::default()) });
    held(rt).retain(|&l| l != lock as usize);
}

#[cfg(test)]
mod tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::{fence, AtomicI64, Ordering};
    use loom::sync::Arc;

    /// PE 0's lock word and the data the lock protects (the order of the holders, as the
    /// tickets they held), with the orderings of the mapped AMOs (SeqCst) or, to show that loom
    /// notices, relaxed ones and no fence.
    struct Shared {
        word: AtomicI64,
        served: UnsafeCell<Vec<i64>>,
        relaxed: bool,
    }

    // SAFETY: `served` is loom's cell, which checks every access for races: the test is that
    // none races.
    unsafe impl Sync for Shared {}

    impl Shared {
        fn order(&self) -> Ordering {
            if self.relaxed {
                Ordering::Relaxed
            } else {
                Ordering::SeqCst
            }
        }
    }

    /// Set and test refuse a lock this PE holds, clear one it does not: each would otherwise
    /// wait for itself or release another PE's lock.
    #[test]
    fn a_lock_is_asked_for_only_when_free_and_cleared_only_when_held() {
        use crate::error::ShmemError::{LockHeld, LockNotHeld};
        assert_eq!(holding(0x40, false, false), Ok(()));
        assert_eq!(holding(0x40, true, true), Ok(()));
        assert_eq!(holding(0x40, true, false), Err(LockHeld { addr: 0x40 }));
        assert_eq!(holding(0x40, false, true), Err(LockNotHeld { addr: 0x40 }));
        assert!(LockHeld { addr: 0x40 }
            .to_string()
            .contains("already holds lock 0x40 (the lock is not reentrant"));
    }

    impl Word for Shared {
        fn add(&self, v: i64) -> i64 {
            self.word.fetch_add(v, self.order())
        }
        fn fetch(&self) -> i64 {
            self.word.load(self.order())
        }
        fn compare_swap(&self, cond: i64, v: i64) -> i64 {
            match self.word.compare_exchange(cond, v, self.order(), self.order()) {
                Ok(x) | Err(x) => x,
            }
        }
        fn acquired(&self) {
            if !self.relaxed {
                fence(Ordering::Acquire);
            }
        }
    }

    /// Hold the lock once: record the ticket, check that the holders came in ticket order.
    fn critical(s: &Shared, ticket: i64) {
        s.served.with_mut(|v| {
            // SAFETY: loom checks that no other access races with this one.
            let v = unsafe { &mut *v };
            assert_eq!(v.len() as i64, ticket, "ticket {ticket} served after {v:?}");
            v.push(ticket);
        });
        release(s, || {});
    }

    /// `threads` threads take the lock `times` times each, waiting (set_lock) or trying
    /// (test_lock) as `try_it` says per thread; every interleaving up to `bound` preemptions.
    fn run(threads: usize, times: usize, try_it: fn(usize) -> bool, relaxed: bool, bound: usize) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(bound);
        // Each look of a waiting thread is a branch; the default (1000) is too few.
        b.max_branches = 20_000;
        b.check(move || {
            let s =
                Arc::new(Shared { word: AtomicI64::new(0), served: UnsafeCell::new(Vec::new()), relaxed });
            let body = move |s: Arc<Shared>, t: usize| {
                for _ in 0..times {
                    let ticket = if try_it(t) {
                        loop {
                            if let Some(k) = try_acquire(&*s) {
                                break k;
                            }
                            loom::thread::yield_now();
                        }
                    } else {
                        acquire(&*s, loom::thread::yield_now)
                    };
                    critical(&s, ticket);
                }
            };
            let others: Vec<_> = (1..threads)
                .map(|t| {
                    let s = s.clone();
                    loom::thread::spawn(move || body(s, t))
                })
                .collect();
            body(s.clone(), 0);
            for o in others {
                o.join().unwrap();
            }
            s.served.with(|v| {
                // SAFETY: every thread has been joined.
                assert_eq!(unsafe { &*v }.len(), threads * times);
            });
            assert_eq!(s.word.load(Ordering::SeqCst), (threads * times) as i64 * (TICKET + 1));
        });
    }

    #[test]
    fn two_pes_set_the_lock_in_turn() {
        run(2, 2, |_| false, false, 3);
    }

    #[test]
    fn test_lock_and_set_lock_exclude_each_other() {
        run(2, 2, |t| t == 1, false, 3);
    }

    #[test]
    fn three_pes_queue_for_the_lock() {
        run(3, 1, |t| t == 2, false, 1);
    }

    /// With relaxed AMOs and no fence, what one holder wrote is not ordered before the next
    /// holder's access: loom reports the race.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn relaxed_lock_operations_race_with_the_data() {
        run(2, 1, |_| false, true, 2);
    }
}
