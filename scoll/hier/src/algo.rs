//! The algorithms: each is an intra-host phase by load/store, an inter-host phase between the
//! group leaders over the spml, and an intra-host phase again. Results are pushed into the
//! peers' destinations, which the spec lets a collective write as soon as it is called (as
//! `shm` does), so there is no entry synchronisation: a PE returns once what it is owed has
//! arrived. Reductions are the exception for their partials, which land in staging slots or,
//! after a "ready", in the receiving leader's `dest` ([`exchange`]): the next reduction into
//! the same buffer may follow at once.
//!
//! Every member takes the same path through a call (the choice depends only on arguments that
//! are the same everywhere), and whatever can make a call decline or fail is checked before
//! the first signal.

use crate::team::{tree, Team, LDATA, LSIG};
use rshmem_plugin_api::{
    arith, CoreServices, DT_U64, OP_SUM, RC_DECLINED, RC_ERROR, RC_OK, REDUCE_ALL, REDUCE_EXSCAN,
};
use std::ffi::{c_int, c_void};

/// Members wait for their group's leader (or, in a broadcast, the root) to deliver call `e`.
fn follow(c: &CoreServices, t: &Team, from: usize, e: u64) -> c_int {
    t.lwait(c, LDATA, from, e);
    RC_OK
}

/// On a member: tell the leader this PE has arrived in call `e` (its source or block is in
/// place) and wait until the leader delivers; true, the call is over here. On the leader:
/// false.
fn as_member(c: &CoreServices, t: &Team, e: u64) -> bool {
    if t.l == 0 {
        return false;
    }
    t.lsignal(0, LSIG, e);
    follow(c, t, 0, e);
    true
}

/// On the leader: wait until every member has arrived in call `e`.
fn gather(c: &CoreServices, t: &Team, e: u64) {
    for j in 1..t.group_len() {
        t.lwait(c, LSIG, j, e);
    }
}

/// Barrier: members tell their leader they have arrived; the leaders run a dissemination
/// barrier (ceil(log2 hosts) rounds: signal the group 2^k ahead, wait for the one 2^k behind);
/// each leader then releases its members.
pub fn barrier(c: &CoreServices, t: &Team) -> c_int {
    let e = t.next();
    if as_member(c, t, e) {
        return RC_OK;
    }
    gather(c, t, e);
    let h = t.hosts();
    let mut d = 1;
    while d < h {
        t.nsignal(c, (t.g + d) % h);
        t.nwait(c, (t.g + h - d) % h);
        d *= 2;
    }
    t.lsignal_all(LDATA, e);
    RC_OK
}

/// Send `data` down the binomial tree of leaders rooted at group `root`: into each child
/// leader's `dest`, with the signal that announces it.
///
/// # Safety
/// `dest` symmetric and `data` readable for `nbytes`.
unsafe fn send_down(c: &CoreServices, t: &Team, dest: *mut u8, data: *const u8, nbytes: usize, root: usize) {
    for k in tree(t.g, root, t.hosts()).1 {
        // SAFETY: caller.
        unsafe { t.nsend(c, k, dest, data, nbytes) };
    }
}

/// Copy `data` into every other local member's `dest` and signal them call `e`.
///
/// # Safety
/// `dest` symmetric and `data` readable for `nbytes`, not overlapping the members' `dest`.
unsafe fn deliver(c: &CoreServices, t: &Team, dest: *mut u8, data: *const u8, nbytes: usize, e: u64) {
    let mut transported = false;
    for j in (0..t.group_len()).filter(|j| *j != t.l) {
        // SAFETY: caller.
        transported |= unsafe { t.put_local(c, j, dest, data, nbytes) };
    }
    t.publish(c, transported);
    t.lsignal_all(LDATA, e);
}

/// Broadcast: the root writes its own group's members directly; the root's group leader sends
/// down a binomial tree of leaders, and every other leader, once its data has arrived, passes
/// it on down the tree and then to its members. With `keep_root`, the root's own `dest` is
/// not written (the active-set form).
///
/// # Safety
/// `dest` (symmetric) and `src` must be valid for `nbytes` bytes (the core checked them).
pub unsafe fn broadcast(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    root: c_int,
    keep_root: bool,
) -> c_int {
    if !(0..t.n).contains(&root) {
        return RC_ERROR;
    }
    let (dest, src) = (dest as *mut u8, src as *const u8);
    let e = t.next();
    let (rg, rl) = t.place_of(root);
    // SAFETY: the buffers are valid for `nbytes` on every member (caller); the root's `src`
    // may overlap its own `dest` only, which is written last.
    unsafe {
        if t.me == root {
            // The other hosts first: theirs is the longer way.
            if t.l == 0 {
                send_down(c, t, dest, src, nbytes, rg);
            }
            deliver(c, t, dest, src, nbytes, e);
            if !keep_root && !std::ptr::eq(dest, src) {
                std::ptr::copy(src, dest, nbytes);
            }
            return RC_OK;
        }
        if t.g == rg {
            follow(c, t, rl, e);
            if t.l == 0 {
                send_down(c, t, dest, dest, nbytes, rg);
            }
            return RC_OK;
        }
        if t.l != 0 {
            return follow(c, t, 0, e);
        }
        let (parent, _) = tree(t.g, rg, t.hosts());
        t.nwait(c, parent.expect("a group other than the root's has a parent"));
        send_down(c, t, dest, dest, nbytes, rg);
        deliver(c, t, dest, dest, nbytes, e);
    }
    RC_OK
}

