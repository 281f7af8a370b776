//! Atomic memory operations (spec 9.7). Every AMO type is 4 or 8 bytes, so each operation runs
//! on the bit pattern in a `u32`/`u64` word: CPU atomics on the mapped copy when every PE maps
//! every copy of the word's segment, otherwise the spml's atomics for every target, this PE
//! included. The choice is per segment and the same on all PEs (`crate::symm::segments`), so
//! two paths never act on the same word (CPU atomics and a NIC's or an active-message
//! emulation's atomics are not atomic with each other). Words of device memory take a third
//! path, for every target alike: a locked read-modify-write (`crate::ops::device::amo`).

use crate::error::{OrEnd, ShmemError};
use crate::ops::handles::Ctx;
use crate::ops::rma::{self, attempt, bail};
use crate::symm::runtime;
use rshmem_plugin_api::{AMO_ADD, AMO_CSWAP, AMO_FETCH, AMO_SET, AMO_SWAP};
use std::ffi::{c_int, CStr};

pub use rshmem_plugin_api::{
    AMO_AND, AMO_CSWAP as CSWAP, AMO_FETCH as FETCH, AMO_OR, AMO_SET as SET, AMO_XOR,
};
pub const ADD: u32 = AMO_ADD;
pub const SWAP: u32 = AMO_SWAP;

/// A type the AMOs operate on, as its bit pattern.
pub trait Amo: Copy {
    const SIZE: usize;
    fn bits(self) -> u64;
    fn from_bits(b: u64) -> Self;
}

macro_rules! amo_int {
    ($($t:ty => $u:ty),*) => {$(
        impl Amo for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn bits(self) -> u64 { self as $u as u64 }
            fn from_bits(b: u64) -> Self { b as $u as $t }
        }
    )*};
}
amo_int!(i32 => u32, u32 => u32, i64 => u64, u64 => u64, isize => usize, usize => usize);

impl Amo for f32 {
    const SIZE: usize = 4;
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn from_bits(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
}

impl Amo for f64 {
    const SIZE: usize = 8;
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn from_bits(b: u64) -> Self {
        f64::from_bits(b)
    }
}

use crate::ops::word::{direct32, direct64};

/// `op` without the previous value (the non-fetching AMOs and signal updates). Through the
/// spml this asks for no reply, so it costs one message instead of a round trip (ADD, AND, OR
/// and XOR; UCX has no SET without one) and completes remotely at the next quiet, which the
/// spec allows.
///
/// # Safety
/// As [`run`].
#[inline]
pub unsafe fn post<T: Amo>(routine: &'static CStr, ctx: Ctx, dest: *mut T, op: u32, value: T, pe: c_int) {
    // SAFETY: forwarded.
    unsafe { post_named::<T, DEST>(routine, ctx, dest, op, value, pe) }
}

/// The name an AMO's errors give its word: [`DEST`] or [`SIG_ADDR`] (the signal routines').
/// A constant parameter rather than a string argument: the hot path then carries nothing
/// for its error messages (a string kept for them cost a stack spill per call, measured
/// 3 % of an 8-byte fetch-add on 2026-11-24).
pub const DEST: u8 = 0;
pub const SIG_ADDR: u8 = 1;

fn word_name(word: u8) -> &'static str {
    if word == SIG_ADDR {
        "sig_addr"
    } else {
        "dest"
    }
}

/// [`post`] naming its word `WORD` in its errors.
///
/// # Safety
/// As [`run`].
#[inline]
pub unsafe fn post_named<T: Amo, const WORD: u8>(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut T,
    op: u32,
    value: T,
    pe: c_int,
) {
    // SAFETY: forwarded.
    unsafe { run_named::<T, WORD, true>(routine, ctx, dest, op, value, T::from_bits(0), pe, false) }
        .or_end(routine);
}

/// The one AMO routine: `op` on `pe`'s copy of `dest`, returning the previous value (zero for
/// SET, and when `fetch` is false, see [`post`]).
///
/// # Safety
/// `dest` is checked to be symmetric and aligned.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn run<T: Amo>(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *const T,
    op: u32,
    value: T,
    cond: T,
    pe: c_int,
    fetch: bool,
) -> T {
    // SAFETY: forwarded.
    unsafe { run_named::<T, DEST, true>(routine, ctx, dest, op, value, cond, pe, fetch) }.or_end(routine)
}

