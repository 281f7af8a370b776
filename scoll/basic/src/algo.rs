//! The algorithms, written only against the core's one-sided services (atomic add, wait,
//! put, fence, quiet) so that they work over any spml and any team shape.

use crate::team::{partner, rounds, tree, Team, BARRIER, CHAIN_FLAG, CHAIN_OFF, DATA, READY, TREE};
use crate::tuning::{Bcast, Fcollect, Form};
use rshmem_plugin_api::{arith, CoreServices, CMP_GE, RC_ERROR, RC_OK, REDUCE_ALL};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

/// Dissemination barrier: in round k, signal the PE 2^k places ahead and wait for the signal
/// from the PE 2^k places behind. After ceil(log2 n) rounds every PE has heard, directly or
/// not, from every other. Round k's word has one sender, so a token there means that sender
/// reached round k of this barrier: either this barrier's token, or the next one's, whose
/// sender had finished this barrier. Either way one token is consumed per barrier.
///
/// # Safety
/// `t`'s scratch must be the team's symmetric scratch and `c` the core's live table.
pub unsafe fn barrier(c: &CoreServices, t: &Team) -> c_int {
    let n = t.size();
    for (k, d) in rounds(n).enumerate() {
        let to = t.pe(partner(t.me(), d, n));
        // SAFETY: the team's scratch words are symmetric and live for the call (caller).
        unsafe {
            (c.atomic_add_u64)(t.word(BARRIER + k), 1, to);
            take(c, t, BARRIER + k, 1);
        }
    }
    RC_OK
}

/// Wait until `count` more tokens have arrived on word `k`, and consume them. A token that
/// arrives early (for the next collective) stays for it. On an ephemeral team the tokens are
/// removed from the word, through the core's atomics (the path the remote increments take, so
/// the two never mix on one word), leaving the pSync as it was.
unsafe fn take(c: &CoreServices, t: &Team, k: usize, count: u64) {
    // SAFETY: word `k` of the team's scratch is a live, aligned, symmetric word (caller).
    unsafe {
        if t.ephemeral {
            (c.wait_until_u64)(t.word(k), CMP_GE, count);
            (c.atomic_add_u64)(t.word(k), count.wrapping_neg(), t.pe(t.me()));
            // Through a transport, a non-fetching atomic may still be in flight when it
            // returns; the next wait on this word must see it done.
            (c.quiet)();
        } else {
            (c.wait_until_u64)(t.word(k), CMP_GE, t.tally(k, count));
        }
    }
}

/// Broadcast, by the algorithm the job chose. With `keep_root`, the root's own `dest` is not
/// written (the active-set form).
///
/// # Safety
/// `dest` (symmetric) and `src` must be valid for `nbytes` bytes (the core checked them), and
/// the team's scratch live.
pub unsafe fn broadcast(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    root: c_int,
    keep_root: bool,
) -> c_int {
    if !(0..t.size()).contains(&root) {
        return RC_ERROR;
    }
    // SAFETY: caller.
    unsafe {
        match t.tuning.bcast {
            Bcast::Binomial => binomial(c, t, dest.cast(), src.cast(), nbytes, root, keep_root),
            Bcast::Linear => linear(c, t, dest, src, nbytes, root, keep_root),
        }
    }
}

