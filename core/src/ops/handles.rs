//! Predefined handles exported as data symbols, so `SHMEM_CTX_DEFAULT` and `SHMEM_TEAM_WORLD`
//! are link-time constants in C (`&rshmem_ctx_default`).
#![allow(non_upper_case_globals)]

use std::collections::VecDeque;
use std::ffi::{c_long, c_void};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32};
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
    /// The `SHMEM_CTX_*` options it was created with.
    pub options: c_long,
    /// The team it was created on (NULL: the world).
    pub team: AtomicPtr<TeamObj>,
    pub _reserved: [u64; 4],
}

const _: () = assert!(std::mem::size_of::<CtxObj>() == 64);

pub type Ctx = *const CtxObj;

#[no_mangle]
pub static rshmem_ctx_default: CtxObj = CtxObj {
    spml: AtomicPtr::new(std::ptr::null_mut()),
    spml_dirty: AtomicBool::new(false),
    spml_pending: AtomicBool::new(false),
    live: AtomicBool::new(true),
    quieting: AtomicU32::new(0),
    options: 0,
    team: AtomicPtr::new(std::ptr::null_mut()),
    _reserved: [0; 4],
};

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
pub static rshmem_team_world: TeamObj =
    TeamObj { state: AtomicPtr::new(std::ptr::null_mut()), _reserved: [0; 7] };
#[no_mangle]
pub static rshmem_team_shared: TeamObj =
    TeamObj { state: AtomicPtr::new(std::ptr::null_mut()), _reserved: [0; 7] };
/// `SHMEMX_TEAM_NODE` (shmemx.h): the PEs on this host.
#[no_mangle]
pub static rshmem_team_node: TeamObj =
    TeamObj { state: AtomicPtr::new(std::ptr::null_mut()), _reserved: [0; 7] };

/// Whether `team` is one of the predefined teams, which live for the whole job.
pub fn is_predefined(team: Team) -> bool {
    [&rshmem_team_world, &rshmem_team_shared, &rshmem_team_node].iter().any(|&t| std::ptr::eq(team, t))
}

/// Handles of destroyed contexts or teams, kept so that a program using one after destroying it
/// meets a dead object and a clear error rather than freed memory. The oldest are reused once
/// more than [`Graveyard::KEPT`] lie here, so a program that creates and destroys without end
/// holds a bounded amount (64 bytes each).
pub struct Graveyard(Mutex<VecDeque<usize>>);

impl Default for Graveyard {
    fn default() -> Graveyard {
        Graveyard::new()
    }
}

impl Graveyard {
    pub const KEPT: usize = 1024;

    pub const fn new() -> Graveyard {
        Graveyard(Mutex::new(VecDeque::new()))
    }

    /// Keep a dead handle.
    pub fn bury(&self, h: usize) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push_back(h);
    }

    /// The oldest dead handle, once more than [`Graveyard::KEPT`] are kept.
    pub fn reuse(&self) -> Option<usize> {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() > Self::KEPT {
            g.pop_front()
        } else {
            None
        }
    }
}
