//! The team routines (spec 9.5): splitting, destroying, querying, translating, and contexts on
//! teams. A team is always an arithmetic progression of world PEs (`start + i * stride`), since
//! a strided or 2-D split of a progression is one again.
//!
//! Creating teams is collective over the parent team. Its PEs agree on a scratch slot (see
//! `team.rs`) that none of them uses: the union of their used-slot masks, by one OR reduction
//! over the parent ([`or_all`]).

use crate::error::{fail, fatal, ShmemError};
use crate::ops::handles::{index_in, is_predefined, Ctx, Slots, Team, TeamObj, TEAM_SLOTS, TEAM_TABLE};
use crate::ops::team::{TeamState, MAX_TEAMS};
use crate::symm::runtime;
use rshmem_plugin_api::{ScollOps, DT_U64, OP_OR, REDUCE_ALL};
use std::ffi::{c_int, c_long, c_void, CStr};
use std::sync::atomic::Ordering;

/// `shmem_team_config_t` (the C layout in shmem.h).
#[repr(C)]
pub struct TeamConfig {
    pub num_contexts: c_int,
}

/// SHMEM_TEAM_NUM_CONTEXTS.
const TEAM_NUM_CONTEXTS: c_long = 1;

/// The world PEs of `local` (a membership vector) as a team triplet (start, stride, size),
/// when they form an arithmetic progression that includes `me`; otherwise `(me, 1, 1)`, which
/// is still a team whose PEs share memory, and `false`.
pub fn shared_triplet(local: &[bool], me: c_int) -> ((c_int, c_int, c_int), bool) {
    let pes: Vec<c_int> = (0..local.len() as c_int).filter(|&p| local[p as usize]).collect();
    let stride = if pes.len() > 1 { pes[1] - pes[0] } else { 1 };
    let regular = pes.contains(&me) && pes.windows(2).all(|w| w[1] - w[0] == stride);
    if regular {
        ((pes[0], stride, pes.len() as c_int), true)
    } else {
        ((me, 1, 1), false)
    }
}

/// `SHMEM_TEAM_SHARED` at init (collective over the world): the PEs whose heap this PE maps,
/// i.e. those `shmem_ptr` reaches. That is the world itself when every PE is mapped, else a
/// team in slot 1: the teams of different hosts are disjoint, so they can all use that slot,
/// which no split can take afterwards. Mapping is decided the same way on every PE (host
/// identity from the launcher, `SHMEM_LOCAL_MAP`, the sshmem component), so the PEs of a
/// host agree on their team.
pub fn init_shared(
    routine: &'static CStr,
    rt: &runtime::Runtime,
    world: *mut std::ffi::c_void,
) -> *mut std::ffi::c_void {
    let local: Vec<bool> = (0..rt.n_pes)
        .map(|pe| {
            pe == rt.my_pe || !rt.segs.peer(pe as usize, crate::symm::segments::SEG_HEAP).mapped.is_null()
        })
        .collect();
    if local.iter().all(|&l| l) {
        return world;
    }
    host_team(routine, rt, &local, 1, "SHMEM_TEAM_SHARED")
}

/// `SHMEMX_TEAM_NODE` at init (collective over the world): the PEs on this PE's host by the
/// launcher's host identity, mapped or not (under `SHMEM_LOCAL_MAP=0` SHMEM_TEAM_SHARED is this
/// PE alone, the node team is still the host's PEs). It is the world or the shared team when it
/// has their members, else a team in slot 2, disjoint across hosts like the shared team.
pub fn init_node(
    routine: &'static CStr,
    rt: &runtime::Runtime,
    world: *mut std::ffi::c_void,
    shared: *mut std::ffi::c_void,
) -> *mut std::ffi::c_void {
    let local: Vec<bool> = (0..rt.n_pes).map(|pe| pe == rt.my_pe || rt.boot.is_local(pe)).collect();
    if local.iter().all(|&l| l) {
        return world;
    }
    // SAFETY: the shared team's state was created just before and lives for the whole job.
    let s = unsafe { &*(shared as *const TeamState) };
    if shared_triplet(&local, rt.my_pe).0 == (s.desc.start, s.desc.stride, s.desc.size) {
        return shared;
    }
    host_team(routine, rt, &local, 2, "SHMEMX_TEAM_NODE")
}

