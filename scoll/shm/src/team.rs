//! Per-team state: the peers' mapped scratch, the call counter, and the signalling words.
//!
//! Every collective call on a team has a number `e` (1, 2, ...), the same on every member,
//! since members call a team's collectives in the same order. Synchronisation is by
//! per-sender words: word `j` of an array in PE `i`'s scratch is written only by team member
//! `j`, only with call numbers, which only grow. "Word j >= e" therefore means that `j` has
//! done, in call `e` or a later one, whatever it writes that word after; no word is ever reset,
//! so a fast PE already in the next call cannot erase a signal a slow one has not seen yet,
//! and there is no read-modify-write anywhere.
//!
//! Data moves by plain loads and stores through the peers' mappings, followed by a release
//! store of the signal word; readers acquire the word before reading the data.

use rshmem_plugin_api::{CoreServices, TeamDesc, CMP_GE, TEAM_EPHEMERAL, TEAM_MAPPED};
use std::cell::{Cell, UnsafeCell};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{fence, AtomicU64, Ordering};

use crate::layout::{MAX_PES, SCRATCH_BYTES, SIZE, STAGE, STAGE_BYTES};

pub struct Team {
    pub n: c_int,
    pub me: c_int,
    /// The job's thresholds (the same on every PE: the core checks).
    pub tuning: crate::tuning::Tuning,
    /// World PE of each member.
    pes: Vec<c_int>,
    /// Each member's scratch, as mapped here (`scratch[me]` is this PE's own).
    scratch: Vec<*mut u64>,
    /// The number of the last call.
    epoch: Cell<u64>,
    /// The call that last filled each staging buffer.
    staged: [Cell<u64>; 2],
    /// Private accumulation space; grown once to the largest size a call needed.
    buf: UnsafeCell<Vec<u128>>,
}

impl Team {
    /// The state for `d`, or None when the component cannot serve the team: not every member
    /// maps every member's memory (`TEAM_MAPPED`, which the core computes alike on all
    /// members), an active-set team (its scratch is the user's pSync, which must be left
    /// zeroed), too large, or too little scratch. Every member reaches the same answer.
    pub fn new(c: &CoreServices, d: &TeamDesc) -> Option<Team> {
        let n = usize::try_from(d.size).ok()?;
        let aligned = (d.scratch as usize).is_multiple_of(64);
        let mapped = d.flags & TEAM_MAPPED != 0 && d.flags & TEAM_EPHEMERAL == 0;
        if !mapped || n == 0 || n > MAX_PES || !aligned || d.scratch_len < SCRATCH_BYTES {
            return None;
        }
        if !(0..d.size).contains(&d.my_index) || d.scratch.is_null() {
            return None;
        }
        let pes: Vec<c_int> = (0..d.size).map(|i| d.pe_of(i)).collect();
        let mut scratch = Vec::with_capacity(n);
        for &pe in &pes {
            // SAFETY: core service; the scratch is symmetric memory of this team.
            let p = unsafe { (c.ptr)(d.scratch, pe) } as *mut u64;
            if p.is_null() {
                return None;
            }
            scratch.push(p);
        }
        Some(Team {
            n: d.size,
            me: d.my_index,
            tuning: crate::tuning::get(c),
            pes,
            scratch,
            epoch: Cell::new(0),
            staged: [Cell::new(0), Cell::new(0)],
            buf: UnsafeCell::new(Vec::new()),
        })
    }

    /// Start a call: its number.
    pub fn next(&self) -> u64 {
        let e = self.epoch.get() + 1;
        self.epoch.set(e);
        e
    }

