//! scoll "shm": every collective by plain loads and stores on the peers' mapped memory, for
//! teams whose PEs all share this host (and whose memory the core maps: SHMEM_LOCAL_MAP). No
//! transport, no atomics and no allocation on the path (a reduction's private buffer grows
//! once per team). Teams it cannot serve (members on other hosts, more than 64 PEs, the
//! per-call teams of active-set calls that run on the user's pSync) are declined at
//! `enable`, and calls on buffers it cannot reach are declined, the same way on every member,
//! so the next component ("basic") serves them.

mod algo;
mod team;

pub use algo::{FLAT_MAX, PUSH_MAX};
pub use team::{MAX_PES, SCRATCH_BYTES, STAGE_BYTES};

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
fn collective(state: *mut c_void, body: impl FnOnce(&CoreServices, &Team) -> c_int) -> c_int {
    // SAFETY: the core passes back the pointer `enable` returned, until `disable`.
    let t = unsafe { &*(state as *const Team) };
    boundary::or_abort(core(), c"scoll shm: internal error (panic)", |c| body(c, t))
}

unsafe extern "C" fn enable(desc: *const TeamDesc) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        // SAFETY: the core passes NULL or a valid team description.
        let (Some(c), Some(desc)) = (core(), unsafe { desc.as_ref() }) else { return std::ptr::null_mut() };
        Team::new(c, desc).map_or(std::ptr::null_mut(), |t| Box::into_raw(Box::new(t)) as *mut c_void)
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
    collective(state, algo::barrier)
}

unsafe extern "C" fn broadcast(
    state: *mut c_void,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    root: c_int,
) -> c_int {
    // SAFETY: the core checked the buffers for `nbytes`.
    collective(state, |c, t| unsafe { algo::broadcast(c, t, dest, src, nbytes, root, false) })
}

unsafe extern "C" fn broadcast_keep_root(
    state: *mut c_void,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    root: c_int,
) -> c_int {
    // SAFETY: the core checked the buffers for `nbytes`.
    collective(state, |c, t| unsafe { algo::broadcast(c, t, dest, src, nbytes, root, true) })
}

unsafe extern "C" fn collect(
    state: *mut c_void,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    fixed: c_int,
) -> c_int {
    // SAFETY: the core checked the buffers.
    collective(state, |c, t| unsafe { algo::collect(c, t, dest, src, nbytes, fixed != 0) })
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
    // SAFETY: the core checked the buffers.
    collective(state, |c, t| unsafe { algo::alltoall(c, t, dest, src, elem_size, nelems, dst, sst) })
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
    // SAFETY: the core checked the buffers.
    collective(state, |c, t| unsafe { algo::reduce(c, t, dest, src, nelems, dtype, op, kind) })
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
            r.priority = 30;
            r.set_reason("load/store collectives for teams within one host (others fall through to the next component)");
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
    name: "shm",
    description: "load/store collectives on mapped peer memory for teams within one host: flat or dissemination barrier, push broadcast/collect/alltoall, staged and reduce-scatter+allgather reductions",
    params: &[],
    query: query,
    open: open,
}
