//! Fatal errors: print `rshmem[PE n] routine: message` and end the whole job through the
//! bootstrap (oshrun then stops every PE). OpenSHMEM routines mostly return void, so a clear
//! message and a clean job abort is the only honest answer to bad input.

use std::ffi::CStr;

#[cold]
#[inline(never)]
pub fn fatal(routine: &CStr, msg: &str) -> ! {
    crate::log::line(&format!("{} {}: {msg}", crate::log::prefix(), routine.to_string_lossy()));
    abort_job(1, msg)
}

/// End the job with `code`.
pub fn abort_job(code: i32, msg: &str) -> ! {
    crate::runtime::mark_exiting();
    match crate::runtime::try_get() {
        Some(rt) => rt.boot.abort(code, msg),
        None => std::process::exit(code),
    }
}