/// A predefined team of the PEs `local` marks on this host, in `slot` (reserved here).
fn host_team(
    routine: &'static CStr,
    rt: &runtime::Runtime,
    local: &[bool],
    slot: usize,
    name: &str,
) -> *mut c_void {
    let (triplet, regular) = shared_triplet(local, rt.my_pe);
    if !regular {
        crate::log::log(
            crate::log::WARN,
            "init",
            &format!("this host's PEs are not evenly spaced in the world team: {name} holds this PE alone"),
        );
    }
    *registry().used.lock().unwrap_or_else(|e| e.into_inner()) |= 1 << slot;
    // The slot was zeroed with the whole pool at init, and nobody uses the team before
    // init's closing fence.
    let t = TeamState::create(routine, rt, slot, triplet, &registry().scolls);
    Box::into_raw(Box::new(t)) as *mut c_void
}

/// The stacked scoll components, best first.
pub fn scolls() -> &'static [(&'static ScollOps, String)] {
    &registry().scolls
}

/// The scoll components that serve active-set teams (`SCOLL_CAP_EPHEMERAL`), best first.
pub fn ephemeral_scolls() -> &'static [(&'static ScollOps, String)] {
    &registry().ephemeral
}

/// Whether `team` is a valid handle: a predefined team, or a split's team not destroyed yet.
pub fn is_live(team: Team) -> bool {
    if team.is_null() {
        return false;
    }
    if is_predefined(team) {
        return true;
    }
    registry().live.lock().unwrap_or_else(|e| e.into_inner()).contains(&(team as usize))
}

/// How many live teams on this PE are, or descend from, the associated team of space `tag`.
pub fn live_in_space(tag: u64) -> usize {
    let live = registry().live.lock().unwrap_or_else(|e| e.into_inner());
    live.iter()
        .filter(|&&h| {
            // SAFETY: handles in `live` point at TeamObj values not destroyed yet.
            let p = unsafe { &*(h as *const TeamObj) }.state.load(Ordering::Acquire);
            // SAFETY: a live team's state lives until it is destroyed, which takes `live`'s lock.
            !p.is_null() && unsafe { &*(p as *const TeamState) }.space.load(Ordering::Acquire) == tag
        })
        .count()
}

/// The slots of `TEAM_TABLE` free for `split` (see `handles`).
static SLOTS: Slots = Slots::new(TEAM_SLOTS);
const _: () = assert!(TEAM_SLOTS > MAX_TEAMS, "a live split team always finds a handle");

/// The registry of the runtime (live, or finalized and waiting to be initialized again).
fn registry() -> &'static runtime::TeamRegistry {
    &runtime::last().expect("teams are set up at init").teams
}

/// The team behind a handle, or None for SHMEM_TEAM_INVALID. Handles come from C, where a
/// team handle is valid by the caller's contract, like every handle the C API takes.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn state(routine: &'static CStr, team: Team) -> Option<&'static TeamState> {
    if team.is_null() {
        return None;
    }
    if !is_predefined(team) && index_in(&TEAM_TABLE, team).is_none() {
        crate::error::fail(routine, crate::error::ShmemError::NotATeam { addr: team as usize });
    }
    // SAFETY: a predefined team or an object of the team table (checked).
    let p = unsafe { &*team }.state.load(Ordering::Acquire);
    if p.is_null() {
        crate::error::fail(routine, crate::error::ShmemError::TeamDestroyed { addr: team as usize });
    }
    // SAFETY: team states live until `shmem_team_destroy`.
    Some(unsafe { &*(p as *const TeamState) })
}

