//! sshmem "ucx": the segment is allocated by UCX (`ucp_mem_map` with `UCP_MEM_MAP_ALLOCATE`)
//! through the selected spml's published UCX context, so UCX's shared-memory transports can
//! hand local peers a direct mapping (`ucp_rkey_ptr`) and remote RMA needs no target progress.
//! Local peers therefore attach through the spml, not by name. Requires the "ucx" spml.

use rshmem_plugin_api::{
    CoreServices, Framework, QueryResult, SegmentDesc, SshmemOps, RC_ERROR, RC_OK, RC_UNSUPPORTED,
    TRANSPORT_UCX,
};
use rshmem_ucx_sys as sys;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

static CONTEXT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

fn ucx_context(core: *const CoreServices) -> Option<sys::ucp_context_h> {
    // SAFETY: the core's table is valid for the job.
    let t = unsafe { ((*core).transport)() };
    (t.kind == TRANSPORT_UCX && !t.context.is_null()).then_some(t.context as sys::ucp_context_h)
}

/// Allocate `len` bytes with UCX; returns (registration, address).
fn allocate(
    ctx: sys::ucp_context_h,
    len: usize,
    hint: *mut c_void,
) -> Result<(sys::ucp_mem_h, *mut c_void), String> {
    let params = sys::ucp_mem_map_params_t {
        field_mask: (sys::UCP_MEM_MAP_PARAM_FIELD_ADDRESS
            | sys::UCP_MEM_MAP_PARAM_FIELD_LENGTH
            | sys::UCP_MEM_MAP_PARAM_FIELD_FLAGS) as u64,
        address: hint,
        length: len,
        flags: sys::UCP_MEM_MAP_ALLOCATE as _,
        ..Default::default()
    };
    let mut memh: sys::ucp_mem_h = std::ptr::null_mut();
    // SAFETY: valid parameters and out-pointer.
    let st = unsafe { sys::ucp_mem_map(ctx, &params, &mut memh) };
    if st != sys::UCS_OK {
        return Err(format!("ucp_mem_map(ALLOCATE, {len}): {}", sys::status_string(st)));
    }
    let mut attr =
        sys::ucp_mem_attr_t { field_mask: sys::UCP_MEM_ATTR_FIELD_ADDRESS as u64, ..Default::default() };
    // SAFETY: querying the registration just made.
    let st = unsafe { sys::ucp_mem_query(memh, &mut attr) };
    if st != sys::UCS_OK {
        // SAFETY: releasing what we mapped.
        unsafe { sys::ucp_mem_unmap(ctx, memh) };
        return Err(format!("ucp_mem_query: {}", sys::status_string(st)));
    }
    Ok((memh, attr.address))
}

unsafe extern "C" fn query(core: *const CoreServices, result: *mut QueryResult) {
    // SAFETY: the core passes a valid result pointer.
    let r = unsafe { &mut *result };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let Some(ctx) = ucx_context(core) else {
            r.available = 0;
            r.set_reason("needs the ucx spml's transport (another spml was selected)");
            return;
        };
        match allocate(ctx, 1 << 20, std::ptr::null_mut()) {
            Ok((memh, _)) => {
                // SAFETY: releasing the probe allocation.
                unsafe { sys::ucp_mem_unmap(ctx, memh) };
                r.available = 1;
                r.priority = 20;
                r.set_reason("UCX allocates the segment");
            }
            Err(e) => {
                r.available = 0;
                r.set_reason(&e);
            }
        }
    }));
}

unsafe extern "C" fn create(size: usize, hint: *mut c_void, out: *mut SegmentDesc) -> c_int {
    std::panic::catch_unwind(|| {
        let ctx = CONTEXT.load(Ordering::Acquire) as sys::ucp_context_h;
        match allocate(ctx, size, hint) {
            Ok((memh, base)) => {
                // SAFETY: the core passes a valid out-pointer.
                let seg = unsafe { &mut *out };
                *seg = SegmentDesc::default();
                seg.base = base;
                seg.size = size;
                seg.transport_memh = memh as *mut c_void;
                seg.handle = memh as *mut c_void;
                RC_OK
            }
            Err(_) => RC_ERROR,
        }
    })
    .unwrap_or(RC_ERROR)
}

unsafe extern "C" fn attach(_blob: *const u8, _len: usize, _size: usize, _addr: *mut *mut c_void) -> c_int {
    RC_UNSUPPORTED
}

unsafe extern "C" fn detach(_addr: *mut c_void, _size: usize) {}

unsafe extern "C" fn unlink(_seg: *mut SegmentDesc) {}

unsafe extern "C" fn destroy(seg: *mut SegmentDesc) {
    // SAFETY: the core passes a segment this component created.
    let seg = unsafe { &mut *seg };
    if !seg.handle.is_null() {
        // SAFETY: releasing our own allocation.
        unsafe {
            sys::ucp_mem_unmap(
                CONTEXT.load(Ordering::Acquire) as sys::ucp_context_h,
                seg.handle as sys::ucp_mem_h,
            )
        };
        seg.handle = std::ptr::null_mut();
    }
}

static OPS: SshmemOps =
    SshmemOps { struct_size: std::mem::size_of::<SshmemOps>(), create, attach, detach, unlink, destroy };

unsafe extern "C" fn open(core: *const CoreServices) -> *const c_void {
    match ucx_context(core) {
        Some(ctx) => {
            CONTEXT.store(ctx as *mut c_void, Ordering::Release);
            &OPS as *const SshmemOps as *const c_void
        }
        None => std::ptr::null(),
    }
}

rshmem_plugin_api::export_plugin! {
    framework: Framework::Sshmem,
    name: "ucx",
    description: "segments allocated by UCX (ucp_mem_map ALLOCATE), mapped by local peers through the spml",
    params: &[],
    query: query,
    open: open,
}
