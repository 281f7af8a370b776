//! The data path of device memory (a GPU space's segments). The core never loads from or
//! stores to device memory: every byte it moves there goes through the device memheap's `copy`
//! slot, or through an spml whose `memory_types` include the device.
//!
//! - **Segments.** A device segment's peers' copies mapped here (CUDA IPC on one host) are kept
//!   apart from the load/store mappings (`SegmentTable::device_map`), so the host fast paths,
//!   which test `PeerSeg::mapped`, never reach them and fall through to the spml branch, where
//!   [`active`] sends them here.
//! - **RMA.** A mapped peer's copy is reached with `copy`. Otherwise through the spml; when the
//!   spml cannot move device memory, a local device buffer is staged through a host buffer,
//!   page-locked where the memheap offers `host_alloc` (`put` copies out, then puts; `get`
//!   gets, then copies in; the non-blocking forms complete before they return). A peer's copy
//!   that is neither mapped nor registered with the spml is reached through the spml's
//!   transfers that the target's CPU completes (`through_target`; the target side is
//!   [`serve_copy`]). A device segment that some PE can reach none of these ways is not
//!   created (`crate::ops::spaces`).
//! - **Atomics.** Device memory takes no CPU atomics, and a transport's device atomics need not
//!   exist, so an AMO on a device word is a read-modify-write under a lock: one of [`LOCKS`]
//!   host words of the target PE (chosen by the word's offset), taken with a compare-and-swap
//!   through the ordinary AMO path. Every AMO on device memory goes this way, so they are
//!   atomic with respect to each other, which is what the spec asks of AMOs; they are not
//!   atomic with respect to a device kernel's own stores.
//! - **Waits.** `shmem_wait_until` and friends on a device word poll it with `copy`.
//! - **Collectives** run on host memory: a GPU space has a host shadow segment of the same
//!   size (symmetric, like any host segment), and a collective whose buffers are device memory
//!   runs on their shadows ([`Shadow`]): sources are copied in before, destinations out after.
//!   Only the bytes a collective reads or writes are copied, so the shadow's pages are touched
//!   only where collectives ran, and page-locked as copies reach it (`crate::ops::shadow_pin`),
//!   each copy in pieces inside one locked range. Those copies are what a small collective on
//!   device memory costs (14-25 µs on an H200 under MPS); where PEs share a GPU without MPS, their
//!   copies wait for the GPU to switch between their contexts (hundreds of µs;
//!   docs/performance.md). Under
//!   `SHMEM_GPU_COLLECTIVES=0` a GPU space has no shadow and no
//!   `SHMEM_SPACE_CAP_COLLECTIVES`, and a collective on it ends the job with a clear error.
//!
//! None of this costs a job without device memory more than one relaxed load per operation.

use crate::error::{fail, fatal, ShmemError};
use crate::ops::ctx::through_spml;
use crate::ops::handles::Ctx;
use crate::symm::runtime::Runtime;
use crate::symm::segments::{PeerSeg, MAX_SEGMENTS};
use rshmem_plugin_api::{SpmlViaTarget, AMO_CSWAP, AMO_FETCH, AMO_SET, DT_F32, OP_SUM};
use std::ffi::{c_int, CStr};
use std::sync::atomic::Ordering;
use std::sync::Mutex;

/// Host lock words per device segment and PE. More spread unrelated words over more locks;
/// 64 words are one KiB of each PE's heap per space.
pub const LOCKS: usize = 64;
/// The bytes of host memory a staged transfer moves at a time.
const STAGE_CHUNK: usize = 1 << 20;

/// Whether some device segment exists: the host paths then check their buffers.
#[inline(always)]
pub fn active(rt: &Runtime) -> bool {
    rt.any_device.load(Ordering::Relaxed)
}

/// Whether local `addr` is device memory: in a device segment, or the device memheap's own
/// (a buffer the program allocated on the device).
pub fn is_device(rt: &Runtime, addr: *const u8) -> bool {
    match rt.segs.lookup(addr as usize) {
        Some((seg, _)) => rt.segs.device(seg) != 0,
        // SAFETY: plugin ABI call; only looks the pointer up.
        None => rt.gpu.as_ref().is_some_and(|g| unsafe { (g.owns)(addr.cast()) } != 0),
    }
}

