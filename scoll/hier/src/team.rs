//! Per-team state: the team cut into host groups, the mapped scratch of this PE's group, and
//! the signalling words.
//!
//! Groups are ordered by their lowest member, and members within a group by team index; a
//! group's first member is its leader. Every member computes the same cut from the core's
//! `host_of`, which is the same on every PE.
//!
//! Two kinds of signal, each word written by one sender only:
//! - inside a host, call numbers stored through the mapping (`LSIG`, `LDATA`): every call on
//!   the team has a number `e`, the same on every member, and "word j >= e" means that local
//!   member `j` has done what it signals in call `e` or later. Nothing is reset and nothing is
//!   read-modified-written.
//! - between hosts, counts added to `NET` (one word per sending group on each leader): the
//!   leaders follow the same schedule, so the i-th signal a leader consumes from group `s` is
//!   the i-th that `s`'s leader sent it, and the leader keeps the tally. A signal comes with
//!   the data it announces, in one message, through the core's `put_signal_u64` where the core
//!   has it; else the data goes by put and the count by the spml's atomics, after a fence. Each
//!   word is only ever updated one of the two ways (the rule of docs/architecture.md,
//!   "Atomics").

use rshmem_plugin_api::{
    CoreServices, PutSignalU64, TeamDesc, CMP_GE, TEAM_EPHEMERAL, TEAM_HOSTS_MAPPED, TEAM_MAPPED,
};
use std::cell::{Cell, UnsafeCell};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// Most members on one host, and most hosts, in a team served: one scratch word each.
/// 256 members, as scoll shm serves on one host, and 128 hosts (64 and 64 until 2026-12-06,
/// so a team across nodes of 128 cores fell to basic). More hosts need a larger
/// [`STAGE_AREA`]: each sending host's piece of a staging half must hold at least 64 bytes
/// (`piece_bytes_for`, checked by a test for every host count), which 17 KiB gives up to 128
/// hosts (16 KiB: 126), 32 KiB up to 256.
pub const MAX_LOCAL: usize = 256;
pub const MAX_HOSTS: usize = 128;
/// On a group's agent: word `j` is local member `j`'s call number ("I have arrived", "my
/// block is in place").
pub const LSIG: usize = 0;
/// On a member: word `j` is the call number local member `j` last delivered to it ("your
/// data is in place", "the barrier is over").
pub const LDATA: usize = MAX_LOCAL;
/// On a leader: word `s` counts the signals group `s`'s leader has sent it.
pub const NET: usize = 2 * MAX_LOCAL;
/// On a member: its block's size in the current variable-size collect (its leader reads it).
pub const SIZE: usize = NET + MAX_HOSTS;
/// On a leader: where other leaders send reduction partials and collect's size vectors
/// ([`Team::stage`]), starting a cache line after `SIZE`: one slot per
/// step of an exchange (the fold of a host beyond the largest power of two, then one per round
/// of recursive doubling), twice over by the exchange's parity, so that a partner one exchange
/// ahead cannot overwrite a slot not read yet. The slots share `STAGE_AREA` bytes, so teams on
/// fewer hosts (fewer steps) get larger slots.
pub const STAGE: usize = SIZE + 8;
pub const STAGE_AREA: usize = 17 * 1024;
pub const SCRATCH_WORDS: usize = STAGE + STAGE_AREA / 8;
pub const SCRATCH_BYTES: usize = SCRATCH_WORDS * 8;

/// The bytes of one staging slot for a team on `hosts` hosts: one slot per step of an
/// exchange (the fold of the hosts beyond the largest power of two, then a round of recursive
/// doubling each), twice over by parity, in whole cache lines.
pub(crate) fn slot_bytes_for(hosts: usize) -> usize {
    let rounds = (usize::BITS - 1 - hosts.leading_zeros()) as usize;
    let folds = !hosts.is_power_of_two();
    STAGE_AREA / (2 * (rounds + usize::from(folds))) / 64 * 64
}

/// The bytes of one parity's slots.
fn half_bytes_of(slot_bytes: usize) -> usize {
    STAGE_AREA / 2 / slot_bytes * slot_bytes
}

