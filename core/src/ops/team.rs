//! Teams as the core sees them: membership, symmetric scratch, and the collective table
//! resolved per operation at creation from the stacked scoll components (best first; a slot
//! that declines a call falls through to the next provider).
//!
//! Scratch comes from a pool of symmetric slots reserved at init ([`MAX_TEAMS`] for split
//! and predefined teams, then `ACTIVE_SET_SLOTS` for cached active sets), not from the
//! heap at team creation: only the parent team's PEs create a team, so per-team heap
//! allocations would leave the PEs' heaps at different offsets. The PEs creating a team agree
//! on a slot that none of them uses (see `teams.rs`), and teams with disjoint members may share
//! one.

use crate::symm::runtime::Runtime;
use rshmem_plugin_api::{
    ScollOps, TeamDesc, RC_DECLINED, RC_OK, TEAM_EPHEMERAL, TEAM_HOSTS_MAPPED, TEAM_MAPPED,
};
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};

type BarrierFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type BroadcastFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_void, usize, c_int) -> c_int;
type CollectFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_void, usize, c_int) -> c_int;
type AlltoallFn =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_void, usize, usize, isize, isize) -> c_int;
type ReduceFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_void, usize, u32, u32, u32) -> c_int;

/// A slot of a component's table, if the table is long enough to have it and it is set.
macro_rules! slot {
    ($ops:expr, $field:ident) => {
        if $ops.has(std::mem::offset_of!(ScollOps, $field) + std::mem::size_of::<Option<fn()>>()) {
            $ops.$field
        } else {
            None
        }
    };
}

/// Teams that can exist at once on a PE (the world and the shared team included).
pub const MAX_TEAMS: usize = 64;

/// Scratch slots reserved for active-set teams (`crate::ops::active_sets`), after the
/// [`MAX_TEAMS`] slots of split teams: splits never run short of slots because of that cache.
pub const ACTIVE_SET_SLOTS: usize = 16;
/// Words of each slot the core itself uses (slot agreement, arrivals), before the components'
/// scratch.
pub const CORE_WORDS: usize = 8;
/// The core word counting the collectives a PE has entered on the team.
const ARRIVALS_WORD: usize = 7;

/// `TEAM_MAPPED` for a team of these members when all run on this host, which maps itself
/// fully; `TEAM_HOSTS_MAPPED` when every host maps its own PEs (the same on every PE).
fn mapped_flags(rt: &Runtime, (start, stride, size): (c_int, c_int, c_int)) -> u32 {
    let all_here = (0..size).all(|i| rt.boot.is_local(start + i * stride));
    let mut flags = 0;
    if all_here && rt.hosts.here_mapped() {
        flags |= TEAM_MAPPED;
    }
    if rt.hosts.all_mapped() {
        flags |= TEAM_HOSTS_MAPPED;
    }
    flags
}