/// Whether symmetric `addr` lies in a device segment (waits and collectives, whose buffers
/// are symmetric).
#[inline]
pub fn in_device_segment(rt: &Runtime, addr: *const u8) -> bool {
    active(rt) && rt.segs.lookup(addr as usize).is_some_and(|(seg, _)| rt.segs.device(seg) != 0)
}

/// Record whether some PEs of this host share a GPU without MPS (`crate::ops::gpu_share`, at
/// init; the same on every PE of the host). Direct collectives then wait for the GPU to switch
/// contexts once per collective (about 285 µs on an H200, 2026-12-04), which the shadow path
/// mostly does not at 64 KiB (33-43 µs), so collectives keep to the shadow.
pub(crate) fn set_shared_without_mps(rt: &Runtime, yes: bool) {
    rt.gpu_judged.shared_without_mps.store(yes, Ordering::Release);
}

/// Whether a collective on device buffers `d` and `s` runs device to device between the
/// members' copies (`SHMEM_GPU_DIRECT_COLLECTIVES`, on by default): when both are device
/// memory, every member is on this PE's host, every PE of every host maps its host's copies
/// of both segments, and no PEs of this host share a GPU without MPS. Every member decides
/// alike: the mapping is agreed per segment, the members' being on one host is a property of
/// the team, the GPU sharing is judged alike by every PE of a host, and the setting is the
/// job's.
pub fn direct(rt: &Runtime, d: &Shadow, s: &Shadow, mut members: impl Iterator<Item = c_int>) -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let on = *ON.get_or_init(|| crate::config::get_bool("SHMEM_GPU_DIRECT_COLLECTIVES").unwrap_or(true));
    let me = rt.my_pe as c_int;
    on && !rt.gpu_judged.shared_without_mps.load(Ordering::Acquire)
        && d.is_device()
        && s.is_device()
        && rt.segs.host_mapped(d.seg)
        && rt.segs.host_mapped(s.seg)
        && members.all(|pe| pe == me || rt.boot.is_local(pe))
}

/// Copy `len` bytes, either side host or device memory, through the device memheap.
///
/// # Safety
/// `dst` writable and `src` readable for `len` bytes, each host memory or the memheap's.
pub unsafe fn copy(rt: &Runtime, routine: &'static CStr, dst: *mut u8, src: *const u8, len: usize) {
    let Some(g) = rt.gpu.as_ref() else {
        fail(routine, ShmemError::Internal { what: "device memory without a device memheap" })
    };
    // SAFETY: plugin ABI call under the caller's contract.
    if unsafe { (g.copy)(dst.cast(), src.cast(), len) } != 0 {
        fatal(routine, &format!("memheap {} could not copy {len} bytes to or from device memory", g.name));
    }
}

/// The sources one device reduction takes at most (the kernel's parameters).
pub const REDUCE_SOURCES: usize = 8;

/// Whether this PE's device memheap has a reduction kernel (a float sum, compiled now): the
/// core agrees on the answer across PEs at init.
pub fn probe_reduce(rt: &Runtime) -> bool {
    let Some(f) = rt.gpu.as_ref().and_then(|g| g.reduce) else { return false };
    let none = [std::ptr::null::<std::ffi::c_void>()];
    // SAFETY: plugin ABI call with a count of 0: it queues nothing.
    let rc = unsafe { f(std::ptr::null_mut(), std::ptr::null_mut(), none.as_ptr(), 1, 0, DT_F32, OP_SUM) };
    rc == rshmem_plugin_api::RC_OK
}

/// Record whether every PE's device memheap compiled and runs a reduction kernel (agreed at
/// init, `crate::ops::spaces`): reductions of mapped teams may then run on the device.
pub(crate) fn set_reduce_kernels(rt: &Runtime, all: bool) {
    rt.gpu_judged.reduce_kernels.store(all, Ordering::Release);
}

