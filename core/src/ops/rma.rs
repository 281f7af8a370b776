//! RMA: put, get, and their strided and non-blocking forms (ordering, `quiet` and `fence`, is
//! per context: `crate::ops::ctx`). A peer whose segment is mapped here is reached with a copy
//! into the mapping that stores each byte once (`rshmem_plugin_api::deliver`; no request, no
//! lock, no allocation); any other peer goes through the spml. Once a device segment exists,
//! both branches hand device memory to `crate::ops::device`.

use crate::error::{fatal, OrEnd, ShmemError};
use crate::ops::handles::Ctx;
use crate::symm::runtime::{self, Runtime};
use crate::symm::segments::{PeerSeg, SegmentTable};
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};

/// The error `e` of routine `routine`: the job's end where `END` (the instantiation the C
/// entry points call, whose routines cannot return it: the job then ends where the error is
/// found, as before errors were values, which measured faster than carrying the value out),
/// else returned (the safe Rust API's).
macro_rules! bail {
    ($end:expr, $routine:expr, $e:expr) => {{
        let e = $e;
        if $end {
            crate::error::fail($routine, e)
        } else {
            return Err(e);
        }
    }};
}

/// The value of `r`, or [`bail!`] with its error.
macro_rules! attempt {
    ($end:expr, $routine:expr, $r:expr) => {
        match $r {
            Ok(v) => v,
            Err(e) => crate::ops::rma::bail!($end, $routine, e),
        }
    };
}
pub(crate) use {attempt, bail};

/// Where `len` bytes at symmetric `addr` lie, for an operation on `pe`: (segment, offset).
/// The checks every transfer makes, as a value: a PE of the job, an address some segment
/// holds, and the range inside that segment.
#[inline(always)]
pub(crate) fn locate_target(
    segs: &SegmentTable,
    n_pes: i32,
    what: &'static str,
    addr: usize,
    len: usize,
    pe: c_int,
) -> Result<(u32, usize), ShmemError> {
    if pe as u32 >= n_pes as u32 {
        return Err(ShmemError::PeOutOfRange { pe, n_pes });
    }
    let Some((seg, off, room)) = segs.locate(addr) else {
        return Err(ShmemError::NotSymmetric { what, addr });
    };
    // Always on: one comparison against the segment already found, and without it a long
    // transfer reads or writes past the peer's memory (or crashes the target PE).
    if len > room {
        return Err(ShmemError::PastEnd { what, addr, len, room });
    }
    Ok((seg, off))
}

/// Where symmetric `addr` lives on `pe`: (segment, offset, peer record).
#[inline(always)]
pub(crate) fn target(
    rt: &Runtime,
    routine: &'static CStr,
    what: &'static str,
    addr: usize,
    len: usize,
    pe: c_int,
) -> Result<(u32, usize, PeerSeg), ShmemError> {
    let (seg, off) = locate_target(&rt.segs, rt.n_pes, what, addr, len, pe)?;
    if rt.debug {
        one_block(rt, what, seg, addr, len)?;
    }
    let p = rt.segs.peer(pe as usize, seg);
    if p.mapped.is_null() {
        if p.remote_base == 0 {
            return Ok((seg, off, first_use(rt, routine, pe, seg)));
        }
        // Pairs with the release store of a base set on first use, after the spml was given
        // the peer's key: an operation that sees the base also sees the key. Only on the
        // spml's side, so the mapped path loads as before (a compiler fence on x86-64).
        std::sync::atomic::fence(Ordering::Acquire);
    }
    Ok((seg, off, p))
}

/// A peer this PE does not map, whose record of `seg` no operation has needed yet: read it
/// (`crate::symm::peers::learn_on_first_use`). Its failure (the peer's record could not be
/// read) ends the job here, with the bootstrap's own words, which no `ShmemError` carries.
#[cold]
#[inline(never)]
fn first_use(rt: &Runtime, routine: &'static CStr, pe: c_int, seg: u32) -> PeerSeg {
    crate::symm::peers::learn_on_first_use(&rt.segs, rt.boot, rt.spml, pe, seg)
        .unwrap_or_else(|e| fatal(routine, &format!("reaching PE {pe}: {e}")))
}