/// The bytes each of `hosts` sending groups has in a staging half: at least 64 up to
/// [`MAX_HOSTS`] (a test checks every count).
#[cfg(test)]
pub(crate) fn piece_bytes_for(hosts: usize) -> usize {
    piece_of(half_bytes_of(slot_bytes_for(hosts)), hosts)
}

/// A staging half of `half` bytes cut into one piece per sending host, in whole cache lines.
fn piece_of(half: usize, hosts: usize) -> usize {
    half / hosts / 64 * 64
}

pub struct Team {
    pub n: c_int,
    pub me: c_int,
    /// World PE of each member.
    pes: Vec<c_int>,
    /// Members (team indices, ascending) of each group; `groups[g][0]` leads group `g`.
    groups: Vec<Vec<c_int>>,
    /// (group, index in the group) of each member.
    place: Vec<(usize, usize)>,
    /// This PE's group and its index there (0: the leader).
    pub g: usize,
    pub l: usize,
    /// The scratch of this PE's group's members, as mapped here.
    local: Vec<*mut u64>,
    /// This PE's scratch, at the symmetric address the other leaders use.
    scratch: *mut u64,
    /// The number of the last call.
    epoch: Cell<u64>,
    /// On a leader: the number of the last exchange of partials ([`Team::next_exchange`]).
    exchanges: Cell<u64>,
    /// Whether some hosts fold into others first (the host count is not a power of two), and
    /// the bytes of one staging slot.
    folds: bool,
    slot_bytes: usize,
    /// Signals consumed from each group's leader.
    seen: Vec<Cell<u64>>,
    /// Whether every group's members are consecutive in the team (so the groups, in their
    /// order, cover the team in order): what a scan needs.
    contiguous: bool,
    /// Private buffers (reductions, scans, alltoall, collect), grown once to the largest size
    /// a call needed.
    bufs: [UnsafeCell<Vec<u128>>; 4],
    /// The core's put-with-signal, when it has one: data and signal in one message.
    put_signal: Option<PutSignalU64>,
}

impl Team {
    /// The state for `d`, or None when the component does not serve the team (every member
    /// reaches the same answer: it depends only on the description, the flags the core
    /// agreed on and `host_of`).
    pub fn new(c: &CoreServices, d: &TeamDesc) -> Option<Team> {
        let hosts_mapped = d.flags & TEAM_HOSTS_MAPPED != 0;
        // One host is shm's (or, unmapped, basic's); a pSync team must be left zeroed.
        let one_host = d.flags & TEAM_MAPPED != 0;
        if !hosts_mapped || one_host || d.flags & TEAM_EPHEMERAL != 0 {
            return None;
        }
        let aligned = (d.scratch as usize).is_multiple_of(8);
        if d.size < 2 || d.scratch.is_null() || !aligned || d.scratch_len < SCRATCH_BYTES {
            return None;
        }
        let pes: Vec<c_int> = (0..d.size).map(|i| d.pe_of(i)).collect();
        let hosts: Vec<c_int> = pes.iter().map(|&pe| c.host_of(pe)).collect::<Option<_>>()?;
        if hosts.iter().any(|h| *h < 0) {
            return None;
        }
        let (groups, place) = cut(&hosts);
        let big = groups.iter().any(|m| m.len() > MAX_LOCAL);
        if groups.len() < 2 || groups.len() > MAX_HOSTS || big {
            return None;
        }
        let me = usize::try_from(d.my_index).ok().filter(|i| *i < pes.len())?;
        let (g, l) = place[me];
        let mut local = Vec::with_capacity(groups[g].len());
        for &i in &groups[g] {
            // SAFETY: core service; the scratch is symmetric memory of this team.
            let p = unsafe { (c.ptr)(d.scratch, pes[i as usize]) } as *mut u64;
            if p.is_null() {
                // TEAM_HOSTS_MAPPED promised this mapping: the core is inconsistent.
                return None;
            }
            local.push(p);
        }
        let h = groups.len();
        let folds = !h.is_power_of_two();
        let slot_bytes = slot_bytes_for(h);
        let contiguous = groups.iter().all(|m| m.windows(2).all(|w| w[1] == w[0] + 1));
        Some(Team {
            contiguous,
            exchanges: Cell::new(0),
            folds,
            slot_bytes,
            n: d.size,
            me: d.my_index,
            seen: (0..groups.len()).map(|_| Cell::new(0)).collect(),
            pes,
            groups,
            place,
            g,
            l,
            local,
            scratch: d.scratch as *mut u64,
            epoch: Cell::new(0),
            bufs: std::array::from_fn(|_| UnsafeCell::new(Vec::new())),
            put_signal: c.put_signal_u64(),
        })
    }

