//! Collectives: entry points that check arguments, then run the team's resolved scoll table.

use crate::error::{fail, ShmemError};
use crate::ops::handles::Team;
use crate::ops::team::TeamState;
use crate::symm::runtime;
use std::ffi::{c_int, CStr};
use std::sync::atomic::Ordering;

fn team_state(routine: &'static CStr, team: Team) -> Option<&'static TeamState> {
    crate::ops::teams::state(routine, team)
}

pub fn world(routine: &'static CStr) -> &'static TeamState {
    runtime::get(routine);
    team_state(routine, &crate::ops::handles::rshmem_team_world).expect("world team exists after init")
}

/// `shmem_barrier_all`: complete all communication, then synchronise every PE.
pub fn barrier_all(routine: &'static CStr) {
    // SAFETY: the default context is always live.
    unsafe { crate::ops::ctx::quiet(routine, crate::ops::ctx::default()) };
    world(routine).barrier(routine);
}

/// `shmem_sync_all`: synchronise every PE (no completion of communication).
pub fn sync_all(routine: &'static CStr) {
    std::sync::atomic::fence(Ordering::SeqCst);
    world(routine).barrier(routine);
}

/// `shmem_broadcast*` on a team: `nelems` elements of `size` bytes from `source` on team PE
/// `root` to `dest` on every team PE. Returns 0, or nonzero for an invalid team.
///
/// # Safety
/// `dest` and `source` must be symmetric and hold `nelems` elements.
pub unsafe fn broadcast(
    routine: &'static CStr,
    team: Team,
    dest: *mut u8,
    source: *const u8,
    nelems: usize,
    size: usize,
    root: c_int,
) -> c_int {
    let Some(t) = team_state(routine, team) else { return -1 };
    if root < 0 || root >= t.desc.size {
        crate::error::fail(routine, crate::error::ShmemError::RootOutsideTeam { root, size: t.desc.size });
    }
    let nbytes = total(routine, nelems, size);
    crate::ops::teams::debug_require_same_args(
        routine,
        t,
        "nelems and PE_root",
        &[nelems as i64, root.into()],
    );
    check_range(routine, "dest", dest as usize, nbytes);
    check_range(routine, "source", source as usize, nbytes);
    if nbytes == 0 {
        return 0; // nothing to move (nelems is the same on every PE), so no component is asked
    }
    // SAFETY: both ranges checked against their segments above.
    unsafe { t.broadcast(routine, dest.cast(), source.cast(), nbytes, root) };
    0
}

/// End the job unless `addr..addr+len` is symmetric memory.
pub(crate) fn check_range(routine: &'static CStr, what: &'static str, addr: usize, len: usize) {
    let rt = runtime::get(routine);
    if len > 0 && !rt.segs.contains_range(addr, len) {
        crate::error::fail(routine, crate::error::ShmemError::NotSymmetricRange { what, addr, len });
    }
}

/// `nelems * size`, or end the job on overflow.
pub(crate) fn total(routine: &'static CStr, nelems: usize, size: usize) -> usize {
    crate::ops::rma::transfer_len(nelems, size).unwrap_or_else(|e| crate::error::fail(routine, e))
}

/// `shmem_collect*` / `shmem_fcollect*` (`fixed`): every team PE's `nelems` elements,
/// concatenated in team order into `dest` on every team PE.
///
/// # Safety
/// `source` must hold `nelems` elements; `dest` (symmetric) the concatenation.
pub unsafe fn collect(
    routine: &'static CStr,
    team: Team,
    dest: *mut u8,
    source: *const u8,
    nelems: usize,
    size: usize,
    fixed: bool,
) -> c_int {
    let Some(t) = team_state(routine, team) else { return -1 };
    let nbytes = total(routine, nelems, size);
    if fixed {
        crate::ops::teams::debug_require_same_args(routine, t, "nelems", &[nelems as i64]);
    }
    // collect's total is known only inside the collective; its start is checked here.
    let dest_len = if fixed { total(routine, nbytes, t.desc.size as usize) } else { nbytes.min(1) };
    check_range(routine, "dest", dest as usize, dest_len);
    if fixed && nbytes == 0 {
        return 0; // as in `broadcast`; collect's sizes differ between PEs, so it always runs
    }
    // SAFETY: the source and the start of dest checked above; the collective checks the rest
    // of a variable collect's dest once the total is known.
    unsafe { t.collect(routine, dest.cast(), source.cast(), nbytes, fixed) };
    0
}

/// `shmem_alltoall*` (strides 1) and `shmem_alltoalls*`.
///
/// # Safety
/// `source` and `dest` (symmetric) must hold `team size * nelems` elements at their strides.
#[allow(clippy::too_many_arguments)]
pub unsafe fn alltoall(
    routine: &'static CStr,
    team: Team,
    dest: *mut u8,
    source: *const u8,
    nelems: usize,
    size: usize,
    dst: isize,
    sst: isize,
) -> c_int {
    let Some(t) = team_state(routine, team) else { return -1 };
    crate::ops::rma::check_strides(dst, sst, 1).unwrap_or_else(|e| fail(routine, e));
    crate::ops::teams::debug_require_same_args(
        routine,
        t,
        "nelems and strides",
        &[nelems as i64, dst as i64, sst as i64],
    );
    let count = total(routine, nelems, t.desc.size as usize);
    if count > 0 {
        let span = total(routine, total(routine, count - 1, dst as usize), size);
        check_range(routine, "dest", dest as usize, span + size);
    }
    if count == 0 || size == 0 {
        return 0; // as in `broadcast`
    }
    // SAFETY: both spans checked against their segments above.
    unsafe { t.alltoall(routine, dest.cast(), source.cast(), size, nelems, dst, sst) };
    0
}

/// `shmem_TYPENAME_OP_reduce` and the scans: `kind` is REDUCE_ALL, REDUCE_INSCAN or
/// REDUCE_EXSCAN, `dtype` and `op` the plugin ABI's codes.
///
/// # Safety
/// `source` (symmetric) and `dest` must hold `nelems` elements.
#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce(
    routine: &'static CStr,
    team: Team,
    dest: *mut u8,
    source: *const u8,
    nelems: usize,
    size: usize,
    dtype: u32,
    op: u32,
    kind: u32,
) -> c_int {
    let Some(t) = team_state(routine, team) else { return -1 };
    let nbytes = total(routine, nelems, size);
    crate::ops::teams::debug_require_same_args(routine, t, "nelems", &[nelems as i64]);
    check_range(routine, "source", source as usize, nbytes);
    check_overlap(dest as usize, source as usize, nbytes).unwrap_or_else(|e| fail(routine, e));
    if nbytes == 0 {
        return 0; // as in `broadcast`
    }
    // SAFETY: the source checked against its segment above, dest held by the caller's contract.
    unsafe { t.reduce(routine, dest.cast(), source.cast(), nelems, dtype, op, kind) };
    0
}

/// `dest` and `source` ranges of `nbytes` each: the same range, or apart.
pub(crate) fn check_overlap(dest: usize, source: usize, nbytes: usize) -> Result<(), ShmemError> {
    if dest != source && dest < source.saturating_add(nbytes) && source < dest.saturating_add(nbytes) {
        return Err(ShmemError::Overlap { what: "dest and source" });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_the_same_or_apart() {
        assert_eq!(check_overlap(0x1000, 0x1000, 64), Ok(()), "the same array (in place)");
        assert_eq!(check_overlap(0x1000, 0x1040, 64), Ok(()), "adjacent");
        assert_eq!(check_overlap(0x1040, 0x1000, 64), Ok(()), "adjacent, the other way");
        assert_eq!(check_overlap(0x1000, 0x1008, 0), Ok(()), "nothing moves");
        let overlap = Err(ShmemError::Overlap { what: "dest and source" });
        assert_eq!(check_overlap(0x1000, 0x103f, 64), overlap);
        assert_eq!(check_overlap(0x103f, 0x1000, 64), overlap);
        assert_eq!(check_overlap(usize::MAX - 8, usize::MAX - 16, 64), overlap, "no wrap at the top");
    }
}