/// A reduction of `nelems` elements of `dtype` by `op` over `srcs` (the members' mapped
/// sources) into `dst` on the device, waited for; false, having done nothing, where the
/// memheap has no kernel for the type and operation (then the shadow serves). With `nelems`
/// 0 it only answers.
///
/// # Safety
/// `dst` and every source this PE's mapping of device memory with `nelems` elements.
pub unsafe fn reduce(
    rt: &Runtime,
    routine: &'static CStr,
    dst: *mut u8,
    srcs: &[*const u8],
    nelems: usize,
    (dtype, op): (u32, u32),
) -> bool {
    if !rt.gpu_judged.reduce_kernels.load(Ordering::Acquire) || srcs.is_empty() || srcs.len() > REDUCE_SOURCES
    {
        return false;
    }
    let Some(g) = rt.gpu.as_ref() else { return false };
    let (Some(f), Some(s)) = (g.reduce, g.stream) else { return false };
    let stream = std::ptr::null_mut();
    // SAFETY: plugin ABI call under the caller's contract; NULL is the default stream.
    match unsafe { f(stream, dst.cast(), srcs.as_ptr().cast(), srcs.len(), nelems, dtype, op) } {
        rshmem_plugin_api::RC_OK => {}
        rshmem_plugin_api::RC_UNSUPPORTED => return false,
        _ => fail(routine, ShmemError::DeviceOp { what: "a reduction on the device" }),
    }
    // SAFETY: plugin ABI call on the default stream.
    if nelems > 0 && unsafe { (s.sync)(stream) } != rshmem_plugin_api::RC_OK {
        fail(routine, ShmemError::DeviceOp { what: "waiting for a reduction on the device" });
    }
    true
}

/// Several copies (`dst`, `src`, `len`) between device memory and host or device memory,
/// all in place when this returns: queued together on the device's default stream and waited
/// for once where the memheap queues operations on streams (one wait instead of one per copy,
/// which is most of a small copy's cost), else copied one by one.
///
/// # Safety
/// As [`copy`], for every copy.
pub unsafe fn copy_all(
    rt: &Runtime,
    routine: &'static CStr,
    copies: impl Iterator<Item = (*mut u8, *const u8, usize)>,
) {
    let Some(s) = rt.gpu.as_ref().and_then(|g| g.stream) else {
        for (dst, src, len) in copies {
            // SAFETY: the caller's contract.
            unsafe { copy(rt, routine, dst, src, len) };
        }
        return;
    };
    let stream = std::ptr::null_mut();
    for (dst, src, len) in copies {
        // SAFETY: plugin ABI call under the caller's contract; NULL is the default stream.
        if unsafe { (s.copy)(stream, dst.cast(), src.cast(), len) } != rshmem_plugin_api::RC_OK {
            fail(routine, ShmemError::DeviceCopy { len });
        }
    }
    // SAFETY: plugin ABI call on the default stream.
    if unsafe { (s.sync)(stream) } != rshmem_plugin_api::RC_OK {
        fail(routine, ShmemError::DeviceOp { what: "waiting for copies to or from device memory" });
    }
}

/// A copy into a mapped host peer's memory or out of it (`rma`'s fast path once [`active`]):
/// through `copy` when the local side is device memory, else `deliver`.
///
/// # Safety
/// As [`copy`]; `local` is the side that may be device memory.
#[inline(never)]
pub unsafe fn copy_mapped(
    rt: &Runtime,
    routine: &'static CStr,
    dst: *mut u8,
    src: *const u8,
    len: usize,
    local: *const u8,
) {
    if is_device(rt, local) {
        // SAFETY: the caller's contract.
        unsafe { copy(rt, routine, dst, src, len) }
    } else {
        // SAFETY: the caller's contract: both host memory. Each byte stored once, as a peer
        // watching it needs (`rshmem_plugin_api::deliver`).
        unsafe { rshmem_plugin_api::deliver::deliver(dst, src, len) }
    }
}

/// A host buffer of [`STAGE_CHUNK`] bytes for staged transfers.
struct Stage {
    ptr: *mut u8,
    /// From the device memheap's `host_alloc` (page-locked), else from the Rust allocator.
    pinned: bool,
}

// SAFETY: a Stage owns its buffer outright; it moves between threads only through `Stages`.
unsafe impl Send for Stage {}

