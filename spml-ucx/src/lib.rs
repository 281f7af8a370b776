//! spml "ucx": one-sided communication over UCX. Used for every peer that is not mapped into
//! this process (other nodes, or everything when `SHMEM_LOCAL_MAP=0`), and it publishes its UCX
//! context so that sshmem "ucx" can allocate memory local peers map through UCX.
//!
//! The C table below is a thin layer over [`ucx::Ucx`].

pub mod ucx;

use rshmem_plugin_api::{
    cstr, CoreServices, Framework, ParamDecl, ParamKind, QueryResult, SpmlCtx, SpmlOps, TransportHandle,
    LOG_WARN, RC_ERROR, RC_OK, TRANSPORT_UCX,
};
use rshmem_ucx_sys as sys;
use std::ffi::{c_int, c_void, CString};
use std::sync::atomic::{AtomicPtr, Ordering};
use ucx::Ucx;

static STATE: AtomicPtr<Ucx> = AtomicPtr::new(std::ptr::null_mut());
static CORE: AtomicPtr<CoreServices> = AtomicPtr::new(std::ptr::null_mut());

fn core() -> &'static CoreServices {
    // SAFETY: set in `open`; the core's table lives for the job.
    unsafe { &*CORE.load(Ordering::Acquire) }
}

#[inline(always)]
fn state() -> &'static Ucx {
    // SAFETY: set in `open` before any other slot can be called; never freed.
    unsafe { &*STATE.load(Ordering::Acquire) }
}

/// Initialisation-time mutable access (connect, add_segment run before any communication and
/// from the initialising thread only).
#[allow(clippy::mut_from_ref)]
fn state_mut() -> &'static mut Ucx {
    // SAFETY: see above: no other reference is in use while init mutates the tables.
    unsafe { &mut *STATE.load(Ordering::Acquire) }
}

fn abort(msg: &str) -> ! {
    let m = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // SAFETY: the core's abort does not return.
    unsafe { (core().abort)(1, m.as_ptr()) };
    std::process::abort()
}

fn rc(s: sys::ucs_status_t) -> c_int {
    if s == sys::UCS_OK {
        RC_OK
    } else {
        RC_ERROR
    }
}

/// Run a table slot without letting a panic cross into C.
fn guard<R>(what: &str, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => abort(&format!("spml ucx: internal error in {what}")),
    }
}

unsafe extern "C" fn connect() -> c_int {
    guard("connect", || {
        let c = core();
        let mut addrs = Vec::with_capacity(c.n_pes as usize);
        for pe in 0..c.n_pes {
            let mut buf = vec![0u8; 1 << 16];
            let mut len = 0usize;
            // SAFETY: core service with a buffer of the given capacity.
            let r = unsafe { (c.kv_get)(pe, cstr!("spml.ucx.addr"), buf.as_mut_ptr(), buf.len(), &mut len) };
            if r != 0 {
                abort(&format!("spml ucx: PE {pe} did not publish its UCX worker address"));
            }
            buf.truncate(len);
            addrs.push(buf);
        }
        let u = state_mut();
        if let Err(e) = u.connect(&addrs) {
            abort(&format!("spml ucx: {e}"));
        }
        // SAFETY: reading a component parameter through the core.
        let progress = unsafe { rshmem_plugin_api::param(c, "spml", "ucx", "progress_thread") };
        if !matches!(progress.as_deref().map(str::trim), Some("0" | "no" | "false" | "off")) {
            if let Err(e) = u.start_progress_thread() {
                // SAFETY: logging through the core.
                unsafe { rshmem_plugin_api::log(c, LOG_WARN, "spml ucx", &e) };
            }
        }
        RC_OK
    })
}

