//! The algorithms, written only against the core's one-sided services (atomic add, wait,
//! put, fence, quiet) so that they work over any spml and any team shape.

use crate::team::{partner, rounds, Team, DATA, READY};
use rshmem_plugin_api::{CoreServices, CMP_GE, RC_ERROR, RC_OK};
use std::ffi::{c_int, c_void};

/// Dissemination barrier: in round k, signal the PE 2^k places ahead and wait for the signal
/// from the PE 2^k places behind. After ceil(log2 n) rounds every PE has heard, directly or
/// not, from every other. Round counters count barriers, so "my round-k counter has reached
/// this barrier's epoch" means the signal for this barrier arrived (a later one may have too,
/// which is fine: its sender had finished this barrier).
///
/// # Safety
/// `t`'s scratch must be the team's symmetric scratch and `c` the core's live table.
pub unsafe fn barrier(c: &CoreServices, t: &Team) -> c_int {
    let (n, me) = (t.size(), t.me());
    let epoch = t.next_barrier();
    for (k, d) in rounds(n).enumerate() {
        let to = t.pe(partner(me, d, n));
        // SAFETY: the round-k word is symmetric scratch of this team, on a member PE.
        unsafe {
            (c.atomic_add_u64)(t.word(k), 1, to);
            (c.wait_until_u64)(t.word(k), CMP_GE, epoch);
        }
    }
    RC_OK
}

/// Linear broadcast with a ready/data handshake. The root must not overwrite a non-root's
/// `dest` while that PE may still be reading it from before the call, so every non-root first
/// announces itself on the root's READY word; once all have, the root puts the data to each,
/// fences (the puts land before the signals), and bumps each one's DATA word.
///
/// # Safety
/// `dest` and `src` must be symmetric addresses valid for `nbytes` on every member (the core
/// checks them); `t` and `c` as for [`barrier`].
pub unsafe fn broadcast(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    root: c_int,
) -> c_int {
    let (n, me) = (t.size(), t.me());
    if !(0..n).contains(&root) {
        return RC_ERROR;
    }
    let copy_local = nbytes > 0 && !std::ptr::eq(dest, src);
    if me != root {
        // SAFETY: READY is symmetric scratch on the root; DATA is this PE's own scratch.
        unsafe {
            (c.atomic_add_u64)(t.word(READY), 1, t.pe(root));
            (c.wait_until_u64)(t.word(DATA), CMP_GE, t.next_data());
        }
        return RC_OK;
    }
    // SAFETY: our own READY word; then remote and local copies of the caller's symmetric
    // buffers; then DATA words on member PEs.
    unsafe {
        if n > 1 {
            (c.wait_until_u64)(t.word(READY), CMP_GE, t.next_ready());
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