/// Under SHMEM_DEBUG: an error unless `addr..addr+len` of segment `seg` lies inside one live
/// allocation, when `seg` is a heap (the default one, or a space's: the segment table records
/// which, `SegmentTable::heap`) whose memheap can say. A
/// transfer that runs from one array into the next, or into a freed one, stays inside the heap
/// and is otherwise not caught. Blocks are the allocator's, whose sizes are rounded up to 16
/// bytes. The global-data segment has no blocks.
#[cold]
#[inline(never)]
fn one_block(rt: &Runtime, what: &'static str, seg: u32, addr: usize, len: usize) -> Result<(), ShmemError> {
    let Some((memheap, heap)) = rt.segs.heap(seg) else { return Ok(()) };
    let Some(block_of) = memheap.block_of_slot() else { return Ok(()) };
    let (mut start, mut size) = (0usize, 0usize);
    // SAFETY: plugin ABI call, with two writable words, on the heap the segment table records
    // for the segment this transfer's address is in. The memheap's own lock serialises it with
    // allocations. A space's release clears the record before it destroys the heap, and a
    // space is destroyed collectively, when no transfer into it may still be running (the
    // spec's rule; one that broke it could find the heap just destroyed here).
    let found = unsafe { block_of(heap, addr as *const c_void, &mut start, &mut size) } == 1;
    in_block(what, addr, len, found.then_some((start, size)))
}

/// Whether `addr..addr+len` lies inside `block` (start, size), the live allocation the memheap
/// found holding `addr` (`None`: none holds it).
pub(crate) fn in_block(
    what: &'static str,
    addr: usize,
    len: usize,
    block: Option<(usize, usize)>,
) -> Result<(), ShmemError> {
    let Some((start, size)) = block else { return Err(ShmemError::NotInBlock { what, addr }) };
    // The block holds `addr`; saturating all the same, so a component's wrong answer cannot
    // wrap the room around.
    if len > (start + size).saturating_sub(addr) {
        return Err(ShmemError::PastBlock { what, addr, len, start, size });
    }
    Ok(())
}

/// Check `len` bytes at `addr` of this PE's own symmetric memory (a wait's or a test's
/// variables): not NULL, symmetric, inside one segment, aligned to `align`. Waiting on memory
/// no peer can write would never end.
#[inline]
pub(crate) fn local(
    rt: &Runtime,
    routine: &'static CStr,
    what: &'static str,
    addr: usize,
    len: usize,
    align: usize,
) {
    check_local(&rt.segs, what, addr, len, align).or_end(routine)
}

/// [`local`]'s checks, as a value.
#[inline]
pub(crate) fn check_local(
    segs: &SegmentTable,
    what: &'static str,
    addr: usize,
    len: usize,
    align: usize,
) -> Result<(), ShmemError> {
    if len == 0 {
        return Ok(());
    }
    if addr == 0 {
        return Err(ShmemError::NullList { what, expected: "bytes of variables", count: len });
    }
    let Some((_, _, room)) = segs.locate(addr) else { return Err(ShmemError::NotSymmetric { what, addr }) };
    if len > room {
        return Err(ShmemError::PastEnd { what, addr, len, room });
    }
    if !addr.is_multiple_of(align) {
        return Err(ShmemError::Misaligned { what, addr, align });
    }
    Ok(())
}

/// The bytes of `nelems` elements of `size` bytes.
#[inline(always)]
pub(crate) fn transfer_len(nelems: usize, size: usize) -> Result<usize, ShmemError> {
    nelems.checked_mul(size).ok_or(ShmemError::LengthOverflow)
}

pub(crate) use crate::ops::ctx::{spml_handle, through_spml};

#[cold]
fn spml_failed(op: &'static str, pe: c_int) -> ShmemError {
    ShmemError::Spml { op, pe }
}

#[cold]
#[inline(never)]
fn null_buffer(what: &'static str, len: usize) -> ShmemError {
    ShmemError::NullBuffer { what, len }
}

