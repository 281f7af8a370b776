//! Library setup, exit and query routines (spec 9.1).

use crate::symm::runtime;
use std::ffi::{c_char, c_int, c_void, CStr};

pub fn init(routine: &'static CStr, level: c_int) {
    crate::ops::lifecycle::init(routine, level, false);
}

/// # Safety
/// `provided` must be NULL or writable.
pub unsafe fn init_thread(routine: &'static CStr, requested: c_int, provided: *mut c_int) -> c_int {
    use crate::ops::{THREAD_MULTIPLE, THREAD_SINGLE};
    // The GPU auxiliary specification's SHMEM_DEVICE_* bits ride along with the level.
    let (requested, device) = crate::ops::gpu_aux::split(requested);
    if !(THREAD_SINGLE..=THREAD_MULTIPLE).contains(&requested) {
        // The spec's failure is a nonzero return; the library stays as it was.
        crate::log::line(&format!(
            "{} {}: requested = {requested} is not a thread level (SHMEM_THREAD_SINGLE {THREAD_SINGLE}, _FUNNELED, _SERIALIZED or _MULTIPLE {THREAD_MULTIPLE}); returning nonzero",
            crate::log::prefix(),
            routine.to_string_lossy()
        ));
        return -1;
    }
    let level = crate::ops::lifecycle::init(routine, requested, crate::ops::gpu_aux::asks_gpu_heap(device));
    if !provided.is_null() {
        // SAFETY: checked non-null; writable by contract.
        unsafe { *provided = level | crate::ops::gpu_aux::granted(device) };
    }
    0
}

/// # Safety
/// `provided` must be NULL or writable.
pub unsafe fn query_thread(routine: &'static CStr, provided: *mut c_int) {
    let rt = runtime::get(routine);
    if !provided.is_null() {
        // SAFETY: checked non-null.
        unsafe { *provided = rt.thread_level() };
    }
}

/// # Safety
/// `initialized` must be NULL or writable.
pub unsafe fn query_initialized(_routine: &'static CStr, initialized: *mut c_int) {
    if !initialized.is_null() {
        // SAFETY: checked non-null.
        unsafe { *initialized = runtime::is_initialized() as c_int };
    }
}

pub fn finalize(routine: &'static CStr) {
    crate::ops::lifecycle::finalize(routine)
}

pub fn my_pe(routine: &'static CStr) -> c_int {
    runtime::get(routine).my_pe
}

pub fn n_pes(routine: &'static CStr) -> c_int {
    runtime::get(routine).n_pes
}

pub fn global_exit(routine: &'static CStr, status: c_int) {
    match runtime::try_get() {
        Some(rt) => {
            crate::error::mark_exiting();
            // SAFETY: the default context is always live.
            unsafe { crate::ops::ctx::quiet(routine, crate::ops::ctx::default()) };
            rt.boot.abort(status, &format!("PE {} called shmem_global_exit({status})", rt.my_pe))
        }
        None => std::process::exit(status),
    }
}

pub fn pe_accessible(routine: &'static CStr, pe: c_int) -> c_int {
    let rt = runtime::get(routine);
    (pe >= 0 && pe < rt.n_pes) as c_int
}

pub fn addr_accessible(routine: &'static CStr, addr: *const c_void, pe: c_int) -> c_int {
    let rt = runtime::get(routine);
    (pe >= 0 && pe < rt.n_pes && rt.segs.lookup(addr as usize).is_some()) as c_int
}

/// # Safety
/// Each pointer must be NULL or writable.
pub unsafe fn info_get_version(_routine: &'static CStr, major: *mut c_int, minor: *mut c_int) {
    // SAFETY: checked non-null.
    unsafe {
        if !major.is_null() {
            *major = 1;
        }
        if !minor.is_null() {
            *minor = 6;
        }
    }
}

/// The vendor string (`SHMEM_VENDOR_STRING`).
pub const VENDOR: &CStr = c"rshmem";

/// # Safety
/// `name` must be NULL or hold SHMEM_MAX_NAME_LEN bytes.
pub unsafe fn info_get_name(_routine: &'static CStr, name: *mut c_char) {
    if !name.is_null() {
        let b = VENDOR.to_bytes_with_nul();
        // SAFETY: the buffer holds SHMEM_MAX_NAME_LEN (256) bytes by contract.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr().cast(), name, b.len()) };
    }
}

/// Routines kept for old programs that have nothing to do here (SHMEM_CACHE, pcontrol).
pub fn no_op(_routine: &'static CStr) {}

pub fn start_pes(routine: &'static CStr, _npes: c_int) {
    crate::ops::lifecycle::init(routine, crate::ops::THREAD_SINGLE, false);
}
