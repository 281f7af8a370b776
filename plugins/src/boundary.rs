//! The panic boundary of Rust components, the one every component of the tree uses (not part of
//! the C ABI). A panic must never unwind into the core (through `extern "C"` that aborts the
//! process without a word) and must never pass for an answer: a memheap bug returned as NULL
//! would read as "out of memory", a collective that returns early leaves its peers waiting.
//! So there are two policies, and a component picks by what the core does with a failure:
//!
//! - [`slot`], for every slot of an opened component: a panic ends the whole job through the
//!   core's `abort`, with the component, the slot and the panic's message.
//! - [`probe`], for `query` and `open` (the shims [`export_plugin!`](crate::export_plugin)
//!   writes): a panic is logged as an error and the component declines, so selection goes on
//!   with the others and `shmem_info` says why.
//!
//! Each plugin `.so` has its own copy of this module's state: the core's table, which the
//! `export_plugin!` shims record before the component's `query` or `open` runs, and whether this
//! component has asked to end the job ([`ending`]).

use crate::{CoreServices, Framework, QueryResult, LOG_ERROR};
use std::any::Any;
use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

static CORE: AtomicPtr<CoreServices> = AtomicPtr::new(std::ptr::null_mut());
static ENDING: AtomicBool = AtomicBool::new(false);

/// Record the core's table (the `export_plugin!` shims do, before `query` and `open`).
pub fn set_core(core: &'static CoreServices) {
    CORE.store(core as *const CoreServices as *mut CoreServices, Ordering::Release);
}

/// The core's table, once `query` or `open` has been called.
pub fn core() -> Option<&'static CoreServices> {
    // SAFETY: NULL, or the table the core passed to `query`/`open`, valid until the process ends.
    unsafe { CORE.load(Ordering::Acquire).as_ref() }
}

/// Log `msg` for `component` (`"sshmem mmap"`) through the core's logger; nothing before the
/// core's table is known.
pub fn log(level: std::ffi::c_int, component: &str, msg: &str) {
    if let Some(c) = core() {
        // SAFETY: `c` is the core's table.
        unsafe { crate::log(c, level, component, msg) };
    }
}

/// Whether this component has asked the core to end the job: exit paths (the core's at-exit
/// quiet, a destructor) must not touch a transport that failed.
pub fn ending() -> bool {
    ENDING.load(Ordering::Acquire)
}

/// End the whole job with `msg`: through the core's `abort`, which tells the launcher so every
/// PE stops; before the core's table is known, on stderr and by aborting this process, which
/// the launcher sees as a failed PE.
#[cold]
#[inline(never)]
pub fn end_job(msg: &str) -> ! {
    ENDING.store(true, Ordering::Release);
    if let Some(c) = core() {
        let m = CString::new(msg.replace('\0', " ")).unwrap_or_default();
        // SAFETY: the core's abort takes a NUL-terminated message and does not return.
        unsafe { (c.abort)(1, m.as_ptr()) };
    }
    eprintln!("rshmem: {msg}");
    std::process::abort()
}

/// Run the body of slot `slot` of `component` (`"spml ucx"`): its value, or, if it panics, the
/// end of the job. Free on the path that does not panic.
#[inline(always)]
pub fn slot<R>(component: &str, slot: &str, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(e) => panicked(component, slot, e),
    }
}

#[cold]
#[inline(never)]
fn panicked(component: &str, slot: &str, e: Box<dyn Any + Send>) -> ! {
    end_job(&format!("{component} {slot} panicked: {}", panic_message(&*e)))
}

/// Run a probe (`query`, `open`) of the component `name` of `framework`: its value, or, if it
/// panics, `declined` after logging the panic as an error.
pub fn probe<R>(framework: Framework, name: &str, slot: &str, declined: R, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(e) => {
            let component = format!("{} {name}", framework.name());
            let msg = format!("{slot} panicked: {}; the component declines", panic_message(&*e));
            match core() {
                Some(_) => log(LOG_ERROR, &component, &msg),
                None => eprintln!("rshmem: {component} {msg}"),
            }
            declined
        }
    }
}

/// Run `body` and turn a panic into its message: for a library that reports failures by
/// panicking (cudarc when the driver lacks a symbol), where the panic is an answer, not a bug.
pub fn catch<R>(body: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(body)).map_err(|e| panic_message(&*e))
}

/// The message a panic carried (`panic!("...")` gives a `&str` or a `String`).
pub fn panic_message(e: &(dyn Any + Send)) -> String {
    e.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| e.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// The body of the `query` shim of [`export_plugin!`](crate::export_plugin): records the core,
/// runs `query` as a probe and answers "unavailable" when it panicked.
///
/// # Safety
/// `core` and `result` are what the core passes to `query`: NULL or valid.
pub unsafe fn query_shim(
    framework: Framework,
    name: &str,
    core: *const CoreServices,
    result: *mut QueryResult,
    query: fn(&'static CoreServices, &mut QueryResult),
) {
    // SAFETY: the core passes its table, valid until the process ends, and a valid result.
    let (Some(c), Some(r)) = (unsafe { core.as_ref() }, unsafe { result.as_mut() }) else { return };
    set_core(c);
    if !probe(framework, name, "query", false, || {
        query(c, r);
        true
    }) {
        r.available = 0;
        r.set_reason("query panicked (see the log)");
    }
}

/// The body of the `open` shim of [`export_plugin!`](crate::export_plugin): records the core
/// and runs `open` as a probe (NULL when it panicked).
///
/// # Safety
/// `core` is what the core passes to `open`: NULL or valid.
pub unsafe fn open_shim(
    framework: Framework,
    name: &str,
    core: *const CoreServices,
    open: fn(&'static CoreServices) -> *const std::ffi::c_void,
) -> *const std::ffi::c_void {
    // SAFETY: the core passes its table, valid until the process ends.
    let Some(c) = (unsafe { core.as_ref() }) else { return std::ptr::null() };
    set_core(c);
    probe(framework, name, "open", std::ptr::null(), || open(c))
}

#[cfg(test)]
mod tests;
