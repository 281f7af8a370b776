//! Stream-ordered operations: `shmemx_putmem_on_stream` and its kin (NVSHMEM's
//! `nvshmemx_*_on_stream` family as the model). The operation is queued on the program's GPU
//! stream and runs after the work queued there before it; the stream's later work runs after
//! it. The host thread does not wait for the stream, so a program need not synchronize its
//! stream before each OpenSHMEM call.
//!
//! How each is queued, through the device memheap's stream slots (`MemheapOps::stream_copy`,
//! `stream_write_u64`, `stream_wait_u64`, `stream_sync`):
//! - **Data** to or from a peer whose copy of the symmetric object is mapped here (device
//!   memory by CUDA IPC, host memory by load/store, this PE's own) is one `stream_copy`.
//! - **A signal** (`SHMEM_SIGNAL_SET`) on a mapped device word is one `stream_write_u64`, which
//!   the device makes visible after the stream's earlier copies (its memory barrier): the
//!   data before the signal, as `shmem_putmem_signal` promises.
//! - **A wait** on a local device word for `SHMEM_CMP_EQ`, `GE` or `GT` is one
//!   `stream_wait_u64` (GT v is GE v+1). The device compares `(int64_t)(word - value) >= 0`
//!   for GE, which is the unsigned comparison while the two are within 2^63 of each other,
//!   as a signal counter is.
//! - **A barrier** over all PEs, when every PE maps every PE's GPU space: each PE's stream
//!   writes the barrier's sequence number into its own slot of an array in every other PE's
//!   GPU space, then waits until every other slot of its own array has reached it. The arrays (8 bytes
//!   per PE) are allocated in the GPU space by the first stream barrier, which every PE calls
//!   (a collective), and every PE agrees there whether the stream path serves.
//! - **Completion** (`shmemx_quiet_on_stream`) needs nothing queued: the operations above are
//!   complete when the stream passes them, and the others below before their call returned.
//!
//! Everything else (a peer not mapped here, such as one on another host or any peer under
//! `SHMEM_LOCAL_MAP=0`; `SHMEM_SIGNAL_ADD`; a signal in host memory; the comparisons NE, LT,
//! LE; a device without stream memory operations) waits on the host for the stream to finish
//! its earlier work and then does the ordinary blocking operation, so its order on the stream
//! holds, but the host thread waits for it. A proxy thread that does such operations when the
//! stream reaches them, without holding up the caller, is the next step (docs/extensions.md).

use crate::error::OrEnd;
use crate::error::{fail, fatal, ShmemError};
use crate::ops::{coll, ctx, rma, signal, spaces};
use crate::symm::runtime::{self, Runtime};
use rshmem_plugin_api::{
    StreamSlots, StreamWordOp, RC_OK, RC_UNSUPPORTED, STREAM_OP_WAIT, STREAM_OP_WRITE, STREAM_WAIT_EQ,
    STREAM_WAIT_GE,
};
use std::ffi::{c_int, c_void, CStr};

/// `SHMEM_CMP_*` (shmem.h).
const CMP_EQ: c_int = 1;
const CMP_GT: c_int = 3;
const CMP_GE: c_int = 6;

/// The device memheap's stream slots, or the end of the job naming what is missing.
fn slots(rt: &Runtime, routine: &'static CStr) -> StreamSlots {
    match rt.gpu.as_ref() {
        Some(g) => g.stream.unwrap_or_else(|| {
            fatal(
                routine,
                &format!(
                    "memheap {} queues no operations on a stream (its table lacks the stream slots)",
                    g.name
                ),
            )
        }),
        None => fatal(
            routine,
            &format!("operations on a GPU stream need a GPU memheap, and this PE has none: {}", rt.gpu_note),
        ),
    }
}

/// A slot's answer: true when queued, false when the device cannot (the caller falls back).
fn queued(routine: &'static CStr, what: &'static str, rc: c_int) -> bool {
    match rc {
        RC_OK => true,
        RC_UNSUPPORTED => false,
        _ => fail(routine, ShmemError::DeviceOp { what }),
    }
}