/// Binomial tree: a member waits for its parent's signal (its data is then in its `dest`),
/// puts the data into each child's `dest`, fences, and signals the children. Nothing goes
/// back to the root: the spec makes every `dest` ready to accept the data when the call is
/// made, and each member receives on the word of its parent's distance, which nobody else
/// signals, so a signal of a later broadcast (with another root, hence perhaps another
/// parent) lands elsewhere or counts after this one.
unsafe fn binomial(
    c: &CoreServices,
    t: &Team,
    dest: *mut u8,
    src: *const u8,
    nbytes: usize,
    root: c_int,
    keep_root: bool,
) -> c_int {
    if nbytes == 0 {
        // No data: nothing to wait for, on any member.
        return RC_OK;
    }
    let (n, me) = (t.size(), t.me());
    let (parent, kids) = tree(me, root, n);
    // SAFETY: our own scratch word; then the members' `dest` (symmetric, `nbytes`) and their
    // scratch words; `src` is readable for `nbytes` (caller).
    unsafe {
        let data = match parent {
            Some(k) => {
                take(c, t, TREE + k, 1);
                dest as *const u8
            }
            None => src,
        };
        let mut any = false;
        for (_, d) in kids {
            (c.putmem)(dest.cast(), data.cast(), nbytes, t.pe(partner(me, d, n)));
            any = true;
        }
        // Last, so that the puts read the root's `src` intact even if it overlaps `dest`.
        if parent.is_none() && !keep_root && !std::ptr::eq(dest, src) {
            std::ptr::copy(src, dest, nbytes);
        }
        if any {
            (c.fence)();
            for (j, d) in tree(me, root, n).1 {
                (c.atomic_add_u64)(t.word(TREE + j), 1, t.pe(partner(me, d, n)));
            }
        }
    }
    RC_OK
}

/// Linear: non-roots announce themselves to the root, which puts to each and then signals
/// it.
unsafe fn linear(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    root: c_int,
    keep_root: bool,
) -> c_int {
    let (n, me) = (t.size(), t.me());
    let copy_local = nbytes > 0 && !std::ptr::eq(dest, src) && !keep_root;
    if me != root {
        // SAFETY: READY is symmetric scratch on the root; DATA is this PE's own scratch.
        unsafe {
            (c.atomic_add_u64)(t.word(READY), 1, t.pe(root));
            take(c, t, DATA, 1);
        }
        return RC_OK;
    }
    // SAFETY: our own READY word; then remote and local copies of the caller's symmetric
    // buffers; then DATA words on member PEs.
    unsafe {
        if n > 1 {
            take(c, t, READY, (n - 1) as u64);
        }
        let others = (0..n).filter(|i| *i != root);
        if nbytes > 0 {
            for i in others.clone() {
                (c.putmem)(dest, src, nbytes, t.pe(i));
            }
        }
        // Last, so that the puts read `src` intact even if it overlaps `dest` (ptr::copy is a
        // memmove).
        if copy_local {
            std::ptr::copy(src as *const u8, dest as *mut u8, nbytes);
        }
        if n > 1 {
            (c.fence)();
            for i in others {
                (c.atomic_add_u64)(t.word(DATA), 1, t.pe(i));
            }
            (c.quiet)();
        }
    }
    RC_OK
}

/// Put `len` bytes to team index `j`, or copy them when that is this PE.
unsafe fn put_to(c: &CoreServices, t: &Team, j: c_int, dest: *mut u8, src: *const u8, len: usize) {
    if len == 0 {
        return;
    }
    // SAFETY: `src` is readable and `dest` (a symmetric address) writable for `len` bytes on
    // every PE (caller); a local copy may overlap, hence `copy`.
    unsafe {
        if j == t.me() {
            std::ptr::copy(src, dest, len);
        } else {
            (c.putmem)(dest.cast(), src.cast(), len, t.pe(j));
        }
    }
}

/// fcollect (`fixed`) and collect, by the algorithm the job chose for fcollect; collect, whose
/// blocks differ in size, is always linear.
///
/// # Safety
/// `dest` (symmetric, the whole result) and `src` must be valid (the core checked them), and
/// the team's scratch live.
pub unsafe fn collect(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    fixed: bool,
) -> c_int {
    // SAFETY: caller.
    unsafe {
        match t.tuning.fcollect {
            Fcollect::Bruck if fixed => bruck(c, t, dest.cast(), src.cast(), nbytes),
            _ => linear_collect(c, t, dest, src, nbytes, fixed),
        }
    }
}

