//! Per-team state and the layout of the team's scratch.
//!
//! Every synchronisation word in the scratch counts tokens that senders add; nothing is ever
//! cleared by a plain store, so a fast PE's signal for the next collective cannot be wiped by a
//! slow PE still finishing the previous one. On a team's own scratch the words only grow and
//! the owner tallies what it has consumed (no extra atomic per wait). On an ephemeral team (a
//! legacy call on the user's pSync) the owner consumes its tokens atomically instead, so the
//! pSync is all zeros again once the call has returned everywhere, as the spec promises.

use rshmem_plugin_api::{TeamDesc, TEAM_EPHEMERAL};
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

/// One arrival counter per dissemination round: 32 rounds cover 2^32 PEs.
pub const BARRIER_WORDS: usize = 32;
/// broadcast: on the root, how many "ready" announcements non-roots have made to it.
pub const READY: usize = BARRIER_WORDS;
/// broadcast: on a non-root, how many "data arrived" signals roots have sent it.
pub const DATA: usize = BARRIER_WORDS + 1;
/// collect's prefix chain: the offset a PE's predecessor computed for it, and its arrival count.
pub const CHAIN_OFF: usize = BARRIER_WORDS + 2;
pub const CHAIN_FLAG: usize = BARRIER_WORDS + 3;
pub const SCRATCH_WORDS: usize = BARRIER_WORDS + 4;
pub const SCRATCH_BYTES: usize = SCRATCH_WORDS * std::mem::size_of::<u64>();

/// The component's state for one team: a copy of the core's description.
pub struct Team {
    pub desc: TeamDesc,
    pub ephemeral: bool,
    /// Tokens consumed per word (non-ephemeral teams). Atomics only so that the state is Sync;
    /// a team's collectives are never concurrent.
    seen: [AtomicU64; SCRATCH_WORDS],
}

impl Team {
    /// The state for `d`, or None when the team cannot be served (no or too little scratch,
    /// or this PE is not a member).
    pub fn new(d: &TeamDesc) -> Option<Team> {
        let aligned = (d.scratch as usize).is_multiple_of(std::mem::align_of::<u64>());
        let member = d.size >= 1 && (0..d.size).contains(&d.my_index);
        if d.scratch.is_null() || !aligned || d.scratch_len < SCRATCH_BYTES || !member {
            return None;
        }
        let desc = TeamDesc {
            id: d.id,
            start: d.start,
            stride: d.stride,
            size: d.size,
            my_index: d.my_index,
            scratch: d.scratch,
            scratch_len: d.scratch_len,
            flags: d.flags,
        };
        Some(Team {
            desc,
            ephemeral: d.flags & TEAM_EPHEMERAL != 0,
            seen: std::array::from_fn(|_| AtomicU64::new(0)),
        })
    }

    pub fn size(&self) -> c_int {
        self.desc.size
    }

    pub fn me(&self) -> c_int {
        self.desc.my_index
    }

    /// World PE of team index `i`.
    pub fn pe(&self, i: c_int) -> c_int {
        self.desc.pe_of(i)
    }

    /// Count `count` more tokens consumed on word `k`; the total the word must reach.
    pub fn tally(&self, k: usize, count: u64) -> u64 {
        // Not a read-modify-write: one thread at a time runs a team's collectives, and a locked
        // instruction here would cost as much as the rest of a 2-PE barrier round.
        let v = self.seen[k].load(Ordering::Relaxed) + count;
        self.seen[k].store(v, Ordering::Relaxed);
        v
    }

    /// Symmetric address of scratch word `i` (the same offset on every member).
    pub fn word(&self, i: usize) -> *mut u64 {
        debug_assert!(i < SCRATCH_WORDS);
        (self.desc.scratch as *mut u64).wrapping_add(i)
    }
}

/// Partner distances of the dissemination barrier: 1, 2, 4, ... below `n`, i.e.
/// ceil(log2 n) rounds (none for n = 1).
pub fn rounds(n: c_int) -> impl Iterator<Item = c_int> {
    (0..31).map(|k| 1 << k).take_while(move |d| *d < n)
}

/// Team index `d` places after `me`, wrapping at `n` (in 64 bits: `me + d` may exceed i32).
pub fn partner(me: c_int, d: c_int, n: c_int) -> c_int {
    ((i64::from(me) + i64::from(d)) % i64::from(n)) as c_int
}
