//! Teams for the active-set collectives (the deprecated pSync forms), cached so that a program
//! calling them on the same active set again and again runs at team speed: the first call on
//! an active set and pSync builds a real team (its own scratch slot, the whole scoll stack, so
//! shm and hier serve it as they serve split teams) and later calls reuse it; the pSync is not
//! touched by those calls at all.
//!
//! The cache key is the active set *and* the pSync's address. The spec lets a pSync be reused
//! only once every earlier call on it has completed on every member, so the calls on one
//! (active set, pSync) pair are serialised across the job and every member makes them in one
//! order, which is what a team needs; calls on one active set with different pSyncs may run
//! at once from several threads, and they get different teams.
//!
//! Members must agree on each decision, or one would run the cached team while another runs
//! the pSync and both would wait forever. So an entry, hit or miss, is only ever added by all
//! members together, in the first call on the pair: on the pSync's ephemeral team they OR
//! their masks of used active-set slots and a few flags into one pSync word of the first
//! member and read the union back. An active set that is exactly the world or the shared team
//! runs on that team unless a member is multithreaded (`SHMEM_THREAD_MULTIPLE`: two threads'
//! calls with different pSyncs would meet on that one team). Otherwise the pair takes the
//! lowest slot free on every member, or, when none is free, a member opted out
//! (`SHMEM_ACTIVE_SET_TEAMS=0`) or was agreeing on another pair at the same time, it runs on
//! the pSync for good. Entries are never removed (a slot could only be given back by all
//! members together), so every member keeps the same entries.