    /// Member indices other than this PE, starting after it (so that members do not all
    /// address the same peer first).
    pub fn others(&self) -> impl Iterator<Item = c_int> + '_ {
        (1..self.n).map(move |k| (self.me + k) % self.n)
    }

    /// Word `arr + j` of member `i`'s scratch.
    fn word(&self, i: c_int, arr: usize, j: c_int) -> &AtomicU64 {
        // SAFETY: `scratch[i]` maps member i's scratch, SCRATCH_BYTES long and 64-aligned;
        // `arr + j` < STAGE words; peers access it only atomically.
        unsafe { AtomicU64::from_ptr(self.scratch[i as usize].add(arr + j as usize)) }
    }

    /// Tell member `to` that this PE reached `e` on array `arr`.
    pub fn signal(&self, to: c_int, arr: usize, e: u64) {
        self.word(to, arr, self.me).store(e, Ordering::Release);
    }

    /// Signal every other member.
    pub fn signal_all(&self, arr: usize, e: u64) {
        for j in self.others() {
            self.signal(j, arr, e);
        }
    }

    /// Wait until member `from` has reached `e` on array `arr` (its word in this PE's
    /// scratch). One look here, then the core's wait, which spins or, when PEs outnumber the
    /// cores, yields at once (a spin there only delays the PE that would signal).
    pub fn wait(&self, c: &CoreServices, arr: usize, from: c_int, e: u64) {
        let w = self.word(self.me, arr, from);
        if w.load(Ordering::Acquire) >= e {
            return;
        }
        // SAFETY: core service on an aligned word of this PE's symmetric scratch.
        unsafe { (c.wait_until_u64)(w.as_ptr(), CMP_GE, e) };
        fence(Ordering::Acquire);
    }

    /// Wait for every other member on `arr`.
    pub fn wait_all(&self, c: &CoreServices, arr: usize, e: u64) {
        for j in self.others() {
            self.wait(c, arr, j, e);
        }
    }

    /// The byte count member `j` wrote to this PE's SIZE array.
    pub fn size_of(&self, j: c_int) -> u64 {
        self.word(self.me, SIZE, j).load(Ordering::Acquire)
    }

    /// Write this PE's byte count into member `to`'s SIZE array.
    pub fn tell_size(&self, to: c_int, v: u64) {
        self.word(to, SIZE, self.me).store(v, Ordering::Relaxed);
    }

    /// Staging buffer `p` (0 or 1) of member `i`.
    pub fn stage(&self, i: c_int, p: usize) -> *mut u8 {
        (self.scratch[i as usize] as *mut u8).wrapping_add(STAGE * 8 + p * STAGE_BYTES)
    }

    /// The call that last filled this PE's staging buffer `p`, replaced by `e`.
    pub fn restage(&self, p: usize, e: u64) -> u64 {
        self.staged[p].replace(e)
    }

    /// Member `j`'s address of the symmetric `addr`, or None where it is not mapped here.
    pub fn peer(&self, c: &CoreServices, addr: *const c_void, j: c_int) -> Option<*mut u8> {
        if j == self.me {
            return Some(addr as *mut u8);
        }
        // SAFETY: core service; it checks the address and returns NULL when not mapped.
        let p = unsafe { (c.ptr)(addr, self.pes[j as usize]) } as *mut u8;
        (!p.is_null()).then_some(p)
    }

    /// Whether `addr` is symmetric memory that every member's mapping reaches (the same answer
    /// on every member; a zero-length buffer needs no mapping).
    pub fn reachable(&self, c: &CoreServices, addr: *const c_void, len: usize) -> bool {
        // SAFETY: core service, which checks the address and returns NULL when not mapped.
        len == 0 || self.pes.iter().all(|&pe| unsafe { !(c.ptr)(addr, pe).is_null() })
    }

    /// This PE's private buffer, at least `bytes` long and 16-byte aligned.
    #[allow(clippy::mut_from_ref)]
    pub fn buffer(&self, bytes: usize) -> &mut [u128] {
        // SAFETY: a team's collectives run one at a time on one thread (the OpenSHMEM rule
        // for teams), and the slice is dropped before the call returns.
        let b = unsafe { &mut *self.buf.get() };
        let words = bytes.div_ceil(16);
        if b.len() < words {
            b.resize(words, 0);
        }
        &mut b[..words]
    }
}
