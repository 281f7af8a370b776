//! Binding an operations table a plugin's `open` returned: the one place where the core turns
//! the plugin's pointer into a typed table. The table's `struct_size` must reach past every
//! required slot and no required slot may be NULL (the component is refused, naming the slot,
//! rather than crashing the job at first use); the core then keeps a copy of its own full size,
//! in which optional slots that an older, shorter table lacks are NULL. A longer table (a newer
//! plugin of the same ABI) is cut to the slots this core knows.

use super::Component;
use rshmem_plugin_api::{CoreServices, OpsTable};
use std::ffi::c_void;
use std::mem::{size_of, MaybeUninit};

/// Open component `c` and bind the table it returns. A panic in `open` (from a plugin without
/// a boundary of its own) counts as a failed open.
///
/// # Safety
/// `core` must be the core's services table; `c` must be a component of `T`'s framework.
pub unsafe fn open<T: OpsTable>(c: &Component, core: *const CoreServices) -> Result<&'static T, String> {
    debug_assert_eq!(c.framework, T::FRAMEWORK);
    let open = c.desc.open.expect("checked at load");
    // SAFETY: `open` follows the plugin ABI: it returns the framework's table or NULL.
    let raw = std::panic::catch_unwind(|| unsafe { open(core) }).unwrap_or(std::ptr::null());
    // SAFETY: a non-NULL result is the plugin's table of type T.
    unsafe { bind::<T>(&c.name, raw) }
}

/// Check the table at `raw` (from component `name`'s `open`) and return the core's copy.
///
/// # Safety
/// `raw` must be NULL or point at `struct_size` readable bytes, the first of them the table's
/// `struct_size` (a `usize`), laid out as `T` up to that size.
pub unsafe fn bind<T: OpsTable>(name: &str, raw: *const c_void) -> Result<&'static T, String> {
    let what = format!("{} {name}", T::FRAMEWORK.name());
    if raw.is_null() {
        return Err(format!("{what}: open returned NULL"));
    }
    // SAFETY: every table starts with its size, a usize (the caller's contract).
    let size = unsafe { raw.cast::<usize>().read_unaligned() };
    let word = size_of::<usize>();
    let needed = T::REQUIRED.iter().map(|(_, off)| off + word).max().unwrap_or(word).max(word);
    if size < needed {
        let last = T::REQUIRED.iter().max_by_key(|(_, off)| *off).map(|(n, _)| *n).unwrap_or("struct_size");
        return Err(format!(
            "{what}: its {} is {size} bytes (struct_size), too short to hold the required slot {last} \
             ({needed} bytes). Was it built against an older shmem_plugin.h?",
            T::C_NAME
        ));
    }
    for (slot, off) in T::REQUIRED {
        // SAFETY: `off + word <= needed <= size`: inside the table.
        let v = unsafe { raw.cast::<u8>().add(*off).cast::<usize>().read_unaligned() };
        if v == 0 {
            return Err(format!("{what}: the required slot {}.{slot} is NULL", T::C_NAME));
        }
    }
    let mut copy = Box::new(MaybeUninit::<T>::zeroed());
    let n = size.min(size_of::<T>());
    // SAFETY: `n` bytes are readable at `raw` (at most its size) and fit the copy; the regions
    // are distinct allocations.
    unsafe { std::ptr::copy_nonoverlapping(raw.cast::<u8>(), copy.as_mut_ptr().cast::<u8>(), n) };
    // The copy's size is what it holds, so `struct_size` checks of optional slots stay right.
    // SAFETY: the first field is the usize struct_size.
    unsafe { copy.as_mut_ptr().cast::<usize>().write(n) };
    // SAFETY: every required function pointer was checked non-NULL; the other fields are
    // integers, data pointers and Option<fn>, for which the copied bytes or zeroes are valid.
    Ok(Box::leak(unsafe { copy.assume_init() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rshmem_plugin_api::{MemheapOps, ScollOps, MEMHEAP_DEVICE_CPU};
    use std::mem::offset_of;

    unsafe extern "C" fn create(_: *mut c_void, _: usize) -> *mut c_void {
        std::ptr::null_mut()
    }
    unsafe extern "C" fn alloc(_: *mut c_void, _: usize, _: usize) -> *mut c_void {
        std::ptr::null_mut()
    }
    unsafe extern "C" fn free(_: *mut c_void, _: *mut c_void) -> i32 {
        0
    }
    unsafe extern "C" fn usable(_: *mut c_void, _: *mut c_void) -> usize {
        0
    }
    unsafe extern "C" fn destroy(_: *mut c_void) {}

    /// A memheap table as raw words: struct_size, then the six slots (realloc NULL when `hole`).
    fn memheap_words(size: usize, hole: bool) -> Vec<usize> {
        let f = |p: usize| if hole && p == 4 { 0 } else { p };
        vec![
            size,
            create as *const () as usize,
            alloc as *const () as usize,
            free as *const () as usize,
            f(4),
            usable as *const () as usize,
            destroy as *const () as usize,
            0xAAAA_AAAA, // past the table: a device_type the core must not read
        ]
    }

    #[test]
    fn a_table_with_a_null_required_slot_is_refused_naming_it() {
        let w = memheap_words(offset_of!(MemheapOps, device_type), true);
        // SAFETY: the words are readable.
        let e = unsafe { bind::<MemheapOps>("bad", w.as_ptr().cast()) }.err().unwrap();
        assert_eq!(e, "memheap bad: the required slot shmem_plugin_memheap_ops_t.realloc is NULL");
    }

    #[test]
    fn a_short_table_is_refused_and_a_shorter_optional_tail_reads_as_absent() {
        let w = memheap_words(3 * 8, false);
        // SAFETY: the words are readable.
        let e = unsafe { bind::<MemheapOps>("old", w.as_ptr().cast()) }.err().unwrap();
        assert!(e.contains("too short to hold the required slot destroy"), "{e}");

        // Without device_type (a table from before it existed): CPU memory, not the word after.
        let w = memheap_words(offset_of!(MemheapOps, device_type), false);
        // SAFETY: the words are readable.
        let t = unsafe { bind::<MemheapOps>("v1", w.as_ptr().cast()) }.unwrap();
        assert_eq!(t.device(), MEMHEAP_DEVICE_CPU);
        assert_eq!(t.device_type, 0);
        assert!(t.device_slots().is_none() && t.host_slots().is_none());
    }

    #[test]
    fn optional_scoll_slots_beyond_the_table_are_none() {
        unsafe extern "C" fn enable(_: *const rshmem_plugin_api::TeamDesc) -> *mut c_void {
            std::ptr::null_mut()
        }
        unsafe extern "C" fn disable(_: *mut c_void) {}
        // struct_size, scratch_needed, enable, disable, barrier; then garbage.
        let w: Vec<usize> = vec![
            5 * 8,
            64,
            enable as *const () as usize,
            disable as *const () as usize,
            0,
            0xdead,
            0xbeef,
            1,
            2,
            3,
        ];
        // SAFETY: the words are readable.
        let t = unsafe { bind::<ScollOps>("tiny", w.as_ptr().cast()) }.unwrap();
        assert!(t.barrier.is_none() && t.broadcast.is_none() && t.reduce.is_none());
        assert_eq!(t.struct_size, 5 * 8);
    }
}
