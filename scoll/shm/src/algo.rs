//! The algorithms. The spec lets a collective write any member's `dest` as soon as it is
//! called ("the dest array on all PEs in the team is ready to accept the result" is a
//! precondition of every team collective and of the active-set forms), so data is pushed into
//! the peers' destinations and no entry synchronisation is needed: a PE returns once what it
//! is owed has arrived and whatever it lent (its source) has been read.
//!
//! Every member takes the same path through each call (the choice depends only on arguments
//! that are the same everywhere), and anything that can make the call decline or fail is
//! checked before the first signal.

use crate::layout::{ACK, MAX_PES, MID, SIG};
use crate::team::Team;
use rshmem_plugin_api::{arith, CoreServices, RC_DECLINED, RC_ERROR, RC_OK, REDUCE_ALL};
use std::ffi::{c_int, c_void};
use std::ptr::{copy, copy_nonoverlapping};
use std::sync::atomic::{fence, Ordering};

/// Make the data stores above visible before the signal that follows. Large copies may use
/// non-temporal stores, which a release store alone does not order.
fn publish() {
    fence(Ordering::SeqCst);
}

pub fn barrier(c: &CoreServices, t: &Team) -> c_int {
    let e = t.next();
    // Flat up to `barrier_flat_max` members, dissemination (log2 n rounds) above.
    if t.n <= t.tuning.barrier_flat_max {
        t.signal_all(SIG, e);
        t.wait_all(c, SIG, e);
    } else {
        // Round k: signal the member 2^k ahead, wait for the one 2^k behind. Each sender
        // writes a distinct word of the receiver, so the rounds cannot be confused.
        let mut d = 1;
        while d < t.n {
            t.signal((t.me + d) % t.n, SIG, e);
            t.wait(c, SIG, (t.me - d).rem_euclid(t.n), e);
            d *= 2;
        }
    }
    RC_OK
}

/// Member `j`'s address of `addr`, which `Team::reachable` has vouched for.
fn at(c: &CoreServices, t: &Team, addr: *const c_void, j: c_int) -> *mut u8 {
    t.peer(c, addr, j).expect("a buffer checked as reachable")
}

/// With `keep_root`, the root's own `dest` is not written (the active-set form).
///
/// # Safety
/// `dest` and `src` must be valid for `nbytes` bytes (the core checked them).
pub unsafe fn broadcast(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    root: c_int,
    keep_root: bool,
) -> c_int {
    if !(0..t.n).contains(&root) {
        return RC_ERROR;
    }
    if !t.reachable(c, dest, nbytes) || !t.reachable(c, src, nbytes) {
        return RC_DECLINED;
    }
    let e = t.next();
    let push = t.n == 2 || nbytes.saturating_mul(t.n as usize - 1) <= t.tuning.bcast_push_max;
    let local = !std::ptr::eq(dest, src) && !keep_root;
    // SAFETY: every pointer is a member's mapping of a buffer valid for `nbytes` (caller,
    // `reachable`); a local copy may overlap, hence `copy`.
    unsafe {
        if t.me == root {
            if push {
                for j in t.others() {
                    copy_nonoverlapping(src as *const u8, at(c, t, dest, j), nbytes);
                }
                publish();
                t.signal_all(SIG, e);
                if local {
                    copy(src as *const u8, dest as *mut u8, nbytes);
                }
            } else {
                t.signal_all(SIG, e);
                t.wait_all(c, ACK, e);
                // Last: the members were reading `src`, which may overlap `dest`.
                if local {
                    copy(src as *const u8, dest as *mut u8, nbytes);
                }
            }
        } else {
            t.wait(c, SIG, root, e);
            if !push {
                copy_nonoverlapping(at(c, t, src, root), dest as *mut u8, nbytes);
                t.signal(root, ACK, e);
            }
        }
    }
    RC_OK
}