/// The staging buffers not in use, one list per initialization
/// (`crate::ops::state::OpsState::stages`). A staged transfer takes one for its duration and
/// gives it back, so there are as many as threads have staged at once, each made once:
/// page-locked memory is costly to make, and a device copies it at full speed where pageable
/// memory goes through the driver's own bounce buffer. A lock, but not on a hot path: staging
/// happens only where the spml cannot move device memory, and each transfer then pays a
/// device copy.
#[derive(Default)]
pub(crate) struct Stages(Mutex<Vec<Stage>>);

impl Stages {
    fn take(&self, rt: &Runtime) -> Stage {
        if let Some(s) = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return s;
        }
        let host = rt.gpu.as_ref().and_then(|g| g.host);
        // SAFETY: plugin ABI call; the buffer is handed back through `free` at finalize.
        let pinned = host.map_or(std::ptr::null_mut(), |h| unsafe { (h.alloc)(STAGE_CHUNK) }.cast::<u8>());
        if !pinned.is_null() {
            return Stage { ptr: pinned, pinned: true };
        }
        let ptr = Box::into_raw(vec![0u8; STAGE_CHUNK].into_boxed_slice()).cast::<u8>();
        Stage { ptr, pinned: false }
    }

    fn give(&self, s: Stage) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(s);
    }

    fn drain(&self) -> Vec<Stage> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Free every staging buffer (finalize, once no transfer runs): the pinned ones through the
/// memheap while it still can.
pub fn release_stages(rt: &Runtime) {
    for s in crate::ops::state::of(rt).stages.drain() {
        match rt.gpu.as_ref().and_then(|g| g.host) {
            // SAFETY: plugin ABI call; the buffer came from `alloc` and is freed once.
            Some(h) if s.pinned => unsafe { (h.free)(s.ptr.cast()) },
            // A pinned buffer without its memheap cannot happen; leaking it is harmless.
            _ if s.pinned => {}
            // SAFETY: made by `Stages::take` from a boxed slice of STAGE_CHUNK bytes.
            _ => drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(s.ptr, STAGE_CHUNK)) }),
        }
    }
}

/// Walk `len` bytes in chunks of at most [`STAGE_CHUNK`]: `f(stage, done, n)` moves bytes
/// `done..done + n` through a staging buffer `stage`.
fn in_stages(rt: &Runtime, len: usize, mut f: impl FnMut(*mut u8, usize, usize)) {
    let stages = &crate::ops::state::of(rt).stages;
    let s = stages.take(rt);
    let mut done = 0;
    while done < len {
        let n = (len - done).min(STAGE_CHUNK);
        f(s.ptr, done, n);
        done += n;
    }
    stages.give(s);
}

/// Where PE `pe`'s copy of device segment `seg` is mapped here (None: host memory, or not
/// mapped).
fn peer_device_map(rt: &Runtime, seg: u32, pe: c_int) -> Option<*mut u8> {
    let m =
        if rt.segs.device(seg) != 0 { rt.segs.device_map(pe as usize, seg) } else { std::ptr::null_mut() };
    (!m.is_null()).then_some(m)
}

/// Whether local buffer `local` is device memory the spml cannot read or write: staged.
fn spml_cannot_reach(rt: &Runtime, local: *const u8) -> bool {
    rt.gpu.as_ref().is_some_and(|g| !rt.spml.moves_device_memory(g.device)) && is_device(rt, local)
}

#[cold]
fn spml_failed(routine: &'static CStr, what: &'static str, pe: c_int) -> ! {
    crate::error::fail(routine, crate::error::ShmemError::Spml { op: what, pe })
}

/// The spml's transfers through the target's CPU, when segment `seg` is device memory the spml
/// does not move itself (None for host memory, or device memory the spml moves).
fn via_target(rt: &Runtime, seg: u32) -> Option<(SpmlViaTarget, SpmlViaTarget)> {
    let device = rt.segs.device(seg);
    if device == 0 || rt.spml.moves_device_memory(device) {
        return None;
    }
    rt.spml.via_target()
}

