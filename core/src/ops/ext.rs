//! The `shmemx_` extensions that are more than another name for a spec routine (the rest are
//! rows in `gen/extensions.rs` over the spec's own operations): wall-clock time, the node's
//! name, heap queries and OSHMEM's hint-based allocation. docs/extensions.md lists them all.

use crate::error::{fail, ShmemError};
use crate::symm::runtime;
use std::ffi::{c_char, c_long, c_void, CStr, CString};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Instant;

/// `shmemx_wtime`: seconds on a monotonic clock since a fixed point of this process (its first
/// call), for timing intervals; it does not need `shmem_init`, as in Sandia OpenSHMEM.
pub fn wtime(_routine: &'static CStr) -> f64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// `shmemx_nodename`: this host's name (the kernel's), a string that lives for the process.
pub fn nodename(_routine: &'static CStr) -> *mut c_char {
    static NAME: OnceLock<CString> = OnceLock::new();
    NAME.get_or_init(|| {
        let n = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let n = n.trim();
        CString::new(if n.is_empty() { "localhost" } else { n }).unwrap_or_default()
    })
    .as_ptr() as *mut c_char
}

/// `shmemx_heap_size`: the bytes of the default symmetric heap that are the program's: the
/// configured `SHMEM_SYMMETRIC_SIZE` (or `SHMEM_CPU_SYMMETRIC_SIZE` when set; for a GPU default
/// space, its size), the same on every PE. The library's own symmetric data lies in a reserve
/// beyond it.
pub fn heap_size(routine: &'static CStr) -> usize {
    let rt = runtime::get(routine);
    rt.user_heap.get().map_or(rt.heap_size, |u| u.size)
}

/// `shmemx_heap_used`: the bytes of this PE's live blocks in the default heap (each block's
/// usable size), which is what symmetric allocation made collectively: the same on every PE
/// of a correct program.
pub fn heap_used(routine: &'static CStr) -> usize {
    runtime::get(routine).heap_used.load(Ordering::Relaxed)
}

/// OSHMEM's `SHMEM_HINT_*` values (shmemx.h).
pub const HINT_LOW_LAT_MEM: c_long = 1 << 0;
pub const HINT_HIGH_BW_MEM: c_long = 1 << 1;
pub const HINT_NEAR_NIC_MEM: c_long = 1 << 2;
pub const HINT_DEVICE_GPU_MEM: c_long = 1 << 3;
pub const HINT_DEVICE_NIC_MEM: c_long = 1 << 4;
pub const HINT_PSYNC: c_long = 1 << 16;
pub const HINT_PWORK: c_long = 1 << 17;
pub const HINT_ATOMICS: c_long = 1 << 18;

/// Hints that ask for memory this machine has only one kind of: the block comes from the
/// default heap, as OSHMEM does when no segment matches the hint.
const PLACEMENT_HINTS: c_long =
    HINT_LOW_LAT_MEM | HINT_HIGH_BW_MEM | HINT_NEAR_NIC_MEM | HINT_DEVICE_GPU_MEM | HINT_DEVICE_NIC_MEM;
/// Hints for words other PEs update (synchronisation arrays, atomics): the block owns its cache
/// lines, like `shmem_malloc_with_hints` with `SHMEM_MALLOC_ATOMICS_REMOTE`.
const ISOLATING_HINTS: c_long = HINT_PSYNC | HINT_PWORK | HINT_ATOMICS;

/// What `shmemx_malloc_with_hint` does with `hint`: `Ok(true)` for a cache-line-isolated
/// block, `Ok(false)` for a plain one, `Err` naming bits that are no hint.
pub fn hint_isolates(hint: c_long) -> Result<bool, ShmemError> {
    let unknown = hint & !(PLACEMENT_HINTS | ISOLATING_HINTS);
    if unknown != 0 {
        return Err(ShmemError::UnknownHint { hint, unknown });
    }
    Ok(hint & ISOLATING_HINTS != 0)
}

/// `shmemx_malloc_with_hint` (OSHMEM): collective like `shmem_malloc`.
pub fn malloc_with_hint(routine: &'static CStr, size: usize, hint: c_long) -> *mut c_void {
    runtime::get(routine);
    match hint_isolates(hint) {
        Err(e) => fail(routine, e),
        Ok(true) => crate::ops::heap::malloc_isolated(routine, size),
        Ok(false) => crate::ops::heap::malloc(routine, size),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_route_to_isolation_or_plain_and_unknown_bits_are_named() {
        assert_eq!(hint_isolates(0), Ok(false));
        assert_eq!(hint_isolates(HINT_LOW_LAT_MEM | HINT_DEVICE_GPU_MEM), Ok(false));
        assert_eq!(hint_isolates(HINT_ATOMICS), Ok(true));
        assert_eq!(hint_isolates(HINT_PSYNC | HINT_HIGH_BW_MEM), Ok(true));
        let e = hint_isolates(1 << 5 | HINT_PWORK).unwrap_err();
        assert_eq!(e, ShmemError::UnknownHint { hint: 1 << 5 | HINT_PWORK, unknown: 1 << 5 });
        assert!(
            e.to_string().starts_with("hint 0x20020 has bits 0x20 that are no SHMEM_HINT_* value"),
            "{e}"
        );
    }

    #[test]
    fn wtime_is_monotonic_seconds() {
        let a = wtime(c"t");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = wtime(c"t");
        assert!(b - a >= 0.019 && b - a < 5.0, "{a} {b}");
    }
}
