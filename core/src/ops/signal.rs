//! Signals (spec 9.8): put-with-signal delivers the data before the signal. The data goes like
//! any put, then a fence orders it before the signal update, which is an AMO (SET or ADD) on the
//! 64-bit signal word, so the receiver that sees the signal sees the data.

use crate::error::{OrEnd, ShmemError};
use crate::ops::amo;
use crate::ops::handles::Ctx;
use crate::ops::rma::{self, attempt};
use std::ffi::{c_int, CStr};

pub const SIGNAL_SET: c_int = 0;
pub const SIGNAL_ADD: c_int = 1;

/// A `sig_op` that is neither of the two.
pub(crate) fn bad_sig_op(sig_op: c_int) -> ShmemError {
    ShmemError::BadValue {
        what: "sig_op",
        value: sig_op.into(),
        expected: "SHMEM_SIGNAL_SET or SHMEM_SIGNAL_ADD",
    }
}

fn op_of(sig_op: c_int) -> Result<u32, ShmemError> {
    match sig_op {
        SIGNAL_SET => Ok(rshmem_plugin_api::AMO_SET),
        SIGNAL_ADD => Ok(rshmem_plugin_api::AMO_ADD),
        _ => Err(bad_sig_op(sig_op)),
    }
}

/// # Safety
/// As `rma::put_any`; `sig_addr` is checked to be symmetric and aligned.
#[allow(clippy::too_many_arguments)]
pub unsafe fn put_signal<const NBI: bool, const END: bool>(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut u8,
    src: *const u8,
    nelems: usize,
    size: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
) -> Result<(), ShmemError> {
    let op = attempt!(END, routine, op_of(sig_op));
    // SAFETY: forwarded under the caller's guarantees.
    unsafe {
        attempt!(END, routine, rma::put_any::<NBI, END>(routine, ctx, dest, src, nelems, size, pe));
        crate::ops::ctx::fence(routine, ctx);
        let zero = 0;
        amo::run_named::<u64, { amo::SIG_ADDR }, END>(routine, ctx, sig_addr, op, signal, zero, pe, false)?;
    }
    Ok(())
}

/// `shmem_signal_add` / `shmem_signal_set`.
///
/// # Safety
/// `sig_addr` is checked to be symmetric and aligned.
pub unsafe fn update(
    routine: &'static CStr,
    ctx: Ctx,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
) {
    let op = op_of(sig_op).or_end(routine);
    // SAFETY: forwarded.
    unsafe { amo::post_named::<u64, { amo::SIG_ADDR }>(routine, ctx, sig_addr, op, signal, pe) }
}

/// `shmem_signal_fetch`: the local signal word.
///
/// # Safety
/// `sig_addr` must be a valid, aligned local address.
pub unsafe fn fetch(routine: &'static CStr, sig_addr: *const u64) -> u64 {
    let rt = crate::symm::runtime::get(routine);
    crate::ops::p2p::variables(rt, routine, "sig_addr", sig_addr, 1);
    // SAFETY: aligned word; peers update it atomically.
    let v = unsafe { crate::ops::p2p::read(sig_addr) };
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    v
}

/// `shmem_signal_wait_until`: waits, then returns the signal's value.
///
/// # Safety
/// As [`fetch`].
pub unsafe fn wait_until(routine: &'static CStr, sig_addr: *const u64, cmp: c_int, value: u64) -> u64 {
    // SAFETY: forwarded; the word is checked there, once.
    unsafe {
        crate::ops::p2p::wait_until_named(routine, "sig_addr", sig_addr, cmp, value);
        crate::ops::p2p::read(sig_addr)
    }
}