/// fcollect: every member writes its block into its group's members' `dest`; each leader,
/// once its group's blocks are in, puts them into every other leader's `dest` and signals it;
/// once every other group's blocks have arrived, it copies them to its members. Variable-size
/// collect is [`collect_sizes`].
///
/// # Safety
/// `dest` (symmetric, n * nbytes) and `src` must be valid (the core checked them).
pub unsafe fn collect(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    fixed: bool,
) -> c_int {
    if !fixed {
        // SAFETY: as the caller promised.
        return unsafe { collect_sizes(c, t, dest as *mut u8, src as *const u8, nbytes) };
    }
    let e = t.next();
    let dest = dest as *mut u8;
    let at = |i: c_int| dest.wrapping_add(i as usize * nbytes);
    // SAFETY: `dest` holds n blocks on every member and `src` one (caller); a member's block
    // goes to its own slot only, which `src` may not overlap (spec).
    unsafe {
        let mut transported = false;
        for j in 0..t.group_len() {
            transported |= t.put_local(c, j, at(t.me), src as *const u8, nbytes);
        }
        t.publish(c, transported);
        if as_member(c, t, e) {
            return RC_OK;
        }
        gather(c, t, e);
        let h = t.hosts();
        // Each run of consecutive blocks goes with a signal of its own (one message each);
        // the receiver knows how many runs every group has.
        for k in (1..h).map(|d| (t.g + d) % h) {
            for (i, len) in runs(t.members(t.g)) {
                t.nsend(c, k, at(i), at(i), len * nbytes);
            }
        }
        let mut transported = false;
        for k in (1..h).map(|d| (t.g + h - d) % h) {
            t.nwait_n(c, k, runs(t.members(k)).count() as u64);
            for j in 1..t.group_len() {
                for (i, len) in runs(t.members(k)) {
                    transported |= t.put_local(c, j, at(i), at(i), len * nbytes);
                }
            }
        }
        t.publish(c, transported);
        t.lsignal_all(LDATA, e);
    }
    RC_OK
}

/// collect with a size per member: each member leaves its size in its scratch; the leaders
/// gather every member's size by an [`exchange`] of size vectors through the staging slots
/// (each leader's vector holds its group's sizes and zeros, so the sum is the whole vector),
/// then go as fcollect does, at offsets from the sizes, the leader copying every block to its
/// members. Declined to `basic` (alike on every member) when the vector does not fit a slot.
///
/// # Safety
/// `dest` (symmetric, room for every member's block) and `src` (`nbytes`) must be valid.
unsafe fn collect_sizes(c: &CoreServices, t: &Team, dest: *mut u8, src: *const u8, nbytes: usize) -> c_int {
    let n = t.n as usize;
    if n * 8 > t.slot_bytes() {
        return RC_DECLINED;
    }
    let e = t.next();
    t.set_size(nbytes as u64);
    if as_member(c, t, e) {
        return RC_OK;
    }
    gather(c, t, e);
    let [sizes, tmp] = t.buffers(n * 8);
    // SAFETY: the private buffers hold n * 8 bytes, 16-aligned (so 8-aligned).
    let words = |b: &mut [u128]| unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr().cast::<u64>(), n) };
    words(sizes).fill(0);
    for (j, &i) in t.members(t.g).iter().enumerate() {
        words(sizes)[i as usize] = t.size_of(j);
    }
    // SAFETY: the vector fits a slot (checked above), so nothing lands in `dest`.
    unsafe {
        exchange(c, t, std::ptr::null_mut(), sizes, tmp, n * 8, |acc, v| {
            arith::combine(DT_U64, OP_SUM, acc, v, n);
        });
    }
    // The sizes become offsets in place (no allocation per call).
    let offsets = words(sizes);
    let mut total = 0usize;
    for w in offsets.iter_mut() {
        let size = *w as usize;
        *w = total as u64;
        total += size;
    }
    let offset = |i: usize| if i == n { total } else { offsets[i] as usize };
    let at = |i: c_int| dest.wrapping_add(offset(i as usize));
    let span = |(first, len): (c_int, usize)| offset(first as usize + len) - offset(first as usize);
    // SAFETY: `dest` has room for every block (caller); members' sources are readable until
    // the leader releases them; no `src` overlaps a `dest` (spec).
    unsafe {
        for (j, &i) in t.members(t.g).iter().enumerate() {
            t.get_local(c, j, at(i), src, span((i, 1)));
        }
        let h = t.hosts();
        for k in (1..h).map(|d| (t.g + d) % h) {
            for run in runs(t.members(t.g)) {
                t.nsend(c, k, at(run.0), at(run.0), span(run));
            }
        }
        let mut transported = false;
        for j in 1..t.group_len() {
            for run in runs(t.members(t.g)) {
                transported |= t.put_local(c, j, at(run.0), at(run.0), span(run));
            }
        }
        for k in (1..h).map(|d| (t.g + h - d) % h) {
            t.nwait_n(c, k, runs(t.members(k)).count() as u64);
            for j in 1..t.group_len() {
                for run in runs(t.members(k)) {
                    transported |= t.put_local(c, j, at(run.0), at(run.0), span(run));
                }
            }
        }
        t.publish(c, transported);
        t.lsignal_all(LDATA, e);
    }
    RC_OK
}

