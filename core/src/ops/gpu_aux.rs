//! The host-initiated ("GPU-aware") part of the OpenSHMEM Auxiliary Specification for GPU
//! Support (openshmem-org/gpu-aux-specification, draft v0.1, based on 1.6), declared in
//! `shmemg.h`:
//! - `shmem_init_thread` takes `SHMEM_DEVICE_HOST_INIT` OR'd with the thread level and grants
//!   it in `provided` when the GPU heap was made: rshmem's GPU space (`SHMEM_SPACE_GPU`, memheap
//!   cuda), sized by `SHMEM_DEVICE_SYMMETRIC_SIZE` (else `SHMEM_GPU_SYMMETRIC_SIZE`), on the
//!   device current when init is called. `SHMEM_DEVICE_KERNEL_INIT` is never granted: rshmem
//!   has none of the routines kernels call (docs/extensions.md lists what is left out).
//! - `shmemg_malloc`, `shmemg_calloc`, `shmemg_align`, `shmemg_free` allocate from that heap,
//!   collectively, as the draft says (a barrier on exit, on entry for free; NULL for a zero
//!   size without a barrier).
//! - `SHMEM_DEVICE_TEAM_WORLD` is the GPU space's team (the world's PEs, a team of its own) and
//!   `SHMEM_DEVICE_TEAM_SHARED` the PEs whose GPU heap this PE maps
//!   (`crate::ops::spaces::init_device_shared`); `shmem_ptr` gives device addresses on it.
//! - Host-initiated RMA, atomics, signals, waits and collectives on GPU-heap memory are the GPU
//!   space's (`crate::ops::device`).

use crate::error::{fail, ShmemError};
use crate::ops::spaces;
use std::ffi::{c_int, c_void, CStr};

/// `SHMEM_DEVICE_HOST_INIT` and `SHMEM_DEVICE_KERNEL_INIT` (shmemg.h): bits above every
/// thread level, so they OR with one.
pub const DEVICE_HOST_INIT: c_int = 1 << 8;
pub const DEVICE_KERNEL_INIT: c_int = 1 << 9;
const DEVICE_BITS: c_int = DEVICE_HOST_INIT | DEVICE_KERNEL_INIT;
// The bits lie above every thread level.
const _: () = assert!(crate::ops::THREAD_MULTIPLE < DEVICE_HOST_INIT);

/// `requested` of `shmem_init_thread` as (thread level, device bits).
pub fn split(requested: c_int) -> (c_int, c_int) {
    (requested & !DEVICE_BITS, requested & DEVICE_BITS)
}

/// Whether the device bits ask init for the GPU heap.
pub fn asks_gpu_heap(device_bits: c_int) -> bool {
    device_bits & DEVICE_HOST_INIT != 0
}

/// The device bits `provided` carries after init: `SHMEM_DEVICE_HOST_INIT` when asked for and
/// the GPU heap exists.
pub fn granted(device_bits: c_int) -> c_int {
    if device_bits & DEVICE_HOST_INIT != 0 && !spaces::gpu_space().is_null() {
        DEVICE_HOST_INIT
    } else {
        0
    }
}

/// The GPU heap, or the end of the job saying how to get one.
fn heap(routine: &'static CStr) -> *mut c_void {
    crate::symm::runtime::get(routine);
    let s = spaces::gpu_space();
    if s.is_null() {
        fail(routine, ShmemError::NoGpuHeap);
    }
    s
}

/// `shmemg_malloc`.
pub fn malloc(routine: &'static CStr, size: usize) -> *mut c_void {
    let s = heap(routine);
    if size == 0 {
        return std::ptr::null_mut();
    }
    spaces::malloc(routine, s, size)
}

/// `shmemg_calloc`: NULL without a barrier when `count` or `size` is 0.
pub fn calloc(routine: &'static CStr, count: usize, size: usize) -> *mut c_void {
    let s = heap(routine);
    if count == 0 || size == 0 {
        return std::ptr::null_mut();
    }
    spaces::calloc(routine, s, count, size)
}

/// `shmemg_align`: `alignment` a power of two and a multiple of `sizeof(void *)` (the draft's
/// rule; anything else ends the job naming it).
pub fn align(routine: &'static CStr, alignment: usize, size: usize) -> *mut c_void {
    let s = heap(routine);
    if !alignment.is_power_of_two() || !alignment.is_multiple_of(std::mem::size_of::<*const c_void>()) {
        fail(routine, ShmemError::BadAlignment { alignment });
    }
    if size == 0 {
        return std::ptr::null_mut();
    }
    spaces::align(routine, s, alignment, size)
}

/// `shmemg_free`.
///
/// # Safety
/// `ptr` is NULL or a block of the GPU heap (checked).
pub unsafe fn free(routine: &'static CStr, ptr: *mut c_void) {
    if ptr.is_null() {
        return; // the draft: no action, GPU heap or not
    }
    let s = heap(routine);
    // SAFETY: forwarded; the space checks the block is its own.
    unsafe { spaces::free(routine, s, ptr) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_bits_leave_the_thread_level_apart() {
        use crate::ops::{THREAD_MULTIPLE, THREAD_SINGLE};
        assert_eq!(split(THREAD_SINGLE | DEVICE_HOST_INIT), (THREAD_SINGLE, DEVICE_HOST_INIT));
        assert_eq!(split(THREAD_MULTIPLE | DEVICE_BITS), (THREAD_MULTIPLE, DEVICE_BITS));
        assert_eq!(split(THREAD_MULTIPLE), (THREAD_MULTIPLE, 0));
        assert_eq!(granted(DEVICE_KERNEL_INIT), 0, "kernel-initiated support is never granted");
    }
}
