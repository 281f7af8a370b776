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

/// # Safety
/// `lock` must be a symmetric `long` initialised to 0.
pub unsafe fn set_lock(routine: &CStr, lock: *mut c_long) {
    let rt = runtime::get(routine);
    // SAFETY: forwarded; the core checks the address.
    let mine = (unsafe { amo::rmw(routine, ctx::default(), lock, amo::ADD, TICKET, home()) } >> 32) & SERVING;
    let mut i = 0;
    // SAFETY: as above.
    while unsafe { amo::fetch(routine, ctx::default(), lock, home()) } & SERVING != mine {
        backoff(&mut i, rt);
    }
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
}

/// Returns 0 when the lock was free and is now held, 1 otherwise (never waits).
///
/// # Safety
/// As [`set_lock`].
pub unsafe fn test_lock(routine: &CStr, lock: *mut c_long) -> c_int {
    // SAFETY: forwarded; the core checks the address.
    let v = unsafe { amo::fetch(routine, ctx::default(), lock, home()) };
    if (v >> 32) & SERVING != v & SERVING {
        return 1; // held, or others are queued
    }
    // SAFETY: as above.
    let old = unsafe { amo::compare_swap(routine, ctx::default(), lock, v, v.wrapping_add(TICKET), home()) };
    if old == v {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        0
    } else {
        1
    }
}

/// # Safety
/// As [`set_lock`]; the caller holds the lock.
pub unsafe fn clear_lock(routine: &CStr, lock: *mut c_long) {
    // SAFETY: the default context is always live.
    unsafe { crate::ops::ctx::quiet(routine, ctx::default()) };
    // Serve the next ticket. The serving count lives in the low half; wrapping it would carry
    // into the ticket count only after 2^32 acquisitions of one lock.
    // SAFETY: forwarded.
    unsafe { amo::rmw(routine, ctx::default(), lock, amo::ADD, 1, home()) };
}
