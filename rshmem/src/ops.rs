//! The core's transfers and atomics, called directly rather than through the C entry points:
//! the core returns what went wrong as a `ShmemError` value, which becomes
//! [`Error::Failed`] here, where a C program's entry point would end the job (its routines
//! return `void`). What this crate checks itself (bounds, PE numbers, strides) it checks
//! before it calls; what is left for the core to find is what only it can see: a transfer the
//! transport failed, a context destroyed under a thread, a call after `shmem_finalize` through
//! a handle that outlived its runtime by `unsafe` means.
//!
//! The routine name each call passes is the method's (`Ctx::put`): the core names it in the
//! messages of what it still reports itself (a peer lost while a get or a fetching atomic waits
//! for it, which ends the job under every API).
//!
//! Calls made here do not pass through the `shmem_*` symbols, so a profiling library that
//! interposes on them (PSHMEM) sees the C programs' calls, not these.

use std::ffi::{c_int, CStr};

use shmem::error::ShmemError;
use shmem::ops::{amo, rma, signal};

use crate::error::{Error, Result};
use crate::ffi::RawCtx;

pub(crate) use shmem::ops::amo::Amo;

#[cold]
#[inline(never)]
fn failed(routine: &'static CStr, cause: ShmemError) -> Error {
    Error::Failed { routine: routine.to_str().unwrap_or("rshmem"), cause }
}

/// The core's handle type for a context of this crate.
#[inline(always)]
fn cx(ctx: RawCtx) -> shmem::ops::handles::Ctx {
    ctx.cast_const().cast()
}

#[inline(always)]
fn lift<T>(routine: &'static CStr, r: std::result::Result<T, ShmemError>) -> Result<T> {
    r.map_err(|e| failed(routine, e))
}

/// A blocking (`NBI` false) or non-blocking put (`GET` false) or get of `len` bytes.
///
/// # Safety
/// The remote side (`dest` of a put, `src` of a get) a checked range of a live symmetric
/// array; the local side readable (put) or writable (get) for `len` bytes, until the
/// context's quiet for `NBI`; `ctx` a live context, `pe` in its team.
#[inline(always)]
pub(crate) unsafe fn rma<const GET: bool, const NBI: bool>(
    routine: &'static CStr,
    ctx: RawCtx,
    dest: *mut u8,
    src: *const u8,
    len: usize,
    pe: c_int,
) -> Result<()> {
    // SAFETY: the caller's contract.
    let r = unsafe {
        if GET {
            rma::get_any::<NBI, false>(routine, cx(ctx), dest, src, len, 1, pe)
        } else {
            rma::put_any::<NBI, false>(routine, cx(ctx), dest, src, len, 1, pe)
        }
    };
    lift(routine, r)
}

/// One element put (`shmem_ctx_<type>_p`), of any width.
///
/// # Safety
/// As [`rma`], `dest` one checked element.
#[inline(always)]
pub(crate) unsafe fn p<T: Copy>(
    routine: &'static CStr,
    ctx: RawCtx,
    dest: *mut T,
    value: T,
    pe: c_int,
) -> Result<()> {
    let src: *const T = &value;
    let size = std::mem::size_of::<T>();
    // SAFETY: the caller's contract; `src` is the local `value`, readable for one T.
    lift(routine, unsafe {
        rma::put_any::<false, false>(routine, cx(ctx), dest.cast(), src.cast(), 1, size, pe)
    })
}

/// One element get. `T` must be valid for any bit pattern (the crate's `Pod` bound).
///
/// # Safety
/// As [`rma`], `src` one checked element.
#[inline(always)]
pub(crate) unsafe fn g<T: Copy>(routine: &'static CStr, ctx: RawCtx, src: *const T, pe: c_int) -> Result<T> {
    // SAFETY: the caller's contract.
    let mut v = std::mem::MaybeUninit::<T>::zeroed();
    let size = std::mem::size_of::<T>();
    // SAFETY: `v` is writable for one T; zeroed first, so its bytes are the get's or zero.
    unsafe {
        lift(
            routine,
            rma::get_any::<false, false>(routine, cx(ctx), v.as_mut_ptr().cast(), src.cast(), 1, size, pe),
        )?;
        Ok(v.assume_init())
    }
}

/// A block-strided put (`GET` false) or get: `nblocks` blocks of `bsize` elements of `size`
/// bytes, `(dst, sst)` elements apart.
///
/// # Safety
/// Both spans checked against live memory (a symmetric array and a local slice, the latter
/// writable for a get), strides at least `bsize`; `ctx` and `pe` as for [`rma`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn blocks<const GET: bool>(
    routine: &'static CStr,
    ctx: RawCtx,
    dest: *mut u8,
    src: *const u8,
    (dst, sst): (isize, isize),
    (bsize, nblocks): (usize, usize),
    size: usize,
    pe: c_int,
) -> Result<()> {
    // SAFETY: the caller's contract.
    let r = unsafe {
        if GET {
            rma::blocks::<true, false>(routine, cx(ctx), dest, src, dst, sst, bsize, nblocks, size, pe)
        } else {
            rma::blocks::<false, false>(routine, cx(ctx), dest, src, dst, sst, bsize, nblocks, size, pe)
        }
    };
    lift(routine, r)
}

