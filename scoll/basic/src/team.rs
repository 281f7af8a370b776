//! Per-team state and the layout of the team's scratch.
//!
//! Every synchronisation word in the scratch counts tokens that senders add; nothing is ever
//! cleared by a plain store, so a fast PE's signal for the next collective cannot be wiped by a
//! slow PE still finishing the previous one. On a team's own scratch the words only grow and
//! the owner tallies what it has consumed (no extra atomic per wait). On an ephemeral team (a
//! legacy call on the user's pSync) the owner consumes its tokens atomically instead, so the
//! pSync is all zeros again once the call has returned everywhere, as the spec promises.

//!
//! The whole layout fits what the core gives a component of a pSync (`SHMEM_*_SYNC_SIZE`), so
//! that the active-set forms can run on it: that bounds the rounds, hence the teams served, to
//! 2^26 members.

use crate::tuning::{self, Tuning};
use rshmem_plugin_api::{CoreServices, TeamDesc, TEAM_EPHEMERAL};
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

/// Most rounds of a dissemination barrier or levels of a binomial tree: teams of up to
/// 2^ROUNDS members are served.
pub const ROUNDS: usize = 26;
/// Barrier: word k counts the arrivals of the member 2^k places behind, one per round.
pub const BARRIER: usize = 0;
/// Binomial broadcast: word k counts the "your data is in place" signals of the member 2^k
/// places behind (a member's parent in a tree rooted anywhere is such a member). Apart from
/// the barrier's words: these signals come after a fence, the barrier's do not, so signals of
/// the two kinds on one word could overtake each other.
pub const TREE: usize = ROUNDS;
/// Linear broadcast: on the root, how many "ready" announcements non-roots have made to it.
pub const READY: usize = 2 * ROUNDS;
/// Linear broadcast: on a non-root, how many "data arrived" signals roots have sent it.
pub const DATA: usize = 2 * ROUNDS + 1;
/// collect's prefix chain: the offset a PE's predecessor computed for it, and its arrival count.
pub const CHAIN_OFF: usize = 2 * ROUNDS + 2;
pub const CHAIN_FLAG: usize = 2 * ROUNDS + 3;
pub const SCRATCH_WORDS: usize = 2 * ROUNDS + 4;
pub const SCRATCH_BYTES: usize = SCRATCH_WORDS * std::mem::size_of::<u64>();
// The core gives the components of an active-set team the pSync's first 504 bytes
// (docs/plugin-abi.md), in blocks of 64: 448 for the first.
const _: () = assert!(SCRATCH_BYTES.div_ceil(64) * 64 <= 504);

/// The component's state for one team: a copy of the core's description.
pub struct Team {
    pub desc: TeamDesc,
    pub ephemeral: bool,
    /// The algorithm choices of this job.
    pub tuning: Tuning,
    /// Tokens consumed per word (non-ephemeral teams). Atomics only so that the state is Sync;
    /// a team's collectives are never concurrent.
    seen: [AtomicU64; SCRATCH_WORDS],
}

impl Team {
    /// The state for `d`, or None when the team cannot be served (no or too little scratch,
    /// or this PE is not a member).
    pub fn new(c: &CoreServices, d: &TeamDesc) -> Option<Team> {
        let aligned = (d.scratch as usize).is_multiple_of(std::mem::align_of::<u64>());
        let member = d.size >= 1 && (0..d.size).contains(&d.my_index);
        let fits = rounds(d.size).count() <= ROUNDS;
        if d.scratch.is_null() || !aligned || d.scratch_len < SCRATCH_BYTES || !member || !fits {
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
            tuning: tuning::get(c),
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

/// `me`'s place in the binomial tree rooted at `root` of a team of `n`: the level k of the
/// link from its parent (the member 2^k places behind), None at the root; and the distances
/// 2^j of its children (the members 2^j places ahead, for every 2^j above its own offset
/// from the root that stays inside the team), the largest (whose subtree is largest) first.
pub fn tree(me: c_int, root: c_int, n: c_int) -> (Option<usize>, impl Iterator<Item = (usize, c_int)>) {
    let rel = (i64::from(me) - i64::from(root)).rem_euclid(i64::from(n));
    let parent = (rel > 0).then(|| 63 - rel.leading_zeros() as usize);
    let first = parent.map_or(0, |k| k + 1);
    let kids = (first..ROUNDS).rev().filter(move |j| rel + (1i64 << j) < i64::from(n));
    (parent, kids.map(|j| (j, 1 << j)))
}