/// Wait until the stream has done everything queued on it so far.
fn sync(routine: &'static CStr, s: &StreamSlots, stream: *mut c_void) {
    // SAFETY: plugin ABI call; the stream is the program's (its contract).
    if unsafe { (s.sync)(stream) } != RC_OK {
        fail(routine, ShmemError::DeviceOp { what: "waiting for the stream" });
    }
}

/// Where this process reaches `pe`'s copy of symmetric `addr` (`len` bytes, checked to lie in
/// its segment) with a stream copy: the mapped device or host memory, or None.
fn mapped(
    rt: &Runtime,
    routine: &'static CStr,
    what: &'static str,
    addr: *const c_void,
    len: usize,
    pe: c_int,
) -> Option<*mut u8> {
    let (seg, off, p) = rma::target(rt, routine, what, addr as usize, len, pe).or_end(routine);
    let base = if rt.segs.device(seg) != 0 { rt.segs.device_map(pe as usize, seg) } else { p.mapped };
    (!base.is_null()).then(|| base.wrapping_add(off))
}

/// Where `pe`'s copy of symmetric signal word `sig` is mapped here, when it is device memory
/// (the only memory a stream's memory operations reach without registering it).
fn device_word(rt: &Runtime, routine: &'static CStr, sig: *const u64, pe: c_int) -> Option<*mut u64> {
    if !(sig as usize).is_multiple_of(8) {
        crate::error::fail(
            routine,
            crate::error::ShmemError::Misaligned { what: "sig_addr", addr: sig as usize, align: 8 },
        );
    }
    let (seg, off, _) = rma::target(rt, routine, "sig_addr", sig as usize, 8, pe).or_end(routine);
    if rt.segs.device(seg) == 0 {
        return None;
    }
    let base = rt.segs.device_map(pe as usize, seg);
    (!base.is_null()).then(|| base.wrapping_add(off).cast())
}

/// The bytes of `nelems` elements of `size` bytes (the typed forms), or the end of the job.
pub fn bytes(routine: &'static CStr, nelems: usize, size: usize) -> usize {
    rma::transfer_len(nelems, size).unwrap_or_else(|e| crate::error::fail(routine, e))
}

/// `shmemx_putmem_on_stream`.
///
/// # Safety
/// `src` readable for `len` bytes (host or device memory) until the stream has run the copy;
/// `stream` a live stream of the program's (NULL: the default stream).
pub unsafe fn putmem(
    routine: &'static CStr,
    dest: *mut c_void,
    src: *const c_void,
    len: usize,
    pe: c_int,
    stream: *mut c_void,
) {
    // SAFETY: forwarded under the caller's contract.
    unsafe { transfer::<true>(routine, dest, src, len, pe, stream) }
}

/// `shmemx_getmem_on_stream`.
///
/// # Safety
/// `dest` writable for `len` bytes (host or device memory); `stream` as for [`putmem`].
pub unsafe fn getmem(
    routine: &'static CStr,
    dest: *mut c_void,
    src: *const c_void,
    len: usize,
    pe: c_int,
    stream: *mut c_void,
) {
    // SAFETY: forwarded under the caller's contract.
    unsafe { transfer::<false>(routine, dest, src, len, pe, stream) }
}

