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

use crate::layout::{CPU, MAX_PES, SCRATCH_BYTES, SIG, SIZE, STAGE, STAGE_BYTES};
use crate::place;
use crate::protocol::{self, Stages, Words};

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
    pub stages: Stages,
    /// Every PE of the node is a member, the node has more PEs than CPUs (`node_cpus`), and
    /// `cross_core_spin_ns` is not 0: waits look at where members run and what they wait for
    /// (`place`).
    crowded: bool,
    /// On a crowded node, the root of a broadcast since the last barrier (`lead`).
    lead: Cell<Option<c_int>>,
    /// Private accumulation space; grown once to the largest size a call needed.
    buf: UnsafeCell<Vec<u128>>,
}

/// A set of a team's members (indices below [`MAX_PES`]), one bit each.
#[derive(Clone, Copy, Default)]
pub struct Members([u64; MAX_PES / 64]);

impl Members {
    pub fn insert(&mut self, j: c_int) {
        self.0[j as usize / 64] |= 1 << (j as usize % 64);
    }

    pub fn contains(&self, j: c_int) -> bool {
        self.0[j as usize / 64] & 1 << (j as usize % 64) != 0
    }

    #[cfg(test)]
    fn of(members: &[c_int]) -> Members {
        let mut m = Members::default();
        members.iter().for_each(|&j| m.insert(j));
        m
    }
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
        let tuning = crate::tuning::get(c);
        // Against the CPUs of the node's PEs between them (a PE bound to a core of its own
        // sees one).
        let crowded = c.local_size == d.size && c.node_crowded() && tuning.cross_core_spin_ns > 0;
        Some(Team {
            n: d.size,
            me: d.my_index,
            tuning,
            pes,
            scratch,
            epoch: Cell::new(0),
            crowded,
            lead: Cell::new(None),
            stages: Stages::new(),
            buf: UnsafeCell::new(Vec::new()),
        })
    }

    /// Take the node for crowded (more PEs than CPUs), as the fake job's core cannot say.
    #[cfg(test)]
    pub fn crowd(&mut self) {
        self.crowded = true;
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
        protocol::others(self.n, self.me)
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
    /// cores, yields at once (a spin there only delays the PE that would signal). On such a
    /// node the wait is published for `spin_pays` (`place`).
    pub fn wait(&self, c: &CoreServices, arr: usize, from: c_int, e: u64) {
        self.wait_as(c, arr, from, e, false)
    }

    /// `wait`; with `spin`, on a crowded node, it first spins for a bounded time while
    /// `spin_pays`.
    fn wait_as(&self, c: &CoreServices, arr: usize, from: c_int, e: u64, spin: bool) {
        let w = self.word(self.me, arr, from);
        if w.load(Ordering::Acquire) >= e {
            return;
        }
        if self.crowded {
            let cpu = place::current_cpu();
            self.word(self.me, CPU, place::CPU_WORD).store(cpu, Ordering::Relaxed);
            self.word(self.me, CPU, place::WAIT_WORD).store(place::waiting(arr, from, e), Ordering::Release);
            let limit = std::time::Duration::from_nanos(self.tuning.cross_core_spin_ns);
            let done = spin
                && place::spin_while(limit, || w.load(Ordering::Relaxed) >= e, || self.spin_pays(cpu, from));
            if !done {
                // SAFETY: core service on an aligned word of this PE's symmetric scratch.
                unsafe { (c.wait_until_u64)(w.as_ptr(), CMP_GE, e) };
            }
            self.word(self.me, CPU, place::WAIT_WORD).store(0, Ordering::Relaxed);
            fence(Ordering::Acquire);
            return;
        }
        // SAFETY: core service on an aligned word of this PE's symmetric scratch.
        unsafe { (c.wait_until_u64)(w.as_ptr(), CMP_GE, e) };
        fence(Ordering::Acquire);
    }

    /// Whether spinning on `cpu` for member `j` is likely to end sooner than yielding: `j`
    /// last waited on another CPU and is not stuck waiting for a member last seen on this one,
    /// and every other member last seen on this CPU is in a wait of this team. A member in no
    /// wait of this team (computing, in the application, in another team's call, preempted)
    /// may need the CPU to go on: then this PE yields, as it does for `j` on its own CPU.
    fn spin_pays(&self, cpu: u64, j: c_int) -> bool {
        if self.cpu_of(j) == cpu {
            return false;
        }
        if let Some((arr, m, e)) = self.wait_of(j) {
            let stuck = self.word(j, arr, m).load(Ordering::Relaxed) < e;
            if stuck && m != self.me && self.cpu_of(m) == cpu {
                return false;
            }
        }
        self.others().all(|k| k == j || self.cpu_of(k) != cpu || self.wait_of(k).is_some())
    }

    /// Wait for every other member on `arr`. On a crowded node, the members last seen on this
    /// PE's CPU first: they need it to arrive, so it is yielded to them; then the others, with
    /// a bounded spin while `spin_pays`. Only this all-member wait spins: a member waited for
    /// here has nothing left to wait for from this PE, which has signalled them all. Spinning
    /// in the single waits of the staged reductions and scans (every member waiting on a
    /// different one) measured slower (docs/performance.md).
    pub fn wait_all(&self, c: &CoreServices, arr: usize, e: u64) {
        if !self.crowded {
            for j in self.others() {
                self.wait(c, arr, j, e);
            }
            return;
        }
        // Read once: members' CPU words change as they wait.
        let cpu = place::current_cpu();
        let mut near = Members::default();
        self.others().filter(|&j| self.cpu_of(j) == cpu).for_each(|j| near.insert(j));
        for j in self.others().filter(|&j| near.contains(j)) {
            self.wait_as(c, arr, j, e, true);
        }
        // After a broadcast whose root shares this CPU (and has arrived: it was waited for
        // above), yield to it rather than spin, so that it is the one running when the last
        // member arrives (`lead`).
        let spin = self.far_waits_spin(near);
        for j in self.others().filter(|&j| !near.contains(j)) {
            self.wait_as(c, arr, j, e, spin);
        }
    }

    /// Note that member `root` broadcast: the next barrier lets it leave first (`lead`).
    pub fn rooted(&self, root: c_int) {
        if self.crowded {
            self.lead.set(Some(root));
        }
    }

    /// At the end of barrier `e` on a crowded node, after a broadcast: when the broadcast's
    /// root is on this PE's CPU and still in the barrier (it arrived first, as a root that
    /// pushes does, and yielded to this PE), yield once, so that it leaves the barrier first.
    /// The switch happens in any case, since both PEs must run before the next
    /// synchronisation; made here, it spares the other PEs of the next broadcast from the root
    /// a wait for it, which the barrier that follows a broadcast would otherwise leave last
    /// (docs/performance.md, "Broadcasts on a crowded node").
    pub fn lead(&self, e: u64) {
        if let Some(r) = self.lead.take() {
            if self.root_waits_here(r, place::current_cpu(), e) {
                std::thread::yield_now();
            }
        }
    }

    /// Whether member `r`, not this PE, last waited on `cpu` and is still in barrier `e`.
    fn root_waits_here(&self, r: c_int, cpu: u64, e: u64) -> bool {
        r != self.me && self.cpu_of(r) == cpu && matches!(self.wait_of(r), Some((SIG, _, we)) if we == e)
    }

    /// The CPU member `k` last waited on (`place`).
    fn cpu_of(&self, k: c_int) -> u64 {
        self.word(k, CPU, place::CPU_WORD).load(Ordering::Relaxed)
    }

    /// Member `k`'s wait now: (array, sender, call), or None (`place`).
    fn wait_of(&self, k: c_int) -> Option<(usize, c_int, u64)> {
        place::waited(self.word(k, CPU, place::WAIT_WORD).load(Ordering::Acquire))
    }

    /// Whether the waits for the members of other CPUs (after those of this CPU, `near`) may
    /// spin: not when a broadcast's root is one of `near` (`lead`).
    fn far_waits_spin(&self, near: Members) -> bool {
        !self.lead.get().is_some_and(|r| r != self.me && near.contains(r))
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

/// A team's signal words with the core services its waits use: what `protocol` runs on.
pub struct On<'a>(pub &'a CoreServices, pub &'a Team);

impl Words for On<'_> {
    fn n(&self) -> c_int {
        self.1.n
    }
    fn me(&self) -> c_int {
        self.1.me
    }
    fn signal(&self, to: c_int, arr: usize, e: u64) {
        self.1.signal(to, arr, e)
    }
    fn wait(&self, arr: usize, from: c_int, e: u64) {
        self.1.wait(self.0, arr, from, e)
    }
    fn wait_root(&self, arr: usize, from: c_int, e: u64) {
        self.1.wait_as(self.0, arr, from, e, true)
    }
    fn wait_all(&self, arr: usize, e: u64) {
        self.1.wait_all(self.0, arr, e)
    }
    fn signal_all(&self, arr: usize, e: u64) {
        self.1.signal_all(arr, e)
    }
    /// A full fence: large copies may use non-temporal stores, which a release store alone
    /// does not order.
    fn publish(&self) {
        fence(Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::SIG;

    /// A team of `n` whose members' scratch is local memory (what each PE maps), seen from
    /// member `me`, on a crowded node.
    fn team(n: c_int, me: c_int, mem: &mut [Vec<u64>]) -> Team {
        Team {
            n,
            me,
            tuning: crate::tuning::Tuning::default(),
            pes: (0..n).collect(),
            scratch: mem.iter_mut().map(|m| m.as_mut_ptr()).collect(),
            epoch: Cell::new(0),
            stages: Stages::new(),
            crowded: true,
            lead: Cell::new(None),
            buf: UnsafeCell::new(Vec::new()),
        }
    }

    fn memory(n: usize) -> Vec<Vec<u64>> {
        (0..n).map(|_| vec![0u64; SCRATCH_BYTES / 8]).collect()
    }

    /// Member `k` last waited on `cpu`, for (`arr`, `from`, `e`), or is in no wait (`None`).
    fn seen(t: &Team, k: c_int, cpu: u64, wait: Option<(usize, c_int, u64)>) {
        t.word(k, CPU, place::CPU_WORD).store(cpu, Ordering::Relaxed);
        let w = wait.map_or(0, |(arr, from, e)| place::waiting(arr, from, e));
        t.word(k, CPU, place::WAIT_WORD).store(w, Ordering::Relaxed);
    }

    #[test]
    fn a_spin_pays_only_while_no_one_on_this_cpu_needs_it() {
        // 4 members two to a CPU: 0 and 2 on CPU 0, 1 and 3 on CPU 1; this is member 0.
        let mut mem = memory(4);
        let t = team(4, 0, &mut mem);
        seen(&t, 0, 0, Some((SIG, 1, 5)));
        seen(&t, 1, 1, None);
        seen(&t, 2, 0, Some((SIG, 3, 5)));
        seen(&t, 3, 1, Some((SIG, 0, 5)));
        // Awaiting 1 (computing on CPU 1) while 2, the other member of CPU 0, waits: spin.
        assert!(t.spin_pays(0, 1));
        // Awaiting 3, which waits for this PE (that signalled): spin too.
        assert!(t.spin_pays(0, 3));
        // A member on this CPU is never spun for: it needs this CPU to arrive.
        assert!(!t.spin_pays(0, 2));
        // 2 out of its wait (computing, or preempted while running) may need the CPU: yield.
        seen(&t, 2, 0, None);
        assert!(!t.spin_pays(0, 1));
        // 2 in a wait whose word has arrived still counts as waiting: it runs when this PE
        // yields later (yielding to it now costs two switches where one does).
        seen(&t, 2, 0, Some((SIG, 3, 5)));
        t.word(2, SIG, 3).store(5, Ordering::Relaxed);
        assert!(t.spin_pays(0, 1));
        // 1 stuck waiting for 2, on this CPU: 2 must run first, so yield; once 2's signal has
        // reached 1, 1 is no longer stuck and the spin pays again.
        seen(&t, 1, 1, Some((SIG, 2, 6)));
        assert!(!t.spin_pays(0, 1));
        t.word(1, SIG, 2).store(6, Ordering::Relaxed);
        assert!(t.spin_pays(0, 1));
        // A member that has not waited yet reads as CPU 0 (fresh scratch): from CPU 0 this PE
        // yields to it, from another CPU it spins.
        let mut fresh = memory(2);
        let u = team(2, 0, &mut fresh);
        assert!(!u.spin_pays(0, 1));
        assert!(u.spin_pays(1, 1));
    }

    #[test]
    fn after_a_broadcast_the_root_leads_the_barrier_out_only_from_its_own_cpu() {
        // 4 members two to a CPU: 0 and 2 on CPU 0, 1 and 3 on CPU 1; this is member 2.
        let mut mem = memory(4);
        let t = team(4, 2, &mut mem);
        // No broadcast since the last barrier: far waits spin, no yield at the end.
        assert!(t.far_waits_spin(Members::of(&[0])));
        t.rooted(0);
        // Root 0 is on this CPU (near): waits for the other CPU's members yield instead.
        assert!(!t.far_waits_spin(Members::of(&[0])));
        // A root on another CPU changes nothing here.
        t.rooted(1);
        assert!(t.far_waits_spin(Members::of(&[0])));
        // Nor does this PE being the root.
        t.rooted(2);
        assert!(t.far_waits_spin(Members::of(&[0])));
        // At the end of barrier 7: yield only to a root on this CPU that is still in it.
        seen(&t, 0, 0, Some((SIG, 2, 7)));
        assert!(t.root_waits_here(0, 0, 7));
        assert!(!t.root_waits_here(0, 1, 7), "the root is on another CPU");
        assert!(!t.root_waits_here(0, 0, 8), "the root is in another call");
        seen(&t, 0, 0, None);
        assert!(!t.root_waits_here(0, 0, 7), "the root has left the barrier");
        seen(&t, 2, 0, Some((SIG, 0, 7)));
        assert!(!t.root_waits_here(2, 0, 7), "this PE is the root");
        // Members past the first 64 are told apart as well.
        t.rooted(0);
        assert!(t.far_waits_spin(Members::of(&[64, 200])));
        let m = Members::of(&[3, 64, MAX_PES as c_int - 1]);
        assert!([3, 64, MAX_PES as c_int - 1].iter().all(|&j| m.contains(j)));
        assert!([0, 2, 63, 65, 128].iter().all(|&j| !m.contains(j)));
        // The end of a barrier consumes the note.
        t.rooted(0);
        t.lead(7);
        assert!(t.far_waits_spin(Members::of(&[0])));
    }
}
