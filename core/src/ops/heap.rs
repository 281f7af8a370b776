//! Symmetric heap management (spec 9.3): the collective allocation routines over the default
//! space's heap: the init heap (the CPU space's), or under `SHMEM_DEFAULT_SPACE=GPU` the GPU
//! space's, reached through the runtime's `user_heap` (set by `crate::ops::spaces`).
//! Allocation is deterministic, so the same call sequence yields the same offsets on every PE;
//! each routine synchronises as the spec requires.

use crate::error::{fail, ShmemError};
use crate::symm::runtime::{self, Runtime};
use std::ffi::{c_void, CStr};
use std::sync::atomic::Ordering;

const MIN_ALIGN: usize = 16;

/// Under SHMEM_DEBUG, end the job unless every PE passed the same `args`: allocations of
/// different sizes leave the heaps at different offsets, and later transfers then land on the
/// wrong objects without a word.
fn debug_same(routine: &'static CStr, what: &str, args: &[i64]) {
    crate::ops::teams::debug_require_same_args(routine, crate::ops::coll::world(routine), what, args);
}

/// Where `p` lies, comparable between PEs (its segment and offset; -1 for none).
fn place(rt: &Runtime, p: *mut c_void) -> i64 {
    rt.segs.locate(p as usize).map_or(-1, |(seg, off, _)| (i64::from(seg) << 48) | off as i64)
}

fn alloc_sync(routine: &'static CStr, size: usize, align: usize, zero: bool) -> *mut c_void {
    let rt = runtime::get(routine);
    debug_same(routine, "size and alignment", &[size as i64, align as i64]);
    if size == 0 {
        return std::ptr::null_mut();
    }
    let p = match rt.user_heap.get() {
        Some(u) => (u.alloc)(size, align.max(MIN_ALIGN)),
        None => rt.alloc_user(size, align.max(MIN_ALIGN)).unwrap_or(std::ptr::null_mut()),
    };
    count_used(rt, p.cast(), true);
    if p.is_null() {
        no_room(routine, rt, size);
    }
    if zero && !p.is_null() {
        if rt.user_heap.get().is_some_and(|u| u.device) {
            // SAFETY: a fresh block of `size` bytes of the GPU default space.
            unsafe { crate::ops::device::zero(rt, routine, p, size) };
        } else {
            // SAFETY: fresh allocation of `size` bytes.
            unsafe { std::ptr::write_bytes(p, 0, size) };
        }
    }
    crate::ops::coll::barrier_all(routine);
    p.cast()
}

/// A symmetric allocation found no room: the spec's answer is NULL, and programs that do not
/// check it fault later far from the cause, so say why here (a warning, on every PE alike:
/// the heaps are symmetric).
fn no_room(routine: &'static CStr, rt: &Runtime, size: usize) {
    let what = if rt.user_heap.get().is_some() {
        "the default space's heap has no room for it".to_string()
    } else {
        let used = rt.heap_used.load(Ordering::Relaxed);
        format!(
            "the symmetric heap ({} bytes per PE, {} of them in live blocks, so at most {} free) has no room for it; SHMEM_SYMMETRIC_SIZE sets the heap's size",
            rt.heap_size,
            used,
            rt.heap_size.saturating_sub(used)
        )
    };
    crate::log::log(
        crate::log::WARN,
        &routine.to_string_lossy(),
        &format!("returning NULL for a request of {size} bytes: {what}"),
    );
}

pub fn malloc(routine: &'static CStr, size: usize) -> *mut c_void {
    alloc_sync(routine, size, MIN_ALIGN, false)
}

/// What `shmem_malloc_with_hints` isolates on: two 64-byte lines, because x86 cores also fetch
/// a line's 128-byte pair (the adjacent-line prefetcher), so neighbours one line away still
/// share traffic.
pub const ISOLATION: usize = 128;

/// A block that owns every cache line it touches: it starts on an [`ISOLATION`] boundary and
/// its length is rounded up to one, so no other allocation shares (falsely) its lines. For
/// words that remote PEs update with atomics or signals while the owner works nearby.
pub fn malloc_isolated(routine: &'static CStr, size: usize) -> *mut c_void {
    match size.checked_next_multiple_of(ISOLATION) {
        // The heap base is aligned far beyond ISOLATION on every PE (sshmem aligns segments),
        // so an aligned offset is an aligned address everywhere.
        Some(padded) if size > 0 => alloc_sync(routine, padded, ISOLATION, false),
        _ => {
            runtime::get(routine);
            std::ptr::null_mut()
        }
    }
}

pub fn calloc(routine: &'static CStr, count: usize, size: usize) -> *mut c_void {
    match count.checked_mul(size) {
        Some(n) => alloc_sync(routine, n, MIN_ALIGN, true),
        None => {
            runtime::get(routine);
            std::ptr::null_mut()
        }
    }
}