/// A put (`PUT`: `dest` is `pe`'s) or a get (`src` is `pe`'s) on the stream: one stream copy
/// where `pe`'s copy is mapped here, else the ordinary blocking routine once the stream's
/// earlier work is done.
///
/// # Safety
/// As [`putmem`] and [`getmem`].
unsafe fn transfer<const PUT: bool>(
    routine: &'static CStr,
    dest: *mut c_void,
    src: *const c_void,
    len: usize,
    pe: c_int,
    stream: *mut c_void,
) {
    let rt = runtime::get(routine);
    let s = slots(rt, routine);
    if len == 0 {
        return;
    }
    let (what, remote) = if PUT { ("dest", dest.cast_const()) } else { ("source", src) };
    if let Some(m) = mapped(rt, routine, what, remote, len, pe) {
        let (to, from) = if PUT { (m.cast(), src) } else { (dest, m.cast_const().cast()) };
        // SAFETY: plugin ABI call; `m` is the mapped copy of `len` bytes, the other side the
        // caller's.
        if queued(routine, "a copy", unsafe { (s.copy)(stream, to, from, len) }) {
            return;
        }
    }
    sync(routine, &s, stream);
    // SAFETY: the caller's contract; the ordinary routines check the rest.
    unsafe {
        if PUT {
            rma::put_any::<false, true>(routine, ctx::default(), dest.cast(), src.cast(), len, 1, pe)
                .or_end(routine)
        } else {
            rma::get_any::<false, true>(routine, ctx::default(), dest.cast(), src.cast(), len, 1, pe)
                .or_end(routine)
        }
    }
}

/// Queue a SET of `pe`'s signal word on the stream when it is mapped device memory; false when
/// the caller must do the update on the host (after syncing the stream).
fn queue_signal(
    rt: &Runtime,
    routine: &'static CStr,
    s: &StreamSlots,
    (sig, value, op): (*mut u64, u64, c_int),
    pe: c_int,
    stream: *mut c_void,
) -> bool {
    if op != signal::SIGNAL_SET {
        return false;
    }
    match device_word(rt, routine, sig, pe) {
        // SAFETY: plugin ABI call on the mapped, aligned device word.
        Some(w) => queued(routine, "a signal", unsafe { (s.write_u64)(stream, w, value) }),
        None => false,
    }
}

/// `shmemx_putmem_signal_on_stream`: the data, then the signal, in the stream's order.
///
/// # Safety
/// As [`putmem`]; `sig_addr` is checked to be symmetric and aligned.
#[allow(clippy::too_many_arguments)]
pub unsafe fn putmem_signal(
    routine: &'static CStr,
    dest: *mut c_void,
    src: *const c_void,
    len: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
    stream: *mut c_void,
) {
    let rt = runtime::get(routine);
    let s = slots(rt, routine);
    if sig_op != signal::SIGNAL_SET && sig_op != signal::SIGNAL_ADD {
        crate::error::fail(routine, crate::ops::signal::bad_sig_op(sig_op));
    }
    let d = if len == 0 { None } else { mapped(rt, routine, "dest", dest, len, pe) };
    let signal_on_stream = sig_op == signal::SIGNAL_SET && device_word(rt, routine, sig_addr, pe).is_some();
    if (len == 0 || d.is_some()) && signal_on_stream {
        // SAFETY: plugin ABI call; `d` is the mapped copy of `len` bytes.
        let data = len == 0
            || queued(routine, "a copy", unsafe {
                (s.copy)(stream, d.unwrap_or(std::ptr::null_mut()).cast(), src, len)
            });
        if data {
            if queue_signal(rt, routine, &s, (sig_addr, signal, sig_op), pe, stream) {
                return;
            }
            // The data is queued; the device cannot set the word: once the stream has
            // delivered the data, the host sets it.
            sync(routine, &s, stream);
            // SAFETY: the word was checked above.
            return unsafe { signal::update(routine, ctx::default(), sig_addr, signal, sig_op, pe) };
        }
    }
    sync(routine, &s, stream);
    // SAFETY: the caller's contract; the ordinary put-with-signal checks the rest.
    unsafe {
        signal::put_signal::<false, true>(
            routine,
            ctx::default(),
            dest.cast(),
            src.cast(),
            len,
            1,
            sig_addr,
            signal,
            sig_op,
            pe,
        )
    }
    .or_end(routine);
}

/// `shmemx_signal_op_on_stream`: `shmem_signal_set`/`add` in the stream's order.
///
/// # Safety
/// `sig_addr` is checked to be symmetric and aligned; `stream` as for [`putmem`].
pub unsafe fn signal_op(
    routine: &'static CStr,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
    stream: *mut c_void,
) {
    let rt = runtime::get(routine);
    let s = slots(rt, routine);
    if queue_signal(rt, routine, &s, (sig_addr, signal, sig_op), pe, stream) {
        return;
    }
    sync(routine, &s, stream);
    // SAFETY: forwarded; the ordinary update checks the word and the operation.
    unsafe { signal::update(routine, ctx::default(), sig_addr, signal, sig_op, pe) };
}