    /// Start a call: its number.
    pub fn next(&self) -> u64 {
        let e = self.epoch.get() + 1;
        self.epoch.set(e);
        e
    }

    pub fn hosts(&self) -> usize {
        self.groups.len()
    }

    /// How many members this PE's group has.
    pub fn group_len(&self) -> usize {
        self.groups[self.g].len()
    }

    /// (group, index in the group) of member `i`.
    pub fn place_of(&self, i: c_int) -> (usize, usize) {
        self.place[i as usize]
    }

    /// The members of group `h`, ascending.
    pub fn members(&self, h: usize) -> &[c_int] {
        &self.groups[h]
    }

    fn leader_pe(&self, h: usize) -> c_int {
        self.pes[self.groups[h][0] as usize]
    }

    /// The world PE of local member `j` (of this PE's group).
    fn local_pe(&self, j: usize) -> c_int {
        self.pes[self.groups[self.g][j] as usize]
    }

    /// Word `arr + k` of local member `j`'s scratch.
    fn word(&self, j: usize, arr: usize, k: usize) -> &AtomicU64 {
        debug_assert!(arr + k < SCRATCH_WORDS);
        // SAFETY: `local[j]` maps member j's scratch, SCRATCH_BYTES long and 8-aligned; its
        // words are only accessed atomically.
        unsafe { AtomicU64::from_ptr(self.local[j].add(arr + k)) }
    }

    /// Tell local member `to` that this PE reached call `e` on array `arr`.
    pub fn lsignal(&self, to: usize, arr: usize, e: u64) {
        self.word(to, arr, self.l).store(e, Ordering::Release);
    }

    /// Signal every other local member on `arr`.
    pub fn lsignal_all(&self, arr: usize, e: u64) {
        for j in (0..self.group_len()).filter(|j| *j != self.l) {
            self.lsignal(j, arr, e);
        }
    }

    /// Wait until local member `from` has reached call `e` on `arr`. One look, then the core's
    /// wait (which yields on an oversubscribed node).
    pub fn lwait(&self, c: &CoreServices, arr: usize, from: usize, e: u64) {
        let w = self.word(self.l, arr, from);
        if w.load(Ordering::Acquire) < e {
            // SAFETY: core service on an aligned word of this PE's symmetric scratch.
            unsafe { (c.wait_until_u64)(w.as_ptr(), CMP_GE, e) };
            fence(Ordering::Acquire);
        }
    }

    /// Leave this member's block size for its leader (before signalling it).
    pub fn set_size(&self, bytes: u64) {
        self.word(self.l, SIZE, 0).store(bytes, Ordering::Relaxed);
    }

    /// The size local member `j` left (after its signal).
    pub fn size_of(&self, j: usize) -> u64 {
        self.word(j, SIZE, 0).load(Ordering::Relaxed)
    }

    /// One signal to group `to`'s leader (this PE leads its group).
    pub fn nsignal(&self, c: &CoreServices, to: usize) {
        // SAFETY: no data.
        unsafe { self.nsend(c, to, std::ptr::null_mut(), std::ptr::null(), 0) };
    }