pub fn my_pe(routine: &'static CStr, team: Team) -> c_int {
    runtime::get(routine);
    state(routine, team).map_or(-1, |t| t.desc.my_index)
}

pub fn n_pes(routine: &'static CStr, team: Team) -> c_int {
    runtime::get(routine);
    state(routine, team).map_or(-1, |t| t.desc.size)
}

pub fn translate_pe(routine: &'static CStr, src: Team, src_pe: c_int, dest: Team) -> c_int {
    runtime::get(routine);
    let (Some(s), Some(d)) = (state(routine, src), state(routine, dest)) else { return -1 };
    if !(0..s.desc.size).contains(&src_pe) {
        return -1;
    }
    d.index_of(s.pe_of(src_pe)).unwrap_or(-1)
}

/// # Safety
/// `config` must be NULL or writable.
pub unsafe fn get_config(routine: &'static CStr, team: Team, mask: c_long, config: *mut TeamConfig) -> c_int {
    runtime::get(routine);
    let Some(t) = state(routine, team) else { return -1 };
    if mask & !TEAM_NUM_CONTEXTS != 0 {
        return -1;
    }
    if mask & TEAM_NUM_CONTEXTS != 0 {
        if config.is_null() {
            return -1;
        }
        // SAFETY: checked non-null; writable by contract.
        unsafe { (*config).num_contexts = t.num_contexts };
    }
    0
}

/// # Safety
/// `dest` must be NULL or symmetric.
pub unsafe fn ptr(routine: &'static CStr, team: Team, dest: *const c_void, pe: c_int) -> *mut c_void {
    let Some(t) = state(routine, team) else { return std::ptr::null_mut() };
    if !(0..t.desc.size).contains(&pe) {
        return std::ptr::null_mut();
    }
    // SAFETY: forwarded.
    unsafe { crate::ops::rma::ptr(routine, dest, t.pe_of(pe)) }
}

/// `shmem_team_sync`: synchronise the team's PEs (no completion of communication).
pub fn sync(routine: &'static CStr, team: Team) -> c_int {
    runtime::get(routine);
    let Some(t) = state(routine, team) else { return -1 };
    std::sync::atomic::fence(Ordering::SeqCst);
    t.barrier(routine);
    0
}

/// The union of the used-slot masks of `parent`'s PEs (collective over `parent`).
fn agree(routine: &'static CStr, parent: &TeamState) -> u64 {
    let mine = *registry().used.lock().unwrap_or_else(|e| e.into_inner());
    or_all(routine, parent, mine)
}

/// The core words of a team's pool slot that [`or_all`] reduces through: source and result.
const OR_SOURCE: usize = 2;
const OR_RESULT: usize = 3;

/// The OR of every member's `mine` (collective over `team`, which has a pool slot: the world,
/// the shared team, a split team or a cached active set): one reduction through the team's
/// components, O(log n) messages per member. [`or_over`], for teams with no slot, has every
/// member apply an atomic OR to the first member and read it back, which puts n of each on
/// that one PE and costs three barriers.
pub fn or_all(routine: &'static CStr, team: &TeamState, mine: u64) -> u64 {
    let (src, dest) = (team.core_word(OR_SOURCE), team.core_word(OR_RESULT));
    // SAFETY: two words of the slot, symmetric, which only this function uses. The last
    // reduction through them has returned on this PE: its source may be reused, and nobody
    // writes the result word before this PE has called the next one (the spec's rules for a
    // reduction's buffers), so it is read here before any other collective on the team.
    unsafe {
        src.write_volatile(mine);
        // Both words are symmetric and 8 bytes long.
        team.reduce(routine, dest.cast(), src.cast(), 1, DT_U64, OP_OR, REDUCE_ALL);
        dest.read_volatile()
    }
}