/// fcollect by Bruck's concatenation, ceil(log2 n) rounds for any team size. Before round k a
/// member holds the 2^k blocks ending at its own (team order, wrapping at 0), all in place in
/// its `dest`; it puts them at the same offsets into the `dest` of the member 2^k places
/// ahead (the last round only the n - 2^k that member lacks), fences, signals it on `TREE + k`
/// and waits for the same from the member 2^k behind, whose blocks extend its own run. Every
/// member sends (n - 1) blocks in all, as in the linear form, but in log2 n steps and with no
/// barrier: the spec makes every `dest` ready to accept the result when the call is made.
/// The signals follow the broadcast tree's rule (a member hears on `TREE + k` only from the
/// member 2^k behind, after a fence), so these words stay exact across kinds of collectives.
///
/// # Safety
/// As [`collect`].
unsafe fn bruck(c: &CoreServices, t: &Team, dest: *mut u8, src: *const u8, nbytes: usize) -> c_int {
    if nbytes == 0 {
        // No data: nothing to wait for, on any member.
        return RC_OK;
    }
    let (n, me) = (t.size(), t.me());
    let at = |j: c_int| dest.wrapping_add(j as usize * nbytes);
    // SAFETY: every member's `dest` holds n blocks and `src` one (caller); our own scratch
    // words, then those of the member ahead.
    unsafe {
        std::ptr::copy(src, at(me), nbytes);
        let (mut have, mut k) = (1, 0);
        while have < n {
            let count = have.min(n - have);
            let to = t.pe(partner(me, have, n));
            let first = me - count + 1;
            if first >= 0 {
                (c.putmem)(at(first).cast(), at(first).cast(), count as usize * nbytes, to);
            } else {
                (c.putmem)(at(0).cast(), at(0).cast(), (me + 1) as usize * nbytes, to);
                (c.putmem)(at(n + first).cast(), at(n + first).cast(), -first as usize * nbytes, to);
            }
            (c.fence)();
            (c.atomic_add_u64)(t.word(TREE + k), 1, to);
            take(c, t, TREE + k, 1);
            have += count;
            k += 1;
        }
    }
    RC_OK
}

/// Linear fcollect and collect. An entry barrier makes every `dest` free to write; collect
/// learns its offset from a chain along the team (each PE passes its successor the running
/// total); everyone then puts its block to every PE, and a quiet and barrier complete it.
unsafe fn linear_collect(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    fixed: bool,
) -> c_int {
    let (n, me) = (t.size(), t.me());
    // SAFETY: the buffers are valid for the sizes the core checked, and the team's scratch is
    // live for the call (caller).
    unsafe {
        barrier(c, t);
        let offset = if fixed {
            me as usize * nbytes
        } else {
            let mut off = 0u64;
            if me > 0 {
                take(c, t, CHAIN_FLAG, 1);
                let w = AtomicU64::from_ptr(t.word(CHAIN_OFF));
                off = w.load(Ordering::Acquire);
                // Restore the word: the predecessor writes it again only in a later collect,
                // after that one's entry barrier, which this PE has not reached yet.
                w.store(0, Ordering::Relaxed);
            }
            if me + 1 < n {
                let next = off + nbytes as u64;
                (c.putmem)(t.word(CHAIN_OFF).cast(), (&next as *const u64).cast(), 8, t.pe(me + 1));
                (c.fence)();
                (c.atomic_add_u64)(t.word(CHAIN_FLAG), 1, t.pe(me + 1));
            }
            off as usize
        };
        let d = (dest as *mut u8).wrapping_add(offset);
        // Start with the next PE so that PEs do not all write to the same one at once.
        for k in 1..=n {
            put_to(c, t, (me + k) % n, d, src.cast(), nbytes);
        }
        (c.quiet)();
        barrier(c, t);
    }
    RC_OK
}

/// Bytes of source elements alltoalls packs per put when only `src` is strided.
const PACK_CHUNK: usize = 4096;

