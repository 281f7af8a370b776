//! Fatal errors: print `rshmem[PE n] routine: message` and end the whole job through the
//! bootstrap (oshrun then stops every PE). OpenSHMEM routines mostly return void, so a clear
//! message and a clean job abort is the only honest answer to bad input.

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

#[cold]
#[inline(never)]
pub fn fatal(routine: &CStr, msg: &str) -> ! {
    crate::log::line(&format!("{} {}: {msg}", crate::log::prefix(), routine.to_string_lossy()));
    abort_job(1, msg)
}

/// End the job with `code`: through the hook the runtime installs once it is live (the
/// bootstrap then stops every PE), else by ending this process.
pub fn abort_job(code: i32, msg: &str) -> ! {
    mark_exiting();
    // The launcher may not be reachable any more (a cut link to the host it runs on): the
    // abort must not leave this PE behind waiting for it.
    let _ = std::thread::Builder::new().name("rshmem-abort".into()).spawn(move || {
        std::thread::sleep(ABORT_LIMIT);
        // SAFETY: _exit ends the process at once; nothing of ours needs running.
        unsafe { libc::_exit(code) }
    });
    if let Some(hook) = JOB_ABORT.get() {
        hook(code, msg);
    }
    std::process::exit(code)
}

/// How long ending the job through the launcher may take before this PE exits by itself.
pub const ABORT_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How to end the whole job; returns only when it cannot (no live runtime).
pub type JobAbort = fn(code: i32, msg: &str);

static JOB_ABORT: OnceLock<JobAbort> = OnceLock::new();
static EXITING: AtomicBool = AtomicBool::new(false);

/// Installed by the runtime when it goes live. This module sits below it and cannot call it.
pub fn set_job_abort(hook: JobAbort) {
    let _ = JOB_ABORT.set(hook);
}

/// The job is being ended (global exit or a fatal error): exit handlers must not synchronise.
pub fn mark_exiting() {
    EXITING.store(true, Ordering::Release);
}

pub fn is_exiting() -> bool {
    EXITING.load(Ordering::Acquire)
}