unsafe extern "C" fn mem_register(
    base: *mut c_void,
    len: usize,
    memh: *mut c_void,
    rkey: *mut u8,
    cap: usize,
    rkey_len: *mut usize,
    reg: *mut *mut c_void,
) -> c_int {
    guard("mem_register", || {
        let u = state();
        let (handle, ours) = if memh.is_null() {
            match u.mem_map(base, len, false) {
                Ok((h, _)) => (h, true),
                Err(e) => abort(&format!("spml ucx: registering {len} bytes at {base:p}: {e}")),
            }
        } else {
            (memh as sys::ucp_mem_h, false)
        };
        // SAFETY: `handle` is a registration of this context.
        let packed = match unsafe { u.rkey_pack(handle) } {
            Ok(p) => p,
            Err(e) => abort(&format!("spml ucx: {e}")),
        };
        if packed.len() > cap {
            return RC_ERROR;
        }
        // SAFETY: the core's buffers hold `cap` bytes and valid out-pointers.
        unsafe {
            std::ptr::copy_nonoverlapping(packed.as_ptr(), rkey, packed.len());
            *rkey_len = packed.len();
            *reg = if ours { handle as *mut c_void } else { std::ptr::null_mut() };
        }
        RC_OK
    })
}

unsafe extern "C" fn mem_deregister(reg: *mut c_void) {
    if !reg.is_null() {
        // SAFETY: `reg` is a registration this component made.
        guard("mem_deregister", || unsafe { state().mem_unmap(reg as sys::ucp_mem_h) });
    }
}

unsafe extern "C" fn add_segment(
    pe: c_int,
    seg: u32,
    _base: u64,
    _len: usize,
    rkey: *const u8,
    rkey_len: usize,
) -> c_int {
    guard("add_segment", || {
        if seg as usize >= ucx::MAX_SEGMENTS {
            return RC_ERROR;
        }
        // SAFETY: the core passes the packed key with its length.
        let packed = unsafe { std::slice::from_raw_parts(rkey, rkey_len) };
        match state_mut().add_rkey(pe as usize, seg as usize, packed) {
            Ok(()) => RC_OK,
            Err(e) => abort(&format!("spml ucx: {e}")),
        }
    })
}

unsafe extern "C" fn remote_ptr(pe: c_int, seg: u32, raddr: u64) -> *mut c_void {
    guard("remote_ptr", || state().remote_ptr(pe as usize, seg as usize, raddr))
}

unsafe extern "C" fn put(
    _ctx: SpmlCtx,
    pe: c_int,
    seg: u32,
    raddr: u64,
    src: *const c_void,
    len: usize,
) -> c_int {
    // SAFETY: the core guarantees `src` is readable for `len`.
    guard("put", || rc(unsafe { state().put(pe as usize, seg as usize, raddr, src, len, true) }))
}

unsafe extern "C" fn get(
    _ctx: SpmlCtx,
    pe: c_int,
    seg: u32,
    raddr: u64,
    dst: *mut c_void,
    len: usize,
) -> c_int {
    // SAFETY: the core guarantees `dst` is writable for `len`.
    guard("get", || rc(unsafe { state().get(pe as usize, seg as usize, raddr, dst, len, true) }))
}

unsafe extern "C" fn put_nbi(
    _ctx: SpmlCtx,
    pe: c_int,
    seg: u32,
    raddr: u64,
    src: *const c_void,
    len: usize,
) -> c_int {
    // SAFETY: the caller keeps `src` until the next quiet.
    guard("put_nbi", || rc(unsafe { state().put(pe as usize, seg as usize, raddr, src, len, false) }))
}

unsafe extern "C" fn get_nbi(
    _ctx: SpmlCtx,
    pe: c_int,
    seg: u32,
    raddr: u64,
    dst: *mut c_void,
    len: usize,
) -> c_int {
    // SAFETY: the caller keeps `dst` until the next quiet.
    guard("get_nbi", || rc(unsafe { state().get(pe as usize, seg as usize, raddr, dst, len, false) }))
}

