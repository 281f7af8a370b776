//! Per-team state and the layout of the team's scratch.
//!
//! Every synchronisation word in the scratch only ever grows (it counts events since the team
//! was created) and each PE remembers how many events it has consumed. Nothing is ever reset,
//! which removes the classic race where a fast PE's signal for the next collective is wiped by
//! a slow PE still clearing the flag of the previous one.

use rshmem_plugin_api::TeamDesc;
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

/// The component's state for one team: a copy of the core's description plus how far this PE
/// has counted on each word. Atomics only so that the state is Sync; a team's collectives are
/// never concurrent.
pub struct Team {
    pub desc: TeamDesc,
    barriers: AtomicU64,
    ready_seen: AtomicU64,
    data_seen: AtomicU64,
    chain_seen: AtomicU64,
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
        };
        Some(Team {
            desc,
            barriers: AtomicU64::new(0),
            ready_seen: AtomicU64::new(0),
            data_seen: AtomicU64::new(0),
            chain_seen: AtomicU64::new(0),
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

    /// Symmetric address of scratch word `i` (the same offset on every member).
    pub fn word(&self, i: usize) -> *mut u64 {
        debug_assert!(i < SCRATCH_WORDS);
        (self.desc.scratch as *mut u64).wrapping_add(i)
    }

    /// The epoch of the barrier being entered: 1 for the first.
    pub fn next_barrier(&self) -> u64 {
        self.barriers.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// As a root: the READY count meaning every non-root has announced this broadcast.
    pub fn next_ready(&self) -> u64 {
        let n = (self.size() - 1) as u64;
        self.ready_seen.fetch_add(n, Ordering::Relaxed) + n
    }

    /// As a non-root: the DATA count meaning this broadcast's data has arrived.
    pub fn next_chain(&self) -> u64 {
        self.chain_seen.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn next_data(&self) -> u64 {
        self.data_seen.fetch_add(1, Ordering::Relaxed) + 1
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