    /// Put `len` bytes from `src` at symmetric `dest` of group `to`'s leader, then one signal
    /// that arrives after them: one message through the core's `put_signal_u64`, else a put,
    /// a fence and an atomic add.
    ///
    /// # Safety
    /// `dest` symmetric and `src` readable for `len` bytes.
    pub unsafe fn nsend(&self, c: &CoreServices, to: usize, dest: *mut u8, src: *const u8, len: usize) {
        debug_assert!(self.l == 0 && to != self.g);
        let (sig, pe) = (self.scratch.wrapping_add(NET + self.g), self.leader_pe(to));
        // SAFETY: core services; the word is symmetric scratch of this team on every leader,
        // and the data as the caller promised.
        unsafe {
            if let Some(f) = self.put_signal {
                return f(dest.cast(), src.cast(), len, sig, 1, pe);
            }
            if len > 0 {
                (c.putmem)(dest.cast(), src.cast(), len, pe);
                (c.fence)();
            }
            (c.atomic_add_u64)(sig, 1, pe);
        }
    }

    /// Start an exchange of partials between the leaders: its number. Every leader runs the
    /// same exchanges in the same order, so the numbers agree. Why the slots may alternate by
    /// its parity: a leader finishes exchange `x` only with every host's contribution to it,
    /// so when it starts `x + 2` and writes the slots of `x`'s parity, every leader has
    /// started `x + 1`, so has finished reading those of `x`. A call number would not do: a
    /// broadcast's root returns without hearing from anyone, so a leader can be a broadcast
    /// and a reduction ahead of a partner still reading its slot.
    pub fn next_exchange(&self) -> u64 {
        let x = self.exchanges.get() + 1;
        self.exchanges.set(x);
        x
    }

    /// Bytes of one staging slot: the most a leader sends in one step of an exchange.
    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// Put `len` bytes from `src` at symmetric `dest` of team member `to` (on another host),
    /// through the spml: complete at the next quiet.
    ///
    /// # Safety
    /// `dest` symmetric and `src` readable for `len` bytes.
    pub unsafe fn put_member(&self, c: &CoreServices, to: c_int, dest: *mut u8, src: *const u8, len: usize) {
        if len > 0 {
            // SAFETY: caller.
            unsafe { (c.putmem)(dest.cast(), src.cast(), len, self.pes[to as usize]) };
        }
    }

    /// Staging slot `step` (0: the fold, 1 + k: round k of recursive doubling) of exchange
    /// `x`, at the symmetric address every leader uses.
    pub fn stage(&self, x: u64, step: usize) -> *mut u8 {
        self.slot(x, step - usize::from(!self.folds))
    }

    /// Bytes of the slots of one parity ([`Team::slot`]): exchange `x` writes only inside
    /// its parity's half, however it cuts it.
    fn half_bytes(&self) -> usize {
        half_bytes_of(self.slot_bytes)
    }

    /// Bytes each sending group has in a staging half ([`Team::piece`]).
    pub fn piece_bytes(&self) -> usize {
        piece_of(self.half_bytes(), self.hosts())
    }

    /// The part of exchange `x`'s staging half that group `k`'s leader sends into, when every
    /// leader sends every other one message (a staged alltoall): the slots of `x`'s parity
    /// cut into one piece per group, at the symmetric address every leader uses.
    pub fn piece(&self, x: u64, k: usize) -> *mut u8 {
        let at = (x % 2) as usize * self.half_bytes() + k * self.piece_bytes();
        self.scratch.wrapping_add(STAGE).cast::<u8>().wrapping_add(at)
    }

    /// Staging slot `i` of exchange `x`: `i` below ceil(log2 hosts), the slots of one
    /// exchange (a scan's rounds use them in turn).
    pub fn slot(&self, x: u64, i: usize) -> *mut u8 {
        debug_assert!(i < self.half_bytes() / self.slot_bytes);
        let at = (x % 2) as usize * self.half_bytes() + i * self.slot_bytes;
        self.scratch.wrapping_add(STAGE).cast::<u8>().wrapping_add(at)
    }

    /// Wait for the next signal from group `from`'s leader.
    pub fn nwait(&self, c: &CoreServices, from: usize) {
        self.nwait_n(c, from, 1);
    }

