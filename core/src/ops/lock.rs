//! Distributed locks (spec 9.11): a ticket lock in the symmetric `long` on PE 0. The upper 32
//! bits count tickets handed out, the lower 32 bits the ticket being served. `set_lock` takes a
//! ticket with one fetch-add and waits for its turn, so PEs get the lock in the order they asked
//! for it (no starvation). `clear_lock` completes the holder's communication, then serves the
//! next ticket. Every operation is an AMO, so the lock works through any spml.

use crate::ops::amo;
use crate::ops::ctx;
use crate::ops::wait::backoff;
use crate::symm::runtime;
use std::ffi::{c_int, c_long, CStr};

const TICKET: i64 = 1 << 32;
const SERVING: i64 = 0xffff_ffff;

fn home() -> c_int {
    0
}

/// The locks this PE holds. The spec's lock is not reentrant, and a ticket lock cleared by a
/// PE that does not hold it serves a ticket nobody took: the next PE to ask then waits
/// forever. Both are reported instead (the lock routines each cost a network AMO at least, so
/// this lookup is not felt).
fn held() -> std::sync::MutexGuard<'static, Vec<usize>> {
    static HELD: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

/// Check the lock's address (naming it `lock`), and that this PE does (`want_held`) or does not
/// hold it.
fn check(rt: &runtime::Runtime, routine: &CStr, lock: *mut c_long, want_held: bool) {
    crate::ops::rma::target(rt, routine, "lock", lock as usize, std::mem::size_of::<c_long>(), home());
    if !(lock as usize).is_multiple_of(std::mem::align_of::<c_long>()) {
        crate::error::fatal(routine, &format!("lock {lock:p} is not aligned to its 8-byte type"));
    }
    let holds = held().contains(&(lock as usize));
    if holds && !want_held {
        crate::error::fatal(
            routine,
            &format!(
                "this PE already holds lock {lock:p} (the lock is not reentrant: it would wait for itself)"
            ),
        );
    }
    if !holds && want_held {
        crate::error::fatal(
            routine,
            &format!("lock {lock:p} is not held by this PE (shmem_set_lock or shmem_test_lock first)"),
        );
    }
}

/// # Safety
/// `lock` must be a symmetric `long` initialised to 0.
pub unsafe fn set_lock(routine: &CStr, lock: *mut c_long) {
    let rt = runtime::get(routine);
    check(rt, routine, lock, false);
    // SAFETY: forwarded; the core checks the address.
    let mine = (unsafe { amo::rmw(routine, ctx::default(), lock, amo::ADD, TICKET, home()) } >> 32) & SERVING;
    let mut i = 0;
    // SAFETY: as above.
    while unsafe { amo::fetch(routine, ctx::default(), lock, home()) } & SERVING != mine {
        backoff(&mut i, rt);
    }
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    held().push(lock as usize);
}

/// Returns 0 when the lock was free and is now held, 1 otherwise (never waits).
///
/// # Safety
/// As [`set_lock`].
pub unsafe fn test_lock(routine: &CStr, lock: *mut c_long) -> c_int {
    check(runtime::get(routine), routine, lock, false);
    // SAFETY: forwarded; the core checks the address.
    let v = unsafe { amo::fetch(routine, ctx::default(), lock, home()) };
    if (v >> 32) & SERVING != v & SERVING {
        return 1; // held, or others are queued
    }
    // SAFETY: as above.
    let old = unsafe { amo::compare_swap(routine, ctx::default(), lock, v, v.wrapping_add(TICKET), home()) };
    if old == v {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        held().push(lock as usize);
        0
    } else {
        1
    }
}

/// # Safety
/// As [`set_lock`]; the caller holds the lock.
pub unsafe fn clear_lock(routine: &CStr, lock: *mut c_long) {
    check(runtime::get(routine), routine, lock, true);
    // SAFETY: the default context is always live.
    unsafe { crate::ops::ctx::quiet(routine, ctx::default()) };
    // Serve the next ticket. The serving count lives in the low half; wrapping it would carry
    // into the ticket count only after 2^32 acquisitions of one lock.
    // SAFETY: forwarded.
    unsafe { amo::rmw(routine, ctx::default(), lock, amo::ADD, 1, home()) };
    held().retain(|&l| l != lock as usize);
}