/// Runs of consecutive team indices in an ascending list: (first, length).
fn runs(members: &[c_int]) -> impl Iterator<Item = (c_int, usize)> + '_ {
    let mut k = 0;
    std::iter::from_fn(move || {
        let first = *members.get(k)?;
        let mut len = 1;
        while members.get(k + len) == Some(&(first + len as c_int)) {
            len += 1;
        }
        k += len;
        Some((first, len))
    })
}

/// alltoall and alltoalls: every member writes its blocks for its own group's members into
/// their `dest`; each leader, once its group has arrived, sends every other group the blocks
/// its members owe that group's members, and once every other group's blocks have arrived,
/// releases its members. Blocks are `nelems` elements of `es` bytes, read every `sst`
/// elements and written every `dst` (1 and 1 for alltoall).
///
/// With `dst` 1 the blocks of a run of consecutive senders are consecutive in a receiver's
/// `dest`, so the leader packs them and puts them there: one put per run and receiving
/// member, the receiving leader's with the signal (a quiet first when there were puts to
/// members, so they are in place before it). Else see [`alltoall_staged`].
///
/// # Safety
/// `dest` (symmetric, n blocks) and `src` (symmetric, n blocks) must be valid (the core
/// checked them).
#[allow(clippy::too_many_arguments)]
pub unsafe fn alltoall(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    es: usize,
    nelems: usize,
    dst: isize,
    sst: isize,
) -> c_int {
    let (Ok(dst), Ok(sst)) = (usize::try_from(dst), usize::try_from(sst)) else {
        return RC_ERROR;
    };
    if dst == 0 || sst == 0 {
        return RC_ERROR;
    }
    let shape = Strided { es, nelems, dst, sst, dest: dest as *mut u8, src: src as *const u8 };
    let bs = shape.block_bytes();
    let e = t.next();
    // SAFETY: `dest` and `src` hold n blocks on every member (caller); a member writes only
    // its own block of each `dest`, which no `src` overlaps (spec); the private buffer holds
    // the longest run of blocks.
    unsafe {
        let mut transported = false;
        for (j, &tj) in t.members(t.g).iter().enumerate() {
            transported |= if dst == 1 && sst == 1 {
                t.put_local(c, j, shape.dest_block(t.me), shape.src_block(tj), bs)
            } else {
                t.put_local_strided(c, j, shape.dest_block(t.me), shape.src_block(tj), (es, nelems, dst, sst))
            };
        }
        t.publish(c, transported);
        if as_member(c, t, e) {
            return RC_OK;
        }
        gather(c, t, e);
        if dst != 1 {
            alltoall_staged(c, t, &shape);
            t.lsignal_all(LDATA, e);
            return RC_OK;
        }
        let (h, mine) = (t.hosts(), t.members(t.g));
        let longest = runs(mine).map(|(_, len)| len).max().unwrap_or(0);
        let [buf, _] = t.buffers(longest * bs);
        let buf = buf.as_mut_ptr().cast::<u8>();
        // This group's blocks for team member `to`, from senders `first..first + len`, packed.
        let assemble = |to: c_int, (first, len): (c_int, usize)| {
            for i in first..first + len as c_int {
                let at = buf.wrapping_add((i - first) as usize * bs);
                t.get_local_strided(c, t.place_of(i).1, at, shape.src_block(to), (es, nelems, sst));
            }
        };
        for k in (1..h).map(|d| (t.g + d) % h) {
            let theirs = t.members(k);
            for &to in &theirs[1..] {
                for run in runs(mine) {
                    assemble(to, run);
                    t.put_member(c, to, shape.dest_block(run.0), buf, run.1 * bs);
                }
            }
            if theirs.len() > 1 {
                (c.quiet)();
            }
            for run in runs(mine) {
                assemble(theirs[0], run);
                t.nsend(c, k, shape.dest_block(run.0), buf, run.1 * bs);
            }
        }
        for k in (1..h).map(|d| (t.g + h - d) % h) {
            t.nwait_n(c, k, runs(t.members(k)).count() as u64);
        }
        t.lsignal_all(LDATA, e);
    }
    RC_OK
}