/// Put-with-signal (blocking): the data, then the signal word updated by `sig_op`.
///
/// # Safety
/// As [`rma`]; `sig` one checked element of a live symmetric `u64` array.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn put_signal(
    routine: &'static CStr,
    ctx: RawCtx,
    dest: *mut u8,
    src: *const u8,
    len: usize,
    sig: *mut u64,
    (value, sig_op): (u64, c_int),
    pe: c_int,
) -> Result<()> {
    // SAFETY: the caller's contract.
    let r = unsafe {
        signal::put_signal::<false, false>(routine, cx(ctx), dest, src, len, 1, sig, value, sig_op, pe)
    };
    lift(routine, r)
}

/// `op` (`amo::ADD`, `amo::SWAP`, `amo::AMO_AND`, [`SET`], ...) on `pe`'s `dest`, returning
/// the value before when `FETCH` (else zero: the non-fetching atomics, which ask the transport
/// for no reply).
///
/// # Safety
/// `dest` one checked, aligned element of a live symmetric array; `ctx` and `pe` as for [`rma`].
#[inline(always)]
pub(crate) unsafe fn rmw<T: Amo, const FETCH: bool>(
    routine: &'static CStr,
    ctx: RawCtx,
    dest: *mut T,
    op: u32,
    value: T,
    pe: c_int,
) -> Result<T> {
    // SAFETY: the caller's contract.
    lift(routine, unsafe { run(routine, ctx, dest, op, value, T::from_bits(0), pe, FETCH) })
}

/// `shmem_atomic_fetch`.
///
/// # Safety
/// As [`rmw`].
#[inline(always)]
pub(crate) unsafe fn fetch<T: Amo>(
    routine: &'static CStr,
    ctx: RawCtx,
    src: *const T,
    pe: c_int,
) -> Result<T> {
    let zero = T::from_bits(0);
    // SAFETY: the caller's contract; a fetch only reads the word.
    lift(routine, unsafe { run(routine, ctx, src.cast_mut(), amo::FETCH, zero, zero, pe, true) })
}

/// `shmem_atomic_compare_swap`.
///
/// # Safety
/// As [`rmw`].
#[inline(always)]
pub(crate) unsafe fn compare_swap<T: Amo>(
    routine: &'static CStr,
    ctx: RawCtx,
    dest: *mut T,
    cond: T,
    value: T,
    pe: c_int,
) -> Result<T> {
    // SAFETY: the caller's contract.
    lift(routine, unsafe { run(routine, ctx, dest, amo::CSWAP, value, cond, pe, true) })
}

/// The core's one AMO routine, in the instantiation that returns its errors.
///
/// # Safety
/// As [`rmw`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn run<T: Amo>(
    routine: &'static CStr,
    ctx: RawCtx,
    dest: *mut T,
    op: u32,
    value: T,
    cond: T,
    pe: c_int,
    fetch: bool,
) -> std::result::Result<T, ShmemError> {
    // SAFETY: the caller's contract.
    unsafe { amo::run_named::<T, { amo::DEST }, false>(routine, cx(ctx), dest, op, value, cond, pe, fetch) }
}

pub(crate) use amo::{ADD, AMO_AND, AMO_OR, AMO_XOR, SET, SWAP};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctx::default_raw;

    /// Without a runtime, the core's operations answer with an error value, which comes back
    /// as `Error::Failed` naming the method: before this crate called them directly, the same
    /// call ended the process (the C entry point's rule).
    #[test]
    fn the_cores_errors_come_back_as_values() {
        let mut word = 0u64;
        let w: *mut u64 = &mut word;
        let before = shmem::error::ShmemError::NotInitialized { finalized: false };
        let want = |routine| Err(Error::Failed { routine, cause: before });
        // SAFETY: no runtime is live, so the core returns before it reads or writes anything.
        unsafe {
            assert_eq!(
                rma::<false, false>(c"Ctx::put", default_raw(), w.cast(), w.cast(), 8, 0),
                want("Ctx::put")
            );
            assert_eq!(
                rma::<true, true>(c"Nbi::get", default_raw(), w.cast(), w.cast(), 8, 0),
                want("Nbi::get")
            );
            assert_eq!(g::<u64>(c"Ctx::g", default_raw(), w, 0), want("Ctx::g").map(|()| 0));
            assert_eq!(
                rmw::<u64, true>(c"Ctx::atomic_fetch_add", default_raw(), w, ADD, 1, 0),
                want("Ctx::atomic_fetch_add").map(|()| 0)
            );
            // A zero-length put moves nothing and needs no runtime.
            assert_eq!(rma::<false, false>(c"Ctx::put", default_raw(), w.cast(), w.cast(), 0, 0), Ok(()));
        }
        let e = Error::Failed { routine: "Ctx::put", cause: before };
        assert_eq!(e.to_string(), "Ctx::put: called before shmem_init");
    }
}