/// alltoall(s): puts (contiguous, or element by element when strided) on a shifted schedule
/// (member i starts with member i + 1, so no member is everyone's first target), then a quiet
/// and a barrier, after which every block has arrived. No entry barrier: the spec makes every
/// `dest` ready to accept the data before any member calls.
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
    let (n, me) = (t.size(), t.me());
    if dst <= 0 || sst <= 0 {
        return RC_ERROR;
    }
    let (dst, sst) = (dst as usize, sst as usize);
    // A block strided only in `src` is packed, a chunk at a time through this buffer on the
    // stack (no allocation per call), and goes by one put per chunk.
    let mut packed = [0u8; PACK_CHUNK];
    let per_chunk = (PACK_CHUNK / es.max(1)).max(1);
    // SAFETY: the buffers are valid for the sizes the core checked, and the team's scratch is
    // live for the call (caller).
    unsafe {
        for k in 1..=n {
            let j = (me + k) % n;
            let d = (dest as *mut u8).wrapping_add(me as usize * nelems * dst * es);
            let s = (src as *const u8).wrapping_add(j as usize * nelems * sst * es);
            if dst == 1 && sst == 1 {
                put_to(c, t, j, d, s, nelems * es);
            } else if dst == 1 && es <= PACK_CHUNK {
                let mut first = 0;
                while first < nelems {
                    let m = per_chunk.min(nelems - first);
                    for e in 0..m {
                        let from = s.wrapping_add((first + e) * sst * es);
                        std::ptr::copy_nonoverlapping(from, packed.as_mut_ptr().add(e * es), es);
                    }
                    // A blocking put: `packed` may be refilled once it returns.
                    put_to(c, t, j, d.wrapping_add(first * es), packed.as_ptr(), m * es);
                    first += m;
                }
            } else {
                for e in 0..nelems {
                    put_to(c, t, j, d.wrapping_add(e * dst * es), s.wrapping_add(e * sst * es), es);
                }
            }
        }
        (c.quiet)();
        barrier(c, t);
    }
    RC_OK
}

/// Reductions and scans: after an entry barrier (every source is ready), each PE gets the
/// sources it needs and combines them in team order, so every PE computes the same bits; a
/// second barrier (every source has been read) lets it write `dest`, which may be its source.
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
    let me = t.me();
    // Check the call before anyone waits on us.
    let Some(arith::Shape { es, nbytes, upto }) = arith::shape(dtype, op, kind, nelems, t.size(), me) else {
        return RC_ERROR;
    };
    if kind == REDUCE_ALL {
        let (d, s) = (dest.cast(), src.cast());
        match t.tuning.reduce_form(nbytes, t.size()) {
            // SAFETY: the buffers and the scratch as the caller vouched for them.
            Form::Split => return unsafe { split(c, t, d, s, (nelems, es), (dtype, op)) },
            // SAFETY: as above.
            Form::Tree => return unsafe { tree_reduce(c, t, d, s, (nelems, nbytes), (dtype, op)) },
            Form::Linear => {}
        }
    }
    let (mut acc, mut buf) = (arith::buffer(nbytes), arith::buffer(nbytes));
    // SAFETY: the buffers are valid for the sizes the core checked, and the team's scratch is
    // live for the call (caller).
    unsafe {
        barrier(c, t);
        for j in 0..upto {
            let into = if j == 0 { &mut acc } else { &mut buf };
            if j == me {
                std::ptr::copy_nonoverlapping(src as *const u8, into.as_mut_ptr().cast::<u8>(), nbytes);
            } else if nbytes > 0 {
                (c.getmem)(into.as_mut_ptr().cast(), src, nbytes, t.pe(j));
            }
            if j > 0 {
                arith::combine(dtype, op, &mut acc, &buf, nelems);
            }
        }
        barrier(c, t);
        if upto > 0 {
            std::ptr::copy_nonoverlapping(acc.as_ptr().cast::<u8>(), dest as *mut u8, nbytes);
        }
    }
    RC_OK
}