/// An alltoall(s) call's buffers and shape.
struct Strided {
    es: usize,
    nelems: usize,
    dst: usize,
    sst: usize,
    dest: *mut u8,
    src: *const u8,
}

impl Strided {
    fn block_bytes(&self) -> usize {
        self.es * self.nelems
    }

    /// Where member `i`'s block starts in `dest`.
    fn dest_block(&self, i: c_int) -> *mut u8 {
        self.dest.wrapping_add(i as usize * self.nelems * self.dst * self.es)
    }

    /// Where the block for member `i` starts in `src`.
    fn src_block(&self, i: c_int) -> *const u8 {
        self.src.wrapping_add(i as usize * self.nelems * self.sst * self.es)
    }
}

/// The leaders' part of an alltoalls strided in `dest`, where a block cannot land by one put.
/// Each leader packs, for every other group, the blocks its group owes that group's members
/// (receiver by receiver, senders in order) and the leaders trade these streams through the
/// staging area: in each round every leader sends every other one the next piece of its
/// stream ([`Team::piece`]: the slots of the round's parity, cut into one piece per group),
/// waits for every other's, and copies them aside; each round is an exchange (every leader
/// hears from every other in it, which keeps the slots' rule of [`Team::next_exchange`]), and
/// the rounds are as many as the longest stream needs, the same count everywhere. Then each
/// leader scatters what arrived into its members' `dest`. Against `basic`'s put per element,
/// one message per pair of hosts and round.
///
/// # Safety
/// As [`alltoall`], on a leader whose group has arrived.
unsafe fn alltoall_staged(c: &CoreServices, t: &Team, shape: &Strided) {
    let (h, mine) = (t.hosts(), t.members(t.g));
    let bs = shape.block_bytes();
    let stream = |a: usize, b: usize| t.members(a).len() * t.members(b).len() * bs;
    let pairs = (0..h).flat_map(|a| (0..h).filter(move |&b| b != a).map(move |b| (a, b)));
    let longest = pairs.map(|(a, b)| stream(a, b)).max().unwrap_or(0);
    // At least 64 bytes with up to MAX_HOSTS hosts.
    let piece = t.piece_bytes().max(1);
    let rounds = longest.div_ceil(piece).max(1);
    // Every other group's stream, out and in, at the same offsets (the streams between this
    // group and group k are equally long both ways). On the stack: no allocation per call.
    let others = || (1..h).map(|d| (t.g + d) % h);
    let mut at = [0usize; crate::MAX_HOSTS];
    let mut total = 0;
    for k in others() {
        at[k] = total;
        total += stream(t.g, k);
    }
    let [out, inc] = t.buffers(total);
    let (out, inc) = (out.as_mut_ptr().cast::<u8>(), inc.as_mut_ptr().cast::<u8>());
    // SAFETY: the buffers hold `total` bytes; the pieces hold `piece` bytes of this exchange;
    // the rest as the caller vouched.
    unsafe {
        for k in others() {
            for (m, &to) in t.members(k).iter().enumerate() {
                for s in 0..mine.len() {
                    let p = out.add(at[k] + (m * mine.len() + s) * bs);
                    t.get_local_strided(c, s, p, shape.src_block(to), (shape.es, shape.nelems, shape.sst));
                }
            }
        }
        for r in 0..rounds {
            let x = t.next_exchange();
            let part = |k: usize| {
                let len = stream(t.g, k);
                let lo = (r * piece).min(len);
                (lo, (lo + piece).min(len) - lo)
            };
            for k in others() {
                let (lo, len) = part(k);
                t.nsend(c, k, t.piece(x, t.g), out.add(at[k] + lo), len);
            }
            for k in others().rev() {
                t.nwait(c, k);
                let (lo, len) = part(k);
                std::ptr::copy_nonoverlapping(t.piece(x, k), inc.add(at[k] + lo), len);
            }
        }
        let mut transported = false;
        for k in others() {
            let theirs = t.members(k);
            for j in 0..mine.len() {
                for (s, &from) in theirs.iter().enumerate() {
                    let p = inc.add(at[k] + (j * theirs.len() + s) * bs);
                    let run = (shape.es, shape.nelems, shape.dst, 1);
                    transported |= t.put_local_strided(c, j, shape.dest_block(from), p, run);
                }
            }
        }
        t.publish(c, transported);
    }
}

