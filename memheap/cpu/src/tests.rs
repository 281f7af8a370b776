//! Tests through the component's C ABI over a real buffer: addresses, copies on realloc, and
//! the refusals the core relies on.

use super::*;
use rshmem_plugin_api::ABI_VERSION;
use rshmem_plugin_api::{RC_ERROR, RC_OK};
use std::alloc::Layout;

/// A 4096-aligned segment stand-in, freed on drop.
struct Segment {
    base: *mut u8,
    layout: Layout,
}

impl Segment {
    fn new(size: usize) -> Segment {
        let layout = Layout::from_size_align(size, 4096).unwrap();
        // SAFETY: non-zero size.
        let base = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!base.is_null());
        Segment { base, layout }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.base, self.layout) };
    }
}

fn ops() -> &'static MemheapOps {
    let core = rshmem_plugin_api::testing::fake_core(0, 1, "memheap-test", None);
    // SAFETY: the static descriptor's open returns the static MemheapOps table.
    unsafe { &*(((*shmem_plugin_descriptor()).open.unwrap())(core) as *const MemheapOps) }
}

#[test]
fn the_descriptor_is_a_memheap_component_at_priority_10() {
    // SAFETY: static descriptor; query writes only into the local result.
    let d = unsafe { &*shmem_plugin_descriptor() };
    assert_eq!(d.abi_version, ABI_VERSION);
    assert_eq!(d.framework, Framework::Memheap as u32);
    let mut r = QueryResult::default();
    let core = rshmem_plugin_api::testing::fake_core(0, 1, "memheap-test", None);
    // SAFETY: as above, with a valid core table.
    unsafe { (d.query.unwrap())(core, &mut r) };
    assert_eq!((r.available, r.priority), (1, 10));
}

#[test]
fn allocations_are_addresses_in_the_segment() {
    let seg = Segment::new(1 << 16);
    let ops = ops();
    // SAFETY: ABI calls on a heap over `seg`, which outlives it; writes stay inside blocks.
    unsafe {
        let h = (ops.create)(seg.base.cast(), 1 << 16);
        assert!(!h.is_null());
        let a = (ops.alloc)(h, 100, 16);
        assert_eq!(a as *mut u8, seg.base);
        let b = (ops.alloc)(h, 10, 4096);
        assert_eq!(b as usize % 4096, 0);
        assert_eq!((ops.usable_size)(h, a), 112);
        assert_eq!((ops.usable_size)(h, b), 16);
        assert!((ops.alloc)(h, 0, 16).is_null());
        assert!((ops.alloc)(h, 1 << 17, 16).is_null(), "exhaustion is NULL, not a panic");
        assert_eq!((ops.free)(h, a), RC_OK);
        assert_eq!((ops.free)(h, a), RC_ERROR, "double free");
        assert_eq!((ops.usable_size)(h, a), 0);
        assert_eq!((ops.free)(h, seg.base.add(1 << 16).cast()), RC_ERROR, "past the end");
        assert_eq!((ops.free)(h, std::ptr::null_mut()), RC_ERROR);
        assert_eq!((ops.free)(h, (b as *mut u8).add(16).cast()), RC_ERROR, "interior pointer");
        (ops.destroy)(h);
    }
}

#[test]
fn realloc_keeps_the_contents() {
    let seg = Segment::new(1 << 16);
    let ops = ops();
    // SAFETY: ABI calls on a heap over `seg`; every access stays inside a live block.
    unsafe {
        let h = (ops.create)(seg.base.cast(), 1 << 16);
        let a = (ops.alloc)(h, 64, 16) as *mut u8;
        for i in 0..64 {
            *a.add(i) = i as u8;
        }
        // Grows in place into free space, then shrinks in place.
        assert_eq!((ops.realloc)(h, a.cast(), 200) as *mut u8, a);
        assert_eq!((ops.realloc)(h, a.cast(), 64) as *mut u8, a);
        // Blocked by `b`: moves, and the bytes follow.
        let b = (ops.alloc)(h, 16, 16);
        let moved = (ops.realloc)(h, a.cast(), 1000) as *mut u8;
        assert!(!moved.is_null() && moved != a);
        assert!((0..64).all(|i| *moved.add(i) == i as u8));
        assert_eq!((ops.usable_size)(h, a.cast()), 0, "old block freed");
        // Impossible: NULL, and the block is intact.
        assert!((ops.realloc)(h, moved.cast(), 1 << 20).is_null());
        assert_eq!((ops.usable_size)(h, moved.cast()), 1008);
        assert!((0..64).all(|i| *moved.add(i) == i as u8));
        assert!((ops.realloc)(h, moved.cast(), 0).is_null());
        assert_eq!((ops.usable_size)(h, moved.cast()), 1008, "size 0 is refused, not a free");
        assert!((ops.realloc)(h, seg.base.add(8).cast(), 32).is_null(), "not a live block");
        assert_eq!((ops.free)(h, b), RC_OK);
        assert_eq!((ops.free)(h, moved.cast()), RC_OK);
        (ops.destroy)(h);
    }
}

#[test]
fn null_handles_are_refused() {
    let ops = ops();
    // SAFETY: every entry point must cope with a NULL heap or base.
    unsafe {
        assert!((ops.create)(std::ptr::null_mut(), 4096).is_null());
        assert!((ops.alloc)(std::ptr::null_mut(), 16, 16).is_null());
        assert_eq!((ops.free)(std::ptr::null_mut(), std::ptr::null_mut()), RC_ERROR);
        assert!((ops.realloc)(std::ptr::null_mut(), std::ptr::null_mut(), 16).is_null());
        assert_eq!((ops.usable_size)(std::ptr::null_mut(), std::ptr::null_mut()), 0);
        (ops.destroy)(std::ptr::null_mut());
    }
}
