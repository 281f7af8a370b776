//! The active-set collectives (spec 9.9, deprecated forms): an active set `PE_start`,
//! `2^logPE_stride`, `PE_size` and the user's pSync array. An active set that is the world
//! or the shared team runs on that team. Any other runs on a team cached per active set and
//! pSync (`active_sets`), or, when no cache slot is left, on an ephemeral team whose scratch
//! is the pSync; the components leave the pSync all zeros (SHMEM_SYNC_VALUE) once the call has
//! returned on every PE, which is what lets the user reuse it. pWrk arrays are not needed:
//! reductions keep their work space locally.

use crate::error::{fail, ShmemError};
use crate::ops::team::TeamState;
use crate::symm::runtime;
use std::ffi::{c_int, c_long, c_void, CStr};

use crate::ops::active_sets::PSYNC_BYTES;

/// The active set `PE_start`, `logPE_stride`, `PE_size` of a job of `n_pes` as a team's
/// (start, stride, size), checked: a set of PEs of the job, with PE `me` in it.
fn active_set(
    (start, log_stride, size): (c_int, c_int, c_int),
    me: c_int,
    n_pes: c_int,
) -> Result<(c_int, c_int, c_int), ShmemError> {
    if !(0..31).contains(&log_stride) || size < 1 || start < 0 {
        return Err(ShmemError::BadActiveSet { start, log_stride, size });
    }
    let stride = 1i64 << log_stride;
    let last = i64::from(start) + stride * (i64::from(size) - 1);
    if last >= i64::from(n_pes) {
        return Err(ShmemError::ActiveSetPastEnd { start, log_stride, size, last, n_pes });
    }
    // Below n_pes, so an int.
    let triplet = (start, stride as c_int, size);
    if crate::ops::team::index_in(me, triplet.0, triplet.1, triplet.2).is_none() {
        return Err(ShmemError::NotInActiveSet { pe: me });
    }
    Ok(triplet)
}

/// Run `f` on the active set's team (this PE must be a member). Under SHMEM_DEBUG the members
/// first compare `same` (what the arguments are, and this PE's values; none for a barrier), as
/// the team forms do: PEs that disagree would hang or corrupt each other's memory.
fn on_active_set<R>(
    routine: &'static CStr,
    (start, log_stride, size): (c_int, c_int, c_int),
    psync: *mut c_long,
    same: (&str, &[i64]),
    f: impl FnOnce(&TeamState) -> R,
) -> R {
    let rt = runtime::get(routine);
    let triplet =
        active_set((start, log_stride, size), rt.my_pe, rt.n_pes).unwrap_or_else(|e| fail(routine, e));
    if psync.is_null() || !rt.segs.contains_range(psync as usize, PSYNC_BYTES) {
        fail(routine, ShmemError::BadPsync);
    }
    let t = crate::ops::active_sets::team(routine, rt, psync, triplet, || standing_team(routine, triplet));
    let (what, args) = same;
    if rt.debug && !args.is_empty() {
        // SAFETY: the word the team's members agree on, zero outside an agreement; a
        // collective on one active set and pSync is not concurrent with another on it.
        unsafe { crate::ops::teams::require_same_args_at(routine, &t, t.agreement_word(psync), what, args) };
    }
    f(&t)
}

/// The world team, or the shared team, when the active set is exactly its PEs. Their members
/// call their collectives in the same order as the active-set ones (an active set's PEs call
/// its collectives in one order, and that order is the program order of each member), so the
/// call can run there (`active_sets` decides), with no team built and the pSync untouched.
fn standing_team(
    routine: &'static CStr,
    (start, stride, size): (c_int, c_int, c_int),
) -> Option<&'static TeamState> {
    let same = |t: &TeamState| {
        t.desc.start == start && t.desc.size == size && (size == 1 || t.desc.stride == stride)
    };
    let world = crate::ops::coll::world(routine);
    if same(world) {
        return Some(world);
    }
    crate::ops::teams::state(routine, &crate::ops::handles::rshmem_team_shared).filter(|t| same(t))
}

