//! OpenSHMEM contexts (spec 9.4). Each context has its own completion state: `quiet` on one
//! context flushes the spml only if that context issued spml traffic since its last quiet.
//! Created contexts share the spml's default UCX worker for now, which is correct (a quiet may
//! complete more than its own context's operations) but not yet independent in performance;
//! per-context workers are the next step. Options (PRIVATE, SERIALIZED, NOSTORE) and session
//! hints are accepted; they only allow optimisations.

use crate::error::fatal;
use crate::ffi::handles::{rshmem_ctx_default, rshmem_team_world, Ctx, CtxObj, Team};
use crate::runtime;
use std::ffi::{c_int, c_long, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

#[inline(always)]
pub fn default() -> Ctx {
    &rshmem_ctx_default
}

const KNOWN_OPTIONS: c_long = 0b111; // SERIALIZED | PRIVATE | NOSTORE

/// `shmem_ctx_create`: 0 and a new context, or nonzero and SHMEM_CTX_INVALID.
///
/// # Safety
/// `out` must be NULL or writable.
pub unsafe fn create(routine: &CStr, options: c_long, out: *mut Ctx) -> c_int {
    let rt = runtime::get(routine);
    if out.is_null() {
        fatal(routine, "ctx is NULL");
    }
    if options & !KNOWN_OPTIONS != 0 {
        // SAFETY: checked non-null.
        unsafe { *out = std::ptr::null() };
        return 1;
    }
    let obj =
        Box::new(CtxObj { spml: AtomicPtr::new(rt.spml.default_ctx), spml_dirty: AtomicBool::new(false) });
    // SAFETY: checked non-null.
    unsafe { *out = Box::into_raw(obj) };
    0
}

/// `shmem_ctx_destroy`: completes the context's operations, then releases it.
///
/// # Safety
/// `ctx` must be SHMEM_CTX_INVALID or a context from `create` not destroyed yet.
pub unsafe fn destroy(routine: &CStr, ctx: Ctx) {
    if ctx.is_null() {
        return;
    }
    if std::ptr::eq(ctx, default()) {
        fatal(routine, "SHMEM_CTX_DEFAULT cannot be destroyed");
    }
    // SAFETY: a live context by contract.
    unsafe {
        crate::rma::quiet(routine, ctx);
        drop(Box::from_raw(ctx as *mut CtxObj));
    }
}

/// `shmem_ctx_get_team`: every context created with `shmem_ctx_create` (and the default one)
/// belongs to the world team.
///
/// # Safety
/// `team` must be NULL or writable.
pub unsafe fn get_team(routine: &CStr, ctx: Ctx, team: *mut Team) -> c_int {
    runtime::get(routine);
    if team.is_null() {
        return 1;
    }
    if ctx.is_null() {
        // SAFETY: checked non-null.
        unsafe { *team = std::ptr::null() };
        return 1;
    }
    // SAFETY: checked non-null.
    unsafe { *team = &rshmem_team_world };
    0
}

/// Session hints (1.6): accepted; they permit batching, which is not done yet.
pub fn session_start(routine: &CStr, _ctx: Ctx, _options: c_long, _config: *const c_void, _mask: c_long) {
    runtime::get(routine);
}

/// # Safety
/// `ctx` must be SHMEM_CTX_INVALID or a live context.
pub unsafe fn session_stop(routine: &CStr, ctx: Ctx) {
    // Ending a session completes nothing by itself, but flushing pending batches would go here.
    let _ = (routine, ctx, Ordering::Relaxed);
}