/// A 32-bit digest of a collective call's arguments (FNV-1a), compared across PEs by
/// [`same_on_all`].
pub fn digest(args: &[i64]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in args.iter().flat_map(|a| a.to_le_bytes()) {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h
}

/// Whether every member of `team` passed the same `digest` (collective over `team`). The OR
/// of the digests and the OR of their complements have a bit in common exactly where two
/// members differ.
pub fn same_on_all(routine: &'static CStr, team: &TeamState, digest: u32) -> bool {
    differ_nowhere(or_all(routine, team, both_ways(digest)))
}

/// A digest and its complement, in one word, for an OR over the members.
fn both_ways(digest: u32) -> u64 {
    u64::from(digest) | (u64::from(!digest) << 32)
}

/// Whether the OR of [`both_ways`] words had every member pass the same digest.
fn differ_nowhere(union: u64) -> bool {
    (union as u32) & ((union >> 32) as u32) == 0
}

/// [`same_on_all`], agreeing on `word`.
///
/// # Safety
/// As for [`or_over`].
pub unsafe fn same_on_all_at(routine: &'static CStr, team: &TeamState, word: *mut u64, digest: u32) -> bool {
    // SAFETY: the caller's.
    differ_nowhere(unsafe { or_over(routine, team, word, both_ways(digest)) })
}

/// End the job unless every member of `team` passed the same arguments to a collective:
/// PEs that disagree would otherwise hang in it or corrupt each other's memory. `args` are
/// this PE's, printed in the message.
pub fn require_same_args(routine: &'static CStr, team: &TeamState, what: &str, args: &[i64]) {
    if !same_on_all(routine, team, digest(args)) {
        differs(routine, team, what, args);
    }
}

/// End the job: the members of `team` passed different `args` (this PE's).
fn differs(routine: &'static CStr, team: &TeamState, what: &str, args: &[i64]) -> ! {
    fatal(
        routine,
        &format!(
            "the PEs of the team passed different {what} (this PE, team index {}: {args:?}); every PE must pass the same",
            team.desc.my_index
        ),
    )
}

/// [`require_same_args`], agreeing on `word` (an active set's pSync word for a team built
/// for one call, which has no core words).
///
/// # Safety
/// As for [`or_over`].
pub unsafe fn require_same_args_at(
    routine: &'static CStr,
    team: &TeamState,
    word: *mut u64,
    what: &str,
    args: &[i64],
) {
    // SAFETY: the caller's.
    if !unsafe { same_on_all_at(routine, team, word, digest(args)) } {
        differs(routine, team, what, args);
    }
}

/// [`require_same_args`] under SHMEM_DEBUG only: for the checks that cost a few barriers per
/// call (collectives' sizes, symmetric allocations).
pub fn debug_require_same_args(routine: &'static CStr, team: &TeamState, what: &str, args: &[i64]) {
    if runtime::get(routine).debug {
        require_same_args(routine, team, what, args);
    }
}

/// The OR of every member's `mine` (collective over `team`): each ORs it into `word` on the
/// team's first PE and all read the union back; the word is zero again on return.
///
/// # Safety
/// `word` must be a symmetric word that is zero on entry and that nothing else uses meanwhile.
pub unsafe fn or_over(routine: &'static CStr, team: &TeamState, word: *mut u64, mine: u64) -> u64 {
    let first = team.pe_of(0);
    let ctx = crate::ops::ctx::default();
    // Everyone has entered, so nobody still reads the word from an earlier use.
    team.barrier(routine);
    // SAFETY: `word` is symmetric (caller); the default context is always live.
    unsafe {
        crate::ops::amo::rmw::<u64>(routine, ctx, word, crate::ops::amo::AMO_OR, mine, first);
        crate::ops::ctx::quiet(routine, ctx);
    }
    team.barrier(routine);
    // SAFETY: as above.
    let union = unsafe { crate::ops::amo::fetch::<u64>(routine, ctx, word, first) };
    team.barrier(routine);
    if team.desc.my_index == 0 {
        // SAFETY: our own copy of the word; every member has read it (the barrier above).
        unsafe { word.write_volatile(0) };
    }
    union
}

/// Create, on every PE of `parent`, the team `layout(parent index)` gives it (world start,
/// stride, size), or none. Teams of different PEs must be disjoint or equal. Returns this PE's
/// team handle (NULL when it is in none).
fn split(
    routine: &'static CStr,
    parent: &TeamState,
    mine: Option<(c_int, c_int, c_int)>,
    config: Option<&TeamConfig>,
) -> Result<Team, String> {
    let rt = runtime::get(routine);
    let union = agree(routine, parent);
    // Every PE of the parent sees the same union, so all give up together.
    let Some(slot) = (0..MAX_TEAMS).find(|s| union & (1u64 << s) == 0) else {
        return Err(format!(
            "no room for another team: {MAX_TEAMS} teams exist already (destroy teams that are no longer needed)"
        ));
    };
    if mine.is_some() {
        let (base, len) = crate::ops::team::slot_memory(rt, slot);
        // SAFETY: the slot is ours and unused; members use it only after the barrier below.
        unsafe { std::ptr::write_bytes(base, 0, len) };
        *registry().used.lock().unwrap_or_else(|e| e.into_inner()) |= 1u64 << slot;
    }
    parent.barrier(routine);
    let Some(triplet) = mine else { return Ok(std::ptr::null()) };
    let mut t = TeamState::create(routine, rt, slot, triplet, &registry().scolls);
    t.num_contexts = config.map_or(0, |c| c.num_contexts);
    // A team split from a space's team (or from one of its descendants) keeps the space alive.
    *t.space.get_mut() = parent.space.load(Ordering::Acquire);
    let state = Box::into_raw(Box::new(t)) as *mut c_void;
    // Never empty: at most MAX_TEAMS split teams are live at once (their scratch slots).
    let i = SLOTS.take().expect("a free team handle");
    let handle = &TEAM_TABLE[i];
    handle.state.store(state, Ordering::Release);
    let handle = handle as *const TeamObj as *mut TeamObj;
    registry().live.lock().unwrap_or_else(|e| e.into_inner()).push(handle as usize);
    Ok(handle)
}

/// A split that cannot be made: the spec's answer is SHMEM_TEAM_INVALID and a nonzero return
/// on every PE of the parent; the reason is logged once (by the parent's first PE).
fn refuse_split(routine: &'static CStr, parent: &TeamState, why: &str) -> c_int {
    if parent.desc.my_index == 0 {
        crate::log::log(
            crate::log::WARN,
            &routine.to_string_lossy(),
            &format!("{why}; the new team is SHMEM_TEAM_INVALID"),
        );
    }
    -1
}

/// The configuration a split's `config` and `config_mask` give: None when the mask selects
/// nothing (the configuration is then not read, and may be NULL).
fn config_of(config: Option<&TeamConfig>, mask: c_long) -> Result<Option<&TeamConfig>, ShmemError> {
    if mask & !TEAM_NUM_CONTEXTS != 0 {
        return Err(ShmemError::UnknownBits {
            what: "config_mask",
            value: mask as u64,
            known: "SHMEM_TEAM_*",
        });
    }
    if mask & TEAM_NUM_CONTEXTS == 0 {
        return Ok(None);
    }
    let c = config.ok_or(ShmemError::NullButSelected {
        what: "config",
        selected_by: "config_mask selects SHMEM_TEAM_NUM_CONTEXTS",
    })?;
    if c.num_contexts < 0 {
        return Err(ShmemError::Negative { what: "config->num_contexts", value: c.num_contexts.into() });
    }
    Ok(Some(c))
}

/// [`config_of`] of a C caller's pointer, or the end of the job naming `routine`.
///
/// # Safety
/// `config` must be NULL or readable for the call's duration ('a).
unsafe fn c_config_of<'a>(
    routine: &'static CStr,
    config: *const TeamConfig,
    mask: c_long,
) -> Option<&'a TeamConfig> {
    // SAFETY: NULL or readable, by the caller's contract.
    config_of(unsafe { config.as_ref() }, mask).unwrap_or_else(|e| fail(routine, e))
}