/// fcollect (`fixed`) and collect: each member writes its block into every member's `dest`,
/// at its offset (collect: the sum of its predecessors' sizes, which they send it).
///
/// # Safety
/// `src` must be valid for `nbytes` bytes and `dest` symmetric (the core checked them).
pub unsafe fn collect(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    fixed: bool,
) -> c_int {
    let span = if fixed { nbytes.saturating_mul(t.n as usize) } else { 1 };
    if !t.reachable(c, dest, span) {
        return RC_DECLINED;
    }
    let e = t.next();
    let offset = if fixed {
        t.me as usize * nbytes
    } else {
        // Every member reads only its predecessors' sizes; a member overwrites its size in
        // the next call only after this one has ended, which needs this PE's data signal,
        // sent after the read.
        for j in t.others() {
            t.tell_size(j, nbytes as u64);
        }
        t.signal_all(MID, e);
        (0..t.me)
            .map(|j| {
                t.wait(c, MID, j, e);
                t.size_of(j) as usize
            })
            .sum()
    };
    // SAFETY: each member's `dest` holds every block (caller, `reachable`); `src` holds ours.
    unsafe {
        for j in t.others() {
            copy_nonoverlapping(src as *const u8, at(c, t, dest, j).add(offset), nbytes);
        }
        copy(src as *const u8, (dest as *mut u8).add(offset), nbytes);
    }
    publish();
    t.signal_all(SIG, e);
    t.wait_all(c, SIG, e);
    RC_OK
}

/// alltoall(s): this PE writes its block for member `j` straight into `j`'s `dest`.
///
/// # Safety
/// The buffers must hold `n * nelems` elements of `es` bytes at their strides (core-checked).
#[allow(clippy::too_many_arguments)]
pub unsafe fn alltoall(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    es: usize,
    nelems: usize,
    dst: isize,
    sst: isize,
) -> c_int {
    if dst <= 0 || sst <= 0 {
        return RC_ERROR;
    }
    let (dst, sst, n) = (dst as usize, sst as usize, t.n as usize);
    let count = n * nelems;
    let span = if count == 0 { 0 } else { ((count - 1) * dst + 1) * es };
    if !t.reachable(c, dest, span) {
        return RC_DECLINED;
    }
    let e = t.next();
    for k in 0..t.n {
        let j = (t.me + k) % t.n;
        let d = at(c, t, dest, j).wrapping_add(t.me as usize * nelems * dst * es);
        let s = (src as *const u8).wrapping_add(j as usize * nelems * sst * es);
        // SAFETY: in bounds of both buffers (caller, `reachable`); a local copy may overlap.
        unsafe {
            if dst == 1 && sst == 1 {
                copy(s, d, nelems * es);
            } else {
                for i in 0..nelems {
                    copy(s.add(i * sst * es), d.add(i * dst * es), es);
                }
            }
        }
    }
    publish();
    t.signal_all(SIG, e);
    t.wait_all(c, SIG, e);
    RC_OK
}

/// Reductions and scans, by size:
/// - up to `reduce_stage_max` bytes (at most STAGE_BYTES): each member copies its source into
///   a staging buffer in its scratch and every member combines the staged data it needs, in
///   team order. The source is free again at once; a staging buffer is reused two calls
///   later, once its readers said so.
/// - larger full reductions: member `i` combines chunk `i` of every source, in team order,
///   into its own `dest`, then copies the other chunks from their members' `dest`
///   (reduce-scatter, then allgather; each byte crosses once).
/// - larger scans: each member combines the sources it needs, read in place.
///
/// Every element of the result is combined in team order by one member (or identically by
/// all), so every member gets the same bits.
///
/// # Safety
/// `src` and `dest` must hold `nelems` elements (the core checked them); `dest` may be `src`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    nelems: usize,
    dtype: u32,
    op: u32,
    kind: u32,
) -> c_int {
    let Some(arith::Shape { es, nbytes, upto }) = arith::shape(dtype, op, kind, nelems, t.n, t.me) else {
        return RC_ERROR;
    };
    let small = nbytes <= t.tuning.reduce_stage_max;
    let chunked = !small && kind == REDUCE_ALL;
    if !small && (!t.reachable(c, src, nbytes) || chunked && !t.reachable(c, dest, nbytes)) {
        return RC_DECLINED;
    }
    let e = t.next();
    // SAFETY: the buffers hold `nelems` elements (caller) and are reachable where read.
    unsafe {
        if small {
            staged(c, t, e, dest as *mut u8, src as *const u8, nelems, es, (dtype, op), upto);
        } else if chunked {
            scatter_gather(c, t, e, dest as *mut u8, src as *const u8, nelems, es, (dtype, op));
        } else {
            in_place(c, t, e, dest as *mut u8, src as *const u8, nelems, es, (dtype, op), upto);
        }
    }
    RC_OK
}