/// `shmem_barrier` (`complete`: quiet first) and `shmem_sync`.
pub fn barrier(
    routine: &'static CStr,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    psync: *mut c_long,
    complete: bool,
) {
    if complete {
        // SAFETY: the default context is always live.
        unsafe { crate::ops::ctx::quiet(routine, crate::ops::ctx::default()) };
    } else {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
    on_active_set(routine, (start, log_stride, size), psync, ("", &[]), |t| t.barrier(routine));
}

/// `shmem_broadcast32/64`: as the team broadcast, except that the root's `dest` is left alone.
///
/// # Safety
/// `dest` and `source` must hold `nelems` elements of `size` bytes; `dest` symmetric.
#[allow(clippy::too_many_arguments)]
pub unsafe fn broadcast(
    routine: &'static CStr,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    size: usize,
    root: c_int,
    (start, log_stride, pe_size): (c_int, c_int, c_int),
    psync: *mut c_long,
) {
    let nbytes = crate::ops::coll::total(routine, nelems, size);
    let same = [nelems as i64, root.into()];
    on_active_set(routine, (start, log_stride, pe_size), psync, ("nelems and PE_root", &same), |t| {
        if !(0..t.desc.size).contains(&root) {
            fail(routine, ShmemError::RootOutsideActiveSet { root, size: t.desc.size });
        }
        // SAFETY: the buffers are this function's caller's to vouch for (its # Safety).
        unsafe { t.broadcast_keep_root(routine, dest, source, nbytes, root) };
    });
}

/// `shmem_collect32/64` and `shmem_fcollect32/64` (`fixed`).
///
/// # Safety
/// As for the team forms.
#[allow(clippy::too_many_arguments)]
pub unsafe fn collect(
    routine: &'static CStr,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    size: usize,
    fixed: bool,
    (start, log_stride, pe_size): (c_int, c_int, c_int),
    psync: *mut c_long,
) {
    let nbytes = crate::ops::coll::total(routine, nelems, size);
    // Only fcollect needs equal sizes.
    let same = [nelems as i64];
    let same: (&str, &[i64]) = if fixed { ("nelems", &same) } else { ("", &[]) };
    on_active_set(routine, (start, log_stride, pe_size), psync, same, |t| {
        // SAFETY: as in `broadcast`.
        unsafe { t.collect(routine, dest, source, nbytes, fixed) }
    });
}

/// `shmem_alltoall32/64` (strides 1) and `shmem_alltoalls32/64`.
///
/// # Safety
/// As for the team forms.
#[allow(clippy::too_many_arguments)]
pub unsafe fn alltoall(
    routine: &'static CStr,
    dest: *mut c_void,
    source: *const c_void,
    (dst, sst): (isize, isize),
    nelems: usize,
    size: usize,
    (start, log_stride, pe_size): (c_int, c_int, c_int),
    psync: *mut c_long,
) {
    crate::ops::rma::check_strides(dst, sst, 1).unwrap_or_else(|e| fail(routine, e));
    let same = [nelems as i64, dst as i64, sst as i64];
    on_active_set(routine, (start, log_stride, pe_size), psync, ("nelems and strides", &same), |t| {
        // SAFETY: as in `broadcast`.
        unsafe { t.alltoall(routine, dest, source, size, nelems, dst, sst) }
    });
}

/// `shmem_TYPENAME_OP_to_all`.
///
/// # Safety
/// `source` (symmetric) and `dest` must hold `nreduce` elements.
#[allow(clippy::too_many_arguments)]
pub unsafe fn to_all(
    routine: &'static CStr,
    dest: *mut c_void,
    source: *const c_void,
    nreduce: c_int,
    size: usize,
    dtype: u32,
    op: u32,
    (start, log_stride, pe_size): (c_int, c_int, c_int),
    psync: *mut c_long,
) {
    if nreduce < 0 {
        fail(routine, ShmemError::Negative { what: "nreduce", value: nreduce.into() });
    }
    let n = nreduce as usize;
    crate::ops::coll::check_range(
        routine,
        "source",
        source as usize,
        crate::ops::coll::total(routine, n, size),
    );
    on_active_set(routine, (start, log_stride, pe_size), psync, ("nreduce", &[n as i64]), |t| {
        // SAFETY: the source checked above; dest the caller's to vouch for (# Safety).
        unsafe { t.reduce(routine, dest, source, n, dtype, op, rshmem_plugin_api::REDUCE_ALL) }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_active_set_is_a_set_of_the_jobs_pes_with_the_caller_in_it() {
        assert_eq!(active_set((0, 0, 4), 3, 4), Ok((0, 1, 4)));
        assert_eq!(active_set((1, 1, 3), 5, 8), Ok((1, 2, 3)), "PEs 1, 3, 5");
        assert_eq!(active_set((2, 0, 1), 2, 3), Ok((2, 1, 1)), "one PE");
        for bad in [(0, 31, 2), (0, -1, 2), (0, 0, 0), (-1, 0, 2)] {
            let (start, log_stride, size) = bad;
            assert_eq!(
                active_set(bad, 0, 4),
                Err(ShmemError::BadActiveSet { start, log_stride, size }),
                "{bad:?}"
            );
        }
        assert_eq!(
            active_set((1, 1, 3), 1, 5),
            Err(ShmemError::ActiveSetPastEnd { start: 1, log_stride: 1, size: 3, last: 5, n_pes: 5 })
        );
        // A huge stride does not wrap around to a PE inside the job.
        assert!(matches!(active_set((0, 30, 3), 0, 4), Err(ShmemError::ActiveSetPastEnd { .. })));
        assert_eq!(active_set((1, 1, 3), 2, 8), Err(ShmemError::NotInActiveSet { pe: 2 }), "PE 2 is between");
        assert_eq!(active_set((1, 1, 3), 7, 8), Err(ShmemError::NotInActiveSet { pe: 7 }), "PE 7 is past it");
    }
}