/// `shmem_team_split_strided`.
///
/// # Safety
/// `config` must be NULL or readable; `new_team` must be writable.
#[allow(clippy::too_many_arguments)]
pub unsafe fn split_strided(
    routine: &'static CStr,
    parent: Team,
    start: c_int,
    stride: c_int,
    size: c_int,
    config: *const TeamConfig,
    mask: c_long,
    new_team: *mut Team,
) -> c_int {
    runtime::get(routine);
    if new_team.is_null() {
        fail(routine, ShmemError::NullArg { what: "new_team" });
    }
    let Some(p) = state(routine, parent) else {
        // SAFETY: checked non-null.
        unsafe { *new_team = std::ptr::null() };
        return -1;
    };
    // Checked before the triplet itself: PEs refusing a triplet others accept would leave
    // those waiting in the split for ever.
    require_same_args(routine, p, "start, stride, size", &[start.into(), stride.into(), size.into()]);
    let n = p.desc.size;
    let last = i64::from(start) + i64::from(stride) * (i64::from(size) - 1);
    let valid = size > 0
        && (0..n).contains(&start)
        && (0..i64::from(n)).contains(&last)
        && (stride != 0 || size == 1);
    // SAFETY: checked non-null; overwritten below on success.
    unsafe { *new_team = std::ptr::null() };
    if !valid {
        let why = format!(
            "the triplet start={start}, stride={stride}, size={size} does not select PEs of the parent team (size {n})"
        );
        return refuse_split(routine, p, &why);
    }
    // SAFETY: NULL or readable, by contract.
    let cfg = unsafe { c_config_of(routine, config, mask) };
    let world = (p.pe_of(start), p.desc.stride * stride, size);
    let me = p.desc.my_index;
    let member = crate::ops::team::index_in(me, start, stride, size).is_some();
    match split(routine, p, member.then_some(world), cfg) {
        Ok(t) => {
            // SAFETY: checked non-null.
            unsafe { *new_team = t };
            0
        }
        Err(why) => refuse_split(routine, p, &why),
    }
}