    /// Wait for the next `n` signals from group `from`'s leader.
    pub fn nwait_n(&self, c: &CoreServices, from: usize, n: u64) {
        let want = self.seen[from].get() + n;
        self.seen[from].set(want);
        let w = self.scratch.wrapping_add(NET + from);
        // SAFETY: core service on an aligned word of this PE's symmetric scratch.
        unsafe { (c.wait_until_u64)(w, CMP_GE, want) };
        fence(Ordering::Acquire);
    }

    /// Write `len` bytes from `src` to local member `j`'s copy of symmetric `dest`: a copy
    /// through the mapping, or the spml where the buffer is not mapped (a space created after
    /// init). Returns whether a transport was used, so [`Team::publish`] must complete it.
    ///
    /// # Safety
    /// `dest` symmetric and `src` readable for `len` bytes; `src` does not overlap member
    /// `j`'s `dest` unless `j` is this PE.
    pub unsafe fn put_local(
        &self,
        c: &CoreServices,
        j: usize,
        dest: *mut u8,
        src: *const u8,
        len: usize,
    ) -> bool {
        if len == 0 {
            return false;
        }
        // SAFETY: caller; the core's `ptr` returns NULL or a mapping valid for the buffer.
        unsafe {
            if j == self.l {
                std::ptr::copy(src, dest, len);
                return false;
            }
            let p = (c.ptr)(dest as *const c_void, self.local_pe(j)) as *mut u8;
            if p.is_null() {
                (c.putmem)(dest.cast(), src.cast(), len, self.local_pe(j));
                return true;
            }
            std::ptr::copy_nonoverlapping(src, p, len);
        }
        false
    }

    /// Write `n` elements of `es` bytes, read from `src` every `sst` elements, to local
    /// member `j`'s copy of symmetric `dest`, one every `dst` elements (a strided
    /// [`Team::put_local`]; the mapping is looked up once, since the whole run lies in one
    /// symmetric object). Returns whether a transport was used.
    ///
    /// # Safety
    /// `dest` symmetric with room for the run, `src` readable for it, not overlapping.
    pub unsafe fn put_local_strided(
        &self,
        c: &CoreServices,
        j: usize,
        dest: *mut u8,
        src: *const u8,
        (es, n, dst, sst): (usize, usize, usize, usize),
    ) -> bool {
        if n == 0 || es == 0 {
            return false;
        }
        // SAFETY: caller; `ptr` returns NULL or a mapping of the object `dest` starts.
        unsafe {
            let p =
                if j == self.l { dest } else { (c.ptr)(dest as *const c_void, self.local_pe(j)) as *mut u8 };
            for e in 0..n {
                let (to, from) = (e * dst * es, src.add(e * sst * es));
                if p.is_null() {
                    (c.putmem)(dest.wrapping_add(to).cast(), from.cast(), es, self.local_pe(j));
                } else {
                    std::ptr::copy_nonoverlapping(from, p.add(to), es);
                }
            }
            p.is_null()
        }
    }

    /// Read `n` elements of `es` bytes, one every `sst` elements, of local member `j`'s copy
    /// of symmetric `src` into `dest`, packed.
    ///
    /// # Safety
    /// `src` symmetric with the run in it, `dest` writable for `n * es` bytes.
    pub unsafe fn get_local_strided(
        &self,
        c: &CoreServices,
        j: usize,
        dest: *mut u8,
        src: *const u8,
        (es, n, sst): (usize, usize, usize),
    ) {
        if sst == 1 {
            // SAFETY: caller.
            return unsafe { self.get_local(c, j, dest, src, n * es) };
        }
        // SAFETY: caller; as above.
        unsafe {
            let p = (c.ptr)(src as *const c_void, self.local_pe(j)) as *const u8;
            for e in 0..n {
                let from = src.wrapping_add(e * sst * es);
                if p.is_null() {
                    (c.getmem)(dest.add(e * es).cast(), from.cast(), es, self.local_pe(j));
                } else {
                    std::ptr::copy_nonoverlapping(p.add(e * sst * es), dest.add(e * es), es);
                }
            }
        }
    }