/// Reductions to all, and scans ([`scan`]): for a reduction, each leader combines its group's
/// sources in team order into a partial result, the leaders run [`exchange`] on their
/// partials, and each writes the result to its `dest` and its members'. Partials that fit a staging slot
/// land there; larger ones land in the receiving leader's own `dest` after it says it is
/// ready for them. Either way every PE gets the same bits.
///
/// # Safety
/// `dest` (symmetric) and `src` (symmetric) must be valid for the call (the core checked them).
#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce(
    c: &CoreServices,
    t: &Team,
    dest: *mut c_void,
    src: *const c_void,
    nelems: usize,
    dtype: u32,
    op: u32,
    kind: u32,
) -> c_int {
    let Some(arith::Shape { nbytes, .. }) = arith::shape(dtype, op, kind, nelems, t.n, t.me) else {
        return RC_ERROR;
    };
    if kind != REDUCE_ALL {
        let call = ScanCall {
            dest: dest.cast(),
            src: src.cast(),
            nelems,
            nbytes,
            dtype,
            op,
            exclusive: kind == REDUCE_EXSCAN,
        };
        if t.contiguous() {
            // SAFETY: the caller's contract.
            return unsafe { scan(c, t, call) };
        }
        // The same answer on every member: it depends on the team and the size alone.
        if t.n as usize * nbytes.div_ceil(16) * 16 > INTERLEAVED_SCAN_BYTES {
            return RC_DECLINED;
        }
        // SAFETY: the caller's contract.
        return unsafe { scan_interleaved(c, t, call) };
    }
    let e = t.next();
    // A member's `src` is ready; its leader reads it and writes `dest` before delivering.
    if as_member(c, t, e) {
        return RC_OK;
    }
    let (dest, src) = (dest as *mut u8, src as *const u8);
    let [mine, tmp] = t.buffers(nbytes);
    let bytes = |b: &mut [u128]| b.as_mut_ptr().cast::<u8>();
    // SAFETY: `src` and `dest` hold `nbytes` on every member (caller); the private buffers
    // hold at least `nbytes`; `dest` is written by others only between this leader's "ready"
    // and its reading what arrived (or by the staging slots' rule).
    unsafe {
        std::ptr::copy_nonoverlapping(src, bytes(mine), nbytes);
        for j in 1..t.group_len() {
            t.lwait(c, LSIG, j, e);
            t.get_local(c, j, bytes(tmp), src, nbytes);
            arith::combine(dtype, op, mine, tmp, nelems);
        }
        let combine = |acc: &mut [u128], x: &[u128]| {
            arith::combine(dtype, op, acc, x, nelems);
        };
        exchange(c, t, dest, mine, tmp, nbytes, combine);
        // `exchange` leaves the result in `mine`.
        std::ptr::copy_nonoverlapping(bytes(mine), dest, nbytes);
        deliver(c, t, dest, bytes(mine), nbytes, e);
    }
    RC_OK
}

/// One scan: symmetric `dest` and `src` of `nbytes` (`nelems` elements of `dtype`), the
/// operation, and whether it is the exclusive scan.
#[derive(Clone, Copy)]
struct ScanCall {
    dest: *mut u8,
    src: *const u8,
    nelems: usize,
    nbytes: usize,
    dtype: u32,
    op: u32,
    exclusive: bool,
}