/// Put `nelems` elements of `size` bytes. `NBI` selects the non-blocking form: a mapped peer is
/// written at once either way; through the spml, the blocking form returns when `src` may be
/// reused and the non-blocking one completes at the next quiet.
///
/// # Safety
/// `src` must be readable for the length (until the next quiet for `NBI`); `dest` is checked to
/// be symmetric.
#[inline(always)]
pub unsafe fn put_any<const NBI: bool, const END: bool>(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut u8,
    src: *const u8,
    nelems: usize,
    size: usize,
    pe: c_int,
) -> Result<(), ShmemError> {
    let len = attempt!(END, routine, transfer_len(nelems, size));
    // SAFETY: a handle the program got from the library (caller).
    let pe = attempt!(END, routine, unsafe { crate::ops::ctx::world_pe(ctx, pe) });
    if len == 0 {
        return Ok(());
    }
    if src.is_null() {
        bail!(END, routine, null_buffer("source", len));
    }
    let rt = attempt!(END, routine, runtime::live());
    let (seg, off, p) = attempt!(END, routine, target(rt, routine, "dest", dest as usize, len, pe));
    let device = crate::ops::device::active(rt);
    if !p.mapped.is_null() {
        crate::ops::perturb::point();
        // SAFETY: the mapping covers the segment and the range was located inside it.
        unsafe {
            if device {
                crate::ops::device::copy_mapped(rt, routine, p.mapped.add(off), src, len, src);
            } else {
                rshmem_plugin_api::deliver::deliver(p.mapped.add(off), src, len);
            }
        }
        return Ok(());
    }
    if device {
        // SAFETY: forwarded under this function's contract.
        unsafe { crate::ops::device::put(rt, routine, ctx, NBI, (seg, off, p), pe, src, len) };
        return Ok(());
    }
    let op = if NBI { rt.spml.put_nbi } else { rt.spml.put };
    // SAFETY: plugin ABI call; `src` readable for `len` by contract.
    if unsafe { through_spml(ctx, |h| op(h, pe, seg, p.remote_base + off as u64, src.cast(), len)) } != 0 {
        bail!(END, routine, spml_failed("put to", pe));
    }
    Ok(())
}

/// Get `nelems` elements of `size` bytes; `NBI` as in [`put_any`] (`dest` valid after quiet).
///
/// # Safety
/// `dest` must be writable for the length; `src` is checked to be symmetric.
#[inline(always)]
pub unsafe fn get_any<const NBI: bool, const END: bool>(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut u8,
    src: *const u8,
    nelems: usize,
    size: usize,
    pe: c_int,
) -> Result<(), ShmemError> {
    let len = attempt!(END, routine, transfer_len(nelems, size));
    // SAFETY: a handle the program got from the library (caller).
    let pe = attempt!(END, routine, unsafe { crate::ops::ctx::world_pe(ctx, pe) });
    if len == 0 {
        return Ok(());
    }
    if dest.is_null() {
        bail!(END, routine, null_buffer("dest", len));
    }
    let rt = attempt!(END, routine, runtime::live());
    let (seg, off, p) = attempt!(END, routine, target(rt, routine, "source", src as usize, len, pe));
    let device = crate::ops::device::active(rt);
    if !p.mapped.is_null() {
        crate::ops::perturb::point();
        // SAFETY: the mapping covers the range; `dest` is writable by contract.
        unsafe {
            if device {
                crate::ops::device::copy_mapped(rt, routine, dest, p.mapped.add(off), len, dest);
            } else {
                std::ptr::copy(p.mapped.add(off), dest, len);
            }
        }
        return Ok(());
    }
    if device {
        // SAFETY: forwarded under this function's contract.
        unsafe { crate::ops::device::get(rt, routine, ctx, NBI, (seg, off, p), pe, dest, len) };
        return Ok(());
    }
    let op = if NBI { rt.spml.get_nbi } else { rt.spml.get };
    // A blocking get waits here for the PE's answer: a lost peer's message names it.
    let _blocked = (!NBI).then(|| crate::ops::blocked::step(routine, crate::ops::blocked::Blocking::Get, pe));
    // SAFETY: plugin ABI call; `dest` writable for `len` by contract.
    if unsafe { through_spml(ctx, |h| op(h, pe, seg, p.remote_base + off as u64, dest.cast(), len)) } != 0 {
        bail!(END, routine, spml_failed("get from", pe));
    }
    Ok(())
}