/// `shmem_team_split_2d`: the parent as a grid `xrange` wide, split into rows (x teams) and
/// columns (y teams).
///
/// # Safety
/// The configs must be NULL or readable; the team pointers must be writable.
#[allow(clippy::too_many_arguments)]
pub unsafe fn split_2d(
    routine: &'static CStr,
    parent: Team,
    xrange: c_int,
    xconfig: *const TeamConfig,
    xmask: c_long,
    xteam: *mut Team,
    yconfig: *const TeamConfig,
    ymask: c_long,
    yteam: *mut Team,
) -> c_int {
    runtime::get(routine);
    if xteam.is_null() {
        fail(routine, ShmemError::NullArg { what: "xaxis_team" });
    }
    if yteam.is_null() {
        fail(routine, ShmemError::NullArg { what: "yaxis_team" });
    }
    let Some(p) = state(routine, parent) else {
        // SAFETY: checked non-null.
        unsafe {
            *xteam = std::ptr::null();
            *yteam = std::ptr::null();
        }
        return -1;
    };
    // SAFETY: checked non-null; overwritten below on success.
    unsafe {
        *xteam = std::ptr::null();
        *yteam = std::ptr::null();
    }
    require_same_args(routine, p, "xrange", &[xrange.into()]);
    if xrange <= 0 {
        return refuse_split(routine, p, &format!("xrange {xrange} must be positive"));
    }
    let n = p.desc.size;
    let xrange = xrange.min(n);
    let me = p.desc.my_index;
    let (x, y) = (me % xrange, me / xrange);
    // Row y holds parent indices y*xrange .. (the last row may be short); column x holds
    // x, x + xrange, ...
    let row_len = xrange.min(n - y * xrange);
    let col_len = (n - x + xrange - 1) / xrange;
    let (pstart, pstride) = (p.desc.start, p.desc.stride);
    let row = (pstart + y * xrange * pstride, pstride, row_len);
    let col = (pstart + x * pstride, pstride * xrange, col_len);
    // SAFETY: NULL or readable, by contract.
    let xcfg = unsafe { c_config_of(routine, xconfig, xmask) };
    let xt = match split(routine, p, Some(row), xcfg) {
        Ok(t) => t,
        Err(why) => return refuse_split(routine, p, &why),
    };
    // SAFETY: NULL or readable, by contract.
    let ycfg = unsafe { c_config_of(routine, yconfig, ymask) };
    let yt = match split(routine, p, Some(col), ycfg) {
        Ok(t) => t,
        Err(why) => {
            // Every PE got a row team: destroying them is collective per row, and all do it.
            // SAFETY: a live team just made by this routine.
            unsafe { destroy(routine, xt) };
            return refuse_split(routine, p, &why);
        }
    };
    // SAFETY: checked non-null.
    unsafe {
        *xteam = xt;
        *yteam = yt;
    }
    0
}