/// A put (`put`) or get on bytes `off..off + len` of PE `pe`'s copy of device segment `seg`
/// through `f`, the spml's transfer that the target's CPU completes: from or into `buf`
/// directly when it is host memory, else staged through host buffers. Complete at the target
/// (a put) or here (a get) when it returns, like the staged forms.
///
/// # Safety
/// `buf` readable (put) or writable (get) for `len` bytes; the range lies in the segment.
#[allow(clippy::too_many_arguments)]
unsafe fn through_target(
    rt: &Runtime,
    routine: &'static CStr,
    ctx: Ctx,
    f: SpmlViaTarget,
    (seg, off): (u32, usize),
    pe: c_int,
    buf: *mut u8,
    len: usize,
    put: bool,
) {
    let what = if put { "put (through its CPU) to" } else { "get (through its CPU) from" };
    let call = |b: *mut u8, at: usize, n: usize| {
        // SAFETY: plugin ABI call; `b` valid for `n` bytes in the transfer's direction.
        if unsafe { through_spml(ctx, |h| f(h, pe, seg, (off + at) as u64, b.cast(), n)) } != 0 {
            spml_failed(routine, what, pe);
        }
    };
    if !is_device(rt, buf) {
        return call(buf, 0, len);
    }
    in_stages(rt, len, |b, done, n| {
        // SAFETY: `b` holds `n` bytes; `buf + done` is valid for `n` (contract).
        unsafe {
            if put {
                copy(rt, routine, b, buf.add(done), n);
                call(b, done, n);
            } else {
                call(b, done, n);
                copy(rt, routine, buf.add(done), b, n);
            }
        }
    });
}

/// The target side of [`through_target`] (the core service `segment_copy`): copy between host
/// buffer `buf` and bytes `off..off + len` of this PE's device segment `seg`, which must be one
/// the spml does not move (peers reach it only this way). Anything else is refused, naming why.
///
/// # Safety
/// `buf` readable (`into`) or writable for `len` bytes.
pub unsafe fn serve_copy(
    rt: &Runtime,
    seg: u32,
    off: u64,
    buf: *mut u8,
    len: usize,
    into: bool,
) -> Result<(), String> {
    let device = if (seg as usize) < MAX_SEGMENTS { rt.segs.device(seg) } else { 0 };
    if device == 0 || rt.spml.moves_device_memory(device) {
        return Err(format!("segment {seg} is not device memory that peers reach through this PE"));
    }
    let l = rt.segs.local(seg);
    let fits = off.checked_add(len as u64).is_some_and(|end| l.len != 0 && end <= l.len as u64);
    if !fits {
        return Err(format!("{len} bytes at offset {off} leave segment {seg} ({} bytes)", l.len));
    }
    let at = (l.base + off as usize) as *mut u8;
    let routine = c"a peer's transfer through this PE";
    // SAFETY: the range lies in the device segment (checked); `buf` as the caller says.
    unsafe {
        if into {
            copy(rt, routine, at, buf, len);
        } else {
            copy(rt, routine, buf, at, len);
        }
    }
    Ok(())
}

/// A put whose target is not mapped for load/store, once [`active`]: a device segment's mapped
/// copy by `copy`, else the spml, staging a device `src` when the spml cannot read it.
///
/// # Safety
/// As `rma::put_any`: `src` readable for `len`; (`seg`, `off`, `p`) located for `pe`.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
pub unsafe fn put(
    rt: &Runtime,
    routine: &'static CStr,
    ctx: Ctx,
    nbi: bool,
    (seg, off, p): (u32, usize, PeerSeg),
    pe: c_int,
    src: *const u8,
    len: usize,
) {
    if let Some(m) = peer_device_map(rt, seg, pe) {
        // SAFETY: the mapping covers the segment; the range was located inside it.
        return unsafe { copy(rt, routine, m.add(off), src, len) };
    }
    if let Some((through, _)) = via_target(rt, seg) {
        // SAFETY: `src` readable for `len` (contract); a put only reads the buffer.
        return unsafe {
            through_target(rt, routine, ctx, through, (seg, off), pe, src.cast_mut(), len, true)
        };
    }
    let raddr = p.remote_base + off as u64;
    if !spml_cannot_reach(rt, src) {
        let op = if nbi { rt.spml.put_nbi } else { rt.spml.put };
        // SAFETY: plugin ABI call; `src` readable for `len` by contract.
        if unsafe { through_spml(ctx, |h| op(h, pe, seg, raddr, src.cast(), len)) } != 0 {
            spml_failed(routine, "put to", pe);
        }
        return;
    }
    in_stages(rt, len, |b, done, n| {
        // SAFETY: `b` holds `n` bytes; `src + done` is readable for `n` (contract). The
        // blocking put returns when `b` may be reused.
        unsafe {
            copy(rt, routine, b, src.add(done), n);
            if through_spml(ctx, |h| (rt.spml.put)(h, pe, seg, raddr + done as u64, b.cast(), n)) != 0 {
                spml_failed(routine, "put to", pe);
            }
        }
    });
}

