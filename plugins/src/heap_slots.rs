//! The [`MemheapOps`](crate::MemheapOps) slots over an [`offset_heap::Heap`](crate::offset_heap::Heap),
//! for Rust memheap components (not part of the C ABI). A component supplies `create` (which
//! calls [`create_with`] with how its memory is copied) and takes the other slots from here;
//! the CPU memheap copies with `memcpy`, a device memheap with the device's copy.
//!
//! Every slot is a panic boundary: a bug in the allocator ends the job with a message rather
//! than looking like "out of memory".

use crate::boundary::slot;
use crate::offset_heap::{Heap, Resized, MIN_ALIGN};
use crate::{MemheapOps, RC_ERROR, RC_OK};
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, MutexGuard};

/// Copies `len` bytes between two blocks of the heap's memory (which do not overlap).
pub type CopyFn = unsafe fn(dst: *mut u8, src: *const u8, len: usize);

/// What `create` returns to the core: the segment base and the allocator. Allocation is not a
/// hot path, so one mutex is enough.
struct Handle {
    base: usize,
    heap: Mutex<Heap>,
    copy: CopyFn,
}

impl Handle {
    fn lock(&self) -> MutexGuard<'_, Heap> {
        // A panic while holding the lock ends the job (every slot is a `boundary::slot`),
        // so a poisoned lock is never seen half-updated by anyone who continues.
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

fn handle<'a>(h: *mut c_void) -> Option<&'a Handle> {
    // SAFETY: the core passes NULL or the pointer `create_with` returned, until `destroy`.
    unsafe { (h as *const Handle).as_ref() }
}

/// The body of a component's `create` slot: a heap over `[base, base + size)` whose blocks
/// `realloc` moves with `copy`. NULL for a NULL base or a range that wraps.
pub fn create_with(component: &str, base: *mut c_void, size: usize, copy: CopyFn) -> *mut c_void {
    slot(component, "create", || {
        if base.is_null() || (base as usize).checked_add(size).is_none() {
            return std::ptr::null_mut();
        }
        let h = Handle { base: base as usize, heap: Mutex::new(Heap::new(size)), copy };
        Box::into_raw(Box::new(h)) as *mut c_void
    })
}

/// A component's whole table: its `create` and device type, every other slot from here.
pub const fn table(
    create: unsafe extern "C" fn(base: *mut c_void, size: usize) -> *mut c_void,
    device_type: u32,
) -> MemheapOps {
    MemheapOps {
        struct_size: std::mem::size_of::<MemheapOps>(),
        create,
        alloc,
        free,
        realloc,
        usable_size,
        destroy,
        device_type,
        segments: std::ptr::null(),
        copy: None,
        owns: None,
        host_alloc: None,
        host_free: None,
        block_of: Some(block_of),
        host_register: None,
        host_unregister: None,
        stream_copy: None,
        stream_write_u64: None,
        stream_wait_u64: None,
        stream_sync: None,
        device_identity: None,
        stream_batch: None,
        reduce: None,
    }
}

/// `memcpy`, for heaps in host memory.
///
/// # Safety
/// `dst` and `src` must be valid for `len` bytes and not overlap.
pub unsafe fn host_copy(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: as the caller promises.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
}

pub unsafe extern "C" fn alloc(h: *mut c_void, size: usize, align: usize) -> *mut c_void {
    slot("memheap", "alloc", || {
        let Some(h) = handle(h) else { return std::ptr::null_mut() };
        let off = h.lock().alloc(size, align);
        off.map_or(std::ptr::null_mut(), |off| h.addr(off))
    })
}

pub unsafe extern "C" fn free(h: *mut c_void, ptr: *mut c_void) -> c_int {
    slot("memheap", "free", || {
        let Some(h) = handle(h) else { return RC_ERROR };
        let mut heap = h.lock();
        match h.offset(&heap, ptr) {
            Some(off) if heap.free(off) => RC_OK,
            _ => RC_ERROR,
        }
    })
}

pub unsafe extern "C" fn realloc(h: *mut c_void, ptr: *mut c_void, size: usize) -> *mut c_void {
    slot("memheap", "realloc", || {
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
                unsafe { (h.copy)(h.addr(to) as *mut u8, ptr as *const u8, keep) };
                h.addr(to)
            }
            None => std::ptr::null_mut(),
        }
    })
}

pub unsafe extern "C" fn usable_size(h: *mut c_void, ptr: *mut c_void) -> usize {
    slot("memheap", "usable_size", || {
        let Some(h) = handle(h) else { return 0 };
        let heap = h.lock();
        h.offset(&heap, ptr).and_then(|off| heap.size_of(off)).unwrap_or(0)
    })
}

pub unsafe extern "C" fn block_of(
    h: *mut c_void,
    addr: *const c_void,
    start: *mut usize,
    len: *mut usize,
) -> c_int {
    slot("memheap", "block_of", || {
        let Some(h) = handle(h) else { return 0 };
        let heap = h.lock();
        let Some((off, n)) = h.offset(&heap, addr.cast_mut()).and_then(|off| heap.block_at(off)) else {
            return 0;
        };
        if start.is_null() || len.is_null() {
            return 0;
        }
        // SAFETY: the core passes two writable words (checked non-NULL above).
        unsafe {
            *start = h.addr(off) as usize;
            *len = n;
        }
        1
    })
}

pub unsafe extern "C" fn destroy(h: *mut c_void) {
    slot("memheap", "destroy", || {
        if !h.is_null() {
            // SAFETY: the pointer came from `create_with` and the core does not use it after this.
            drop(unsafe { Box::from_raw(h as *mut Handle) });
        }
    })
}
