//! The `CoreServices` table handed to plugins: thin C-ABI shims over the bootstrap, the
//! configuration and the core's one-sided operations.

use crate::symm::runtime;
use rshmem_plugin_api::{c_str, CoreServices, TransportHandle};
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

struct Table(CoreServices, #[allow(dead_code)] CString);
// SAFETY: the table is immutable after creation and holds only function pointers and a
// pointer into its own CString.
unsafe impl Sync for Table {}
// SAFETY: as for Sync.
unsafe impl Send for Table {}

static TABLE: OnceLock<Table> = OnceLock::new();

/// The table for this process (created once the bootstrap is known).
pub fn table(my_pe: i32, n_pes: i32, local_rank: i32, local_size: i32, job: &str) -> *const CoreServices {
    let t = TABLE.get_or_init(|| {
        let job = CString::new(job).unwrap_or_default();
        Table(
            CoreServices {
                struct_size: std::mem::size_of::<CoreServices>(),
                abi_version: rshmem_plugin_api::ABI_VERSION,
                my_pe,
                n_pes,
                local_rank,
                local_size,
                job_id: job.as_ptr(),
                log,
                param,
                kv_put,
                kv_get,
                kv_fence,
                abort,
                pe_is_local,
                transport,
                ptr,
                putmem,
                getmem,
                quiet,
                fence,
                atomic_add_u64,
                wait_until_u64,
                host_of: Some(host_of),
                put_signal_u64: Some(put_signal_u64),
                segment_copy: Some(segment_copy),
                node_cpus: Some(node_cpus),
                selection: Some(selection),
                maps_host_peers: Some(maps_host_peers),
                host_name: Some(host_name),
            },
            job,
        )
    });
    &t.0
}

fn guard<R>(what: &str, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => crate::error::abort_job(1, &format!("internal error in core service {what}")),
    }
}

unsafe extern "C" fn log(level: c_int, component: *const c_char, msg: *const c_char) {
    guard("log", || {
        // SAFETY: plugins pass NUL-terminated strings.
        let (c, m) = unsafe { (c_str(component).unwrap_or_default(), c_str(msg).unwrap_or_default()) };
        crate::log::log(level, &c, &m);
    })
}

unsafe extern "C" fn param(
    framework: *const c_char,
    component: *const c_char,
    name: *const c_char,
) -> *const c_char {
    guard("param", || {
        // SAFETY: plugins pass NUL-terminated strings.
        let (f, c, n) = unsafe { (c_str(framework), c_str(component), c_str(name)) };
        match (f, c, n) {
            (Some(f), Some(c), Some(n)) => {
                crate::config::component_param(&f, &c, &n).unwrap_or(std::ptr::null())
            }
            _ => std::ptr::null(),
        }
    })
}

/// Whether the core means to map every PE of this host and serves no device memory the spml
/// could be asked to reach for them (`CoreServices::maps_host_peers`): decided by the
/// components phase before it opens the spml, from `SHMEM_LOCAL_MAP` and the memheaps.
static MAPS_HOST_PEERS: AtomicBool = AtomicBool::new(false);

/// Set what `maps_host_peers` answers (before the spml opens).
pub fn set_maps_host_peers(maps: bool) {
    MAPS_HOST_PEERS.store(maps, Ordering::Relaxed);
}

unsafe extern "C" fn maps_host_peers() -> c_int {
    c_int::from(MAPS_HOST_PEERS.load(Ordering::Relaxed))
}

