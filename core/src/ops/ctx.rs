//! OpenSHMEM contexts (spec 9.4). Each context has its own completion state: `quiet` on one
//! context flushes the spml only if that context issued spml traffic since its last quiet, and
//! a created context gets an spml context of its own (`SpmlOps::ctx_create`; spml ucx gives it
//! a UCX worker), so that its operations complete independently of other contexts'. An spml
//! without that slot, or one that cannot create another context, makes created contexts share
//! the default one: still correct, since a quiet may complete more than its context's
//! operations. PRIVATE and SERIALIZED let the spml skip locking; NOSTORE and session hints
//! only permit optimisations that are not made.

use crate::error::{fail, OrEnd, ShmemError};
use crate::ops::completion;
use crate::ops::handles::{
    index_in, rshmem_ctx_default, rshmem_team_world, Ctx, CtxObj, Slots, Team, CTX_SLOTS, CTX_TABLE,
};
use crate::symm::runtime;
use rshmem_plugin_api::SpmlCtx;
use std::ffi::{c_int, c_long, c_void, CStr};
use std::sync::atomic::{self, AtomicBool, Ordering};
use std::sync::Mutex;

#[inline(always)]
pub fn default() -> Ctx {
    &rshmem_ctx_default
}

const KNOWN_OPTIONS: c_long = 0b111; // SERIALIZED | PRIVATE | NOSTORE

/// `shmem_ctx_create`: 0 and a new context, or nonzero and SHMEM_CTX_INVALID.
///
/// # Safety
/// `out` must be NULL or writable.
pub unsafe fn create(routine: &'static CStr, options: c_long, out: *mut Ctx) -> c_int {
    let rt = runtime::get(routine);
    if out.is_null() {
        fail(routine, ShmemError::NullArg { what: "ctx" });
    }
    if options & !KNOWN_OPTIONS != 0 {
        // SAFETY: checked non-null.
        unsafe { *out = std::ptr::null() };
        return 1;
    }
    let Some(i) = SLOTS.take() else {
        crate::log::log(
            crate::log::WARN,
            &routine.to_string_lossy(),
            &format!("{CTX_SLOTS} contexts are live already: no more can be made (destroy some first)"),
        );
        // SAFETY: checked non-null.
        unsafe { *out = std::ptr::null() };
        return 1;
    };
    let c = &CTX_TABLE[i];
    // The spml context is made at the first operation that needs the spml: on one node every
    // peer is usually mapped, and a UCX worker costs milliseconds to create and to close.
    c.spml.store(rt.spml.default_ctx, Ordering::Relaxed);
    c.spml_dirty.store(false, Ordering::Relaxed);
    c.spml_pending.store(rt.spml.ctx_slots().is_some(), Ordering::Relaxed);
    c.quieting.store(0, Ordering::Relaxed);
    c.options.store(options, Ordering::Relaxed);
    c.team.store(std::ptr::null_mut(), Ordering::Relaxed);
    c.team_size.store(0, Ordering::Relaxed);
    // Last, with release: a thread that sees the context live sees it filled in.
    c.live.store(true, Ordering::Release);
    let p: Ctx = c;
    live(rt).push(p as usize);
    // SAFETY: checked non-null.
    unsafe { *out = p };
    0
}

/// The slots of `CTX_TABLE` free for `create` (see `handles`).
static SLOTS: Slots = Slots::new(CTX_SLOTS);

/// Check that `ctx` may carry an operation: not SHMEM_CTX_INVALID and not destroyed (the
/// spec leaves both undefined; a program that did not check `shmem_ctx_create`'s result would
/// otherwise lose its data silently).
///
/// # Safety
/// None beyond the call's: any value of `ctx` is checked against the context table before
/// anything is read through it (unsafe only for its callers' sake, which pass it on).
#[inline(always)]
pub(crate) unsafe fn check(routine: &'static CStr, ctx: Ctx) {
    // SAFETY: caller.
    unsafe { checked(ctx) }.or_end(routine)
}