    /// Read `len` bytes of local member `j`'s copy of symmetric `src` into `dest`.
    ///
    /// # Safety
    /// `src` symmetric and `dest` writable for `len` bytes, not overlapping it.
    pub unsafe fn get_local(&self, c: &CoreServices, j: usize, dest: *mut u8, src: *const u8, len: usize) {
        if len == 0 {
            return;
        }
        // SAFETY: caller; as for put_local.
        unsafe {
            let p = (c.ptr)(src as *const c_void, self.local_pe(j)) as *const u8;
            if p.is_null() {
                (c.getmem)(dest.cast(), src.cast(), len, self.local_pe(j));
            } else {
                std::ptr::copy(p, dest, len);
            }
        }
    }

    /// Make the data written above visible before the signals that follow: complete what
    /// went through a transport, and order the copies (large ones may use non-temporal
    /// stores, which a release store alone does not order).
    pub fn publish(&self, c: &CoreServices, transported: bool) {
        if transported {
            // SAFETY: core service.
            unsafe { (c.quiet)() };
        }
        fence(Ordering::SeqCst);
    }

    /// Whether every group's members are consecutive in the team.
    pub fn contiguous(&self) -> bool {
        self.contiguous
    }

    /// The first `N` (at most 4) private buffers, each at least `bytes` long and 16-byte
    /// aligned.
    pub fn buffers<const N: usize>(&self, bytes: usize) -> [&mut [u128]; N] {
        self.buffers_of([bytes; N])
    }

    /// The first `N` (at most 4) private buffers, buffer `i` at least `bytes[i]` long and
    /// 16-byte aligned.
    #[allow(clippy::mut_from_ref)]
    pub fn buffers_of<const N: usize>(&self, bytes: [usize; N]) -> [&mut [u128]; N] {
        const { assert!(N <= 4) };
        std::array::from_fn(|i| {
            let words = bytes[i].div_ceil(16);
            // SAFETY: a team's collectives run one at a time on one thread (the OpenSHMEM rule
            // for teams), each buffer is handed out once per call, and the slices are dropped
            // before the call returns.
            let v = unsafe { &mut *self.bufs[i].get() };
            if v.len() < words {
                v.resize(words, 0);
            }
            &mut v[..words]
        })
    }
}

/// Cut a team into host groups: `hosts[i]` is member `i`'s host. Groups come in the order of
/// their lowest member; returns the groups and each member's (group, index in group).
pub fn cut(hosts: &[c_int]) -> (Vec<Vec<c_int>>, Vec<(usize, usize)>) {
    let mut groups: Vec<Vec<c_int>> = Vec::new();
    let mut keys: Vec<c_int> = Vec::new();
    let mut place = Vec::with_capacity(hosts.len());
    for (i, h) in hosts.iter().enumerate() {
        let g = keys.iter().position(|k| k == h).unwrap_or_else(|| {
            keys.push(*h);
            groups.push(Vec::new());
            keys.len() - 1
        });
        place.push((g, groups[g].len()));
        groups[g].push(i as c_int);
    }
    (groups, place)
}

/// The binomial tree over `hosts` groups rooted at group `root`: group `g`'s parent (None for
/// the root) and children, farthest subtree first. Group `g` sits at `(g - root) mod hosts`.
pub fn tree(g: usize, root: usize, hosts: usize) -> (Option<usize>, impl Iterator<Item = usize>) {
    let v = (g + hosts - root) % hosts;
    let parent = (v > 0).then(|| {
        let top = usize::BITS - 1 - v.leading_zeros();
        ((v & !(1 << top)) + root) % hosts
    });
    // Children: v plus each power of two above v's highest bit, while inside the tree.
    let above = if v == 0 { 0 } else { usize::BITS - v.leading_zeros() };
    let kids = (above..usize::BITS)
        .rev()
        .map(move |k| v | (1usize << k))
        .filter(move |&w| w < hosts && w > v)
        .map(move |w| (w + root) % hosts);
    (parent, kids)
}