/// A get whose source is not mapped for load/store, once [`active`]; as [`put`].
///
/// # Safety
/// As `rma::get_any`: `dest` writable for `len`; (`seg`, `off`, `p`) located for `pe`.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
pub unsafe fn get(
    rt: &Runtime,
    routine: &'static CStr,
    ctx: Ctx,
    nbi: bool,
    (seg, off, p): (u32, usize, PeerSeg),
    pe: c_int,
    dest: *mut u8,
    len: usize,
) {
    if let Some(m) = peer_device_map(rt, seg, pe) {
        // SAFETY: the mapping covers the segment; the range was located inside it.
        return unsafe { copy(rt, routine, dest, m.add(off), len) };
    }
    if let Some((_, through)) = via_target(rt, seg) {
        // SAFETY: `dest` writable for `len` (contract).
        return unsafe { through_target(rt, routine, ctx, through, (seg, off), pe, dest, len, false) };
    }
    let raddr = p.remote_base + off as u64;
    if !spml_cannot_reach(rt, dest) {
        let op = if nbi { rt.spml.get_nbi } else { rt.spml.get };
        // SAFETY: plugin ABI call; `dest` writable for `len` by contract.
        if unsafe { through_spml(ctx, |h| op(h, pe, seg, raddr, dest.cast(), len)) } != 0 {
            spml_failed(routine, "get from", pe);
        }
        return;
    }
    in_stages(rt, len, |b, done, n| {
        // SAFETY: `b` holds `n` bytes; the blocking get has filled it when it returns.
        unsafe {
            if through_spml(ctx, |h| (rt.spml.get)(h, pe, seg, raddr + done as u64, b.cast(), n)) != 0 {
                spml_failed(routine, "get from", pe);
            }
            copy(rt, routine, dest.add(done), b, n);
        }
    });
}

/// An AMO (`op` with `value` and `cond` on a `size`-byte word) on device segment `seg` of PE
/// `pe`, under that PE's lock word for the offset; returns the previous value. `lock(word, op,
/// value, cond)` runs an AMO on a host lock word of `pe` (the caller's ordinary AMO path).
///
/// # Safety
/// (`seg`, `off`, `p`) located for `pe`, the word aligned (checked by the caller).
#[inline(never)]
pub unsafe fn amo(
    rt: &Runtime,
    routine: &'static CStr,
    ctx: Ctx,
    at: (u32, usize, PeerSeg),
    pe: c_int,
    (op, size, value, cond): (u32, usize, u64, u64),
    lock_op: impl Fn(*mut u64, u32, u64, u64) -> u64,
) -> u64 {
    let (seg, off, _) = at;
    let words = rt.segs.lock_words(seg);
    if words.is_null() {
        fail(routine, ShmemError::Internal { what: "a device segment without lock words" });
    }
    let lock = words.wrapping_add((off / 8) % LOCKS);
    let token = rt.my_pe as u64 + 1;
    let mut i = 0;
    while lock_op(lock, AMO_CSWAP, token, 0) != 0 {
        crate::ops::wait::backoff(&mut i, rt);
    }
    let mut word = 0u64;
    let w = (&mut word as *mut u64).cast::<u8>();
    // SAFETY: `w` holds 8 bytes, of which `size` (4 or 8) are read; little-endian, so the low
    // half of the u64 is the 4-byte word.
    unsafe { get(rt, routine, ctx, false, at, pe, w, size) };
    let old = if size == 4 {
        let mut x = word as u32;
        // SAFETY: a local aligned word.
        let o = unsafe { crate::ops::word::direct32(&mut x, op, value as u32, cond as u32) };
        word = u64::from(x);
        u64::from(o)
    } else {
        // SAFETY: a local aligned word.
        unsafe { crate::ops::word::direct64(&mut word, op, value, cond) }
    };
    if op != AMO_FETCH && word != old {
        // SAFETY: as for the get; the blocking put then a quiet make the word's new value
        // complete at the target before the lock is released.
        unsafe {
            put(rt, routine, ctx, false, at, pe, w, size);
            crate::ops::ctx::quiet(routine, ctx);
        }
    }
    lock_op(lock, AMO_SET, 0, 0);
    if op == AMO_SET {
        0
    } else {
        old
    }
}

