//! sshmem "ucx": the symmetric segment is allocated by UCX (`ucp_mem_map` with
//! `UCP_MEM_MAP_ALLOCATE`) in the context the "ucx" spml publishes as the job's transport. UCX
//! then backs it with memory its shared-memory transports can hand to local peers, which map it
//! through the spml (`remote_ptr`, i.e. `ucp_rkey_ptr`), and remote RMA into it needs no
//! target-side progress. The registration is handed to the spml (`transport_memh`) so it does
//! not register the segment again. Requires the "ucx" spml.

use rshmem_plugin_api::boundary::{self, slot};
use rshmem_plugin_api::{
    CoreServices, Framework, QueryResult, SegmentDesc, SshmemOps, LOG_ERROR, RC_ERROR, RC_OK, RC_UNSUPPORTED,
    TRANSPORT_UCX,
};
use rshmem_ucx_sys as sys;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

/// The size `query` allocates to prove UCX can allocate here.
const PROBE_SIZE: usize = 1 << 20;

/// The spml's UCX context, captured in `open`.
static CONTEXT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

const COMPONENT: &str = "sshmem ucx";

fn log_error(msg: &str) {
    boundary::log(LOG_ERROR, COMPONENT, msg)
}

/// The UCX context of the selected spml, when it is the "ucx" one.
fn ucx_context(core: &CoreServices) -> Option<sys::ucp_context_h> {
    // SAFETY: a core service without arguments.
    let t = unsafe { (core.transport)() };
    (t.kind == TRANSPORT_UCX && !t.context.is_null()).then_some(t.context as sys::ucp_context_h)
}

/// Let UCX allocate and register `len` bytes (at `hint` if it can; NULL: anywhere). The memory is
/// not touched here. Returns the registration and the address.
fn allocate(
    ctx: sys::ucp_context_h,
    len: usize,
    hint: *mut c_void,
) -> Result<(sys::ucp_mem_h, *mut c_void), String> {
    if len == 0 {
        return Err("cannot allocate an empty segment".into());
    }
    let params = sys::ucp_mem_map_params_t {
        field_mask: (sys::UCP_MEM_MAP_PARAM_FIELD_ADDRESS
            | sys::UCP_MEM_MAP_PARAM_FIELD_LENGTH
            | sys::UCP_MEM_MAP_PARAM_FIELD_FLAGS) as u64,
        address: hint,
        length: len,
        flags: sys::UCP_MEM_MAP_ALLOCATE,
        ..Default::default()
    };
    let mut memh: sys::ucp_mem_h = std::ptr::null_mut();
    // SAFETY: a live context (caller), valid parameters and out-pointer.
    let st = unsafe { sys::ucp_mem_map(ctx, &params, &mut memh) };
    if st != sys::UCS_OK {
        return Err(format!("ucp_mem_map(ALLOCATE, {len} bytes): {}", sys::status_string(st)));
    }
    let mut attr =
        sys::ucp_mem_attr_t { field_mask: sys::UCP_MEM_ATTR_FIELD_ADDRESS as u64, ..Default::default() };
    // SAFETY: the registration just made; valid out-pointer.
    let st = unsafe { sys::ucp_mem_query(memh, &mut attr) };
    if st != sys::UCS_OK || attr.address.is_null() {
        // SAFETY: releasing the allocation made above.
        unsafe { sys::ucp_mem_unmap(ctx, memh) };
        return Err(format!("ucp_mem_query: {}", sys::status_string(st)));
    }
    Ok((memh, attr.address))
}

fn query(c: &'static CoreServices, r: &mut QueryResult) {
    r.available = 0;
    r.priority = 0;
    let Some(ctx) = ucx_context(c) else {
        r.set_reason("needs the ucx spml's transport");
        return;
    };
    match allocate(ctx, PROBE_SIZE, std::ptr::null_mut()) {
        Ok((memh, _)) => {
            // SAFETY: releasing the probe allocation.
            unsafe { sys::ucp_mem_unmap(ctx, memh) };
            r.available = 1;
            r.priority = 20;
            r.set_reason("UCX allocates the segment (ucp_mem_map ALLOCATE)");
        }
        Err(e) => r.set_reason(&e),
    }
}

unsafe extern "C" fn create(size: usize, hint: *mut c_void, out: *mut SegmentDesc) -> c_int {
    slot(COMPONENT, "create", || {
        let ctx = CONTEXT.load(Ordering::Acquire) as sys::ucp_context_h;
        if ctx.is_null() || out.is_null() {
            return RC_ERROR;
        }
        match allocate(ctx, size, hint) {
            Ok((memh, base)) => {
                let seg = SegmentDesc {
                    base,
                    size,
                    blob_len: 0,
                    transport_memh: memh as *mut c_void,
                    handle: memh as *mut c_void,
                    ..Default::default()
                };
                // SAFETY: the core passes a valid out-pointer.
                unsafe { out.write(seg) };
                RC_OK
            }
            Err(e) => {
                log_error(&e);
                RC_ERROR
            }
        }
    })
}

/// Local peers reach the segment through the spml (`ucp_rkey_ptr`), not by name.
unsafe extern "C" fn attach(_blob: *const u8, _len: usize, _size: usize, _addr: *mut *mut c_void) -> c_int {
    RC_UNSUPPORTED
}

unsafe extern "C" fn detach(_addr: *mut c_void, _size: usize) {}

/// Nothing is named: UCX's own segments go with the process.
unsafe extern "C" fn unlink(_seg: *mut SegmentDesc) {}

unsafe extern "C" fn destroy(seg: *mut SegmentDesc) {
    slot(COMPONENT, "destroy", || {
        if seg.is_null() {
            return;
        }
        // SAFETY: the core passes a segment this component created.
        let seg = unsafe { &mut *seg };
        let ctx = CONTEXT.load(Ordering::Acquire) as sys::ucp_context_h;
        if !seg.handle.is_null() && !ctx.is_null() {
            // SAFETY: our own allocation, released once (the handle is cleared).
            unsafe { sys::ucp_mem_unmap(ctx, seg.handle as sys::ucp_mem_h) };
            seg.handle = std::ptr::null_mut();
            seg.transport_memh = std::ptr::null_mut();
            seg.base = std::ptr::null_mut();
        }
    })
}

static OPS: SshmemOps =
    SshmemOps { struct_size: std::mem::size_of::<SshmemOps>(), create, attach, detach, unlink, destroy };

fn open(c: &'static CoreServices) -> *const c_void {
    match ucx_context(c) {
        Some(ctx) => {
            CONTEXT.store(ctx as *mut c_void, Ordering::Release);
            &OPS as *const SshmemOps as *const c_void
        }
        None => {
            log_error("needs the ucx spml's transport");
            std::ptr::null()
        }
    }
}

rshmem_plugin_api::export_plugin! {
    framework: Framework::Sshmem,
    name: "ucx",
    description: "segments allocated by UCX (ucp_mem_map ALLOCATE) in the ucx spml's context; local peers map them through the spml",
    params: &[],
    caps: 0,
    query: query,
    open: open,
}

#[cfg(test)]
mod tests;
