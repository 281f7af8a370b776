//! Collectives: entry points that check arguments, then run the team's resolved scoll table.

use crate::error::fatal;
use crate::ffi::handles::Team;
use crate::runtime;
use crate::team::TeamState;
use std::ffi::{c_int, CStr};
use std::sync::atomic::Ordering;

fn team_state(routine: &CStr, team: Team) -> Option<&'static TeamState> {
    crate::teams::state(routine, team)
}

pub fn world(routine: &CStr) -> &'static TeamState {
    runtime::get(routine);
    team_state(routine, &crate::ffi::handles::rshmem_team_world).expect("world team exists after init")
}

/// `shmem_barrier_all`: complete all communication, then synchronise every PE.
pub fn barrier_all(routine: &CStr) {
    // SAFETY: the default context is always live.
    unsafe { crate::rma::quiet(routine, crate::ctx::default()) };
    world(routine).barrier(routine);
}

/// `shmem_sync_all`: synchronise every PE (no completion of communication).
pub fn sync_all(routine: &CStr) {
    std::sync::atomic::fence(Ordering::SeqCst);
    world(routine).barrier(routine);
}

/// `shmem_broadcast*` on a team: `nelems` elements of `size` bytes from `source` on team PE
/// `root` to `dest` on every team PE. Returns 0, or nonzero for an invalid team.
///
/// # Safety
/// `dest` and `source` must be symmetric and hold `nelems` elements.
pub unsafe fn broadcast(
    routine: &CStr,
    team: Team,
    dest: *mut u8,
    source: *const u8,
    nelems: usize,
    size: usize,
    root: c_int,
) -> c_int {
    let rt = runtime::get(routine);
    let Some(t) = team_state(routine, team) else { return -1 };
    if root < 0 || root >= t.desc.size {
        fatal(routine, &format!("PE_root {root} is not in the team (size {})", t.desc.size));
    }
    let Some(nbytes) = nelems.checked_mul(size) else {
        fatal(routine, "nelems times the element size overflows size_t")
    };
    for (what, addr) in [("dest", dest as usize), ("source", source as usize)] {
        if nbytes > 0 && !rt.segs.contains_range(addr, nbytes) {
            fatal(routine, &format!("{what} {addr:#x}+{nbytes} is not symmetric memory"));
        }
    }
    t.broadcast(routine, dest.cast(), source.cast(), nbytes, root);
    0
}
