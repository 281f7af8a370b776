//! memheap "cpu": a first-fit allocator over one segment. Determinism is what makes the heap
//! symmetric (the same sequence of calls gives the same offsets on every PE), so the policy is
//! plain first fit by address with coalescing. All bookkeeping lives in host memory, never in
//! the segment, so a stray write into the heap cannot corrupt it and a device segment could
//! use the same allocator.
//!
//! Alignment is applied to offsets, which keeps every PE's answer identical whatever address
//! its segment got; sshmem components align segment bases (mmap: 1 GiB), so offsets aligned to
//! anything up to that are aligned addresses too. The core refuses larger alignments (it knows
//! the smallest base alignment over all PEs).

mod alloc;

pub use alloc::{Heap, Resized, MIN_ALIGN};
use rshmem_plugin_api::{CoreServices, Framework, MemheapOps, QueryResult, RC_ERROR, RC_OK};
use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};

/// What `create` returns to the core: the segment base and the allocator. Allocation is not a
/// hot path, so one mutex is enough.
struct Handle {
    base: usize,
    heap: Mutex<Heap>,
}

impl Handle {
    fn lock(&self) -> MutexGuard<'_, Heap> {
        // A panic while holding the lock cannot leave the maps half-updated in a way that
        // matters more than aborting would, and every entry point already catches panics.
        self.heap.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The offset of `ptr` in this heap, if it points inside it.
    fn offset(&self, heap: &Heap, ptr: *mut c_void) -> Option<usize> {
        (ptr as usize).checked_sub(self.base).filter(|off| *off < heap.capacity())
    }

    fn addr(&self, off: usize) -> *mut c_void {
        (self.base + off) as *mut c_void
    }
}

/// Run an extern "C" body; a panic must not unwind into the core, so it becomes `fallback`.
fn guard<R>(fallback: R, body: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

fn handle<'a>(h: *mut c_void) -> Option<&'a Handle> {
    // SAFETY: the core passes NULL or the pointer `create` returned, until `destroy`.
    unsafe { (h as *const Handle).as_ref() }
}

unsafe extern "C" fn create(base: *mut c_void, size: usize) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        if base.is_null() || (base as usize).checked_add(size).is_none() {
            return std::ptr::null_mut();
        }
        let h = Handle { base: base as usize, heap: Mutex::new(Heap::new(size)) };
        Box::into_raw(Box::new(h)) as *mut c_void
    })
}

unsafe extern "C" fn alloc(h: *mut c_void, size: usize, align: usize) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let Some(h) = handle(h) else { return std::ptr::null_mut() };
        let off = h.lock().alloc(size, align);
        off.map_or(std::ptr::null_mut(), |off| h.addr(off))
    })
}

unsafe extern "C" fn free(h: *mut c_void, ptr: *mut c_void) -> c_int {
    guard(RC_ERROR, || {
        let Some(h) = handle(h) else { return RC_ERROR };
        let mut heap = h.lock();
        match h.offset(&heap, ptr) {
            Some(off) if heap.free(off) => RC_OK,
            _ => RC_ERROR,
        }
    })
}

unsafe extern "C" fn realloc(h: *mut c_void, ptr: *mut c_void, size: usize) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let Some(h) = handle(h) else { return std::ptr::null_mut() };
        if ptr.is_null() {
            return h.lock().alloc(size, MIN_ALIGN).map_or(std::ptr::null_mut(), |off| h.addr(off));
        }
        // Size 0 is the core's business (it frees); here it is refused, leaving the block intact.
        if size == 0 {
            return std::ptr::null_mut();
        }
        let mut heap = h.lock();
        let Some(off) = h.offset(&heap, ptr) else { return std::ptr::null_mut() };
        match heap.realloc(off, size) {
            Some(Resized::InPlace) => ptr,
            Some(Resized::Moved { to, keep }) => {
                // SAFETY: both blocks lie inside the segment and do not overlap (the new one was
                // allocated while the old was live); the lock keeps anyone from reusing the old
                // block before the copy is done.
                unsafe { std::ptr::copy_nonoverlapping(ptr as *const u8, h.addr(to) as *mut u8, keep) };
                h.addr(to)
            }
            None => std::ptr::null_mut(),
        }
    })
}

unsafe extern "C" fn usable_size(h: *mut c_void, ptr: *mut c_void) -> usize {
    guard(0, || {
        let Some(h) = handle(h) else { return 0 };
        let heap = h.lock();
        h.offset(&heap, ptr).and_then(|off| heap.size_of(off)).unwrap_or(0)
    })
}

unsafe extern "C" fn destroy(h: *mut c_void) {
    guard((), || {
        if !h.is_null() {
            // SAFETY: the pointer came from `create` and the core does not use it after this.
            drop(unsafe { Box::from_raw(h as *mut Handle) });
        }
    })
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
    guard((), || {
        // SAFETY: the core passes NULL or a valid result pointer.
        if let Some(r) = unsafe { result.as_mut() } {
            r.available = 1;
            r.priority = 10;
            r.set_reason("host-memory bookkeeping, works over any segment");
        }
    })
}

unsafe extern "C" fn open(_core: *const CoreServices) -> *const c_void {
    guard(std::ptr::null(), || &OPS as *const MemheapOps as *const c_void)
}

rshmem_plugin_api::export_plugin! {
    framework: Framework::Memheap,
    name: "cpu",
    description: "deterministic first-fit allocator over a segment; bookkeeping outside the segment",
    params: &[],
    query: query,
    open: open,
}

#[cfg(test)]
mod tests;
