//! Checked mappings of shared-memory objects. Errors carry the call and the errno text,
//! because they end up in `query` reasons and error logs.

use std::ffi::{c_int, c_void};
use std::os::fd::{AsRawFd, OwnedFd};

/// Segment bases are aligned to this, so an allocation aligned (as an offset) to anything up to
/// it is also aligned as an address on every PE, whatever address each PE got.
/// 1 GiB: `shmem_align` callers ask for up to huge-page sizes; reserving the slack costs
/// address space only (it is given back at once).
pub const BASE_ALIGN: usize = 1 << 30;

fn errno_text() -> String {
    std::io::Error::last_os_error().to_string()
}

/// Map `fd` shared, at the hint when the kernel grants it and it is `BASE_ALIGN`-aligned,
/// otherwise at some `BASE_ALIGN`-aligned address. `MAP_NORESERVE`: a heap is mostly unused,
/// so it must not be charged against swap up front. Returns `MAP_FAILED` with errno set.
///
/// # Safety
/// `fd` must be an open shared-memory object of at least `size` bytes.
unsafe fn map_aligned(fd: c_int, size: usize, hint: *mut c_void) -> *mut c_void {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let flags = libc::MAP_SHARED | libc::MAP_NORESERVE;
    if !hint.is_null() && (hint as usize).is_multiple_of(BASE_ALIGN) {
        // SAFETY: no MAP_FIXED, so the hint is only advice and cannot clobber existing mappings.
        let p = unsafe { libc::mmap(hint, size, prot, flags, fd, 0) };
        if p == hint || p == libc::MAP_FAILED {
            return p;
        }
        // SAFETY: undoing the mapping just made at an address we did not ask for.
        unsafe { libc::munmap(p, size) };
    }
    // Reserve address space with one alignment unit of slack, then place the object at the
    // aligned spot inside the reservation and give back the unused head and tail.
    let span = match size.checked_add(BASE_ALIGN) {
        Some(s) => s,
        None => return libc::MAP_FAILED,
    };
    let reserve_flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
    // SAFETY: an anonymous PROT_NONE reservation at an address of the kernel's choosing.
    let r = unsafe { libc::mmap(std::ptr::null_mut(), span, libc::PROT_NONE, reserve_flags, -1, 0) };
    if r == libc::MAP_FAILED {
        return r;
    }
    let start = r as usize;
    let aligned = (start + BASE_ALIGN - 1) & !(BASE_ALIGN - 1);
    // SAFETY: MAP_FIXED inside our own reservation replaces only pages we reserved.
    let p = unsafe { libc::mmap(aligned as *mut c_void, size, prot, flags | libc::MAP_FIXED, fd, 0) };
    let end = aligned + size;
    // SAFETY: trimming parts of our own reservation that the object does not use.
    unsafe {
        if aligned > start {
            libc::munmap(r, aligned - start);
        }
        if start + span > end {
            libc::munmap(end as *mut c_void, start + span - end);
        }
    }
    p
}

/// Map a new shared-memory object `fd` of `size` bytes here (see `map_aligned` for `hint`).
/// The pages are not touched: first touch is expensive and most of a heap is never used.
pub fn map_new(fd: &OwnedFd, size: usize, hint: *mut c_void) -> Result<*mut c_void, String> {
    // SAFETY: `fd` is a shared-memory object the caller sized to `size` bytes.
    let p = unsafe { map_aligned(fd.as_raw_fd(), size, hint) };
    if p == libc::MAP_FAILED {
        return Err(format!("mmap({size} bytes): {}", errno_text()));
    }
    Ok(p)
}

/// Map `size` bytes of a local peer's segment, received as `fd`, anywhere.
pub fn map_peer(fd: &OwnedFd, size: usize) -> Result<*mut c_void, String> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let flags = libc::MAP_SHARED | libc::MAP_NORESERVE;
    // SAFETY: mapping a descriptor we hold; the mapping outlives the descriptor.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), size, prot, flags, fd.as_raw_fd(), 0) };
    if p == libc::MAP_FAILED {
        return Err(format!("mmap(a peer's segment, {size} bytes): {}", errno_text()));
    }
    Ok(p)
}

/// Unmap a mapping made by `create` or `attach`.
///
/// # Safety
/// `[addr, addr+size)` must be a mapping made here that nothing uses any more.
pub unsafe fn unmap(addr: *mut c_void, size: usize) {
    if !addr.is_null() && size > 0 {
        // SAFETY: guaranteed by the caller.
        unsafe { libc::munmap(addr, size) };
    }
}