/// Scans, where every host's members are consecutive in the team (else [`scan_interleaved`]):
/// each leader combines its group's sources in team order into the group's total, the leaders
/// run [`scan_leaders`] on their totals, which gives each the combination of every group
/// before its own, and each leader then combines that with its members' sources one by one,
/// writing each member's result (for the exclusive scan, the value before that member's
/// source; the team's first member's `dest` is left alone, the core writes it).
///
/// # Safety
/// As [`reduce`]: `dest` and `src` symmetric and valid for `nbytes` (they may be the same).
unsafe fn scan(c: &CoreServices, t: &Team, call: ScanCall) -> c_int {
    let e = t.next();
    if as_member(c, t, e) {
        return RC_OK;
    }
    let ScanCall { dest, src, nelems, nbytes, dtype, op, exclusive } = call;
    let [acc, tmp, own, before] = t.buffers(nbytes);
    let bytes = |b: &mut [u128]| b.as_mut_ptr().cast::<u8>();
    let combine = |acc: &mut [u128], x: &[u128]| {
        arith::combine(dtype, op, acc, x, nelems);
    };
    // SAFETY: `src` and `dest` hold `nbytes` on every member (caller), the private buffers at
    // least `nbytes`; members' sources are read before any `dest` is written.
    unsafe {
        // This leader's source, kept: other leaders' totals may land in its `dest`, which may
        // be its source.
        std::ptr::copy_nonoverlapping(src, bytes(own), nbytes);
        acc.copy_from_slice(own);
        gather(c, t, e);
        for j in 1..t.group_len() {
            t.get_local(c, j, bytes(tmp), src, nbytes);
            combine(acc, tmp);
        }
        let mut have = scan_leaders(c, t, dest, acc, tmp, before, nbytes, combine);
        // `before` now holds every earlier group's combination (when there is an earlier group).
        acc.copy_from_slice(before);
        let mut transported = false;
        for j in 0..t.group_len() {
            if j == 0 {
                tmp.copy_from_slice(own);
            } else {
                t.get_local(c, j, bytes(tmp), src, nbytes);
            }
            if exclusive && have {
                transported |= t.put_local(c, j, dest, bytes(acc), nbytes);
            }
            if have {
                combine(acc, tmp);
            } else {
                acc.copy_from_slice(tmp);
                have = true;
            }
            if !exclusive {
                transported |= t.put_local(c, j, dest, bytes(acc), nbytes);
            }
        }
        t.publish(c, transported);
        t.lsignal_all(LDATA, e);
    }
    RC_OK
}

/// The most bytes of results (team size times the result, rounded up to 16 bytes) a scan on
/// a team whose hosts interleave is served with ([`scan_interleaved`] keeps about three times
/// as much per leader); `basic` serves larger ones.
pub const INTERLEAVED_SCAN_BYTES: usize = 16 << 20;