/// The stream's comparison for `cmp` against `value`, where the device has one.
fn stream_cmp(cmp: c_int, value: u64) -> Option<(c_int, u64)> {
    match cmp {
        CMP_EQ => Some((STREAM_WAIT_EQ, value)),
        CMP_GE => Some((STREAM_WAIT_GE, value)),
        CMP_GT if value < u64::MAX => Some((STREAM_WAIT_GE, value + 1)),
        _ => None,
    }
}

/// `shmemx_signal_wait_until_on_stream`: the stream's later work waits until the local signal
/// word satisfies the comparison.
///
/// # Safety
/// `sig_addr` is checked to be symmetric and aligned; `stream` as for [`putmem`].
pub unsafe fn signal_wait_until(
    routine: &'static CStr,
    sig_addr: *const u64,
    cmp: c_int,
    value: u64,
    stream: *mut c_void,
) {
    let rt = runtime::get(routine);
    let s = slots(rt, routine);
    if crate::ops::wait::compare(0u64, cmp, 0).is_none() {
        crate::error::fail(routine, crate::ops::wait::bad_cmp(cmp));
    }
    if let (Some(w), Some((how, v))) =
        (device_word(rt, routine, sig_addr, rt.my_pe as c_int), stream_cmp(cmp, value))
    {
        // SAFETY: plugin ABI call on this PE's aligned device word.
        if queued(routine, "a wait", unsafe { (s.wait_u64)(stream, w, how, v) }) {
            return;
        }
    }
    sync(routine, &s, stream);
    // SAFETY: forwarded; the ordinary wait checks the word.
    unsafe { signal::wait_until(routine, sig_addr, cmp, value) };
}

/// `shmemx_quiet_on_stream`: every operation queued on the stream before it is complete when
/// the stream passes this point. Those on mapped peers complete in the stream's order and the
/// others before their call returned, so nothing is queued; the stream is checked.
pub fn quiet(routine: &'static CStr, stream: *mut c_void) {
    let rt = runtime::get(routine);
    let _ = slots(rt, routine);
    let _ = stream;
}

/// The stream barrier's state: one per initialization, made by the first stream barrier
/// (`crate::ops::state::OpsState::stream_barrier`).
pub(crate) struct Barrier {
    /// The GPU space it was made in (`SHMEM_SPACE_GPU`'s handle; a later initialization's GPU
    /// space is another value, space values never being freed, so a stale state is recognised).
    space: usize,
    /// This PE's array in the GPU space: slot `pe` holds the sequence number of the last
    /// stream barrier PE `pe`'s stream reached. None: the stream path does not serve (agreed).
    words: Option<*mut u64>,
    /// Stream barriers so far.
    epoch: u64,
}

// SAFETY: the pointer is a symmetric GPU-space address, only passed to the memheap.
unsafe impl Send for Barrier {}

/// Collective (first call): the barrier's array in the GPU space, where every PE maps every
/// PE's copy and its device queues stream memory operations; the same answer on every PE.
fn first_barrier(rt: &Runtime, routine: &'static CStr, s: &StreamSlots, stream: *mut c_void) -> Barrier {
    let gpu = spaces::gpu_space();
    let n = rt.n_pes as usize;
    let words =
        if gpu.is_null() { std::ptr::null_mut() } else { spaces::calloc(routine, gpu, n, 8) as *mut u64 };
    let mut ok = !words.is_null();
    if ok {
        let Some((seg, off)) = rt.segs.lookup(words as usize) else {
            fail(routine, ShmemError::Internal { what: "the stream barrier's array is not symmetric" })
        };
        ok = (0..n).all(|pe| !rt.segs.device_map(pe, seg).is_null());
        if ok {
            // Whether the device takes stream memory operations: rewrite this PE's own slot
            // with the zero it holds.
            let mine = rt.segs.device_map(rt.my_pe as usize, seg).wrapping_add(off + 8 * rt.my_pe as usize);
            // SAFETY: plugin ABI call on this PE's own aligned device word.
            ok = queued(routine, "a signal", unsafe { (s.write_u64)(stream, mine.cast(), 0) });
        }
    }
    let all = !spaces::agree_any(rt, routine, !ok);
    if !all && !words.is_null() {
        sync(routine, s, stream);
        // SAFETY: the array allocated above on every PE, unused.
        unsafe { spaces::free(routine, gpu, words.cast()) };
    }
    Barrier { space: gpu as usize, words: all.then_some(words), epoch: 0 }
}

