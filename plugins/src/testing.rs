//! A stand-in core for components' unit tests (not part of the C ABI): a `CoreServices` whose
//! bootstrap is empty, whose one-sided services do nothing, whose log is kept for the test to
//! read, and whose `abort` prints its message and exits with [`ABORT_EXIT`], so a test can run
//! the aborting case in a child process and check both.

pub mod job;
pub mod traffic;

use crate::{CoreServices, TransportHandle, ABI_VERSION, RC_ERROR, RC_OK};
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Mutex;

/// The exit status of a process whose fake core's `abort` was called.
pub const ABORT_EXIT: i32 = 70;

static LOGGED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Every line logged through any fake core of this process so far, as `component: message`.
pub fn logged() -> Vec<String> {
    LOGGED.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

unsafe extern "C" fn log(_level: c_int, component: *const c_char, msg: *const c_char) {
    // SAFETY: components pass NUL-terminated strings (or NULL).
    let (c, m) = unsafe { (crate::c_str(component), crate::c_str(msg)) };
    let line = format!("{}: {}", c.unwrap_or_default(), m.unwrap_or_default());
    eprintln!("[fake core] {line}");
    LOGGED.lock().unwrap_or_else(|e| e.into_inner()).push(line);
}
unsafe extern "C" fn param(_: *const c_char, _: *const c_char, _: *const c_char) -> *const c_char {
    std::ptr::null()
}
unsafe extern "C" fn kv_put(_: *const c_char, _: *const u8, _: usize) -> c_int {
    RC_ERROR
}
unsafe extern "C" fn kv_get(_: c_int, _: *const c_char, _: *mut u8, _: usize, _: *mut usize) -> c_int {
    RC_ERROR
}
unsafe extern "C" fn kv_fence() -> c_int {
    RC_OK
}
unsafe extern "C" fn abort(code: c_int, msg: *const c_char) {
    // SAFETY: components pass a NUL-terminated message.
    let m = unsafe { crate::c_str(msg) }.unwrap_or_default();
    eprintln!("fake core abort({code}): {m}");
    std::process::exit(ABORT_EXIT)
}
unsafe extern "C" fn pe_is_local(_: c_int) -> c_int {
    1
}
unsafe extern "C" fn no_transport() -> TransportHandle {
    TransportHandle::NONE
}
unsafe extern "C" fn ptr(_: *const c_void, _: c_int) -> *mut c_void {
    std::ptr::null_mut()
}
unsafe extern "C" fn copy(_: *mut c_void, _: *const c_void, _: usize, _: c_int) {}
unsafe extern "C" fn nothing() {}
unsafe extern "C" fn atomic_add(_: *mut u64, _: u64, _: c_int) {}
unsafe extern "C" fn wait_until(_: *const u64, _: c_int, _: u64) {}

/// A core table for PE `my_pe` of `n_pes` (all on this host) in job `job_id`, whose spml
/// publishes `transport` (None: `TRANSPORT_NONE`). Leaked, since components keep the pointer.
pub fn fake_core(
    my_pe: c_int,
    n_pes: c_int,
    job_id: &str,
    transport: Option<unsafe extern "C" fn() -> TransportHandle>,
) -> &'static CoreServices {
    let job = Box::leak(CString::new(job_id).expect("no NUL in the job id").into_boxed_c_str());
    Box::leak(Box::new(CoreServices {
        struct_size: std::mem::size_of::<CoreServices>(),
        abi_version: ABI_VERSION,
        my_pe,
        n_pes,
        local_rank: my_pe,
        local_size: n_pes,
        job_id: job.as_ptr(),
        log,
        param,
        kv_put,
        kv_get,
        kv_fence,
        abort,
        pe_is_local,
        transport: transport.unwrap_or(no_transport),
        ptr,
        putmem: copy,
        getmem: copy,
        quiet: nothing,
        fence: nothing,
        atomic_add_u64: atomic_add,
        wait_until_u64: wait_until,
        host_of: None,
        put_signal_u64: None,
        segment_copy: None,
        node_cpus: None,
        selection: None,
        maps_host_peers: None,
        host_name: None,
    }))
}
