//! The algorithms. The spec lets a collective write any member's `dest` as soon as it is
//! called ("the dest array on all PEs in the team is ready to accept the result" is a
//! precondition of every team collective and of the active-set forms), so data is pushed into
//! the peers' destinations and no entry synchronisation is needed: a PE returns once what it
//! is owed has arrived and whatever it lent (its source) has been read.
//!
//! Every member takes the same path through each call (the choice depends only on arguments
//! that are the same everywhere), and anything that can make the call decline or fail is
//! checked before the first signal.

use crate::layout::MAX_PES;
use crate::protocol;
use crate::team::{On, Team};
use rshmem_plugin_api::{arith, CoreServices, RC_DECLINED, RC_ERROR, RC_OK, REDUCE_ALL};
use std::ffi::{c_int, c_void};
use std::ptr::{copy, copy_nonoverlapping};

pub fn barrier(c: &CoreServices, t: &Team) -> c_int {
    let e = t.next();
    // Flat up to `barrier_flat_max` members, dissemination (log2 n rounds) above.
    protocol::barrier(&On(c, t), e, t.n <= t.tuning.barrier_flat_max);
    t.lead(e);
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
    if push {
        t.rooted(root);
    }
    // Every pointer below is a member's mapping of a buffer valid for `nbytes` (caller,
    // `reachable`).
    protocol::broadcast(
        &On(c, t),
        e,
        root,
        push,
        || {
            for j in t.others() {
                // SAFETY: see above; another member's `dest` does not overlap our `src`.
                unsafe { copy_nonoverlapping(src as *const u8, at(c, t, dest, j), nbytes) };
            }
        },
        || {
            if local {
                // SAFETY: see above; a local copy may overlap, hence `copy`.
                unsafe { copy(src as *const u8, dest as *mut u8, nbytes) };
            }
        },
        // SAFETY: see above; the root's `src` and our `dest` are distinct memory.
        || unsafe { copy_nonoverlapping(at(c, t, src, root), dest as *mut u8, nbytes) },
    );
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
    let w = On(c, t);
    let mut offset = if fixed { t.me as usize * nbytes } else { 0 };
    if !fixed {
        // The sum of the predecessors' sizes.
        let tell = || t.others().for_each(|j| t.tell_size(j, nbytes as u64));
        protocol::offsets(&w, e, tell, |j| offset += t.size_of(j) as usize);
    }
    // SAFETY: each member's `dest` holds every block (caller, `reachable`); `src` holds ours.
    protocol::exchange(&w, e, || unsafe {
        for j in t.others() {
            copy_nonoverlapping(src as *const u8, at(c, t, dest, j).add(offset), nbytes);
        }
        copy(src as *const u8, (dest as *mut u8).add(offset), nbytes);
    });
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
    protocol::exchange(&On(c, t), e, || {
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
    });
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
    let (p, last) = t.stages.take(e);
    let acc = t.buffer(nbytes).as_mut_ptr() as *mut u8;
    // SAFETY: the staging buffers hold STAGE_BYTES >= nbytes; `src` holds nbytes (caller).
    let put = || unsafe { copy_nonoverlapping(src, t.stage(t.me, p), nbytes) };
    // SAFETY: as above; `acc` holds nbytes.
    let fold_in = |j| unsafe { fold(j == 0, f, acc, t.stage(j, p), nelems, es) };
    protocol::staged(&On(c, t), e, last, upto, put, fold_in);
    if upto > 0 {
        // SAFETY: `dest` holds nbytes (caller).
        unsafe { copy_nonoverlapping(acc, dest, nbytes) };
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
    let reduce_mine = || unsafe {
        let mut i = lo;
        while i < hi {
            let m = block.min(hi - i);
            for (j, s) in srcs[..t.n as usize].iter().enumerate() {
                fold(j == 0, f, acc, s.add(i * es), m, es);
            }
            copy_nonoverlapping(acc, dest.add(i * es), m * es);
            i += m;
        }
    };
    // SAFETY: member k's chunk is final in its `dest` once it signalled; k has read this PE's
    // source chunk k (the one overwritten here when in place) before signalling.
    let gather = |k| unsafe {
        let (lo, hi) = arith::chunk(k, t.n, nelems, es);
        copy_nonoverlapping(at(c, t, dest.cast(), k).add(lo * es), dest.add(lo * es), (hi - lo) * es)
    };
    protocol::scatter_gather(&On(c, t), e, reduce_mine, gather);
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
    // SAFETY: member j's source holds `nelems` elements; `acc` and `dest` hold nbytes.
    let fold_in = |j| unsafe { fold(j == 0, f, acc, at(c, t, src.cast(), j), nelems, es) };
    let finish = || {
        if upto > 0 {
            // SAFETY: as above.
            unsafe { copy_nonoverlapping(acc, dest, nbytes) };
        }
    };
    protocol::in_place(&On(c, t), e, upto, fold_in, finish);
}
