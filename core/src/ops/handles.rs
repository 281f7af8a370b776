//! Predefined handles exported as data symbols, so `SHMEM_CTX_DEFAULT` and `SHMEM_TEAM_WORLD`
//! are link-time constants in C (`&rshmem_ctx_default`).
#![allow(non_upper_case_globals)]

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicPtr, AtomicU32};
use std::sync::Mutex;

/// A context: which spml context carries its traffic, whether it has traffic the spml must
/// complete at the next quiet (direct stores to mapped peers need no spml flush), and whether
/// its own spml context is still to be made (at its first spml operation: see `ctx.rs`).
///
/// Programs link against `rshmem_ctx_default` as data (often by copy relocation, which fixes the
/// object's size in the executable), so the layout is padded to a fixed 64 bytes: fields can be
/// added in the reserved room without breaking programs built against an earlier library.
#[repr(C, align(64))]
pub struct CtxObj {
    pub spml: AtomicPtr<c_void>,
    pub spml_dirty: AtomicBool,
    pub spml_pending: AtomicBool,
    /// False once destroyed: the object is kept for a while (see [`Graveyard`]) so that an
    /// operation on a destroyed context is reported instead of reading freed memory.
    pub live: AtomicBool,
    /// Quiets under way on it (see `completion`): in the padding after the flags.
    pub quieting: AtomicU32,
    /// The `SHMEM_CTX_*` options it was created with (atomic only so that a table slot can be
    /// filled in place).
    pub options: AtomicI64,
    /// The team it was created on (NULL: the world).
    pub team: AtomicPtr<TeamObj>,
    /// That team's world start, stride and size (size 0: the world), so that a team-relative
    /// PE is translated without reaching the team (see `ctx::world_pe`).
    pub team_start: AtomicI32,
    pub team_stride: AtomicI32,
    pub team_size: AtomicI32,
    pub _pad: u32,
    pub _reserved: [u64; 2],
}

const _: () = assert!(std::mem::size_of::<CtxObj>() == 64);

pub type Ctx = *const CtxObj;

#[no_mangle]
pub static rshmem_ctx_default: CtxObj = CtxObj { live: AtomicBool::new(true), ..empty_ctx() };

/// A team handle points at one of these; `state` is the core's team object. Fixed at 64 bytes
/// for the same reason as [`CtxObj`].
#[repr(C, align(64))]
pub struct TeamObj {
    pub state: AtomicPtr<c_void>,
    pub _reserved: [u64; 7],
}

const _: () = assert!(std::mem::size_of::<TeamObj>() == 64);

pub type Team = *const TeamObj;

#[no_mangle]
pub static rshmem_team_world: TeamObj = empty_team();
#[no_mangle]
pub static rshmem_team_shared: TeamObj = empty_team();
/// `SHMEMX_TEAM_NODE` (shmemx.h): the PEs on this host.
#[no_mangle]
pub static rshmem_team_node: TeamObj = empty_team();

/// Whether `team` is one of the predefined teams, which live for the whole job.
pub fn is_predefined(team: Team) -> bool {
    [&rshmem_team_world, &rshmem_team_shared, &rshmem_team_node].iter().any(|&t| std::ptr::eq(team, t))
}

/// Created contexts and teams live in fixed tables, one per kind, so that a handle can be
/// checked by its address alone (inside its table, on an object's boundary) before anything
/// is read through it: a handle the program made up (`(shmem_ctx_t)0x1234`, an uninitialised
/// variable) is named in an error instead of being followed into a segfault. The tables are
/// zeroed statics: pages no handle ever used cost no memory.
pub const CTX_SLOTS: usize = 4096;
pub const TEAM_SLOTS: usize = 1024;

const fn empty_ctx() -> CtxObj {
    CtxObj {
        spml: AtomicPtr::new(std::ptr::null_mut()),
        spml_dirty: AtomicBool::new(false),
        spml_pending: AtomicBool::new(false),
        live: AtomicBool::new(false),
        quieting: AtomicU32::new(0),
        options: AtomicI64::new(0),
        team: AtomicPtr::new(std::ptr::null_mut()),
        team_start: AtomicI32::new(0),
        team_stride: AtomicI32::new(0),
        team_size: AtomicI32::new(0),
        _pad: 0,
        _reserved: [0; 2],
    }
}
const fn empty_team() -> TeamObj {
    TeamObj { state: AtomicPtr::new(std::ptr::null_mut()), _reserved: [0; 7] }
}

pub static CTX_TABLE: [CtxObj; CTX_SLOTS] = [const { empty_ctx() }; CTX_SLOTS];
pub static TEAM_TABLE: [TeamObj; TEAM_SLOTS] = [const { empty_team() }; TEAM_SLOTS];

/// The index of `p` in `table`, if it points at one of its objects.
pub fn index_in<T>(table: &[T], p: *const T) -> Option<usize> {
    let off = (p as usize).wrapping_sub(table.as_ptr() as usize);
    (off < std::mem::size_of_val(table) && off.is_multiple_of(std::mem::size_of::<T>()))
        .then(|| off / std::mem::size_of::<T>())
}

/// Which slots of a table are free. Never-used slots go first; then the one destroyed longest
/// ago, so that a handle used after its destroy meets a dead object, and a clear error, for as
/// long as possible.
pub struct Slots {
    /// (slots handed out so far, the destroyed ones, longest dead first)
    state: Mutex<(usize, VecDeque<usize>)>,
    n: usize,
}

impl Slots {
    pub const fn new(n: usize) -> Slots {
        Slots { state: Mutex::new((0, VecDeque::new())), n }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, VecDeque<usize>)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A free slot, or None when every one is live.
    pub fn take(&self) -> Option<usize> {
        let mut g = self.lock();
        if g.0 < self.n {
            g.0 += 1;
            return Some(g.0 - 1);
        }
        g.1.pop_front()
    }

    /// Slot `i`'s object was destroyed.
    pub fn bury(&self, i: usize) {
        self.lock().1.push_back(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_addresses_of_a_table_s_objects_are_its_handles() {
        let t = &CTX_TABLE;
        assert_eq!(index_in(t, &t[0]), Some(0));
        assert_eq!(index_in(t, &t[CTX_SLOTS - 1]), Some(CTX_SLOTS - 1));
        let inside = (&t[3] as *const CtxObj as usize + 8) as *const CtxObj;
        assert_eq!(index_in(t, inside), None, "inside an object");
        assert_eq!(index_in(t, 0x1234 as *const CtxObj), None);
        assert_eq!(index_in(t, std::ptr::null()), None);
        assert_eq!(index_in(t, t.as_ptr().wrapping_add(CTX_SLOTS)), None, "one past the end");
        assert_eq!(index_in(t, &rshmem_ctx_default), None);
    }

    #[test]
    fn slots_are_fresh_first_then_the_longest_dead() {
        let s = Slots::new(2);
        assert_eq!((s.take(), s.take(), s.take()), (Some(0), Some(1), None));
        s.bury(1);
        s.bury(0);
        assert_eq!((s.take(), s.take(), s.take()), (Some(1), Some(0), None));
    }
}