/// Blocking put.
///
/// # Safety
/// As [`put_any`].
#[inline(always)]
pub unsafe fn put(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut u8,
    src: *const u8,
    nelems: usize,
    size: usize,
    pe: c_int,
) {
    // SAFETY: forwarded under the same contract.
    unsafe { put_any::<false, true>(routine, ctx, dest, src, nelems, size, pe) }.or_end(routine)
}

/// Blocking get.
///
/// # Safety
/// As [`get_any`].
#[inline(always)]
pub unsafe fn get(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut u8,
    src: *const u8,
    nelems: usize,
    size: usize,
    pe: c_int,
) {
    // SAFETY: forwarded under the same contract.
    unsafe { get_any::<false, true>(routine, ctx, dest, src, nelems, size, pe) }.or_end(routine)
}

/// Non-blocking put.
///
/// # Safety
/// As [`put_any`].
pub unsafe fn put_nbi(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut u8,
    src: *const u8,
    nelems: usize,
    size: usize,
    pe: c_int,
) {
    // SAFETY: forwarded under the same contract.
    unsafe { put_any::<true, true>(routine, ctx, dest, src, nelems, size, pe) }.or_end(routine)
}

/// Non-blocking get.
///
/// # Safety
/// As [`get_any`].
pub unsafe fn get_nbi(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut u8,
    src: *const u8,
    nelems: usize,
    size: usize,
    pe: c_int,
) {
    // SAFETY: forwarded under the same contract.
    unsafe { get_any::<true, true>(routine, ctx, dest, src, nelems, size, pe) }.or_end(routine)
}

/// Single-element put.
///
/// # Safety
/// `dest` is checked to be symmetric.
#[inline(always)]
pub unsafe fn p<T: Copy>(routine: &'static CStr, ctx: Ctx, dest: *mut T, value: T, pe: c_int) {
    // SAFETY: `value` is a local readable for size_of::<T>().
    unsafe { put(routine, ctx, dest.cast(), (&value as *const T).cast(), 1, std::mem::size_of::<T>(), pe) }
}

/// Single-element get.
///
/// # Safety
/// `source` is checked to be symmetric.
#[inline(always)]
pub unsafe fn g<T: Copy>(routine: &'static CStr, ctx: Ctx, source: *const T, pe: c_int) -> T {
    let mut v = std::mem::MaybeUninit::<T>::zeroed();
    // SAFETY: `v` is writable for size_of::<T>(); zeroed first, so every bit pattern read is
    // one the get wrote or zero.
    unsafe {
        get(routine, ctx, v.as_mut_ptr().cast(), source.cast(), 1, std::mem::size_of::<T>(), pe);
        v.assume_init()
    }
}

/// Strided put: element `i` of `src` (stride `sst`) to element `i` of `dest` (stride `dst`);
/// the spec defines it as a block-strided put of one-element blocks.
///
/// # Safety
/// As [`put`], for every strided element.
#[allow(clippy::too_many_arguments)]
pub unsafe fn iput(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    nelems: usize,
    size: usize,
    pe: c_int,
) {
    // SAFETY: forwarded under the same contract.
    unsafe { ibput(routine, ctx, dest, src, dst, sst, 1, nelems, size, pe) }
}

/// Strided get: one-element blocks of [`ibget`].
///
/// # Safety
/// As [`get`], for every strided element.
#[allow(clippy::too_many_arguments)]
pub unsafe fn iget(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    nelems: usize,
    size: usize,
    pe: c_int,
) {
    // SAFETY: forwarded under the same contract.
    unsafe { ibget(routine, ctx, dest, src, dst, sst, 1, nelems, size, pe) }
}

/// The bytes the remote side of a block-strided transfer spans: `nblocks` (at least 1) blocks
/// of `bsize` elements of `size` bytes, `stride` (checked positive) elements apart.
pub(crate) fn strided_span(
    what: &'static str,
    stride: i64,
    nblocks: usize,
    bsize: usize,
    size: usize,
) -> Result<usize, ShmemError> {
    (nblocks - 1)
        .checked_mul(stride as usize)
        .and_then(|e| e.checked_add(bsize))
        .and_then(|e| e.checked_mul(size))
        .ok_or(ShmemError::StrideOverflow { what, stride })
}