/// Reduction to all, split: after an entry barrier (every source is ready), member i reads
/// chunk i of every source, in team order, and combines it (the bits the linear form gives);
/// it then puts the result into chunk i of every member's `dest`; a quiet and a barrier
/// complete it. Each member moves about 2 * nbytes instead of n * nbytes. In place is safe
/// without a barrier between the two phases: chunk i of any member's source is read by
/// member i alone, which has read it before it writes that chunk of `dest`. (Overlapping but
/// different arrays are not allowed by the spec.)
unsafe fn split(
    c: &CoreServices,
    t: &Team,
    dest: *mut u8,
    src: *const u8,
    (nelems, es): (usize, usize),
    (dtype, op): (u32, u32),
) -> c_int {
    let (n, me) = (t.size(), t.me());
    let (lo, hi) = arith::chunk(me, n, nelems, es);
    let (off, len) = (lo * es, (hi - lo) * es);
    let (mut acc, mut buf) = (arith::buffer(len), arith::buffer(len));
    // SAFETY: `src` and `dest` hold `nelems` elements on every member (caller), so chunk
    // [off, off + len) lies inside both; the private buffers hold `len` bytes.
    unsafe {
        barrier(c, t);
        if len > 0 {
            for j in 0..n {
                let into = if j == 0 { &mut acc } else { &mut buf };
                let to = into.as_mut_ptr().cast::<u8>();
                if j == me {
                    std::ptr::copy_nonoverlapping(src.add(off), to, len);
                } else {
                    (c.getmem)(to.cast(), src.add(off).cast(), len, t.pe(j));
                }
                if j > 0 {
                    arith::combine(dtype, op, &mut acc, &buf, hi - lo);
                }
            }
            // Start with the next member, so that members do not all write to one at once.
            for k in 1..=n {
                put_to(c, t, (me + k) % n, dest.add(off), acc.as_ptr().cast(), len);
            }
            (c.quiet)();
        }
        barrier(c, t);
    }
    RC_OK
}

/// Reduction to all, tree: the members' partials go up a binomial tree rooted at member 0,
/// mirrored (member `i`'s children are `i - 2^j`, its parent `i + 2^k`), so that a member
/// receives on the word of the sender's distance behind it, as in the broadcast tree: a child
/// leaves its partial in its own `dest` and signals its parent, which gets and combines it.
/// Member 0 then holds the result and broadcasts it down the binomial tree. One member
/// computes the result, so every member gets the same bits (not those of the linear and split
/// forms, whose order differs). 2 ceil(log2 n) steps, no barrier. Every signal on these words
/// follows a fence, so one sender's signals arrive in order and the counts stay exact.
unsafe fn tree_reduce(
    c: &CoreServices,
    t: &Team,
    dest: *mut u8,
    src: *const u8,
    (nelems, nbytes): (usize, usize),
    (dtype, op): (u32, u32),
) -> c_int {
    let (n, me) = (t.size(), t.me());
    let (mut acc, mut buf) = (arith::buffer(nbytes), arith::buffer(nbytes));
    let mirrored = (n - me) % n;
    let (parent, kids) = tree(mirrored, 0, n);
    // SAFETY: `src` and `dest` hold `nbytes` on every member (caller); the private buffers
    // hold `nbytes`; our own scratch words, then the parent's.
    unsafe {
        std::ptr::copy_nonoverlapping(src, acc.as_mut_ptr().cast::<u8>(), nbytes);
        for (j, d) in kids {
            take(c, t, TREE + j, 1);
            let kid = t.pe(partner(me, n - d, n));
            (c.getmem)(buf.as_mut_ptr().cast(), dest.cast(), nbytes, kid);
            arith::combine(dtype, op, &mut acc, &buf, nelems);
        }
        // Lend the partial (or, on member 0, the result) through `dest`: this member's source
        // is read, and nobody writes its `dest` before it has signalled its parent.
        std::ptr::copy_nonoverlapping(acc.as_ptr().cast::<u8>(), dest, nbytes);
        if let Some(k) = parent {
            std::sync::atomic::fence(Ordering::SeqCst);
            (c.fence)();
            (c.atomic_add_u64)(t.word(TREE + k), 1, t.pe(partner(me, 1 << k, n)));
        }
        binomial(c, t, dest, dest, nbytes, 0, true)
    }
}