/// The user's selection for a framework (`SHMEM_MCA_<framework>`, from the environment or a
/// file; "" when not set), as `choose` reads it when it ranks that framework. The strings live
/// for the process: settings are parsed once, so each framework has one value.
unsafe extern "C" fn selection(framework: *const c_char) -> *const c_char {
    static VALUES: OnceLock<Vec<(&'static str, CString)>> = OnceLock::new();
    guard("selection", || {
        // SAFETY: plugins pass a NUL-terminated string.
        let Some(f) = (unsafe { c_str(framework) }) else { return std::ptr::null() };
        let values = VALUES.get_or_init(|| {
            rshmem_plugin_api::Framework::ALL
                .iter()
                .map(|fw| {
                    let v = crate::config::raw(&format!("SHMEM_MCA_{}", fw.name()));
                    (fw.name(), CString::new(v).unwrap_or_default())
                })
                .collect()
        });
        values.iter().find(|(name, _)| *name == f).map_or(std::ptr::null(), |(_, v)| v.as_ptr())
    })
}

unsafe extern "C" fn kv_put(key: *const c_char, value: *const u8, len: usize) -> c_int {
    guard("kv_put", || {
        // SAFETY: plugins pass a NUL-terminated key and `len` readable bytes.
        let (k, v) = unsafe { (c_str(key).unwrap_or_default(), std::slice::from_raw_parts(value, len)) };
        match runtime::boot().put(&k, v) {
            Ok(()) => 0,
            Err(_) => -1,
        }
    })
}

unsafe extern "C" fn kv_get(
    pe: c_int,
    key: *const c_char,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
) -> c_int {
    guard("kv_get", || {
        // SAFETY: NUL-terminated key from the plugin.
        let k = unsafe { c_str(key).unwrap_or_default() };
        match runtime::boot().get(pe, &k) {
            Ok(Some(v)) if v.len() <= cap => {
                // SAFETY: `buf` has `cap` writable bytes and `len` is a valid out-pointer.
                unsafe {
                    std::ptr::copy_nonoverlapping(v.as_ptr(), buf, v.len());
                    *len = v.len();
                }
                0
            }
            Ok(Some(v)) => {
                // SAFETY: valid out-pointer; tells the caller the size needed.
                unsafe { *len = v.len() };
                -2
            }
            _ => -1,
        }
    })
}

unsafe extern "C" fn kv_fence() -> c_int {
    guard("kv_fence", || match runtime::boot().fence() {
        Ok(()) => 0,
        Err(_) => -1,
    })
}

unsafe extern "C" fn abort(code: c_int, msg: *const c_char) {
    // SAFETY: NUL-terminated message from the plugin.
    let m = unsafe { c_str(msg).unwrap_or_default() };
    // A component ends the job from wherever it noticed (spml ucx: a peer lost, found by its
    // progress thread): what the program was blocked in comes from the core.
    let m = format!("{m}{}", crate::ops::blocked::describe());
    crate::log::line(&format!("{} {m}", crate::log::prefix()));
    crate::error::abort_job(code, &m)
}

unsafe extern "C" fn pe_is_local(pe: c_int) -> c_int {
    guard("pe_is_local", || runtime::boot().is_local(pe) as c_int)
}

unsafe extern "C" fn transport() -> TransportHandle {
    runtime::transport()
}

unsafe extern "C" fn ptr(addr: *const c_void, pe: c_int) -> *mut c_void {
    // Host memory only: components load and store through the answer.
    guard("ptr", || crate::ops::rma::host_ptr(runtime::get(c"core service ptr"), addr, pe))
}

unsafe extern "C" fn putmem(dest: *mut c_void, src: *const c_void, len: usize, pe: c_int) {
    // SAFETY: forwarded to the checked core routine.
    guard("putmem", || unsafe {
        crate::ops::rma::put(
            c"core service putmem",
            crate::ops::ctx::default(),
            dest.cast(),
            src.cast(),
            len,
            1,
            pe,
        )
    })
}

unsafe extern "C" fn getmem(dest: *mut c_void, src: *const c_void, len: usize, pe: c_int) {
    // SAFETY: forwarded to the checked core routine.
    guard("getmem", || unsafe {
        crate::ops::rma::get(
            c"core service getmem",
            crate::ops::ctx::default(),
            dest.cast(),
            src.cast(),
            len,
            1,
            pe,
        )
    })
}

unsafe extern "C" fn quiet() {
    // The collectives' own signals are completed here, not by the application's quiet.
    guard("quiet", || crate::ops::rma::quiet_with_signals(c"core service quiet"))
}

unsafe extern "C" fn fence() {
    // SAFETY: the default context is always live.
    guard("fence", || unsafe { crate::ops::ctx::fence(c"core service fence", crate::ops::ctx::default()) })
}

unsafe extern "C" fn atomic_add_u64(dest: *mut u64, value: u64, pe: c_int) {
    // SAFETY: forwarded to the checked core routine.
    guard("atomic_add_u64", || unsafe {
        crate::ops::rma::atomic_add_u64(c"core service atomic_add_u64", dest, value, pe)
    })
}

unsafe extern "C" fn put_signal_u64(
    dest: *mut c_void,
    src: *const c_void,
    len: usize,
    sig: *mut u64,
    value: u64,
    pe: c_int,
) {
    // SAFETY: forwarded to the checked core routine.
    guard("put_signal_u64", || unsafe {
        crate::ops::rma::put_signal_u64(
            c"core service put_signal_u64",
            dest.cast(),
            src.cast(),
            len,
            sig,
            value,
            pe,
        )
    })
}

unsafe extern "C" fn segment_copy(
    seg: u32,
    off: u64,
    buf: *mut c_void,
    len: usize,
    into_segment: c_int,
) -> c_int {
    guard("segment_copy", || {
        let Some(rt) = runtime::try_get() else { return -1 };
        // SAFETY: the spml passes a host buffer valid for `len` bytes in the direction asked.
        match unsafe { crate::ops::device::serve_copy(rt, seg, off, buf.cast(), len, into_segment != 0) } {
            Ok(()) => 0,
            Err(why) => {
                crate::log::log(crate::log::DEBUG, "segment_copy", &why);
                -1
            }
        }
    })
}

unsafe extern "C" fn wait_until_u64(ivar: *const u64, cmp: c_int, value: u64) {
    // SAFETY: forwarded to the core wait routine.
    guard("wait_until_u64", || unsafe {
        crate::ops::wait::wait_until_u64(c"core service wait_until_u64", ivar, cmp, value)
    })
}

unsafe extern "C" fn node_cpus() -> c_int {
    guard("node_cpus", || c_int::try_from(crate::symm::limits::node_cpus()).unwrap_or(c_int::MAX))
}

unsafe extern "C" fn host_name(pe: c_int, buf: *mut c_char, len: usize) -> c_int {
    guard("host_name", || {
        let Some(name) = crate::symm::runtime::boot_if_any().and_then(|b| b.host_name(pe)) else { return -1 };
        if !buf.is_null() && len > 0 {
            let n = name.len().min(len - 1);
            // SAFETY: the caller's buffer is writable for `len` bytes; `n + 1 <= len`.
            unsafe {
                std::ptr::copy_nonoverlapping(name.as_ptr(), buf.cast::<u8>(), n);
                *buf.add(n) = 0;
            }
        }
        c_int::try_from(name.len()).unwrap_or(c_int::MAX)
    })
}

unsafe extern "C" fn host_of(pe: c_int) -> c_int {
    // Also after a finalize (a late failure's message says where its peer was); -1 before the
    // runtime exists.
    crate::symm::runtime::last().map_or(-1, |rt| rt.hosts.host_of(pe))
}
