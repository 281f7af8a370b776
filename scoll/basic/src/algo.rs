//! The algorithms, written only against the core's one-sided services (atomic add, wait,
//! put, fence, quiet) so that they work over any spml and any team shape.

use crate::team::{partner, rounds, Team, CHAIN_FLAG, CHAIN_OFF, DATA, READY};
use rshmem_plugin_api::{arith, CoreServices, CMP_GE, RC_ERROR, RC_OK};
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
            (c.atomic_add_u64)(t.word(k), 1, to);
            take(c, t, k, 1);
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

/// Broadcast: non-roots announce themselves to the root, which puts to each and then signals
/// it. With `keep_root`, the root's own `dest` is not written.
pub unsafe fn broadcast(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    root: c_int,
    keep_root: bool,
) -> c_int {
    let (n, me) = (t.size(), t.me());
    if !(0..n).contains(&root) {
        return RC_ERROR;
    }
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

/// fcollect (`fixed`) and collect. An entry barrier makes every `dest` free to write; collect
/// learns its offset from a chain along the team (each PE passes its successor the running
/// total); everyone then puts its block to every PE, and a quiet and barrier complete it.
pub unsafe fn collect(
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

/// alltoall(s): the same shape of entry barrier, puts (contiguous, or element by element when
/// strided), quiet and barrier.
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
    // SAFETY: the buffers are valid for the sizes the core checked, and the team's scratch is
    // live for the call (caller).
    unsafe {
        barrier(c, t);
        for k in 1..=n {
            let j = (me + k) % n;
            let d = (dest as *mut u8).wrapping_add(me as usize * nelems * dst * es);
            let s = (src as *const u8).wrapping_add(j as usize * nelems * sst * es);
            if dst == 1 && sst == 1 {
                put_to(c, t, j, d, s, nelems * es);
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
    let Some(arith::Shape { nbytes, upto, .. }) = arith::shape(dtype, op, kind, nelems, t.size(), me) else {
        return RC_ERROR;
    };
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