/// The block-strided loop shared by `ibput` (`GET = false`) and `ibget`: `nblocks` blocks of
/// `bsize` elements; block `b` starts at element `b*sst` of `src` and lands at element `b*dst`
/// of `dest`.
///
/// # Safety
/// As [`put`] / [`get`], for every block.
#[allow(clippy::too_many_arguments)]
pub unsafe fn blocks<const GET: bool, const END: bool>(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    size: usize,
    pe: c_int,
) -> Result<(), ShmemError> {
    if nblocks == 0 || bsize == 0 {
        return Ok(());
    }
    attempt!(END, routine, check_block_strides(dst, sst, bsize));
    // The remote side as a whole, so an error names the address the program passed rather
    // than the block that first falls outside.
    let (what, remote, stride) =
        if GET { ("source", src as usize, sst) } else { ("dest", dest as usize, dst) };
    let span = attempt!(END, routine, strided_span(what, stride as i64, nblocks, bsize, size));
    let rt = attempt!(END, routine, runtime::live());
    match rt.segs.locate(remote) {
        None => bail!(END, routine, ShmemError::NotSymmetric { what, addr: remote }),
        Some((_, _, room)) if span > room => {
            bail!(
                END,
                routine,
                ShmemError::StridedPastEnd {
                    what,
                    addr: remote,
                    stride: stride as i64,
                    span,
                    nblocks,
                    bsize,
                    room,
                }
            )
        }
        Some(_) => {}
    }
    for b in 0..nblocks {
        let (d, s) = (dest.wrapping_add(b * dst as usize * size), src.wrapping_add(b * sst as usize * size));
        // SAFETY: each block is checked by `put`/`get`.
        unsafe {
            if GET {
                attempt!(END, routine, get_any::<false, END>(routine, ctx, d, s, bsize, size, pe))
            } else {
                attempt!(END, routine, put_any::<false, END>(routine, ctx, d, s, bsize, size, pe))
            }
        };
    }
    Ok(())
}

/// Block-strided put (1.6).
///
/// # Safety
/// As [`put`], for every block.
#[allow(clippy::too_many_arguments)]
pub unsafe fn ibput(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    size: usize,
    pe: c_int,
) {
    // SAFETY: forwarded under the same contract.
    unsafe { blocks::<false, true>(routine, ctx, dest, src, dst, sst, bsize, nblocks, size, pe) }
        .or_end(routine)
}

/// Block-strided get (1.6).
///
/// # Safety
/// As [`get`], for every block.
#[allow(clippy::too_many_arguments)]
pub unsafe fn ibget(
    routine: &'static CStr,
    ctx: Ctx,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    size: usize,
    pe: c_int,
) {
    // SAFETY: forwarded under the same contract.
    unsafe { blocks::<true, true>(routine, ctx, dest, src, dst, sst, bsize, nblocks, size, pe) }
        .or_end(routine)
}

/// Strides (in elements) of at least `least`: 1 where they must be positive, the block size
/// for the block-strided routines.
pub(crate) fn check_strides(dst: isize, sst: isize, least: isize) -> Result<(), ShmemError> {
    if dst < least || sst < least {
        return Err(ShmemError::StridesBelow { dst: dst as i64, sst: sst as i64, least: least as i64 });
    }
    Ok(())
}

fn check_block_strides(dst: isize, sst: isize, bsize: usize) -> Result<(), ShmemError> {
    let least = isize::try_from(bsize).unwrap_or(isize::MAX);
    check_strides(dst, sst, least)
}

/// `shmem_ptr`: a local address for `pe`'s copy of symmetric `addr`, or NULL. For an object
/// in a GPU space it is the device address of the peer's copy where this process maps it (CUDA
/// IPC on one host), which the program's kernels load from and store to (the GPU auxiliary
/// specification asks it of every GPU-heap object within SHMEM_DEVICE_TEAM_SHARED); the CPU
/// cannot dereference it.
///
/// # Safety
/// None beyond the C contract: the address is only looked up.
pub unsafe fn ptr(routine: &'static CStr, addr: *const c_void, pe: c_int) -> *mut c_void {
    let rt = runtime::get(routine);
    if pe as u32 >= rt.n_pes as u32 {
        return std::ptr::null_mut();
    }
    match rt.segs.lookup(addr as usize) {
        Some((seg, off)) if rt.segs.device(seg) != 0 => {
            let m = rt.segs.device_map(pe as usize, seg);
            if m.is_null() {
                std::ptr::null_mut()
            } else {
                m.wrapping_add(off).cast()
            }
        }
        _ => host_ptr(rt, addr, pe),
    }
}