/// `shmem_team_destroy`: collective over the team; its contexts must be destroyed first.
///
/// # Safety
/// `team` must be SHMEM_TEAM_INVALID or a live team from a split.
pub unsafe fn destroy(routine: &'static CStr, team: Team) {
    runtime::get(routine);
    if team.is_null() {
        return;
    }
    if is_predefined(team) {
        fail(
            routine,
            ShmemError::CannotDestroy { what: "SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED and SHMEMX_TEAM_NODE" },
        );
    }
    let Some(t) = state(routine, team) else { return };
    crate::ops::ctx::destroy_team_contexts(routine, team);
    // Nobody may still be in a collective on it, nor write to its scratch afterwards.
    // SAFETY: the default context is always live.
    unsafe { crate::ops::ctx::quiet(routine, crate::ops::ctx::default()) };
    t.barrier(routine);
    let slot = t.slot;
    // Out of the live list first, so that nobody walking it (live_in_space) meets a freed state.
    registry().live.lock().unwrap_or_else(|e| e.into_inner()).retain(|&h| h != team as usize);
    // The handle's object stays allocated, with no state, so that a later use of the handle
    // is reported (`state`) instead of reading freed memory.
    // SAFETY: a team handle from `split`, live (checked by `state`): its state is freed once.
    let st = unsafe { &*team }.state.swap(std::ptr::null_mut(), Ordering::AcqRel);
    // SAFETY: as above.
    drop(unsafe { Box::from_raw(st as *mut TeamState) });
    SLOTS.bury(index_in(&TEAM_TABLE, team).expect("a split team is in the table"));
    *registry().used.lock().unwrap_or_else(|e| e.into_inner()) &= !(1u64 << slot);
}

/// At the last finalize, once every PE has arrived and the contexts are gone
/// ([`crate::ops::ctx::destroy_all`]): release every team the program did not destroy, as the
/// spec has that finalize destroy them. No barrier: no PE is in a collective any more, and
/// every member releases its part alike. Returns how many there were.
pub fn release_all() -> usize {
    let left = std::mem::take(&mut *registry().live.lock().unwrap_or_else(|e| e.into_inner()));
    for &h in &left {
        // SAFETY: handles in `live` are split teams not destroyed yet; each state is freed once.
        let st = unsafe { &*(h as Team) }.state.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if st.is_null() {
            continue;
        }
        // SAFETY: as above.
        let t = unsafe { Box::from_raw(st as *mut TeamState) };
        *registry().used.lock().unwrap_or_else(|e| e.into_inner()) &= !(1u64 << t.slot);
        drop(t);
        SLOTS.bury(index_in(&TEAM_TABLE, h as Team).expect("a split team is in the table"));
    }
    left.len()
}

