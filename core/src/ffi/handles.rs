//! Predefined handles exported as data symbols, so `SHMEM_CTX_DEFAULT` and `SHMEM_TEAM_WORLD`
//! are link-time constants in C (`&rshmem_ctx_default`).
#![allow(non_upper_case_globals)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr};

/// A context: which spml context carries its traffic, and whether it has traffic the spml
/// must complete at the next quiet (direct stores to mapped peers need no spml flush).
#[repr(C)]
pub struct CtxObj {
    pub spml: AtomicPtr<c_void>,
    pub spml_dirty: AtomicBool,
}

pub type Ctx = *const CtxObj;

#[no_mangle]
pub static rshmem_ctx_default: CtxObj =
    CtxObj { spml: AtomicPtr::new(std::ptr::null_mut()), spml_dirty: AtomicBool::new(false) };

/// A team handle points at one of these; `state` is the core's team object.
#[repr(C)]
pub struct TeamObj {
    pub state: AtomicPtr<c_void>,
}

pub type Team = *const TeamObj;

#[no_mangle]
pub static rshmem_team_world: TeamObj = TeamObj { state: AtomicPtr::new(std::ptr::null_mut()) };
#[no_mangle]
pub static rshmem_team_shared: TeamObj = TeamObj { state: AtomicPtr::new(std::ptr::null_mut()) };
