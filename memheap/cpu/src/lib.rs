//! memheap "cpu": a first-fit allocator over one segment. Determinism is what makes the heap
//! symmetric (the same sequence of calls gives the same offsets on every PE), so the policy is
//! plain first fit by address with coalescing. All bookkeeping lives in host memory, never in
//! the segment, so a device segment could use the same allocator and a stray write into the
//! heap cannot corrupt it.

mod alloc;

pub use alloc::Heap;
use rshmem_plugin_api::{CoreServices, Framework, MemheapOps, QueryResult, RC_ERROR, RC_OK};
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

struct Handle {
    base: usize,
    heap: Mutex<Heap>,
}

fn handle<'a>(h: *mut c_void) -> &'a Handle {
    // SAFETY: the core passes back the pointer `create` returned.
    unsafe { &*(h as *const Handle) }
}

unsafe extern "C" fn create(base: *mut c_void, size: usize) -> *mut c_void {
    std::panic::catch_unwind(|| {
        Box::into_raw(Box::new(Handle { base: base as usize, heap: Mutex::new(Heap::new(size)) }))
            as *mut c_void
    })
    .unwrap_or(std::ptr::null_mut())
}

unsafe extern "C" fn alloc(h: *mut c_void, size: usize, align: usize) -> *mut c_void {
    std::panic::catch_unwind(|| {
        let h = handle(h);
        match h.heap.lock().unwrap_or_else(|e| e.into_inner()).alloc(size, align, h.base) {
            Some(off) => (h.base + off) as *mut c_void,
            None => std::ptr::null_mut(),
        }
    })
    .unwrap_or(std::ptr::null_mut())
}

unsafe extern "C" fn free(h: *mut c_void, ptr: *mut c_void) -> c_int {
    std::panic::catch_unwind(|| {
        let h = handle(h);
        let off = (ptr as usize).wrapping_sub(h.base);
        if h.heap.lock().unwrap_or_else(|e| e.into_inner()).free(off) {
            RC_OK
        } else {
            RC_ERROR
        }
    })
    .unwrap_or(RC_ERROR)
}

unsafe extern "C" fn realloc(h: *mut c_void, ptr: *mut c_void, size: usize) -> *mut c_void {
    std::panic::catch_unwind(|| {
        let h = handle(h);
        let off = (ptr as usize).wrapping_sub(h.base);
        let mut heap = h.heap.lock().unwrap_or_else(|e| e.into_inner());
        let Some(old) = heap.size_of(off) else { return std::ptr::null_mut() };
        if heap.resize_in_place(off, size) {
            return ptr;
        }
        match heap.alloc(size, alloc::MIN_ALIGN, h.base) {
            Some(new) => {
                // SAFETY: both ranges lie inside the segment and do not overlap (both live).
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr as *const u8, (h.base + new) as *mut u8, old.min(size))
                };
                heap.free(off);
                (h.base + new) as *mut c_void
            }
            None => std::ptr::null_mut(),
        }
    })
    .unwrap_or(std::ptr::null_mut())
}

unsafe extern "C" fn usable_size(h: *mut c_void, ptr: *mut c_void) -> usize {
    std::panic::catch_unwind(|| {
        let h = handle(h);
        h.heap
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .size_of((ptr as usize).wrapping_sub(h.base))
            .unwrap_or(0)
    })
    .unwrap_or(0)
}

unsafe extern "C" fn destroy(h: *mut c_void) {
    if !h.is_null() {
        // SAFETY: the pointer came from `create` and is not used after this.
        drop(unsafe { Box::from_raw(h as *mut Handle) });
    }
}

static OPS: MemheapOps = MemheapOps {
    struct_size: std::mem::size_of::<MemheapOps>(),
    create,
    alloc,
    free,
    realloc,
    usable_size,
    destroy,
};

unsafe extern "C" fn query(_core: *const CoreServices, result: *mut QueryResult) {
    // SAFETY: the core passes a valid result pointer.
    let r = unsafe { &mut *result };
    r.available = 1;
    r.priority = 10;
    r.set_reason("host memory allocator");
}

unsafe extern "C" fn open(_core: *const CoreServices) -> *const c_void {
    &OPS as *const MemheapOps as *const c_void
}

rshmem_plugin_api::export_plugin! {
    framework: Framework::Memheap,
    name: "cpu",
    description: "deterministic first-fit allocator over a host segment; bookkeeping outside the segment",
    params: &[],
    query: query,
    open: open,
}
