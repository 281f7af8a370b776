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

use rshmem_plugin_api::heap_slots;
pub use rshmem_plugin_api::offset_heap::{Heap, Resized, MIN_ALIGN};
use rshmem_plugin_api::{CoreServices, Framework, MemheapOps, QueryResult, MEMHEAP_DEVICE_CPU};
use std::ffi::c_void;

unsafe extern "C" fn create(base: *mut c_void, size: usize) -> *mut c_void {
    heap_slots::create_with("memheap cpu", base, size, heap_slots::host_copy)
}

static OPS: MemheapOps = heap_slots::table(create, MEMHEAP_DEVICE_CPU);

fn query(_core: &'static CoreServices, r: &mut QueryResult) {
    r.available = 1;
    r.priority = 10;
    r.set_reason("host-memory bookkeeping, works over any segment");
}

fn open(_core: &'static CoreServices) -> *const c_void {
    &OPS as *const MemheapOps as *const c_void
}

rshmem_plugin_api::export_plugin! {
    framework: Framework::Memheap,
    name: "cpu",
    description: "deterministic first-fit allocator over a segment; bookkeeping outside the segment",
    params: &[],
    caps: 0,
    query: query,
    open: open,
}

#[cfg(test)]
mod tests;