/// [`check`], as a value.
///
/// # Safety
/// As [`check`].
#[inline(always)]
pub(crate) unsafe fn checked(ctx: Ctx) -> Result<(), ShmemError> {
    // The default context is never destroyed. Routines without a ctx argument pass it as a
    // constant, so after inlining this test folds away and their hot path loads nothing.
    if std::ptr::eq(ctx, &rshmem_ctx_default) {
        return Ok(());
    }
    if ctx.is_null() || index_in(&CTX_TABLE, ctx).is_none() {
        return Err(not_a_ctx(ctx));
    }
    // SAFETY: an object of the context table (checked).
    if !unsafe { &*ctx }.live.load(Ordering::Acquire) {
        return Err(dead(ctx));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn not_a_ctx(ctx: Ctx) -> ShmemError {
    if ctx.is_null() {
        return dead(ctx);
    }
    ShmemError::NotACtx { addr: ctx as usize }
}

/// The world PE an operation on `ctx` addresses, `ctx` checked live on the way. `pe` is
/// relative to the context's team (the spec's "PE number of the remote PE relative to the team
/// associated with the given ctx"): the world for the default context and those of
/// `shmem_ctx_create`, so only contexts of `shmem_team_create_ctx` translate.
///
/// # Safety
/// As [`check`].
#[inline(always)]
pub(crate) unsafe fn world_pe(ctx: Ctx, pe: c_int) -> Result<c_int, ShmemError> {
    if std::ptr::eq(ctx, &rshmem_ctx_default) {
        return Ok(pe);
    }
    // SAFETY: caller.
    unsafe { checked(ctx) }?;
    // SAFETY: live (checked).
    let c = unsafe { &*ctx };
    let size = c.team_size.load(Ordering::Relaxed);
    if size == 0 {
        return Ok(pe);
    }
    if !(0..size).contains(&pe) {
        return Err(outside_team(pe, size));
    }
    let (start, stride) = (c.team_start.load(Ordering::Relaxed), c.team_stride.load(Ordering::Relaxed));
    // In 64 bits: the team's PEs are world PEs, so the result fits an int.
    Ok((i64::from(start) + i64::from(pe) * i64::from(stride)) as c_int)
}

#[cold]
#[inline(never)]
fn outside_team(pe: c_int, size: c_int) -> ShmemError {
    ShmemError::PeOutsideTeam { pe, size }
}

#[cold]
#[inline(never)]
fn dead(ctx: Ctx) -> ShmemError {
    if ctx.is_null() {
        ShmemError::CtxInvalid
    } else {
        ShmemError::CtxDestroyed { addr: ctx as usize }
    }
}

/// The contexts created and not destroyed yet (`Runtime::ctxs_live`).
fn live(rt: &runtime::Runtime) -> std::sync::MutexGuard<'_, Vec<usize>> {
    rt.ctxs_live.lock().unwrap_or_else(|e| e.into_inner())
}

/// Make `c`'s own spml context (cold path of the first spml operation on a created context);
/// returns the spml context to use. Falls back to sharing the default one when the spml cannot.
#[cold]
pub fn make_spml_ctx(c: &CtxObj) -> SpmlCtx {
    static MAKING: Mutex<()> = Mutex::new(());
    let _g = MAKING.lock().unwrap_or_else(|e| e.into_inner());
    if c.spml_pending.load(Ordering::Acquire) {
        let rt = runtime::get(c"shmem_ctx_create");
        if let Some((spml_create, _)) = rt.spml.ctx_slots() {
            let mut own: SpmlCtx = std::ptr::null_mut();
            // SAFETY: plugin ABI call with a valid out-pointer; the option values are shared.
            if unsafe { spml_create(c.options.load(Ordering::Relaxed), &mut own) } == 0 && !own.is_null() {
                c.spml.store(own, Ordering::Release);
            } else {
                crate::log::log(
                    crate::log::DEBUG,
                    "ctx",
                    "the spml made no context; sharing the default one",
                );
            }
        }
        c.spml_pending.store(false, Ordering::Release);
    }
    c.spml.load(Ordering::Acquire)
}

/// `shmem_ctx_destroy`: completes the context's operations, then releases it.
///
/// # Safety
/// `ctx` must be SHMEM_CTX_INVALID or a context from `create` not destroyed yet.
pub unsafe fn destroy(routine: &'static CStr, ctx: Ctx) {
    if ctx.is_null() {
        return;
    }
    if std::ptr::eq(ctx, default()) {
        fail(routine, ShmemError::CannotDestroy { what: "SHMEM_CTX_DEFAULT" });
    }
    let rt = runtime::get(routine);
    forget(&mut live(rt), ctx as usize).unwrap_or_else(|e| fail(routine, e));
    // SAFETY: a live context (just checked).
    unsafe { quiet(routine, ctx) };
    // SAFETY: as above; the object stays allocated (in the graveyard) after this call.
    let obj = unsafe { &*ctx };
    let spml_ctx = obj.spml.load(Ordering::Acquire);
    if !obj.spml_pending.load(Ordering::Acquire) && spml_ctx != rt.spml.default_ctx {
        if let Some((_, spml_destroy)) = rt.spml.ctx_slots() {
            // SAFETY: a context this spml's ctx_create made, quieted above and released once.
            unsafe { spml_destroy(spml_ctx) };
        }
    }
    obj.live.store(false, Ordering::Release);
    SLOTS.bury(index_in(&CTX_TABLE, ctx).expect("a live context is in the table"));
}

/// Take context `ctx` (an address) off the list of live ones, or say it is not there.
fn forget(live: &mut Vec<usize>, ctx: usize) -> Result<(), ShmemError> {
    let i = live.iter().position(|&p| p == ctx).ok_or(ShmemError::CtxNotLive { addr: ctx })?;
    live.swap_remove(i);
    Ok(())
}

/// Destroy every shareable context created from `team` (as `shmem_team_destroy` must); a
/// private one still live is the program's error (the spec leaves it undefined: its owning
/// thread may be using it).
pub fn destroy_team_contexts(routine: &'static CStr, team: Team) {
    let on_team: Vec<usize> = live(runtime::get(routine))
        .iter()
        .copied()
        // SAFETY: contexts in the live list are live objects.
        .filter(|&p| std::ptr::eq(unsafe { &*(p as Ctx) }.team.load(Ordering::Acquire), team))
        .collect();
    for p in on_team {
        // SAFETY: as above; the list's lock is not held, and only this thread destroys them.
        let c = unsafe { &*(p as Ctx) };
        if c.options.load(Ordering::Relaxed) & SHMEM_CTX_PRIVATE != 0 {
            fail(routine, ShmemError::PrivateCtxOutlivesTeam { addr: p });
        }
        // SAFETY: a live context of this team.
        unsafe { destroy(routine, p as Ctx) };
    }
}

/// At the last finalize: destroy every context the program left. The spec destroys the
/// shareable ones there with their teams; a private one left is the program's error (undefined
/// behaviour) and goes too, so that the library initialized again starts without it.
/// Returns how many there were.
pub fn destroy_all(routine: &'static CStr) -> usize {
    let left: Vec<usize> = live(runtime::get(routine)).clone();
    for &p in &left {
        // SAFETY: a live context; the list's lock is not held, and every PE has finalized.
        unsafe { destroy(routine, p as Ctx) };
    }
    left.len()
}

const SHMEM_CTX_PRIVATE: c_long = 2;

/// `shmem_ctx_get_team`: every context created with `shmem_ctx_create` (and the default one)
/// belongs to the world team.
///
/// # Safety
/// `team` must be NULL or writable.
pub unsafe fn get_team(routine: &'static CStr, ctx: Ctx, team: *mut Team) -> c_int {
    runtime::get(routine);
    if team.is_null() {
        return 1;
    }
    if ctx.is_null() {
        // SAFETY: checked non-null.
        unsafe { *team = std::ptr::null() };
        return 1;
    }
    // SAFETY: a handle from `create` by contract.
    unsafe { check(routine, ctx) };
    // SAFETY: a live context (checked).
    let t = unsafe { &*ctx }.team.load(Ordering::Acquire);
    // SAFETY: checked non-null.
    unsafe { *team = if t.is_null() { &rshmem_team_world } else { t } };
    0
}

/// Session hints (1.6): accepted; they permit batching, which is not done yet.
///
/// # Safety
/// `ctx` must be SHMEM_CTX_INVALID or a handle from `create`.
pub unsafe fn session_start(
    routine: &'static CStr,
    ctx: Ctx,
    _options: c_long,
    _config: *const c_void,
    _mask: c_long,
) {
    runtime::get(routine);
    if !ctx.is_null() {
        // SAFETY: caller.
        unsafe { check(routine, ctx) };
    }
}

/// # Safety
/// `ctx` must be SHMEM_CTX_INVALID or a live context.
pub unsafe fn session_stop(routine: &'static CStr, ctx: Ctx) {
    // Ending a session completes nothing by itself, but flushing pending batches would go here.
    if !ctx.is_null() {
        // SAFETY: caller.
        unsafe { check(routine, ctx) };
    }
}

/// `shmem_quiet`: every put, get and AMO issued on `ctx` is complete and visible.
///
/// # Safety
/// `ctx` must be NULL (SHMEM_CTX_INVALID) or a live context handle.
pub unsafe fn quiet(routine: &'static CStr, ctx: Ctx) {
    // SAFETY: caller.
    unsafe { quiet_with(routine, ctx, None) }
}

/// [`quiet`], answering also for `extra`, a flag set after operations that are not the
/// context's own (the collectives' signals: `Runtime::signals_out`, see
/// `rma::quiet_with_signals`). Whether the spml is flushed follows `completion`'s rule, which
/// holds when threads share the context.
///
/// # Safety
/// As [`quiet`].
pub(crate) unsafe fn quiet_with(routine: &'static CStr, ctx: Ctx, extra: Option<&AtomicBool>) {
    if ctx.is_null() {
        return;
    }
    let rt = runtime::get(routine);
    // SAFETY: caller.
    unsafe { check(routine, ctx) };
    atomic::fence(Ordering::SeqCst);
    // SAFETY: a live context (checked).
    let c = unsafe { &*ctx };
    let extra = extra.map(|f| f as &dyn completion::Flag);
    let rc = completion::quiet(&c.spml_dirty, &c.quieting, extra, 0, || {
        let _blocked = crate::ops::blocked::step(routine, crate::ops::blocked::Blocking::Quiet, -1);
        // SAFETY: plugin ABI call on the context's spml handle.
        unsafe { (rt.spml.quiet)(c.spml.load(Ordering::Relaxed)) }
    });
    if rc != 0 {
        fail(routine, ShmemError::QuietFailed);
    }
}

/// `shmem_pe_quiet`: completion of what `ctx` issued to the PEs of `target_pes`. It completes
/// everything on the context, as the spec allows; the list is still checked, so a bad list
/// is named rather than silently ignored.
///
/// # Safety
/// As [`quiet`]; `target_pes` must be NULL or hold `npes` ints.
pub unsafe fn pe_quiet(routine: &'static CStr, ctx: Ctx, target_pes: *const c_int, npes: usize) {
    if npes == 0 {
        return;
    }
    let rt = runtime::get(routine);
    if target_pes.is_null() {
        fail(routine, ShmemError::NullArray { what: "target_pes", count_arg: "npes", count: npes });
    }
    // SAFETY: non-null, and `npes` ints by the caller's contract.
    let pes = unsafe { std::slice::from_raw_parts(target_pes, npes) };
    check_pes("target_pes", pes, rt.n_pes).unwrap_or_else(|e| fail(routine, e));
    // SAFETY: caller.
    unsafe { quiet(routine, ctx) }
}

/// Every entry of list `what` is a PE of a job of `n_pes`.
fn check_pes(what: &'static str, pes: &[c_int], n_pes: c_int) -> Result<(), ShmemError> {
    match pes.iter().enumerate().find(|(_, &pe)| pe < 0 || pe >= n_pes) {
        Some((index, &pe)) => Err(ShmemError::ListPeOutOfRange { what, index, pe, n_pes }),
        None => Ok(()),
    }
}

/// `shmem_fence`: operations to each PE are delivered in order.
///
/// # Safety
/// `ctx` must be NULL (SHMEM_CTX_INVALID) or a live context handle.
pub unsafe fn fence(routine: &'static CStr, ctx: Ctx) {
    if ctx.is_null() {
        return;
    }
    let rt = runtime::get(routine);
    // SAFETY: caller.
    unsafe { check(routine, ctx) };
    atomic::fence(Ordering::Release);
    // SAFETY: as in `quiet`.
    let c = unsafe { &*ctx };
    if completion::fence_needed(&c.spml_dirty, &c.quieting) {
        // SAFETY: plugin ABI call.
        unsafe { (rt.spml.fence)(c.spml.load(Ordering::Relaxed)) };
    }
}

/// Hand an operation to the spml on `ctx` (`op` gets the spml context), then mark the context
/// as having traffic for its next quiet: after, never before (see `completion`).
///
/// # Safety
/// `ctx` must be a live context.
#[inline(always)]
pub(crate) unsafe fn through_spml<R>(ctx: Ctx, op: impl FnOnce(*mut c_void) -> R) -> R {
    // SAFETY: caller.
    let r = op(unsafe { spml_handle(ctx) });
    // SAFETY: non-null contexts point at live CtxObj values.
    completion::issued(&unsafe { &*ctx }.spml_dirty);
    r
}

/// The spml handle of `ctx`, without marking the context as having traffic to complete.
///
/// # Safety
/// As [`through_spml`].
#[inline(always)]
pub(crate) unsafe fn spml_handle(ctx: Ctx) -> *mut c_void {
    // SAFETY: non-null contexts point at live CtxObj values.
    let c = unsafe { &*ctx };
    if c.spml_pending.load(Ordering::Acquire) {
        return make_spml_ctx(c);
    }
    c.spml.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_leaves_the_live_list_once() {
        let mut live = vec![0x40, 0x80, 0xc0];
        assert_eq!(forget(&mut live, 0x80), Ok(()));
        assert_eq!(live.len(), 2);
        assert_eq!(forget(&mut live, 0x80), Err(ShmemError::CtxNotLive { addr: 0x80 }), "twice");
        assert_eq!(forget(&mut live, 0x1234), Err(ShmemError::CtxNotLive { addr: 0x1234 }), "never made");
        assert_eq!(forget(&mut live, 0x40), Ok(()));
        assert_eq!(forget(&mut live, 0xc0), Ok(()));
        assert!(live.is_empty());
    }

    #[test]
    fn a_list_of_pes_names_its_first_entry_outside_the_job() {
        assert_eq!(check_pes("target_pes", &[0, 3, 1], 4), Ok(()));
        assert_eq!(check_pes("target_pes", &[], 4), Ok(()));
        assert_eq!(
            check_pes("target_pes", &[0, 4, -1], 4),
            Err(ShmemError::ListPeOutOfRange { what: "target_pes", index: 1, pe: 4, n_pes: 4 })
        );
        assert_eq!(
            check_pes("target_pes", &[2, -1], 4),
            Err(ShmemError::ListPeOutOfRange { what: "target_pes", index: 1, pe: -1, n_pes: 4 })
        );
    }
}