/// One step of a stream barrier, on the arrays of one word per PE.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    /// Store `value` in slot `slot` of PE `pe`'s array (after the stream's earlier writes).
    Write { pe: usize, slot: usize, value: u64 },
    /// Hold the stream until slot `slot` of this PE's own array is at least `value`.
    WaitAtLeast { slot: usize, value: u64 },
}

/// The steps of stream barrier number `epoch` (1, 2, ... alike on every PE) of PE `me` of `n`:
/// its number into its own slot of every other PE's array, then a wait on every other slot of
/// its own. Slots only grow and each has one writer, so a wait for `epoch` is met by this
/// barrier's write and by no earlier one (docs/architecture.md, "Device memory").
fn barrier_plan(me: usize, n: usize, epoch: u64) -> impl Iterator<Item = Step> {
    let others = (0..n).filter(move |&pe| pe != me);
    let writes = others.clone().map(move |pe| Step::Write { pe, slot: me, value: epoch });
    writes.chain(others.map(move |slot| Step::WaitAtLeast { slot, value: epoch }))
}

/// `shmemx_barrier_all_on_stream`: the stream's later work runs once every PE's stream has
/// reached its barrier, and every operation issued before it is complete.
///
/// # Safety
/// `stream` a live stream of the program's (NULL: the default stream).
pub unsafe fn barrier_all(routine: &'static CStr, stream: *mut c_void) {
    let rt = runtime::get(routine);
    let s = slots(rt, routine);
    // The host's own operations before the barrier complete now.
    // SAFETY: the default context is always live.
    unsafe { ctx::quiet(routine, ctx::default()) };
    let mut state = crate::ops::state::of(rt).stream_barrier.lock().unwrap_or_else(|e| e.into_inner());
    // The state of an earlier initialization: its GPU space went at that finalize.
    if state.as_ref().is_some_and(|b| b.space != spaces::gpu_space() as usize) {
        *state = None;
    }
    let b = state.get_or_insert_with(|| first_barrier(rt, routine, &s, stream));
    let Some(words) = b.words else {
        drop(state);
        sync(routine, &s, stream);
        return coll::barrier_all(routine);
    };
    b.epoch += 1;
    let epoch = b.epoch;
    let Some((seg, off)) = rt.segs.lookup(words as usize) else {
        fail(routine, ShmemError::Internal { what: "the stream barrier's array is gone" })
    };
    // This PE's own slot is neither written nor waited for: its stream reaches its own barrier
    // by being there.
    let me = rt.my_pe as usize;
    let ops: Vec<StreamWordOp> = barrier_plan(me, rt.n_pes as usize, epoch)
        .map(|step| match step {
            Step::Write { pe, slot, value } => StreamWordOp {
                kind: STREAM_OP_WRITE,
                cmp: 0,
                addr: rt.segs.device_map(pe, seg).wrapping_add(off + 8 * slot).cast(),
                value,
            },
            Step::WaitAtLeast { slot, value } => StreamWordOp {
                kind: STREAM_OP_WAIT,
                cmp: STREAM_WAIT_GE,
                addr: words.wrapping_add(slot),
                value,
            },
        })
        .collect();
    if let Some(batch) = rt.gpu.as_ref().and_then(|g| g.batch) {
        // SAFETY: plugin ABI call; every write is to slot `me` of another PE's mapped copy of
        // the array, every wait on a slot of this PE's own.
        if queued(routine, "a barrier", unsafe { batch(stream, ops.as_ptr(), ops.len()) }) {
            return;
        }
    }
    for o in &ops {
        // SAFETY: as above, one operation at a time.
        let rc = unsafe {
            if o.kind == STREAM_OP_WRITE {
                (s.write_u64)(stream, o.addr, o.value)
            } else {
                (s.wait_u64)(stream, o.addr, o.cmp, o.value)
            }
        };
        if !queued(routine, "a barrier signal or wait", rc) {
            fail(routine, ShmemError::StreamRefused);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_barrier_writes_to_every_other_pe_then_waits_on_every_other_slot() {
        let steps: Vec<Step> = barrier_plan(1, 3, 7).collect();
        assert_eq!(
            steps,
            [
                Step::Write { pe: 0, slot: 1, value: 7 },
                Step::Write { pe: 2, slot: 1, value: 7 },
                Step::WaitAtLeast { slot: 0, value: 7 },
                Step::WaitAtLeast { slot: 2, value: 7 },
            ]
        );
        assert_eq!(barrier_plan(0, 1, 1).count(), 0, "one PE waits for nobody");
    }

    /// The plan, run by PEs as threads standing for their streams (a write with release, the
    /// stream memory operations' barrier; a wait with acquire), over every interleaving: after
    /// each of two barriers in a row every PE sees what every other PE stored before it. A
    /// wait met too early (for the previous barrier's number, say) fails it; checked by hand
    /// on 2026-12-04.
    #[test]
    fn every_pe_sees_every_others_data_after_each_barrier() {
        use loom::sync::atomic::{AtomicU64, Ordering};
        use loom::sync::Arc;
        // Two PEs: with three, the waits' spinning exceeds what loom can explore.
        const N: usize = 2;
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(2);
        b.check(|| {
            let slots: Arc<Vec<AtomicU64>> = Arc::new((0..N * N).map(|_| AtomicU64::new(0)).collect());
            let data: Arc<Vec<AtomicU64>> = Arc::new((0..N).map(|_| AtomicU64::new(0)).collect());
            let pe = |me: usize, slots: Arc<Vec<AtomicU64>>, data: Arc<Vec<AtomicU64>>| {
                for epoch in 1..=2u64 {
                    data[me].store(epoch, Ordering::Relaxed); // the work queued before
                    for step in barrier_plan(me, N, epoch) {
                        match step {
                            Step::Write { pe, slot, value } => {
                                slots[pe * N + slot].store(value, Ordering::Release)
                            }
                            Step::WaitAtLeast { slot, value } => {
                                while slots[me * N + slot].load(Ordering::Acquire) < value {
                                    loom::thread::yield_now();
                                }
                            }
                        }
                    }
                    for (other, d) in data.iter().enumerate() {
                        let seen = d.load(Ordering::Relaxed);
                        assert!(
                            seen >= epoch,
                            "PE {me} after barrier {epoch} saw PE {other}'s data of {seen}"
                        );
                    }
                }
            };
            let threads: Vec<_> = (1..N)
                .map(|me| {
                    let (s, d) = (slots.clone(), data.clone());
                    loom::thread::spawn(move || pe(me, s, d))
                })
                .collect();
            pe(0, slots, data);
            for t in threads {
                t.join().unwrap();
            }
        });
    }

    #[test]
    fn comparisons_the_stream_can_wait_for() {
        assert_eq!(stream_cmp(CMP_EQ, 7), Some((STREAM_WAIT_EQ, 7)));
        assert_eq!(stream_cmp(CMP_GE, 7), Some((STREAM_WAIT_GE, 7)));
        assert_eq!(stream_cmp(CMP_GT, 7), Some((STREAM_WAIT_GE, 8)), "GT v is GE v+1");
        assert_eq!(stream_cmp(CMP_GT, u64::MAX), None, "nothing is greater than the largest value");
        for other in [2, 4, 5] {
            assert_eq!(stream_cmp(other, 1), None, "NE, LE, LT wait on the host");
        }
    }
}