/// `acc = x` (first operand) or `acc = acc op x`.
///
/// # Safety
/// `acc` and `x` valid for `n` elements of the type; `arith::supports(dtype, op)`.
unsafe fn fold(first: bool, (dtype, op): (u32, u32), acc: *mut u8, x: *const u8, n: usize, es: usize) {
    // SAFETY: forwarded from the caller.
    unsafe {
        if first {
            copy_nonoverlapping(x, acc, n * es);
        } else {
            arith::combine_raw(dtype, op, acc, x, n);
        }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn staged(
    c: &CoreServices,
    t: &Team,
    e: u64,
    dest: *mut u8,
    src: *const u8,
    nelems: usize,
    es: usize,
    f: (u32, u32),
    upto: c_int,
) {
    let nbytes = nelems * es;
    let p = (e % 2) as usize;
    let last = t.restage(p, e);
    if last > 0 {
        // Every member acknowledges after reading in a staged call, so this waits only for
        // members still reading this buffer from call `last`.
        for j in t.others() {
            t.wait(c, ACK, j, last);
        }
    }
    let acc = t.buffer(nbytes).as_mut_ptr() as *mut u8;
    // SAFETY: the staging buffers hold STAGE_BYTES >= nbytes; `acc` holds nbytes.
    unsafe {
        copy_nonoverlapping(src, t.stage(t.me, p), nbytes);
        t.signal_all(SIG, e);
        if upto == t.n {
            // Every source is needed: wait for them all at once, which on an oversubscribed
            // node yields to this CPU's members first and then spins for the others
            // (`Team::wait_all`), instead of one member at a time in team order.
            t.wait_all(c, SIG, e);
        }
        for j in 0..upto {
            if j != t.me {
                t.wait(c, SIG, j, e);
            }
            fold(j == 0, f, acc, t.stage(j, p), nelems, es);
        }
        t.signal_all(ACK, e);
        if upto > 0 {
            copy_nonoverlapping(acc, dest, nbytes);
        }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn scatter_gather(
    c: &CoreServices,
    t: &Team,
    e: u64,
    dest: *mut u8,
    src: *const u8,
    nelems: usize,
    es: usize,
    f: (u32, u32),
) {
    t.signal_all(SIG, e);
    t.wait_all(c, SIG, e);
    let mut srcs = [std::ptr::null::<u8>(); MAX_PES];
    for (j, s) in srcs.iter_mut().enumerate().take(t.n as usize) {
        *s = at(c, t, src.cast(), j as c_int);
    }
    let (lo, hi) = arith::chunk(t.me, t.n, nelems, es);
    let block = (t.tuning.reduce_block / es).max(1);
    let acc = t.buffer(block * es).as_mut_ptr() as *mut u8;
    // SAFETY: every source holds `nelems` elements and this PE's chunk of `dest` is its own;
    // nobody else reads this chunk of this PE's source, so writing it here (in place) is safe
    // once this block has been read.
    unsafe {
        let mut i = lo;
        while i < hi {
            let m = block.min(hi - i);
            for (j, s) in srcs[..t.n as usize].iter().enumerate() {
                fold(j == 0, f, acc, s.add(i * es), m, es);
            }
            copy_nonoverlapping(acc, dest.add(i * es), m * es);
            i += m;
        }
    }
    publish();
    t.signal_all(MID, e);
    for k in t.others() {
        let (lo, hi) = arith::chunk(k, t.n, nelems, es);
        t.wait(c, MID, k, e);
        // SAFETY: member k's chunk is final in its `dest`; k has read this PE's source chunk
        // k (the one overwritten here when in place) before signalling.
        unsafe {
            copy_nonoverlapping(at(c, t, dest.cast(), k).add(lo * es), dest.add(lo * es), (hi - lo) * es)
        };
    }
    // Nobody may still read this PE's chunk when the caller gets `dest` back.
    t.signal_all(ACK, e);
    t.wait_all(c, ACK, e);
}

#[allow(clippy::too_many_arguments)]
unsafe fn in_place(
    c: &CoreServices,
    t: &Team,
    e: u64,
    dest: *mut u8,
    src: *const u8,
    nelems: usize,
    es: usize,
    f: (u32, u32),
    upto: c_int,
) {
    let nbytes = nelems * es;
    let acc = t.buffer(nbytes).as_mut_ptr() as *mut u8;
    t.signal_all(SIG, e);
    for j in 0..upto {
        if j != t.me {
            t.wait(c, SIG, j, e);
        }
        // SAFETY: member j's source holds `nelems` elements; `acc` holds nbytes.
        unsafe { fold(j == 0, f, acc, at(c, t, src.cast(), j), nelems, es) };
    }
    // Every member has finished reading this PE's source before `dest` (maybe the same
    // array) is written.
    t.signal_all(ACK, e);
    t.wait_all(c, ACK, e);
    if upto > 0 {
        // SAFETY: `dest` holds nbytes (caller).
        unsafe { copy_nonoverlapping(acc, dest, nbytes) };
    }
}