unsafe extern "C" fn atomic_add_u64(_ctx: SpmlCtx, pe: c_int, seg: u32, raddr: u64, value: u64) -> c_int {
    guard("atomic_add_u64", || rc(state().atomic_add_u64(pe as usize, seg as usize, raddr, value)))
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn atomic(
    _ctx: SpmlCtx,
    pe: c_int,
    seg: u32,
    raddr: u64,
    op: u32,
    size: u32,
    value: u64,
    cond: u64,
    fetched: *mut u64,
) -> c_int {
    guard("atomic", || {
        match state().atomic(pe as usize, seg as usize, raddr, op, size, value, cond, !fetched.is_null()) {
            Ok(v) => {
                if !fetched.is_null() {
                    // SAFETY: the core passes a valid out-pointer or NULL.
                    unsafe { *fetched = v };
                }
                RC_OK
            }
            Err(_) => RC_ERROR,
        }
    })
}

unsafe extern "C" fn quiet(_ctx: SpmlCtx) -> c_int {
    guard("quiet", || rc(state().flush()))
}

unsafe extern "C" fn fence(_ctx: SpmlCtx) -> c_int {
    guard("fence", || rc(state().fence()))
}

unsafe extern "C" fn progress() {
    guard("progress", || state().progress())
}

unsafe extern "C" fn finalize() {
    guard("finalize", || state_mut().finalize())
}

unsafe extern "C" fn query(_core: *const CoreServices, result: *mut QueryResult) {
    // SAFETY: the core passes a valid result pointer.
    let r = unsafe { &mut *result };
    match std::panic::catch_unwind(Ucx::new) {
        Ok(Ok(u)) => {
            drop(u);
            r.available = 1;
            r.priority = 50;
            r.set_reason("UCX context and worker created");
        }
        Ok(Err(e)) => {
            r.available = 0;
            r.set_reason(&format!("UCX unusable: {e}"));
        }
        Err(_) => {
            r.available = 0;
            r.set_reason("UCX probe panicked");
        }
    }
}

unsafe extern "C" fn open(core_ptr: *const CoreServices) -> *const c_void {
    CORE.store(core_ptr as *mut _, Ordering::Release);
    let u = match std::panic::catch_unwind(Ucx::new) {
        Ok(Ok(u)) => Box::leak(Box::new(u)),
        Ok(Err(e)) => {
            // SAFETY: logging through the core.
            unsafe { rshmem_plugin_api::log(core_ptr, LOG_WARN, "spml ucx", &e) };
            return std::ptr::null();
        }
        Err(_) => return std::ptr::null(),
    };
    // SAFETY: core service; the address bytes are valid for the call.
    if unsafe { (core().kv_put)(cstr!("spml.ucx.addr"), u.address.as_ptr(), u.address.len()) } != 0 {
        return std::ptr::null();
    }
    STATE.store(u, Ordering::Release);
    let ops = Box::leak(Box::new(SpmlOps {
        struct_size: std::mem::size_of::<SpmlOps>(),
        transport: TransportHandle {
            kind: TRANSPORT_UCX,
            context: u.context as *mut c_void,
            worker: u.worker as *mut c_void,
        },
        default_ctx: u as *mut Ucx as SpmlCtx,
        connect,
        mem_register,
        mem_deregister,
        add_segment,
        remote_ptr,
        put,
        get,
        put_nbi,
        get_nbi,
        atomic_add_u64,
        quiet,
        fence,
        progress,
        finalize,
        atomic,
    }));
    ops as *const SpmlOps as *const c_void
}

rshmem_plugin_api::export_plugin! {
    framework: Framework::Spml,
    name: "ucx",
    description: "RMA, atomics and ordering over UCX (ucp_*_nbx), with a progress thread",
    params: &[ParamDecl {
        name: cstr!("progress_thread"),
        kind: ParamKind::Bool,
        default_value: cstr!("1"),
        doc: cstr!("Run a thread that progresses UCX so RMA to this PE completes while it computes (needed for peers that are not mapped)"),
    }],
    query: query,
    open: open,
}
