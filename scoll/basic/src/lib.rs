//! scoll "basic": barrier and broadcast correct for any team size and shape, built only on the
//! core's one-sided services, so they work over any spml. This is the fallback every team can
//! count on; faster components may take slots over.

mod algo;
mod team;

pub use team::{partner, rounds, SCRATCH_BYTES};

use rshmem_plugin_api::boundary::{self, guard};
use rshmem_plugin_api::{CoreServices, Framework, QueryResult, ScollOps, TeamDesc};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};
use team::Team;

/// The core's services, kept from `open` (valid until the job ends).
static CORE: AtomicPtr<CoreServices> = AtomicPtr::new(std::ptr::null_mut());

fn core() -> Option<&'static CoreServices> {
    // SAFETY: NULL, or the table the core passed to `open`, which lives until the job ends.
    unsafe { CORE.load(Ordering::Acquire).as_ref() }
}

/// A collective: a panic ends the job (see `boundary::or_abort`).
fn collective(body: impl FnOnce(&CoreServices) -> c_int) -> c_int {
    boundary::or_abort(core(), c"scoll basic: internal error (panic)", body)
}

fn team<'a>(state: *mut c_void) -> &'a Team {
    // SAFETY: the core passes back the pointer `enable` returned, until `disable`.
    unsafe { &*(state as *const Team) }
}

unsafe extern "C" fn enable(desc: *const TeamDesc) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        // SAFETY: the core passes NULL or a valid team description.
        let Some(desc) = (unsafe { desc.as_ref() }) else { return std::ptr::null_mut() };
        Team::new(desc).map_or(std::ptr::null_mut(), |t| Box::into_raw(Box::new(t)) as *mut c_void)
    })
}

unsafe extern "C" fn disable(state: *mut c_void) {
    guard((), || {
        if !state.is_null() {
            // SAFETY: `state` came from `enable` and the core does not use it after this.
            drop(unsafe { Box::from_raw(state as *mut Team) });
        }
    })
}

unsafe extern "C" fn barrier(state: *mut c_void) -> c_int {
    // SAFETY: the team's own state and the core's table.
    // SAFETY: the core passes buffers valid for the sizes it checked, and this team's state.
    collective(|c| unsafe { algo::barrier(c, team(state)) })
}

unsafe extern "C" fn broadcast(
    state: *mut c_void,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    root: c_int,
) -> c_int {
    // SAFETY: the core checked that dest and src are symmetric and large enough.
    // SAFETY: the core passes buffers valid for the sizes it checked, and this team's state.
    collective(|c| unsafe { algo::broadcast(c, team(state), dest, src, nbytes, root, false) })
}

unsafe extern "C" fn broadcast_keep_root(
    state: *mut c_void,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    root: c_int,
) -> c_int {
    // SAFETY: the core passes buffers valid for the sizes it checked, and this team's state.
    collective(|c| unsafe { algo::broadcast(c, team(state), dest, src, nbytes, root, true) })
}

unsafe extern "C" fn collect(
    state: *mut c_void,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    fixed: c_int,
) -> c_int {
    // SAFETY: the core passes buffers valid for the sizes it checked, and this team's state.
    collective(|c| unsafe { algo::collect(c, team(state), dest, src, nbytes, fixed != 0) })
}

unsafe extern "C" fn alltoall(
    state: *mut c_void,
    dest: *mut c_void,
    src: *const c_void,
    elem_size: usize,
    nelems: usize,
    dst: isize,
    sst: isize,
) -> c_int {
    // SAFETY: the core passes buffers valid for the sizes it checked, and this team's state.
    collective(|c| unsafe { algo::alltoall(c, team(state), dest, src, elem_size, nelems, dst, sst) })
}

unsafe extern "C" fn reduce(
    state: *mut c_void,
    dest: *mut c_void,
    src: *const c_void,
    nelems: usize,
    dtype: u32,
    op: u32,
    kind: u32,
) -> c_int {
    // SAFETY: the core passes buffers valid for the sizes it checked, and this team's state.
    collective(|c| unsafe { algo::reduce(c, team(state), dest, src, nelems, dtype, op, kind) })
}

static OPS: ScollOps = ScollOps {
    struct_size: std::mem::size_of::<ScollOps>(),
    scratch_needed: SCRATCH_BYTES,
    enable,
    disable,
    barrier: Some(barrier),
    broadcast: Some(broadcast),
    collect: Some(collect),
    alltoall: Some(alltoall),
    reduce: Some(reduce),
    broadcast_keep_root: Some(broadcast_keep_root),
};

unsafe extern "C" fn query(_core: *const CoreServices, result: *mut QueryResult) {
    guard((), || {
        // SAFETY: the core passes NULL or a valid result pointer.
        if let Some(r) = unsafe { result.as_mut() } {
            r.available = 1;
            r.priority = 10;
            r.set_reason("portable algorithms over the core's one-sided services");
        }
    })
}

unsafe extern "C" fn open(core: *const CoreServices) -> *const c_void {
    guard(std::ptr::null(), || {
        CORE.store(core as *mut _, Ordering::Release);
        &OPS as *const ScollOps as *const c_void
    })
}

rshmem_plugin_api::export_plugin! {
    framework: Framework::Scoll,
    name: "basic",
    description: "dissemination barrier, flag-synchronised linear broadcast, linear collect/alltoall, get-based reductions and scans; any team size",
    params: &[],
    query: query,
    open: open,
}

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;