/// `shmem_team_create_ctx`.
///
/// # Safety
/// `ctx` must be writable.
pub unsafe fn create_ctx(routine: &'static CStr, team: Team, options: c_long, ctx: *mut Ctx) -> c_int {
    runtime::get(routine);
    if ctx.is_null() {
        fail(routine, ShmemError::NullArg { what: "ctx" });
    }
    let Some(t) = state(routine, team) else {
        // SAFETY: checked non-null.
        unsafe { *ctx = std::ptr::null() };
        return -1;
    };
    // SAFETY: forwarded; `ctx` is writable.
    let rc = unsafe { crate::ops::ctx::create(routine, options, ctx) };
    if rc == 0 {
        // SAFETY: a context just created, not shared yet.
        let c = unsafe { &**ctx };
        c.team_start.store(t.desc.start, Ordering::Relaxed);
        c.team_stride.store(t.desc.stride, Ordering::Relaxed);
        c.team_size.store(t.desc.size, Ordering::Relaxed);
        c.team.store(team as *mut TeamObj, Ordering::Release);
    }
    rc
}

#[cfg(test)]
mod tests {
    use super::{config_of, shared_triplet, ShmemError, TeamConfig, TEAM_NUM_CONTEXTS};

    #[test]
    fn a_split_reads_its_configuration_only_where_the_mask_selects_it() {
        let n = |r: Result<Option<&TeamConfig>, ShmemError>| r.map(|c| c.map(|c| c.num_contexts));
        let two = TeamConfig { num_contexts: 2 };
        assert_eq!(n(config_of(None, 0)), Ok(None), "nothing selected: NULL is fine");
        assert_eq!(n(config_of(Some(&two), 0)), Ok(None), "nothing selected: not read");
        assert_eq!(n(config_of(Some(&two), TEAM_NUM_CONTEXTS)), Ok(Some(2)));
        assert_eq!(n(config_of(Some(&TeamConfig { num_contexts: 0 }), TEAM_NUM_CONTEXTS)), Ok(Some(0)));
        assert_eq!(
            n(config_of(None, TEAM_NUM_CONTEXTS)),
            Err(ShmemError::NullButSelected {
                what: "config",
                selected_by: "config_mask selects SHMEM_TEAM_NUM_CONTEXTS"
            })
        );
        assert_eq!(
            n(config_of(Some(&TeamConfig { num_contexts: -1 }), TEAM_NUM_CONTEXTS)),
            Err(ShmemError::Negative { what: "config->num_contexts", value: -1 })
        );
        for mask in [2, 1 | 4, -1] {
            assert!(
                matches!(
                    n(config_of(Some(&two), mask)),
                    Err(ShmemError::UnknownBits { what: "config_mask", .. })
                ),
                "{mask:#x}"
            );
        }
    }

    #[test]
    fn shared_team_of_a_host() {
        // 2 hosts x 2 PEs placed by slot, and by node (round robin).
        assert_eq!(shared_triplet(&[true, true, false, false], 1), ((0, 1, 2), true));
        assert_eq!(shared_triplet(&[false, false, true, true], 2), ((2, 1, 2), true));
        assert_eq!(shared_triplet(&[false, true, false, true], 3), ((1, 2, 2), true));
        // One PE on its host.
        assert_eq!(shared_triplet(&[false, false, true, false], 2), ((2, 1, 1), true));
        // Irregular placement: this PE alone.
        assert_eq!(shared_triplet(&[true, true, false, true], 3), ((3, 1, 1), false));
    }
}