/// Bytes of one slot of the pool for these components: the core's words, then each
/// component's scratch, 64-byte aligned.
fn slot_bytes(scolls: &[(&'static ScollOps, String)]) -> usize {
    let needs: usize = scolls.iter().map(|(o, _)| round_up(o.scratch_needed.max(64), 64)).sum();
    CORE_WORDS * 8 + needs
}

/// Bytes [`init_pool`] takes from the symmetric heap (so init can make room for them).
pub fn pool_bytes(scolls: &[(&'static ScollOps, String)]) -> usize {
    (MAX_TEAMS + ACTIVE_SET_SLOTS) * slot_bytes(scolls)
}

/// Reserve the slots (collective: part of init, so the heap stays symmetric).
pub fn init_pool(routine: &'static CStr, rt: &Runtime, scolls: &[(&'static ScollOps, String)]) {
    let slot_bytes = slot_bytes(scolls);
    let slots = MAX_TEAMS + ACTIVE_SET_SLOTS;
    let base = rt.alloc(slots * slot_bytes, 64).unwrap_or_else(|| {
        crate::error::fail(routine, crate::error::ShmemError::NoRoom { what: "team scratch space" })
    });
    // SAFETY: freshly allocated symmetric memory of that size.
    unsafe { std::ptr::write_bytes(base, 0, slots * slot_bytes) };
    let _ = rt.team_pool.set(crate::symm::scratch::Pool::new(base, slot_bytes, slots));
}

/// Slot `slot`'s scratch in `rt`'s pool: its address and length.
pub fn slot_memory(rt: &Runtime, slot: usize) -> (*mut u8, usize) {
    rt.team_pool.get().expect("team pool reserved at init").slot(slot)
}

/// The index of world PE `pe` in the team (start, stride, size), if it is a member.
pub fn index_in(pe: c_int, start: c_int, stride: c_int, size: c_int) -> Option<c_int> {
    let off = i64::from(pe) - i64::from(start);
    let i = if stride == 0 {
        if off == 0 {
            0
        } else {
            return None;
        }
    } else if off % i64::from(stride) == 0 {
        off / i64::from(stride)
    } else {
        return None;
    };
    (0..i64::from(size)).contains(&i).then_some(i as c_int)
}

pub struct TeamState {
    pub desc: TeamDesc,
    /// The pool slot holding its scratch.
    pub slot: usize,
    /// The slot's memory (null for a team on a pSync, which has no slot).
    slot_base: *mut u8,
    /// `shmem_team_config_t.num_contexts` as given at creation.
    pub num_contexts: c_int,
    /// The memory space whose associated team this team is or descends from (0: none), so
    /// that `shmem_space_destroy` can refuse while any such team exists.
    pub space: AtomicU64,
    pub barrier: Vec<(BarrierFn, *mut c_void, String)>,
    pub broadcast: Vec<(BroadcastFn, *mut c_void, String)>,
    /// Each broadcast provider's form that leaves the root's `dest` alone, if it has one.
    broadcast_keep_root: Vec<Option<BroadcastFn>>,
    pub collect: Vec<(CollectFn, *mut c_void, String)>,
    pub alltoall: Vec<(AlltoallFn, *mut c_void, String)>,
    pub reduce: Vec<(ReduceFn, *mut c_void, String)>,
    /// The components that enabled this team: (ops, state).
    enabled: Vec<(&'static ScollOps, *mut c_void)>,
    /// Per-component scratch descriptors, boxed so their addresses (given to the components)
    /// stay put while the vector grows.
    #[allow(clippy::vec_box)]
    _descs: Vec<Box<TeamDesc>>,
}

// SAFETY: component states are owned by the components and used under the OpenSHMEM rule that
// a team's collectives are not called concurrently from several threads.
unsafe impl Send for TeamState {}
// SAFETY: as for Send.
unsafe impl Sync for TeamState {}

fn round_up(v: usize, a: usize) -> usize {
    v.div_ceil(a) * a
}

impl TeamState {
    /// On a member of the team (world PEs `start + i * stride`, `i < size`) whose scratch slot
    /// `slot` every member has zeroed before any member can use the team.
    pub fn create(
        routine: &'static CStr,
        rt: &Runtime,
        slot: usize,
        triplet: (c_int, c_int, c_int),
        scolls: &[(&'static ScollOps, String)],
    ) -> TeamState {
        let (slot_base, slot_len) = slot_memory(rt, slot);
        let scratch = slot_base.wrapping_add(CORE_WORDS * 8);
        let mut t = Self::create_in(rt, slot, scratch, slot_len - CORE_WORDS * 8, triplet, scolls, 0);
        t.slot_base = slot_base;
        // A slot may have served a team before: count this team's collectives from 0. Every
        // member does so before the collective that ends the team's creation.
        if let Some(w) = t.arrivals_word() {
            w.store(0, Ordering::Relaxed);
        }
        if t.barrier.is_empty() || t.broadcast.is_empty() {
            crate::error::fail(routine, crate::error::ShmemError::NoScoll { what: "barrier and broadcast" });
        }
        if crate::log::enabled(crate::log::DEBUG, "team") {
            crate::log::log(crate::log::DEBUG, "team", &t.providers());
        }
        t
    }

    /// Which components serve each collective of the team, in the order they are tried (a
    /// component may still decline a call): `team (0, 1, 4): barrier hier>basic, ...`.
    fn providers(&self) -> String {
        fn names<F>(v: &[(F, *mut c_void, String)]) -> String {
            let v: Vec<&str> = v.iter().map(|p| p.2.as_str()).collect();
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(">")
            }
        }
        let d = &self.desc;
        format!(
            "team ({}, {}, {}): barrier {}, broadcast {}, collect {}, alltoall {}, reduce {}",
            d.start,
            d.stride,
            d.size,
            names(&self.barrier),
            names(&self.broadcast),
            names(&self.collect),
            names(&self.alltoall),
            names(&self.reduce),
        )
    }

    /// A team for one active-set call (the legacy routines), on the user's pSync. Components
    /// are enabled in rank order, those whose scratch does not fit skipped.
    pub fn create_ephemeral(
        rt: &Runtime,
        psync: *mut u8,
        psync_len: usize,
        triplet: (c_int, c_int, c_int),
        scolls: &[(&'static ScollOps, String)],
    ) -> TeamState {
        Self::create_in(rt, usize::MAX, psync, psync_len, triplet, scolls, TEAM_EPHEMERAL)
    }

    fn create_in(
        rt: &Runtime,
        slot: usize,
        scratch: *mut u8,
        total: usize,
        (start, stride, size): (c_int, c_int, c_int),
        scolls: &[(&'static ScollOps, String)],
        flags: u32,
    ) -> TeamState {
        let my_index = index_in(rt.my_pe, start, stride, size).unwrap_or(-1);
        let flags =
            if flags & TEAM_EPHEMERAL == 0 { flags | mapped_flags(rt, (start, stride, size)) } else { flags };
        let mut t = TeamState {
            slot,
            slot_base: std::ptr::null_mut(),
            num_contexts: 0,
            space: AtomicU64::new(0),
            desc: TeamDesc {
                id: slot as c_int,
                start,
                stride,
                size,
                my_index,
                scratch: scratch.cast(),
                scratch_len: total,
                flags,
            },
            barrier: Vec::new(),
            broadcast: Vec::new(),
            broadcast_keep_root: Vec::new(),
            collect: Vec::new(),
            alltoall: Vec::new(),
            reduce: Vec::new(),
            enabled: Vec::new(),
            _descs: Vec::new(),
        };
        let mut offset = 0;
        for (ops, name) in scolls {
            let need = round_up(ops.scratch_needed.max(64), 64);
            if offset + need > total {
                // Too big for this scratch (a pSync): the next components may still fit. The
                // order is the same on every PE, so all place the rest alike.
                continue;
            }
            let desc = Box::new(TeamDesc {
                scratch: scratch.wrapping_add(offset).cast(),
                scratch_len: need,
                ..t.desc
            });
            offset += need;
            // SAFETY: plugin ABI call; `desc` outlives the team.
            let state = unsafe { (ops.enable)(&*desc) };
            t._descs.push(desc);
            if state.is_null() {
                continue;
            }
            t.enabled.push((ops, state));
            if let Some(f) = ops.barrier {
                t.barrier.push((f, state, name.clone()));
            }
            if let Some(f) = ops.broadcast {
                t.broadcast.push((f, state, name.clone()));
                t.broadcast_keep_root.push(slot!(ops, broadcast_keep_root));
            }
            if let Some(f) = slot!(ops, collect) {
                t.collect.push((f, state, name.clone()));
            }
            if let Some(f) = slot!(ops, alltoall) {
                t.alltoall.push((f, state, name.clone()));
            }
            if let Some(f) = slot!(ops, reduce) {
                t.reduce.push((f, state, name.clone()));
            }
        }
        t
    }

    /// The word of the slot counting the collectives this PE has entered on the team (written
    /// by this PE only; read by a member whose collective waits long, to name who has not
    /// arrived), or None for a team without a pool slot (one active-set call's).
    fn arrivals_word(&self) -> Option<&AtomicU64> {
        (self.slot < MAX_TEAMS + ACTIVE_SET_SLOTS && self.desc.my_index >= 0)
            // SAFETY: an aligned word of the pool, symmetric memory that lives for the job;
            // peers only read it.
            .then(|| unsafe { AtomicU64::from_ptr(self.core_word(ARRIVALS_WORD)) })
    }

    /// Count this PE's entry into a collective of the team; the new count.
    fn count_arrival(&self) -> Option<u64> {
        self.arrivals_word().map(|w| {
            // Only this PE writes the word: a load and a store, no locked instruction.
            let n = w.load(Ordering::Relaxed) + 1;
            w.store(n, Ordering::Relaxed);
            n
        })
    }

    fn laggards_probe(&self) -> crate::ops::stall::Probe {
        crate::ops::stall::Probe { team: (self as *const TeamState).cast(), describe: describe_laggards }
    }

    /// The core's own words of the slot (a split team's, or a cached active set's).
    pub fn core_word(&self, i: usize) -> *mut u64 {
        debug_assert!(
            i < CORE_WORDS && self.slot < MAX_TEAMS + ACTIVE_SET_SLOTS && !self.slot_base.is_null()
        );
        (self.slot_base as *mut u64).wrapping_add(i)
    }

    /// World PE of team index `i`.
    pub fn pe_of(&self, i: c_int) -> c_int {
        self.desc.pe_of(i)
    }

    pub fn index_of(&self, world_pe: c_int) -> Option<c_int> {
        index_in(world_pe, self.desc.start, self.desc.stride, self.desc.size)
    }

    fn run<'a>(&self, routine: &'static CStr, op: &'static str, rcs: impl Iterator<Item = (c_int, &'a str)>) {
        let arrivals = self.count_arrival();
        let _running = crate::ops::stall::enter(routine, op, arrivals.map(|_| self.laggards_probe()));
        for (rc, name) in rcs {
            match rc {
                RC_OK => return,
                RC_DECLINED => continue,
                rc => crate::error::fatal(routine, &format!("scoll {name} {op} failed (code {rc})")),
            }
        }
        crate::error::fail(routine, crate::error::ShmemError::AllDeclined { op })
    }

    pub fn barrier(&self, routine: &'static CStr) {
        // SAFETY: plugin ABI calls with the state each component returned from `enable`.
        self.run(routine, "barrier", self.barrier.iter().map(|(f, s, n)| (unsafe { f(*s) }, n.as_str())));
    }

    /// # Safety
    /// `dest` and `src` must be valid for the bytes this collective writes and reads on this
    /// PE, and `dest` symmetric on every member (the C entry points check their arguments
    /// against the segments before they call it).
    pub unsafe fn broadcast(
        &self,
        routine: &'static CStr,
        dest: *mut c_void,
        src: *const c_void,
        nbytes: usize,
        root: c_int,
    ) {
        if let Some((rt, d, s)) = device_buffers(routine, (dest, nbytes), (src, nbytes)) {
            if self.direct(rt, &d, &s) {
                return self.broadcast_direct(routine, rt, (&d, &s), nbytes, root, true);
            }
            if self.desc.my_index == root {
                s.copy_in(rt, routine, nbytes);
            }
            self.broadcast_on(routine, d.host.cast(), s.host.cast(), nbytes, root);
            return d.copy_out(rt, routine, 0, nbytes);
        }
        self.broadcast_on(routine, dest, src, nbytes, root);
    }

    fn broadcast_on(
        &self,
        routine: &'static CStr,
        dest: *mut c_void,
        src: *const c_void,
        nbytes: usize,
        root: c_int,
    ) {
        self.run(
            routine,
            "broadcast",
            // SAFETY: as in `barrier`; addresses were checked by the caller.
            self.broadcast.iter().map(|(f, s, n)| (unsafe { f(*s, dest, src, nbytes, root) }, n.as_str())),
        );
    }
}

impl TeamState {
    /// The active-set broadcast: as `broadcast`, but the root's `dest` is left as it is. A
    /// component without that form gets the team form, with the root's `dest` saved and put
    /// back around it.
    ///
    /// # Safety
    /// `dest` and `src` must be valid for the bytes this collective writes and reads on this
    /// PE, and `dest` symmetric on every member (the C entry points check their arguments
    /// against the segments before they call it).
    pub unsafe fn broadcast_keep_root(
        &self,
        routine: &'static CStr,
        dest: *mut c_void,
        src: *const c_void,
        nbytes: usize,
        root: c_int,
    ) {
        if let Some((rt, d, s)) = device_buffers(routine, (dest, nbytes), (src, nbytes)) {
            if self.direct(rt, &d, &s) {
                return self.broadcast_direct(routine, rt, (&d, &s), nbytes, root, false);
            }
            let me_root = self.desc.my_index == root;
            if me_root {
                s.copy_in(rt, routine, nbytes);
            }
            self.broadcast_keep_root_on(routine, d.host.cast(), s.host.cast(), nbytes, root);
            if !me_root {
                d.copy_out(rt, routine, 0, nbytes);
            }
            return;
        }
        self.broadcast_keep_root_on(routine, dest, src, nbytes, root);
    }

    fn broadcast_keep_root_on(
        &self,
        routine: &'static CStr,
        dest: *mut c_void,
        src: *const c_void,
        nbytes: usize,
        root: c_int,
    ) {
        let keeping = self.desc.my_index == root && nbytes > 0 && !std::ptr::eq(dest, src);
        let rcs = self.broadcast.iter().zip(&self.broadcast_keep_root).map(|((f, s, n), keep)| {
            let rc = match keep {
                // SAFETY: as in `barrier`; addresses were checked by the caller.
                Some(k) => unsafe { k(*s, dest, src, nbytes, root) },
                None if keeping => {
                    // SAFETY: `dest` holds `nbytes` bytes (caller).
                    let saved = unsafe { std::slice::from_raw_parts(dest as *const u8, nbytes) }.to_vec();
                    // SAFETY: as in `barrier`; then `dest` is written back from its copy.
                    unsafe {
                        let rc = f(*s, dest, src, nbytes, root);
                        std::ptr::copy_nonoverlapping(saved.as_ptr(), dest as *mut u8, nbytes);
                        rc
                    }
                }
                // SAFETY: as in `barrier`.
                None => unsafe { f(*s, dest, src, nbytes, root) },
            };
            (rc, n.as_str())
        });
        self.run(routine, "broadcast", rcs);
    }

    /// `fixed`: every member's `nbytes`; else each its own, concatenated in team order.
    /// # Safety
    /// `dest` and `src` must be valid for the bytes this collective writes and reads on this
    /// PE, and `dest` symmetric on every member (the C entry points check their arguments
    /// against the segments before they call it).
    pub unsafe fn collect(
        &self,
        routine: &'static CStr,
        dest: *mut c_void,
        src: *const c_void,
        nbytes: usize,
        fixed: bool,
    ) {
        // The total of a variable collect is known once it has run.
        let total = if fixed { nbytes.saturating_mul(self.desc.size as usize) } else { 0 };
        if let Some((rt, d, s)) = device_buffers(routine, (dest, total), (src, nbytes)) {
            if fixed && self.direct_gather(rt, &d, &s, nbytes) {
                // Member i's source into block i, from its copy.
                return self.gather_direct(routine, rt, (&d, &s), nbytes, |_| 0);
            }
            s.copy_in(rt, routine, nbytes);
            self.collect_on(routine, d.host.cast(), s.host.cast(), nbytes, fixed);
            let total =
                if fixed || !d.is_device() { total } else { self.collected_bytes(routine, rt, &d, nbytes) };
            return d.copy_out(rt, routine, 0, total);
        }
        self.collect_on(routine, dest, src, nbytes, fixed);
    }

    fn collect_on(
        &self,
        routine: &'static CStr,
        dest: *mut c_void,
        src: *const c_void,
        nbytes: usize,
        fixed: bool,
    ) {
        self.run(
            routine,
            "collect",
            self.collect.iter().map(|(f, s, n)| {
                // SAFETY: as in `barrier`; addresses were checked by the caller.
                (unsafe { f(*s, dest, src, nbytes, c_int::from(fixed)) }, n.as_str())
            }),
        );
    }

    /// The bytes a variable collect wrote into device destination `d`: every member's
    /// `nbytes`, gathered by an fcollect in the shadow's words for this team's slot (a team
    /// made per call on a pSync uses the last).
    fn collected_bytes(
        &self,
        routine: &'static CStr,
        rt: &Runtime,
        d: &crate::ops::device::Shadow,
        nbytes: usize,
    ) -> usize {
        let words = d.sizes_words(rt, self.slot.min(MAX_TEAMS + ACTIVE_SET_SLOTS));
        let n = rt.n_pes as usize;
        // SAFETY: `n + 1` symmetric words of the shadow that only this team's members use
        // for this, one collective at a time (the spec's rule for a team's collectives).
        unsafe { words.add(n).write_volatile(nbytes as u64) };
        self.collect_on(routine, words.cast(), words.wrapping_add(n).cast(), 8, true);
        let size = self.desc.size as usize;
        // SAFETY: the fcollect filled `size <= n` words.
        let sizes = unsafe { std::slice::from_raw_parts(words, size) };
        sizes.iter().fold(0usize, |t, &b| t.saturating_add(b as usize))
    }

    /// `nelems` elements of `es` bytes to each member, at strides `dst` and `sst` (elements).
    /// # Safety
    /// `dest` and `src` must be valid for the bytes this collective writes and reads on this
    /// PE, and `dest` symmetric on every member (the C entry points check their arguments
    /// against the segments before they call it).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn alltoall(
        &self,
        routine: &'static CStr,
        dest: *mut c_void,
        src: *const c_void,
        es: usize,
        nelems: usize,
        dst: isize,
        sst: isize,
    ) {
        let count = nelems.saturating_mul(self.desc.size as usize);
        let span = |stride: isize| {
            count
                .checked_sub(1)
                .map_or(0, |c| c.saturating_mul(stride as usize).saturating_add(1).saturating_mul(es))
        };
        if let Some((rt, d, s)) = device_buffers(routine, (dest, span(dst)), (src, span(sst))) {
            let block = nelems.saturating_mul(es);
            if dst == 1 && sst == 1 && self.direct_gather(rt, &d, &s, block) {
                // Member j's block for this PE (its block `my_index`) into block j.
                let mine = self.desc.my_index as usize * block;
                return self.gather_direct(routine, rt, (&d, &s), block, |_| mine);
            }
            s.copy_in(rt, routine, span(sst));
            self.alltoall_on(routine, d.host.cast(), s.host.cast(), es, nelems, dst, sst);
            if dst == 1 {
                return d.copy_out(rt, routine, 0, span(dst));
            }
            return d.copy_out_strided(rt, routine, count, es, dst as usize);
        }
        self.alltoall_on(routine, dest, src, es, nelems, dst, sst);
    }

    #[allow(clippy::too_many_arguments)]
    fn alltoall_on(
        &self,
        routine: &'static CStr,
        dest: *mut c_void,
        src: *const c_void,
        es: usize,
        nelems: usize,
        dst: isize,
        sst: isize,
    ) {
        self.run(
            routine,
            "alltoall",
            self.alltoall.iter().map(|(f, s, n)| {
                // SAFETY: as in `barrier`; addresses were checked by the caller.
                (unsafe { f(*s, dest, src, es, nelems, dst, sst) }, n.as_str())
            }),
        );
    }

    /// # Safety
    /// `dest` and `src` must be valid for the bytes this collective writes and reads on this
    /// PE, and `dest` symmetric on every member (the C entry points check their arguments
    /// against the segments before they call it).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn reduce(
        &self,
        routine: &'static CStr,
        dest: *mut c_void,
        src: *const c_void,
        nelems: usize,
        dtype: u32,
        op: u32,
        kind: u32,
    ) {
        // An unknown type is the components' to refuse; its size does not matter then.
        let len = nelems.saturating_mul(rshmem_plugin_api::arith::elem_size(dtype).unwrap_or(0));
        if let Some((rt, d, s)) = device_buffers(routine, (dest, len), (src, len)) {
            if kind == rshmem_plugin_api::REDUCE_ALL
                && self.reduce_direct(routine, rt, (&d, &s), len, nelems, (dtype, op))
            {
                return;
            }
            s.copy_in(rt, routine, len);
            self.reduce_on(routine, d.host.cast(), s.host.cast(), nelems, dtype, op, kind);
            return d.copy_out(rt, routine, 0, len);
        }
        self.reduce_on(routine, dest, src, nelems, dtype, op, kind);
    }

    #[allow(clippy::too_many_arguments)]
    fn reduce_on(
        &self,
        routine: &'static CStr,
        dest: *mut c_void,
        src: *const c_void,
        nelems: usize,
        dtype: u32,
        op: u32,
        kind: u32,
    ) {
        self.run(
            routine,
            "reduction",
            self.reduce.iter().map(|(f, s, n)| {
                // SAFETY: as in `barrier`; addresses were checked by the caller.
                (unsafe { f(*s, dest, src, nelems, dtype, op, kind) }, n.as_str())
            }),
        );
        if kind == rshmem_plugin_api::REDUCE_EXSCAN && self.desc.my_index == 0 {
            // The components leave the first member's `dest` alone; the spec defines it as
            // 0 (the sum over no member), and the source may be reused once they return.
            let len = nelems.saturating_mul(rshmem_plugin_api::arith::elem_size(dtype).unwrap_or(0));
            // SAFETY: `dest` holds `nelems` elements (caller) and the collective is done.
            unsafe { std::ptr::write_bytes(dest as *mut u8, 0, len) };
        }
    }
}

/// The smallest block a direct gather on a team of more than 2 members copies
/// ([`TeamState::direct_gather`]): between the 1 KiB where the shadow was faster and the
/// 64 KiB where the direct copies were.
const DIRECT_GATHER_MIN: usize = 16 << 10;

impl TeamState {
    /// Whether this collective on device buffers `d` and `s` copies device to device between
    /// the members' copies (`crate::ops::device::direct`).
    fn direct(&self, rt: &Runtime, d: &crate::ops::device::Shadow, s: &crate::ops::device::Shadow) -> bool {
        crate::ops::device::direct(rt, d, s, (0..self.desc.size).map(|i| self.pe_of(i)))
    }

    /// Whether a gather (fcollect, alltoall) of `block` bytes per member copies device to
    /// device: as [`Self::direct`], when the team has at most 2 members or blocks of at least
    /// [`DIRECT_GATHER_MIN`] bytes. A direct gather makes one copy per member where the
    /// shadow's makes two in all, so for small blocks on larger teams the shadow was faster
    /// (4 PEs on an H200 under MPS, 8 B and 1 KiB: 32 µs against 22-25; at 64 KiB 31 against
    /// 90; docs/performance.md). The arguments are alike on every member, so is the choice.
    fn direct_gather(
        &self,
        rt: &Runtime,
        d: &crate::ops::device::Shadow,
        s: &crate::ops::device::Shadow,
        block: usize,
    ) -> bool {
        (self.desc.size <= 2 || block >= DIRECT_GATHER_MIN) && self.direct(rt, d, s)
    }

    /// A broadcast between mapped device buffers: once every member has entered (the root's
    /// source is ready), each member copies the root's source into its `dest` (the root too when
    /// `root_too` and its `dest` is another buffer), and nobody leaves before every member has
    /// copied (the root may then change its source).
    fn broadcast_direct(
        &self,
        routine: &'static CStr,
        rt: &Runtime,
        (d, s): (&crate::ops::device::Shadow, &crate::ops::device::Shadow),
        nbytes: usize,
        root: c_int,
        root_too: bool,
    ) {
        self.barrier(routine);
        let me = rt.my_pe as c_int;
        let (to, from) = (d.on_peer(rt, me), s.on_peer(rt, self.pe_of(root)));
        let copy = self.desc.my_index != root || (root_too && to != s.on_peer(rt, me));
        if let (true, Some(to), Some(from)) = (copy && nbytes > 0, to, from) {
            // SAFETY: both ranges were checked against their segments (`Shadow::of`); the
            // root's copy is mapped here and ready (the barrier above).
            unsafe { crate::ops::device::copy(rt, routine, to, from, nbytes) };
        }
        self.barrier(routine);
    }

    /// A reduction between mapped device buffers, on the device: where this runs directly
    /// (as [`Self::direct`]), the team has at most `device::REDUCE_SOURCES` members, `dest`
    /// and the source do not overlap (in place, a member would overwrite its source while
    /// others read it), and the device memheap has a kernel for the type and operation (the
    /// same answer on every member: agreed at init, then decided by the arguments alone).
    /// Once every member has entered, each reduces all members' sources into its `dest` with
    /// one kernel, waits for it, and leaves after a second barrier. False, having done
    /// nothing, where the shadow must serve.
    fn reduce_direct(
        &self,
        routine: &'static CStr,
        rt: &Runtime,
        (d, s): (&crate::ops::device::Shadow, &crate::ops::device::Shadow),
        len: usize,
        nelems: usize,
        how: (u32, u32),
    ) -> bool {
        let me = rt.my_pe as c_int;
        let (Some(to), Some(mine)) = (d.on_peer(rt, me), s.on_peer(rt, me)) else { return false };
        let apart = to as usize + len <= mine as usize || mine as usize + len <= to as usize;
        let size = self.desc.size as usize;
        if !apart || size > crate::ops::device::REDUCE_SOURCES || !self.direct(rt, d, s) {
            return false;
        }
        let srcs: Option<Vec<*const u8>> =
            (0..self.desc.size).map(|i| s.on_peer(rt, self.pe_of(i)).map(|p| p.cast_const())).collect();
        let Some(srcs) = srcs else { return false };
        // Whether a kernel serves this type and operation, before any member waits for another.
        // SAFETY: a count of 0 touches no memory.
        if !unsafe { crate::ops::device::reduce(rt, routine, to, &srcs, 0, how) } {
            return false;
        }
        self.barrier(routine);
        if nelems > 0 {
            // SAFETY: `dest` and every source were checked against their segments
            // (`Shadow::of`) for `len` bytes, and every source is ready (the barrier above).
            unsafe { crate::ops::device::reduce(rt, routine, to, &srcs, nelems, how) };
        }
        self.barrier(routine);
        true
    }

    /// A gather between mapped device buffers (fcollect, alltoall): once every member has
    /// entered, block i of this PE's `dest` (`block` bytes each) is `block` bytes at offset
    /// `at(i)` of member i's source; nobody leaves before every member has copied.
    fn gather_direct(
        &self,
        routine: &'static CStr,
        rt: &Runtime,
        (d, s): (&crate::ops::device::Shadow, &crate::ops::device::Shadow),
        block: usize,
        at: impl Fn(c_int) -> usize,
    ) {
        self.barrier(routine);
        let me = rt.my_pe as c_int;
        if let Some(to) = d.on_peer(rt, me).filter(|_| block > 0) {
            let copies = (0..self.desc.size).filter_map(|i| {
                let from = s.on_peer(rt, self.pe_of(i))?;
                Some((to.wrapping_add(i as usize * block), from.wrapping_add(at(i)).cast_const(), block))
            });
            // SAFETY: both ranges of each copy were checked against their segments
            // (`Shadow::of`, the whole of `dest` and of the source); member i's copy is mapped
            // here and ready (the barrier above).
            unsafe { crate::ops::device::copy_all(rt, routine, copies) };
        }
        self.barrier(routine);
    }
}

/// A collective's `(dest, bytes)` and `(source, bytes)` as it runs them when either is device
/// memory (`crate::ops::device::Shadow`): None, at the cost of one relaxed load, in a job
/// without device memory, and when both are host memory.
fn device_buffers(
    routine: &'static CStr,
    (dest, dest_len): (*mut c_void, usize),
    (src, src_len): (*const c_void, usize),
) -> Option<(&'static Runtime, crate::ops::device::Shadow, crate::ops::device::Shadow)> {
    let rt = crate::symm::runtime::try_get()?;
    if !crate::ops::device::active(rt) {
        return None;
    }
    let d = crate::ops::device::Shadow::of(rt, routine, "dest", dest as *const u8, dest_len);
    let s = crate::ops::device::Shadow::of(rt, routine, "source", src as *const u8, src_len);
    (d.is_device() || s.is_device()).then_some((rt, d, s))
}

impl Drop for TeamState {
    fn drop(&mut self) {
        for (ops, state) in &self.enabled {
            // SAFETY: plugin ABI call releasing the state it created.
            unsafe { (ops.disable)(*state) };
        }
    }
}

/// For the stall warning of a collective that waits long (`crate::ops::stall`): the members
/// that have entered fewer of the team's collectives than this PE, read from their arrival
/// words, i.e. those that have not reached this one.
fn describe_laggards(team: *const c_void) -> Option<String> {
    // SAFETY: the probe was made by `run` from a team that outlives its collective, and the
    // warning is given from inside that collective.
    let t = unsafe { &*team.cast::<TeamState>() };
    let word = t.arrivals_word()?;
    let mine = word.load(Ordering::Relaxed);
    let mut behind = Vec::new();
    for i in 0..t.desc.size {
        if i == t.desc.my_index {
            continue;
        }
        let pe = t.pe_of(i);
        let mut theirs = 0u64;
        // SAFETY: the word is symmetric (the same slot on every member); `theirs` is a local
        // 8-byte destination. A warning that cannot read a member's word says nothing rather
        // than end the job (the liveness watch names a peer that is gone).
        unsafe {
            crate::ops::rma::get_any::<false, false>(
                c"the stall warning",
                crate::ops::ctx::default(),
                (&mut theirs as *mut u64).cast(),
                (word.as_ptr() as *const u64).cast(),
                8,
                1,
                pe,
            )
        }
        .ok()?;
        if theirs < mine {
            behind.push((pe, theirs));
        }
    }
    if behind.is_empty() {
        return Some(format!(
            "Every PE of the team has entered it (the team's collective number {mine} here): one may be stuck inside it"
        ));
    }
    const SHOWN: usize = 8;
    let listed: Vec<String> =
        behind.iter().take(SHOWN).map(|(pe, n)| format!("PE {pe} (entered {n})")).collect();
    let more =
        if behind.len() > SHOWN { format!(" and {} more", behind.len() - SHOWN) } else { String::new() };
    Some(format!(
        "Not yet in it (the team's collective number {mine} here): {} of the team's {} PEs, {}{more}",
        behind.len(),
        t.desc.size,
        listed.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::index_in;

    #[test]
    fn a_pe_finds_its_index_in_teams_of_odd_strides_and_sizes() {
        // Every third PE from 1, five of them: 1, 4, 7, 10, 13.
        for (i, pe) in [1, 4, 7, 10, 13].into_iter().enumerate() {
            assert_eq!(index_in(pe, 1, 3, 5), Some(i as i32), "PE {pe}");
        }
        for pe in [0, 2, 3, 5, 16, -2] {
            assert_eq!(index_in(pe, 1, 3, 5), None, "PE {pe} is not a member");
        }
        // A stride of 0 (a team of one PE repeated is one PE) and a negative stride.
        assert_eq!(index_in(6, 6, 0, 1), Some(0));
        assert_eq!(index_in(7, 6, 0, 1), None);
        assert_eq!(index_in(2, 8, -3, 3), Some(2), "8, 5, 2");
        assert_eq!(index_in(11, 8, -3, 3), None, "before the start, the other way");
        // Sizes at the edges of the job's numbers: no overflow far out.
        assert_eq!(index_in(i32::MAX, 0, 1, i32::MAX), None, "one past the last member");
        assert_eq!(index_in(i32::MAX - 1, 0, 1, i32::MAX), Some(i32::MAX - 1));
        assert_eq!(index_in(i32::MIN, i32::MAX, 1 << 30, 4), None);
        // Awkward sizes, every member found at its index and nothing past the end.
        for size in [1, 2, 3, 5, 14, 127, 128, 129, 166, 255, 256, 257] {
            for stride in [1, 2, 7] {
                let start = 3;
                for i in 0..size {
                    assert_eq!(index_in(start + i * stride, start, stride, size), Some(i));
                }
                assert_eq!(index_in(start + size * stride, start, stride, size), None, "{size} {stride}");
            }
        }
    }
}