/// A load/store address in host memory for `pe`'s copy of symmetric `addr`, or NULL (device
/// memory included): what the core service `ptr` gives components, which load and store
/// through it.
pub fn host_ptr(rt: &Runtime, addr: *const c_void, pe: c_int) -> *mut c_void {
    if pe as u32 >= rt.n_pes as u32 {
        return std::ptr::null_mut();
    }
    match rt.segs.lookup(addr as usize) {
        Some((seg, off)) => {
            let p = rt.segs.peer(pe as usize, seg);
            if p.mapped.is_null() {
                std::ptr::null_mut()
            } else {
                p.mapped.wrapping_add(off).cast()
            }
        }
        None => std::ptr::null_mut(),
    }
}

/// `Runtime::signals_out` is set when a collective's signal (the core service
/// `atomic_add_u64`) went through the spml since the core service `quiet` last completed them.
/// Those signals do not make the default context's next `shmem_quiet` flush the transport: they
/// are not the application's operations, and the collective that sent them needs no remote
/// completion (its members learn of them by waiting for them). Before, every barrier's signals
/// made the next barrier's quiet flush: a round trip plus UCX's acknowledgement, about half of a
/// 2-PE barrier over TCP.
///
/// Quiet the default context, completing the collectives' signals too (the core service
/// `quiet`, and finalize, which must leave nothing in flight).
pub(crate) fn quiet_with_signals(routine: &'static CStr) {
    let rt = runtime::get(routine);
    // SAFETY: the default context is always live.
    unsafe { crate::ops::ctx::quiet_with(routine, crate::ops::ctx::default(), Some(&rt.signals_out)) }
}

/// 64-bit atomic add on a symmetric word (used by collectives; see [`quiet_with_signals`]).
///
/// # Safety
/// `dest` is checked to be symmetric and must be 8-byte aligned.
pub unsafe fn atomic_add_u64(routine: &'static CStr, dest: *mut u64, value: u64, pe: c_int) {
    let rt = runtime::get(routine);
    let (seg, off, p) = target(rt, routine, "dest", dest as usize, 8, pe).or_end(routine);
    if rt.segs.cpu_atomics(seg) && !p.mapped.is_null() {
        // SAFETY: an aligned word inside a shared mapping; every PE uses atomics on it.
        unsafe { AtomicU64::from_ptr(p.mapped.add(off).cast()).fetch_add(value, Ordering::AcqRel) };
    } else {
        let ctx = crate::ops::ctx::default();
        let raddr = p.remote_base + off as u64;
        let null = std::ptr::null_mut();
        // SAFETY: plugin ABI call; no fetched value is asked for.
        if unsafe {
            (rt.spml.atomic)(spml_handle(ctx), pe, seg, raddr, rshmem_plugin_api::AMO_ADD, 8, value, 0, null)
        } != 0
        {
            crate::error::fail(routine, spml_failed("atomic add on", pe));
        }
        // After issuing it, so that a quiet that sees the flag covers the add.
        crate::ops::completion::issued(&rt.signals_out);
    }
}