pub fn align(routine: &'static CStr, alignment: usize, size: usize) -> *mut c_void {
    if !alignment.is_power_of_two() {
        runtime::get(routine);
        crate::log::log(
            crate::log::WARN,
            &routine.to_string_lossy(),
            &format!("alignment {alignment} is not a power of two; returning NULL"),
        );
        return std::ptr::null_mut();
    }
    let rt = runtime::get(routine);
    let heap_align = rt.user_heap.get().map_or(rt.heap_align, |u| u.align);
    if alignment > heap_align {
        crate::log::log(
            crate::log::WARN,
            &routine.to_string_lossy(),
            &format!(
                "alignment {alignment} is larger than the {heap_align} the symmetric heap's base has on every PE; returning NULL"
            ),
        );
        // Collective: every PE reaches the same verdict (heap_align is the same everywhere).
        return std::ptr::null_mut();
    }
    alloc_sync(routine, size, alignment, false)
}

/// A block's usable size in the default space's heap (0: no live block of it).
fn usable(rt: &Runtime, p: *mut c_void) -> usize {
    match rt.user_heap.get() {
        Some(u) => (u.usable)(p),
        // SAFETY: plugin ABI call; only looks the pointer up.
        None => unsafe { (rt.memheap.usable_size)(rt.heap, p) },
    }
}

/// Adds (or takes away) a user block's usable size to `heap_used`.
fn count_used(rt: &Runtime, p: *mut c_void, add: bool) {
    if p.is_null() {
        return;
    }
    let n = usable(rt, p);
    if add {
        rt.heap_used.fetch_add(n, Ordering::Relaxed);
    } else {
        rt.heap_used.fetch_sub(n, Ordering::Relaxed);
    }
}

fn check_owned(routine: &'static CStr, rt: &Runtime, ptr: *mut c_void, what: &'static str) {
    if usable(rt, ptr) == 0 {
        fail(routine, ShmemError::NotAllocated { what, addr: ptr as usize });
    }
}

/// # Safety
/// `ptr` must be NULL or a pointer the symmetric allocation routines returned.
pub unsafe fn free(routine: &'static CStr, ptr: *mut c_void) {
    let rt = runtime::get(routine);
    debug_same(routine, "ptr (as segment and offset)", &[place(rt, ptr)]);
    if ptr.is_null() {
        return;
    }
    check_owned(routine, rt, ptr, "ptr");
    crate::ops::coll::barrier_all(routine);
    count_used(rt, ptr, false);
    if let Some(u) = rt.user_heap.get() {
        // SAFETY: a live block of the program's (checked), unused everywhere (the barrier).
        return unsafe { (u.free)(ptr) };
    }
    // SAFETY: a live block of the program's (checked), unused everywhere (the barrier).
    unsafe { rt.free(ptr.cast()) };
}

/// `shmem_space_free` on the CPU space when it is not the default (`SHMEM_DEFAULT_SPACE=GPU`):
/// a block of the init heap.
///
/// # Safety
/// `ptr` must be a pointer `shmem_space_malloc` returned for the CPU space.
pub unsafe fn free_in_init_heap(routine: &'static CStr, ptr: *mut c_void) {
    let rt = runtime::get(routine);
    // SAFETY: plugin ABI call; only looks the pointer up.
    if unsafe { (rt.memheap.usable_size)(rt.heap, ptr) } == 0 {
        fail(routine, ShmemError::NotFromSpace { addr: ptr as usize });
    }
    crate::ops::coll::barrier_all(routine);
    // SAFETY: a live block of the init heap (checked), unused everywhere (the barrier).
    unsafe { rt.free(ptr.cast()) };
}

/// # Safety
/// `ptr` must be NULL or a pointer the symmetric allocation routines returned.
pub unsafe fn realloc(routine: &'static CStr, ptr: *mut c_void, size: usize) -> *mut c_void {
    let rt = runtime::get(routine);
    debug_same(routine, "ptr (as segment and offset) and size", &[place(rt, ptr), size as i64]);
    if ptr.is_null() {
        return malloc(routine, size);
    }
    check_owned(routine, rt, ptr, "ptr");
    if size == 0 {
        // SAFETY: checked above to be a live allocation.
        unsafe { free(routine, ptr) };
        return std::ptr::null_mut();
    }
    // Nobody may still be reading the old block when it moves.
    crate::ops::coll::barrier_all(routine);
    let old = usable(rt, ptr);
    let p = match rt.user_heap.get() {
        // SAFETY: a live block of the program's (checked), unused everywhere (the barrier).
        Some(u) => unsafe { (u.realloc)(ptr, size) },
        // SAFETY: a live block of the program's (checked), unused everywhere (the barrier).
        None => unsafe { rt.realloc_user(ptr, size) },
    };
    if !p.is_null() {
        rt.heap_used.fetch_sub(old, Ordering::Relaxed);
        count_used(rt, p, true);
    }
    crate::ops::coll::barrier_all(routine);
    p
}