/// Zero `size` bytes of device memory at `p` (a fresh block: `calloc`), through `copy`.
///
/// # Safety
/// `p` is a block of the device memheap's of at least `size` bytes.
pub unsafe fn zero(rt: &Runtime, routine: &'static CStr, p: *mut u8, size: usize) {
    const ZEROS: [u8; 4096] = [0; 4096];
    let mut done = 0;
    while done < size {
        let n = (size - done).min(ZEROS.len());
        // SAFETY: `p` is a device block of `size` bytes (caller); ZEROS is readable for `n`.
        unsafe { copy(rt, routine, p.add(done), ZEROS.as_ptr(), n) };
        done += n;
    }
}

/// The value of local device word `ivar` (waits and tests).
///
/// # Safety
/// `ivar` is an aligned word of a device segment.
pub unsafe fn load<T: Copy>(rt: &Runtime, routine: &'static CStr, ivar: *const T) -> T {
    let mut v = std::mem::MaybeUninit::<T>::zeroed();
    // SAFETY: `v` is writable for size_of::<T>(); the caller's word is readable through `copy`.
    unsafe {
        copy(rt, routine, v.as_mut_ptr().cast(), ivar.cast(), std::mem::size_of::<T>());
        v.assume_init()
    }
}

/// Bytes of a device segment's host shadow: the segment's, then for each of `slots` team
/// scratch slots the `n_pes + 1` words where a variable-size collect into device memory
/// gathers its sizes ([`Shadow::sizes_words`]).
pub fn shadow_len(seg_len: usize, n_pes: usize, slots: usize) -> Option<usize> {
    slots.checked_mul(n_pes + 1)?.checked_mul(8)?.checked_add(seg_len)
}

/// A collective's buffer as the host collective sees it: a host buffer as it is, a buffer in a
/// device segment replaced by the same offset of the segment's host shadow. The data is copied
/// in (sources) before the collective and out (destinations) after it, through `copy`.
#[derive(Copy, Clone)]
pub struct Shadow {
    /// What the collective reads or writes: the buffer itself, or its shadow.
    pub host: *mut u8,
    /// The device buffer (null for host memory).
    device: *mut u8,
    /// The device segment and the bytes from the buffer to its end.
    seg: u32,
    room: usize,
}

impl Shadow {
    /// `addr`, of which a collective uses `len` bytes (0 when not known yet), as a collective
    /// runs on it. Ends the job when `addr` is device memory without a shadow (a GPU space
    /// made under SHMEM_GPU_COLLECTIVES=0), or the range leaves its segment.
    pub fn of(
        rt: &Runtime,
        routine: &'static CStr,
        what: &'static str,
        addr: *const u8,
        len: usize,
    ) -> Shadow {
        let host = Shadow { host: addr as *mut u8, device: std::ptr::null_mut(), seg: 0, room: 0 };
        let Some((seg, off, room)) = rt.segs.locate(addr as usize) else {
            if is_device(rt, addr) {
                fail(routine, ShmemError::DeviceOutsideSpace { what, addr: addr as usize });
            }
            return host;
        };
        if rt.segs.device(seg) == 0 {
            return host;
        }
        let base = rt.segs.shadow(seg);
        if base == 0 {
            fail(routine, ShmemError::NoDeviceShadow { what, addr: addr as usize });
        }
        let s = Shadow { host: (base + off) as *mut u8, device: addr as *mut u8, seg, room };
        s.check(routine, what, 0, len);
        s
    }

    pub fn is_device(&self) -> bool {
        !self.device.is_null()
    }