/// Put `len` bytes, then add `value` to the 64-bit word `sig`, on PE `pe`: the core service
/// `put_signal_u64` (collectives only; see its contract in the plugin ABI). With an spml that
/// has `put_signal`, the word is only ever updated by CPU atomics: through the mapping when
/// the peer is mapped here, else by the target applying the spml's one message. Without the
/// slot (or when the spml declines a size), it is a put, then the add as [`atomic_add_u64`]
/// makes it, after a fence, or after a quiet where the word must stay the target CPU's.
///
/// # Safety
/// `src` readable for `len` bytes; `dest` and `sig` are checked to be symmetric, and `sig`
/// must be 8-byte aligned.
pub unsafe fn put_signal_u64(
    routine: &'static CStr,
    dest: *mut u8,
    src: *const u8,
    len: usize,
    sig: *mut u64,
    value: u64,
    pe: c_int,
) {
    let rt = runtime::get(routine);
    let Some(slot) = rt.spml.put_signal_slot() else {
        let ctx = crate::ops::ctx::default();
        // SAFETY: the caller's contract; the default context is always live.
        unsafe {
            put(routine, ctx, dest, src, len, 1, pe);
            crate::ops::ctx::fence(routine, ctx);
            atomic_add_u64(routine, sig, value, pe);
        }
        return;
    };
    let (sseg, soff, sp) = target(rt, routine, "sig", sig as usize, 8, pe).or_end(routine);
    let (dseg, doff, dp) = if len > 0 {
        if src.is_null() {
            crate::error::fail(routine, null_buffer("src", len));
        }
        target(rt, routine, "dest", dest as usize, len, pe).or_end(routine)
    } else {
        (sseg, soff, sp)
    };
    if !sp.mapped.is_null() && (len == 0 || !dp.mapped.is_null()) {
        // SAFETY: both lie inside shared mappings of `pe`'s segments (checked above); the word
        // is aligned (caller) and only ever updated atomically.
        unsafe {
            if len > 0 {
                rshmem_plugin_api::deliver::deliver(dp.mapped.add(doff), src, len);
            }
            crate::ops::perturb::point();
            std::sync::atomic::fence(Ordering::SeqCst);
            AtomicU64::from_ptr(sp.mapped.add(soff).cast()).fetch_add(value, Ordering::AcqRel);
        }
        return;
    }
    let ctx = crate::ops::ctx::default();
    let (draddr, sraddr) = (dp.remote_base + doff as u64, sp.remote_base + soff as u64);
    // SAFETY: plugin ABI call on checked targets; `src` is readable for `len` (caller).
    let rc = unsafe { slot(spml_handle(ctx), pe, dseg, draddr, src.cast(), len, sseg, sraddr, value) };
    if rc == rshmem_plugin_api::RC_OK {
        return;
    }
    if rc != rshmem_plugin_api::RC_DECLINED || len == 0 {
        crate::error::fail(routine, spml_failed("put with signal to", pe));
    }
    // The data another way, complete at the target before the signal goes as the slot's alone.
    // SAFETY: as above; the default context is always live.
    unsafe {
        put(routine, ctx, dest, src, len, 1, pe);
        crate::ops::ctx::quiet(routine, ctx);
    }
    // SAFETY: as above, without data.
    let rc = unsafe { slot(spml_handle(ctx), pe, sseg, sraddr, std::ptr::null(), 0, sseg, sraddr, value) };
    if rc != rshmem_plugin_api::RC_OK {
        crate::error::fail(routine, spml_failed("signal to", pe));
    }
}

#[cfg(test)]
mod tests {
    use super::{check_local, check_strides, in_block, locate_target, strided_span, transfer_len};
    use crate::error::ShmemError;
    use crate::error::ShmemError::*;
    use crate::symm::segments::SegmentTable;

    /// A heap of 256 bytes at 0x1000 and global data of 16 bytes at 0x8000, in a job of 4.
    fn table() -> SegmentTable {
        let t = SegmentTable::new(4);
        t.add_local(0x1000, 0x100);
        t.add_local(0x8000, 0x10);
        t
    }

    /// SHMEM_DEBUG's check that a transfer stays inside the one allocation holding its start.
    #[test]
    fn a_debug_transfer_stays_inside_its_allocation() {
        assert_eq!(in_block("dest", 0x1010, 0x30, Some((0x1000, 0x40))), Ok(()));
        assert_eq!(
            in_block("dest", 0x1010, 0x31, Some((0x1000, 0x40))),
            Err(PastBlock { what: "dest", addr: 0x1010, len: 0x31, start: 0x1000, size: 0x40 })
        );
        assert_eq!(in_block("source", 0x1010, 8, None), Err(NotInBlock { what: "source", addr: 0x1010 }));
        // A memheap that names a block ending before the address: no room, not a wrap-around.
        assert!(matches!(in_block("dest", 0x2000, 1, Some((0x1000, 0x10))), Err(PastBlock { .. })));
        assert!(PastBlock { what: "dest", addr: 0x1010, len: 0x31, start: 0x1000, size: 64 }
            .to_string()
            .contains("runs past the end of its allocation, 64 bytes at 0x1000"));
    }