use crate::ops::team::TeamState;
use crate::symm::runtime::Runtime;
use std::collections::HashMap;
use std::ffi::{c_int, c_long, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Scratch slots reserved for active-set teams (after the split teams': `team` owns the pool).
pub use crate::ops::team::ACTIVE_SET_SLOTS as SLOTS;

/// SHMEM_*_SYNC_SIZE (every one is 64 longs in shmem.h).
pub const PSYNC_BYTES: usize = 64 * std::mem::size_of::<c_long>();

/// The pSync's last word is the core's (the slot agreement); the components of an ephemeral
/// team get the words before it.
const AGREE_WORD: usize = PSYNC_BYTES / 8 - 1;
const COMPONENT_BYTES: usize = AGREE_WORD * 8;

/// The agreement's "this member does not cache" bit, above every slot bit.
const NO_CACHE: u64 = 1 << 63;
/// The agreement's "this member is agreeing on another pair at once" bit (threads).
const BUSY: u64 = 1 << 62;
/// The agreement's "this member runs SHMEM_THREAD_MULTIPLE" bit: then calls of one PE on one
/// active set with different pSyncs may run at once, so they cannot share the standing team.
const MULTI: u64 = 1 << 61;
const _: () = assert!(SLOTS < 61, "slot bits must stay below the flags");

type Key = ((c_int, c_int, c_int), usize);

#[derive(Default)]
struct Cache {
    /// Each (active set, pSync) pair seen: its team, or None when it runs on the pSync.
    teams: HashMap<Key, Option<&'static TeamState>>,
    /// Active-set slots this PE's cached teams use.
    used: u64,
}

/// This PE's active-set teams and agreements, one per initialization (`crate::ops::state`).
#[derive(Default)]
pub(crate) struct Agreements {
    /// Agreements under way on this PE. Only one that starts while no other is under way may
    /// take a slot: two at once (other threads, other pSyncs) could otherwise both read the
    /// same slot as free here. They cannot wait for each other instead: each waits for other
    /// PEs too.
    agreeing: AtomicUsize,
    cache: Mutex<Cache>,
}

impl Agreements {
    fn with_cache<R>(&self, f: impl FnOnce(&mut Cache) -> R) -> R {
        f(&mut self.cache.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The team a call runs on: a cached one, or one built on the pSync for this call.
pub enum ActiveSetTeam {
    Cached(&'static TeamState),
    Once(Box<TeamState>),
}

impl std::ops::Deref for ActiveSetTeam {
    type Target = TeamState;
    fn deref(&self) -> &TeamState {
        match self {
            ActiveSetTeam::Cached(t) => t,
            ActiveSetTeam::Once(t) => t,
        }
    }
}

impl ActiveSetTeam {
    /// A word on which the members may agree (`teams::or_over`) before the call: a cached
    /// team's second core word, or, for a team built on the pSync, the pSync's last word, which
    /// is the core's and zero outside an agreement.
    pub fn agreement_word(&self, psync: *mut c_long) -> *mut u64 {
        match self {
            ActiveSetTeam::Cached(t) => t.core_word(1),
            ActiveSetTeam::Once(_) => psync.wrapping_add(AGREE_WORD).cast(),
        }
    }
}

/// The team for a call on active set `triplet` (world start, stride, size) with `psync`, which
/// the caller has checked: a symmetric array of [`PSYNC_BYTES`], and this PE a member.
/// `standing` gives the world or shared team when the active set is exactly its PEs.
pub fn team(
    routine: &'static CStr,
    rt: &Runtime,
    psync: *mut c_long,
    triplet: (c_int, c_int, c_int),
    standing: impl FnOnce() -> Option<&'static TeamState>,
) -> ActiveSetTeam {
    let key = (triplet, psync as usize);
    if let Some(t) = recent(key) {
        return ActiveSetTeam::Cached(t);
    }
    let state = &crate::ops::state::of(rt).active_sets;
    let known = state.with_cache(|c| c.teams.get(&key).copied());
    let once = || {
        let scolls = crate::ops::teams::ephemeral_scolls();
        TeamState::create_ephemeral(rt, psync.cast(), COMPONENT_BYTES, triplet, scolls)
    };
    match known {
        Some(Some(t)) => {
            remember(key, t);
            return ActiveSetTeam::Cached(t);
        }
        Some(None) => return ActiveSetTeam::Once(Box::new(once())),
        None => {}
    }
    // First call on this pair, on every member at once: agree, then build the team (or not).
    let standing = standing();
    let eph = once();
    let (start, stride, size) = triplet;
    let pair = format!("active set ({start}, {stride}, {size}) with pSync {psync:p}");
    let alone = state.agreeing.fetch_add(1, Ordering::AcqRel) == 0;
    let agreed = agree(routine, rt, state, &eph, psync, alone, standing.is_some());
    let slot = match agreed {
        Ok(Choice::Slot(slot)) => {
            // Taken before the count drops, so the next agreement here sees it used.
            state.with_cache(|c| c.used |= 1 << slot);
            slot
        }
        Ok(Choice::Standing) => {
            state.agreeing.fetch_sub(1, Ordering::AcqRel);
            let t = standing.expect("only offered with a standing team");
            crate::log::log(crate::log::DEBUG, "team", &format!("{pair}: runs on the team of the same PEs"));
            state.with_cache(|c| c.teams.insert(key, Some(t)));
            return ActiveSetTeam::Cached(t);
        }
        Err(why) => {
            state.agreeing.fetch_sub(1, Ordering::AcqRel);
            crate::log::log(crate::log::DEBUG, "team", &format!("{pair}: runs on its pSync ({why})"));
            state.with_cache(|c| c.teams.insert(key, None));
            return ActiveSetTeam::Once(Box::new(eph));
        }
    };
    state.agreeing.fetch_sub(1, Ordering::AcqRel);
    crate::log::log(
        crate::log::DEBUG,
        "team",
        &format!("{pair}: cached as a team in active-set slot {slot}"),
    );
    let pool_slot = crate::ops::team::MAX_TEAMS + slot;
    let (base, len) = crate::ops::team::slot_memory(rt, pool_slot);
    // SAFETY: the slot is in the pool and no team of this PE uses it (agreed just now); no
    // member writes to it before the barrier below.
    unsafe { std::ptr::write_bytes(base, 0, len) };
    eph.barrier(routine);
    let t: &'static TeamState =
        Box::leak(Box::new(TeamState::create(routine, rt, pool_slot, triplet, crate::ops::teams::scolls())));
    state.with_cache(|c| c.teams.insert(key, Some(t)));
    ActiveSetTeam::Cached(t)
}

/// What the members agreed a pair runs on (else, why it runs on its pSync).
enum Choice {
    /// The world or shared team of the same PEs: no member is multithreaded, so no two calls
    /// of this PE can run on that team at once.
    Standing,
    /// A team in this active-set slot.
    Slot(usize),
}

thread_local! {
    /// The pairs this thread found teams for last, so that a loop over a few pSyncs takes no
    /// lock (entries are never removed, so a remembered team stays right).
    static RECENT: std::cell::Cell<[(Key, usize); 4]> = const { std::cell::Cell::new([(((0, 0, 0), 0), 0); 4]) };
}

fn recent(key: Key) -> Option<&'static TeamState> {
    let hit = RECENT.with(|r| r.get().iter().find(|e| e.0 == key && e.1 != 0).map(|e| e.1));
    // SAFETY: only leaked (never freed) team states are remembered.
    hit.map(|p| unsafe { &*(p as *const TeamState) })
}

fn remember(key: Key, t: &'static TeamState) {
    RECENT.with(|r| {
        let mut v = r.get();
        v.rotate_right(1);
        v[0] = (key, t as *const TeamState as usize);
        r.set(v);
    });
}

/// The active-set slot every member of `eph` has free (the lowest), or why none is taken: no
/// slot is free on every member, a member does not cache, or a member is agreeing on another
/// pair at once (`alone` false here). Collective over the members; leaves the pSync all zeros.
#[allow(clippy::too_many_arguments)]
fn agree(
    routine: &'static CStr,
    rt: &Runtime,
    state: &Agreements,
    eph: &TeamState,
    psync: *mut c_long,
    alone: bool,
    standing: bool,
) -> Result<Choice, &'static str> {
    let mine = state.with_cache(|c| c.used)
        | if rt.active_set_teams { 0 } else { NO_CACHE }
        | if alone { 0 } else { BUSY }
        | if rt.thread_level() >= crate::ops::THREAD_MULTIPLE { MULTI } else { 0 };
    let word = psync.wrapping_add(AGREE_WORD).cast::<u64>();
    // SAFETY: the pSync's last word is symmetric (checked by the caller), zero by the pSync
    // contract, and no component of the ephemeral team touches it.
    let union = unsafe { crate::ops::teams::or_over(routine, eph, word, mine) };
    if standing && union & MULTI == 0 {
        return Ok(Choice::Standing);
    }
    if union & NO_CACHE != 0 {
        return Err("a member has SHMEM_ACTIVE_SET_TEAMS=0");
    }
    if union & BUSY != 0 {
        return Err("a member was agreeing on another pair at the same time, in another thread");
    }
    (0..SLOTS)
        .find(|s| union & (1 << s) == 0)
        .map(Choice::Slot)
        .ok_or("no active-set slot is free on every member")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agreement_word_is_the_psync_last_and_outside_the_components_share() {
        assert_eq!(AGREE_WORD, 63);
        assert_eq!(COMPONENT_BYTES + 8, PSYNC_BYTES);
    }
}
