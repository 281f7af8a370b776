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
//! their masks of used active-set slots (and a "do not cache" bit) into one pSync word of the
//! first member, read the union back, and either take the lowest slot free on all of them or,
//! when none is free or a member opted out (`SHMEM_ACTIVE_SET_TEAMS=0`), record that the pair
//! runs on the pSync for good. Entries are never removed (a slot could only be given back by
//! all members together), so every member keeps the same entries.

use crate::runtime::Runtime;
use crate::team::TeamState;
use std::collections::HashMap;
use std::ffi::{c_int, c_long, CStr};
use std::sync::Mutex;

/// Scratch slots reserved for active-set teams, after the [`crate::team::MAX_TEAMS`] slots
/// of split teams: splits never run short of slots because of this cache.
pub const SLOTS: usize = 16;

/// SHMEM_*_SYNC_SIZE (every one is 64 longs in shmem.h).
pub const PSYNC_BYTES: usize = 64 * std::mem::size_of::<c_long>();

/// The pSync's last word is the core's (the slot agreement); the components of an ephemeral
/// team get the words before it.
const AGREE_WORD: usize = PSYNC_BYTES / 8 - 1;
const COMPONENT_BYTES: usize = AGREE_WORD * 8;

/// The agreement's "this member does not cache" bit, above every slot bit.
const NO_CACHE: u64 = 1 << 63;
const _: () = assert!(SLOTS < 63, "slot bits must stay below NO_CACHE");

type Key = ((c_int, c_int, c_int), usize);

#[derive(Default)]
struct Cache {
    /// Each (active set, pSync) pair seen: its team, or None when it runs on the pSync.
    teams: HashMap<Key, Option<&'static TeamState>>,
    /// Active-set slots this PE's cached teams use.
    used: u64,
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

fn with_cache<R>(f: impl FnOnce(&mut Cache) -> R) -> R {
    let mut g = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(Cache::default))
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

/// The team for a call on active set `triplet` (world start, stride, size) with `psync`, which
/// the caller has checked: a symmetric array of [`PSYNC_BYTES`], and this PE a member.
pub fn team(
    routine: &CStr,
    rt: &Runtime,
    psync: *mut c_long,
    triplet: (c_int, c_int, c_int),
) -> ActiveSetTeam {
    let key = (triplet, psync as usize);
    let known = with_cache(|c| c.teams.get(&key).copied());
    let once = || {
        let scolls = crate::teams::ephemeral_scolls();
        TeamState::create_ephemeral(rt, psync.cast(), COMPONENT_BYTES, triplet, scolls)
    };
    match known {
        Some(Some(t)) => return ActiveSetTeam::Cached(t),
        Some(None) => return ActiveSetTeam::Once(Box::new(once())),
        None => {}
    }
    // First call on this pair, on every member at once: agree, then build the team (or not).
    let eph = once();
    let (start, stride, size) = triplet;
    let pair = format!("active set ({start}, {stride}, {size}) with pSync {psync:p}");
    let slot = match agree(routine, rt, &eph, psync) {
        Ok(slot) => slot,
        Err(why) => {
            crate::log::log(crate::log::DEBUG, "team", &format!("{pair}: runs on its pSync ({why})"));
            with_cache(|c| c.teams.insert(key, None));
            return ActiveSetTeam::Once(Box::new(eph));
        }
    };
    crate::log::log(
        crate::log::DEBUG,
        "team",
        &format!("{pair}: cached as a team in active-set slot {slot}"),
    );
    let pool_slot = crate::team::MAX_TEAMS + slot;
    let (base, len) = crate::team::slot_memory(pool_slot);
    // SAFETY: the slot is in the pool and no team of this PE uses it (agreed just now); no
    // member writes to it before the barrier below.
    unsafe { std::ptr::write_bytes(base, 0, len) };
    eph.barrier(routine);
    let t: &'static TeamState =
        Box::leak(Box::new(TeamState::create(routine, rt, pool_slot, triplet, crate::teams::scolls())));
    with_cache(|c| {
        c.used |= 1 << slot;
        c.teams.insert(key, Some(t));
    });
    ActiveSetTeam::Cached(t)
}

/// The active-set slot every member of `eph` has free (the lowest), or why none is taken: no
/// slot is free on every member, or a member does not cache. Collective over the members;
/// leaves the pSync all zeros.
fn agree(routine: &CStr, rt: &Runtime, eph: &TeamState, psync: *mut c_long) -> Result<usize, &'static str> {
    let cache_here = rt.active_set_teams;
    let mine = with_cache(|c| c.used) | if cache_here { 0 } else { NO_CACHE };
    let word = psync.wrapping_add(AGREE_WORD).cast::<u64>();
    let first = eph.pe_of(0);
    let ctx = crate::ctx::default();
    // Everyone has entered (so the word is still zero from the last use of this pSync).
    eph.barrier(routine);
    // SAFETY: `word` is in the symmetric pSync (checked by the caller); the default context
    // is always live.
    unsafe {
        crate::amo::rmw::<u64>(routine, ctx, word, crate::amo::AMO_OR, mine, first);
        crate::rma::quiet(routine, ctx);
    }
    eph.barrier(routine);
    // SAFETY: as above.
    let union = unsafe { crate::amo::fetch::<u64>(routine, ctx, word, first) };
    eph.barrier(routine);
    if eph.desc.my_index == 0 {
        // SAFETY: our own pSync word; every member has read it (the barrier above), and the
        // pSync may be used again only after this call has returned here.
        unsafe { word.write_volatile(0) };
    }
    if union & NO_CACHE != 0 {
        return Err("a member has SHMEM_ACTIVE_SET_TEAMS=0");
    }
    (0..SLOTS).find(|s| union & (1 << s) == 0).ok_or("no active-set slot is free on every member")
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