/// Scans where some host's members are not consecutive in the team. A member's result
/// combines the sources of every earlier member; the operators are commutative, so that is
/// the combination, over the hosts, of each host's earlier members' sources. So each leader
/// gathers its group's sources; computes, for every member of every other group, the
/// combination of its own members that come before that member (its "prefix" for it); and
/// the leaders trade these. When every stream fits a staging piece, in one exchange through
/// the pieces, as [`alltoall_staged`] trades blocks (every leader hears from every other in
/// it, which keeps the slots' rule of [`Team::next_exchange`]); else straight into the
/// receiving members' `dest`, one sending group at a time. Each leader then combines, member
/// by member, its own group's earlier sources (and, inclusive, the member's own) with the
/// prefixes the other leaders sent for that member, skipping a group with no member before
/// it (every leader knows the layout, so nothing says so), and writes the member's `dest`.
/// One message per pair of hosts for small scans, against `basic`'s get of every earlier
/// member's source.
///
/// # Safety
/// As [`reduce`]: `dest` and `src` symmetric and valid for `nbytes` (they may be the same).
unsafe fn scan_interleaved(c: &CoreServices, t: &Team, call: ScanCall) -> c_int {
    let e = t.next();
    if as_member(c, t, e) {
        return RC_OK;
    }
    let ScanCall { dest, src, nelems, nbytes, dtype, op, exclusive } = call;
    let (h, g, mine) = (t.hosts(), t.g, t.members(t.g));
    // Each value sits in a slot of whole 16-byte words, in the buffers and on the wire.
    let sb = nbytes.div_ceil(16) * 16;
    let w = sb / 16;
    let longest = (0..h).map(|k| t.members(k).len()).max().unwrap_or(0) * sb;
    let staged = longest <= t.piece_bytes();
    let others = || (1..h).map(|d| (g + d) % h);
    // The stream to group k holds a prefix per member of k; every stream to this group one
    // per member of it. On the stack: no allocation per call.
    let (mut at_out, mut at_in) = ([0usize; crate::MAX_HOSTS], [0usize; crate::MAX_HOSTS]);
    let (mut total_out, mut total_in) = (0, 0);
    for k in others() {
        (at_out[k], at_in[k]) = (total_out, total_in);
        total_out += t.members(k).len() * sb;
        total_in += mine.len() * sb;
    }
    let [own, out, inc, acc] = t.buffers_of([mine.len() * sb, total_out, total_in, sb]);
    let combine = |acc: &mut [u128], x: &[u128]| arith::combine(dtype, op, acc, x, nelems);
    // SAFETY: every member's `src` and `dest` hold `nbytes` (caller), and every member has
    // arrived, so its source is ready; the buffers hold what is indexed below; a piece holds
    // the longest stream when `staged`. Every source is read before any `dest` is written.
    unsafe {
        gather(c, t, e);
        let base = own.as_mut_ptr();
        std::ptr::copy_nonoverlapping(src, base.cast(), nbytes);
        for j in 1..mine.len() {
            t.get_local(c, j, base.add(j * w).cast(), src, nbytes);
        }
        // The prefixes for every other group's members.
        for k in others() {
            let (mut have, mut i) = (false, 0);
            for (m, &q) in t.members(k).iter().enumerate() {
                while i < mine.len() && mine[i] < q {
                    let x = &own[i * w..(i + 1) * w];
                    if have {
                        combine(acc, x);
                    } else {
                        acc.copy_from_slice(x);
                        have = true;
                    }
                    i += 1;
                }
                if have {
                    let at = at_out[k] / 16 + m * w;
                    out[at..at + w].copy_from_slice(acc);
                }
            }
        }
        let (outp, incp) = (out.as_mut_ptr().cast::<u8>(), inc.as_mut_ptr().cast::<u8>());
        if staged {
            // Every stream fits a piece: one exchange.
            let x = t.next_exchange();
            for k in others() {
                t.nsend(c, k, t.piece(x, g), outp.add(at_out[k]), t.members(k).len() * sb);
            }
            for k in others().rev() {
                t.nwait(c, k);
                std::ptr::copy_nonoverlapping(t.piece(x, k), incp.add(at_in[k]), mine.len() * sb);
            }
        } else {
            // Larger: each prefix goes straight into its member's `dest`, free until the
            // results are written (its source is copied above), one sending group at a time:
            // in step d this leader tells the group d behind that its members' `dest` are
            // free, waits for the same word from the group d ahead, puts that group's
            // prefixes into its members' `dest` and signals once they are complete, then
            // waits for the group behind's and reads them out.
            for d in 1..h {
                let (to, from) = ((g + d) % h, (g + h - d) % h);
                t.nsignal(c, from);
                t.nwait(c, to);
                let mut sent = false;
                for (m, &q) in t.members(to).iter().enumerate() {
                    if mine[0] < q {
                        t.put_member(c, q, dest, outp.add(at_out[to] + m * sb), nbytes);
                        sent = true;
                    }
                }
                if sent {
                    // The prefixes go to the members, the signal to their leader: only
                    // completion orders them.
                    (c.quiet)();
                }
                t.nsignal(c, to);
                t.nwait(c, from);
                for (j, &q) in mine.iter().enumerate() {
                    if t.members(from)[0] < q {
                        t.get_local(c, j, incp.add(at_in[from] + j * sb), dest, nbytes);
                    }
                }
            }
        }
        // Each member's result, built in its source's slot once the running combination of
        // this group's sources (`acc`) has taken that source in.
        let mut have = false;
        let mut transported = false;
        for (j, &q) in mine.iter().enumerate() {
            let res = &mut own[j * w..(j + 1) * w];
            let mut any = true;
            if !have {
                acc.copy_from_slice(res);
                have = true;
                any = !exclusive;
            } else if exclusive {
                // The result starts from the earlier sources; `acc` takes this one in.
                acc.swap_with_slice(res);
                combine(acc, res);
            } else {
                combine(acc, res);
                res.copy_from_slice(acc);
            }
            for k in others().filter(|&k| t.members(k)[0] < q) {
                let at = at_in[k] / 16 + j * w;
                let theirs = &inc[at..at + w];
                if any {
                    combine(res, theirs);
                } else {
                    res.copy_from_slice(theirs);
                    any = true;
                }
            }
            // Nothing before the team's first member: its exclusive result is the core's.
            if any {
                transported |= t.put_local(c, j, dest, res.as_ptr().cast(), nbytes);
            }
        }
        t.publish(c, transported);
        t.lsignal_all(LDATA, e);
    }
    RC_OK
}