/// [`run`] naming its word `WORD` in its errors.
///
/// # Safety
/// As [`run`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn run_named<T: Amo, const WORD: u8, const END: bool>(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *const T,
    op: u32,
    value: T,
    cond: T,
    pe: c_int,
    fetch: bool,
) -> Result<T, ShmemError> {
    // SAFETY: a handle the program got from the library (caller).
    let pe = attempt!(END, routine, unsafe { crate::ops::ctx::world_pe(ctx, pe) });
    let rt = attempt!(END, routine, runtime::live());
    let (seg, off, p) =
        attempt!(END, routine, rma::target(rt, routine, word_name(WORD), dest as usize, T::SIZE, pe));
    if !(dest as usize).is_multiple_of(T::SIZE) {
        bail!(
            END,
            routine,
            ShmemError::Misaligned { what: word_name(WORD), addr: dest as usize, align: T::SIZE }
        );
    }
    if rt.segs.cpu_atomics(seg) && !p.mapped.is_null() {
        crate::ops::perturb::point();
        // SAFETY: an aligned word inside the peer's mapping (located and checked above).
        let old = unsafe {
            let addr = p.mapped.add(off);
            if T::SIZE == 4 {
                direct32(addr.cast(), op, value.bits() as u32, cond.bits() as u32) as u64
            } else {
                direct64(addr.cast(), op, value.bits(), cond.bits())
            }
        };
        return Ok(T::from_bits(old));
    }
    if crate::ops::device::active(rt) && rt.segs.device(seg) != 0 {
        let (size, v, c) = (T::SIZE, value.bits(), cond.bits());
        // The device path takes its lock word with an AMO of this module on host memory.
        let lock = |word: *mut u64, op: u32, v: u64, c: u64| {
            // SAFETY: `word` is a symmetric, aligned host word of the default heap.
            unsafe { run::<u64>(routine, ctx, word, op, v, c, pe, op != AMO_SET) }
        };
        // SAFETY: located and aligned above.
        let old =
            unsafe { crate::ops::device::amo(rt, routine, ctx, (seg, off, p), pe, (op, size, v, c), lock) };
        return Ok(T::from_bits(old));
    }
    let mut fetched = 0u64;
    let out: *mut u64 = if fetch { &mut fetched } else { std::ptr::null_mut() };
    // A fetching atomic waits here for the PE's answer: a lost peer's message names it.
    let _blocked =
        fetch.then(|| crate::ops::blocked::step(routine, crate::ops::blocked::Blocking::Atomic, pe));
    // SAFETY: plugin ABI call; `out` is a valid out-pointer or NULL.
    let rc = unsafe {
        rma::through_spml(ctx, |h| {
            (rt.spml.atomic)(
                h,
                pe,
                seg,
                p.remote_base + off as u64,
                op,
                T::SIZE as u32,
                value.bits(),
                cond.bits(),
                out,
            )
        })
    };
    if rc != 0 {
        bail!(END, routine, ShmemError::Spml { op: "atomic operation on", pe });
    }
    Ok(T::from_bits(fetched))
}

/// # Safety
/// As [`run`].
pub unsafe fn fetch<T: Amo>(routine: &'static CStr, ctx: Ctx, source: *const T, pe: c_int) -> T {
    // SAFETY: forwarded.
    unsafe { run(routine, ctx, source, AMO_FETCH, T::from_bits(0), T::from_bits(0), pe, true) }
}

/// # Safety
/// As [`run`].
pub unsafe fn set<T: Amo>(routine: &'static CStr, ctx: Ctx, dest: *mut T, value: T, pe: c_int) {
    // SAFETY: forwarded.
    unsafe { post(routine, ctx, dest, AMO_SET, value, pe) }
}

/// Read-modify-write with `op` (ADD, SWAP, AND, OR, XOR); returns the previous value.
///
/// # Safety
/// As [`run`].
pub unsafe fn rmw<T: Amo>(routine: &'static CStr, ctx: Ctx, dest: *mut T, op: u32, value: T, pe: c_int) -> T {
    // SAFETY: forwarded.
    unsafe { run(routine, ctx, dest, op, value, T::from_bits(0), pe, true) }
}

/// # Safety
/// As [`run`].
pub unsafe fn fetch_inc<T: Amo>(routine: &'static CStr, ctx: Ctx, dest: *mut T, pe: c_int) -> T {
    // SAFETY: forwarded.
    unsafe { run(routine, ctx, dest, AMO_ADD, T::from_bits(1), T::from_bits(0), pe, true) }
}

/// # Safety
/// As [`run`].
pub unsafe fn compare_swap<T: Amo>(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut T,
    cond: T,
    value: T,
    pe: c_int,
) -> T {
    // SAFETY: forwarded.
    unsafe { run(routine, ctx, dest, AMO_CSWAP, value, cond, pe, true) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_patterns_round_trip() {
        assert_eq!(i32::from_bits((-5i32).bits()), -5);
        assert_eq!((-1i32).bits(), 0xffff_ffff);
        assert_eq!(<f64 as Amo>::from_bits(2.5f64.bits()), 2.5);
        assert_eq!(<f32 as Amo>::from_bits(Amo::bits(1.5f32)), 1.5);
        assert_eq!(isize::from_bits((-7isize).bits()), -7);
    }
}