    /// The bytes a block-strided transfer's remote side spans, and strides whose span
    /// overflows.
    #[test]
    fn a_strided_span_is_counted_or_overflows() {
        // 3 blocks of 2 four-byte elements, 5 elements apart: the last block starts at 10.
        assert_eq!(strided_span("dest", 5, 3, 2, 4), Ok(48));
        assert_eq!(strided_span("dest", 5, 1, 2, 4), Ok(8));
        assert_eq!(
            strided_span("source", i64::MAX, 3, 1, 8),
            Err(StrideOverflow { what: "source", stride: i64::MAX })
        );
        assert_eq!(
            strided_span("dest", 1 << 40, 1 << 22, 1, 8),
            Err(StrideOverflow { what: "dest", stride: 1 << 40 })
        );
    }

    /// The checks every put, get and atomic makes before it moves a byte, without a job.
    #[test]
    fn a_transfer_is_located_or_refused_naming_its_argument() {
        let t = table();
        assert_eq!(locate_target(&t, 4, "dest", 0x1010, 0xf0, 3), Ok((0, 0x10)));
        assert_eq!(locate_target(&t, 4, "dest", 0x8008, 8, 0), Ok((1, 8)));
        assert_eq!(locate_target(&t, 4, "dest", 0x1010, 8, 4), Err(PeOutOfRange { pe: 4, n_pes: 4 }));
        assert_eq!(locate_target(&t, 4, "dest", 0x1010, 8, -1), Err(PeOutOfRange { pe: -1, n_pes: 4 }));
        assert_eq!(
            locate_target(&t, 4, "source", 0x2000, 8, 1),
            Err(NotSymmetric { what: "source", addr: 0x2000 })
        );
        assert_eq!(
            locate_target(&t, 4, "dest", 0x10f8, 9, 1),
            Err(PastEnd { what: "dest", addr: 0x10f8, len: 9, room: 8 })
        );
        // The PE is checked first: a bad PE with a bad address names the PE.
        assert_eq!(locate_target(&t, 4, "dest", 0, 8, 9), Err(PeOutOfRange { pe: 9, n_pes: 4 }));
        // Just past a segment's end is outside it, even for no bytes.
        assert_eq!(
            locate_target(&t, 4, "dest", 0x1100, 0, 0),
            Err(NotSymmetric { what: "dest", addr: 0x1100 })
        );
    }

    /// A wait's or a test's variables must be this PE's own symmetric memory, aligned.
    #[test]
    fn variables_to_wait_on_are_checked_as_symmetric_and_aligned() {
        let t = table();
        assert_eq!(check_local(&t, "ivars", 0x1008, 16, 8), Ok(()));
        assert_eq!(check_local(&t, "ivars", 0, 0, 8), Ok(()), "nothing to wait on");
        assert_eq!(
            check_local(&t, "ivars", 0, 16, 8),
            Err(NullList { what: "ivars", expected: "bytes of variables", count: 16 })
        );
        assert_eq!(
            check_local(&t, "ivar", 0x1004, 8, 8),
            Err(Misaligned { what: "ivar", addr: 0x1004, align: 8 })
        );
        assert_eq!(check_local(&t, "ivar", 0x9000, 8, 8), Err(NotSymmetric { what: "ivar", addr: 0x9000 }));
        assert_eq!(
            check_local(&t, "ivars", 0x8008, 16, 8),
            Err(PastEnd { what: "ivars", addr: 0x8008, len: 16, room: 8 })
        );
    }

    #[test]
    fn a_length_that_overflows_is_refused() {
        assert_eq!(transfer_len(3, 8), Ok(24));
        assert_eq!(transfer_len(usize::MAX / 2, 4), Err(LengthOverflow));
    }

    #[test]
    fn strides_below_their_least_are_named() {
        assert_eq!(check_strides(1, 1, 1), Ok(()));
        assert_eq!(check_strides(0, 1, 1), Err(ShmemError::StridesBelow { dst: 0, sst: 1, least: 1 }));
        assert_eq!(check_strides(2, -3, 1), Err(ShmemError::StridesBelow { dst: 2, sst: -3, least: 1 }));
        assert_eq!(check_strides(4, 4, 4), Ok(()), "a stride of the block size");
        assert_eq!(check_strides(4, 3, 4), Err(ShmemError::StridesBelow { dst: 4, sst: 3, least: 4 }));
    }
}