    /// Where PE `pe` has its copy of this device buffer mapped here (CUDA IPC on one host; this
    /// PE's own is the buffer), or None.
    pub fn on_peer(&self, rt: &Runtime, pe: c_int) -> Option<*mut u8> {
        if !self.is_device() {
            return None;
        }
        let base = rt.segs.device_map(pe as usize, self.seg);
        let off = self.device as usize - rt.segs.local(self.seg).base;
        (!base.is_null()).then(|| base.wrapping_add(off))
    }

    fn check(&self, routine: &'static CStr, what: &'static str, off: usize, len: usize) {
        if self.is_device() && off.checked_add(len).is_none_or(|end| end > self.room) {
            let (addr, end) = (self.device as usize, off.saturating_add(len));
            fail(routine, ShmemError::PastDeviceSpace { what, addr, end });
        }
    }

    /// Before the collective: the first `len` bytes of a device source into its shadow.
    pub fn copy_in(&self, rt: &Runtime, routine: &'static CStr, len: usize) {
        if self.is_device() && len > 0 {
            self.check(routine, "source", 0, len);
            self.copy_pieces(rt, routine, 0, len, false);
        }
    }

    /// Copy bytes `off..off + len` between the device buffer and its shadow (`to_device`:
    /// from the shadow), once the shadow's range is page-locked where it can be, in pieces
    /// that each stay inside one page-locked range (`crate::ops::shadow_pin`).
    fn copy_pieces(&self, rt: &Runtime, routine: &'static CStr, off: usize, len: usize, to_device: bool) {
        use crate::ops::shadow_pin;
        shadow_pin::ensure(rt, self.seg, self.host.wrapping_add(off), len);
        let mut at = off;
        while at < off + len {
            let host = self.host.wrapping_add(at);
            let device = self.device.wrapping_add(at);
            let n = shadow_pin::piece(rt, self.seg, host, off + len - at);
            let (dst, src) =
                if to_device { (device, host.cast_const()) } else { (host, device.cast_const()) };
            // SAFETY: both ranges lie in their segments (the caller checked `off..off + len`):
            // the shadow is host memory of the buffer's length, the device range the memheap's.
            unsafe { copy(rt, routine, dst, src, n) };
            at += n;
        }
    }

    /// After the collective: bytes `off..off + len` of a device destination from its shadow.
    pub fn copy_out(&self, rt: &Runtime, routine: &'static CStr, off: usize, len: usize) {
        if self.is_device() && len > 0 {
            self.check(routine, "dest", off, len);
            self.copy_pieces(rt, routine, off, len, true);
        }
    }

    /// After a strided collective: `count` elements of `es` bytes every `stride` elements.
    /// The gaps between them are the program's, so the device range is read, the elements
    /// laid over it from the shadow, and the range written back.
    pub fn copy_out_strided(
        &self,
        rt: &Runtime,
        routine: &'static CStr,
        count: usize,
        es: usize,
        stride: usize,
    ) {
        if !self.is_device() || count == 0 {
            return;
        }
        let span = ((count - 1) * stride + 1) * es;
        self.check(routine, "dest", 0, span);
        let mut buf = vec![0u8; span];
        // SAFETY: `buf` holds `span` bytes; the device range was checked.
        unsafe { copy(rt, routine, buf.as_mut_ptr(), self.device, span) };
        for i in 0..count {
            let at = i * stride * es;
            // SAFETY: `at + es <= span`, inside the checked shadow range and `buf`.
            unsafe { std::ptr::copy_nonoverlapping(self.host.add(at), buf.as_mut_ptr().add(at), es) };
        }
        // SAFETY: as above.
        unsafe { copy(rt, routine, self.device, buf.as_ptr(), span) };
    }

    /// The shadow's `n_pes + 1` words for team slot `slot` (below the `slots` of
    /// [`shadow_len`]; symmetric), where a variable-size collect into device memory gathers
    /// the sizes.
    pub fn sizes_words(&self, rt: &Runtime, slot: usize) -> *mut u64 {
        let seg_len = rt.segs.local(self.seg).len;
        let base = rt.segs.shadow(self.seg);
        (base + seg_len + slot * (rt.n_pes as usize + 1) * 8) as *mut u64
    }
}