/// The leaders' exclusive scan of their groups' totals, in group order (the team's order: the
/// groups are consecutive), by recursive doubling: in round r each leader sends what it has
/// combined so far (the groups from `g - 2^r + 1` to `g`) to the leader `2^r` ahead, and
/// combines what the leader `2^r` behind sends into that and into `before`. Returns whether
/// `before` holds anything (false on the first group); `total` is consumed.
///
/// Every transfer waits for the receiver's "ready": unlike an exchange's swaps, a sender here
/// hears nothing from its receiver otherwise, and could run a whole call ahead. That keeps the
/// slots' rule of [`Team::next_exchange`]: a leader that finishes the scan has heard, in it,
/// from every leader a power of two away, that is, from every partner of an exchange.
/// A total that fits a staging slot lands in that round's slot, a larger one in the
/// receiver's `dest`, which holds nothing of the call's until the results are written.
///
/// # Safety
/// `dest` symmetric with room for `nbytes`, the buffers at least `nbytes` long.
#[allow(clippy::too_many_arguments)]
unsafe fn scan_leaders(
    c: &CoreServices,
    t: &Team,
    dest: *mut u8,
    total: &mut [u128],
    tmp: &mut [u128],
    before: &mut [u128],
    nbytes: usize,
    combine: impl Fn(&mut [u128], &[u128]),
) -> bool {
    let (h, g) = (t.hosts(), t.g);
    let x = t.next_exchange();
    let at = |r: usize| if nbytes > t.slot_bytes() { dest } else { t.slot(x, r) };
    let bytes = |b: &mut [u128]| b.as_mut_ptr().cast::<u8>();
    let mut have = false;
    let (mut d, mut r) = (1, 0);
    // SAFETY: the slots of exchange `x` hold a slot's worth, `dest` and the buffers what the
    // caller promised; a sender writes only after the receiver's "ready".
    unsafe {
        while d < h {
            if g >= d {
                t.nsignal(c, g - d);
            }
            if g + d < h {
                t.nwait(c, g + d);
                t.nsend(c, g + d, at(r), bytes(total), nbytes);
            }
            if g >= d {
                t.nwait(c, g - d);
                std::ptr::copy_nonoverlapping(at(r), bytes(tmp), nbytes);
                if have {
                    combine(before, tmp);
                } else {
                    before.copy_from_slice(tmp);
                    have = true;
                }
                combine(total, tmp);
            }
            d *= 2;
            r += 1;
        }
    }
    have
}

/// Recursive doubling between the leaders on their partials, each sent with its signal in one
/// message: the groups beyond the largest power of two `p` first fold their partial into group
/// `g - p`'s, then the `p` groups swap partials with the group 2^k away in round k, each pair
/// combining the lower groups' partial with the upper's, so both get the same bits, and at
/// last the folded groups get the result. On return `mine` holds the result, the same bits on
/// every leader.
///
/// Where a partial lands:
/// - up to a staging slot, in the receiver's slot for the step (the slots of this exchange):
///   a partner may send at once (the rule of [`Team::next_exchange`]); log2(hosts) + 2
///   messages in sequence;
/// - above, in the receiver's own `dest`, which is free during the call (its source was copied
///   before the exchange, and its result is written after): one arrival at a time, so the
///   receiver sends a "ready" before each and the sender waits for it, one more message per
///   step, which a large partial's transfer outweighs.
///
/// # Safety
/// `dest` is symmetric with room for `nbytes` (it may be null when `nbytes` fits a slot), and
/// the buffers are at least `nbytes` long.
unsafe fn exchange(
    c: &CoreServices,
    t: &Team,
    dest: *mut u8,
    mine: &mut [u128],
    tmp: &mut [u128],
    nbytes: usize,
    combine: impl Fn(&mut [u128], &[u128]),
) {
    let (h, g) = (t.hosts(), t.g);
    let p = 1usize << (usize::BITS - 1 - h.leading_zeros());
    let bytes = |b: &mut [u128]| b.as_mut_ptr().cast::<u8>();
    let ready = nbytes > t.slot_bytes();
    let x = if ready { 0 } else { t.next_exchange() };
    let at = |step: usize| if ready { dest } else { t.stage(x, step) };
    // Every transfer from X to Y is: Y's "ready" (into `dest` only), then X's data. Each
    // leader sends its signals to a partner in the order that partner consumes them.
    // SAFETY: the slots of exchange `x` hold a slot's worth, `dest` and the buffers what the
    // caller promised.
    unsafe {
        let send = |to: usize, step: usize, data: &mut [u128]| {
            if ready {
                t.nwait(c, to);
            }
            t.nsend(c, to, at(step), bytes(data), nbytes);
        };
        let expect = |from: usize| {
            if ready {
                t.nsignal(c, from);
            }
        };
        let receive = |from: usize, step: usize, tmp: &mut [u128]| {
            t.nwait(c, from);
            std::ptr::copy_nonoverlapping(at(step), bytes(tmp), nbytes);
        };
        if g >= p {
            send(g - p, 0, mine);
            expect(g - p);
            receive(g - p, 0, tmp);
            mine.copy_from_slice(tmp);
            return;
        }
        if g + p < h {
            expect(g + p);
            receive(g + p, 0, tmp);
            combine(mine, tmp);
        }
        let mut k = 0;
        while 1 << k < p {
            let q = g ^ (1 << k);
            expect(q);
            send(q, 1 + k, mine);
            receive(q, 1 + k, tmp);
            // lower groups' partial first, whichever side this is
            if g < q {
                combine(mine, tmp);
            } else {
                combine(tmp, mine);
                mine.copy_from_slice(tmp);
            }
            k += 1;
        }
        if g + p < h {
            send(g + p, 0, mine);
        }
    }
}
