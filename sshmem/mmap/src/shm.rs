//! Thin, checked wrappers over the POSIX shared-memory system calls. Errors carry the call, the
//! object name and the errno text, because they end up in `query` reasons and error logs.

use std::ffi::{c_int, c_void, CStr};

/// Segment bases are aligned to this, so an allocation aligned (as an offset) to anything up to
/// it is also aligned as an address on every PE, whatever address each PE got.
/// 1 GiB: `shmem_align` callers ask for up to huge-page sizes; reserving the slack costs
/// address space only (it is given back at once).
pub const BASE_ALIGN: usize = 1 << 30;

fn errno_text() -> String {
    std::io::Error::last_os_error().to_string()
}

fn name_of(name: &CStr) -> String {
    name.to_string_lossy().into_owned()
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

/// Create the shared object `name` (exclusively, mode 0600) of `size` bytes and map it here.
/// The pages are not touched: first touch is expensive and most of a heap is never used.
pub fn create(name: &CStr, size: usize, hint: *mut c_void) -> Result<*mut c_void, String> {
    let n = name_of(name);
    let len = libc::off_t::try_from(size).map_err(|_| format!("size {size} too large"))?;
    // SAFETY: shm_open on a NUL-terminated name; the result is checked.
    let fd = unsafe { libc::shm_open(name.as_ptr(), libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o600) };
    if fd < 0 {
        return Err(format!("shm_open({n}): {}", errno_text()));
    }
    // SAFETY: fd is the object just created; every failure below closes it and removes the name.
    unsafe {
        if libc::ftruncate(fd, len) != 0 {
            let e = format!("ftruncate({n}, {size}): {}", errno_text());
            libc::close(fd);
            libc::shm_unlink(name.as_ptr());
            return Err(e);
        }
        let p = map_aligned(fd, size, hint);
        let e = format!("mmap({n}, {size}): {}", errno_text());
        libc::close(fd);
        if p == libc::MAP_FAILED {
            libc::shm_unlink(name.as_ptr());
            return Err(e);
        }
        Ok(p)
    }
}

/// Map `size` bytes of an existing object (a local peer's segment) anywhere.
pub fn attach(name: &CStr, size: usize) -> Result<*mut c_void, String> {
    let n = name_of(name);
    // SAFETY: shm_open on a NUL-terminated name; the result is checked.
    let fd = unsafe { libc::shm_open(name.as_ptr(), libc::O_RDWR, 0) };
    if fd < 0 {
        return Err(format!("shm_open({n}): {}", errno_text()));
    }
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let flags = libc::MAP_SHARED | libc::MAP_NORESERVE;
    // SAFETY: mapping the object just opened; the mapping outlives the descriptor.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), size, prot, flags, fd, 0) };
    let e = format!("mmap({n}, {size}): {}", errno_text());
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(fd) };
    if p == libc::MAP_FAILED {
        return Err(e);
    }
    Ok(p)
}

/// Remove the name. ENOENT counts as success: the name is gone either way.
pub fn unlink(name: &CStr) -> Result<(), String> {
    // SAFETY: shm_unlink on a NUL-terminated name.
    if unsafe { libc::shm_unlink(name.as_ptr()) } == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ENOENT) {
        Ok(())
    } else {
        Err(format!("shm_unlink({}): {err}", name_of(name)))
    }
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
