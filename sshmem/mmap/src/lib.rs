//! sshmem "mmap": each segment is a POSIX shared-memory object, mapped `MAP_SHARED` by its owner
//! and by every local peer (by name). Pages are never touched here: first touch is expensive and
//! most of a heap is never used. Names are unlinked once every peer has attached.

use rshmem_plugin_api::{CoreServices, Framework, QueryResult, SegmentDesc, SshmemOps, RC_ERROR, RC_OK};
use std::ffi::{c_int, c_void, CString};
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

static CORE: AtomicPtr<CoreServices> = AtomicPtr::new(std::ptr::null_mut());
static COUNTER: AtomicU32 = AtomicU32::new(0);

fn errno() -> String {
    std::io::Error::last_os_error().to_string()
}

fn core_ids() -> (String, i32) {
    let c = CORE.load(Ordering::Acquire);
    if c.is_null() {
        return (format!("p{}", std::process::id()), 0);
    }
    // SAFETY: the core's table lives for the whole job.
    let c = unsafe { &*c };
    // SAFETY: job_id is a NUL-terminated string owned by the core.
    let job = unsafe { rshmem_plugin_api::c_str(c.job_id) }.unwrap_or_default();
    (job, c.my_pe)
}

/// Segment bases are aligned to this, so allocations aligned up to it (as offsets) are aligned
/// as addresses on every PE.
pub const BASE_ALIGN: usize = 2 << 20;

/// Map `fd` at a `BASE_ALIGN`-aligned address (the hint when it is aligned).
unsafe fn map_aligned(fd: c_int, size: usize, hint: *mut c_void) -> *mut c_void {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let flags = libc::MAP_SHARED | libc::MAP_NORESERVE;
    if !hint.is_null() && (hint as usize).is_multiple_of(BASE_ALIGN) {
        // SAFETY: a non-fixed hint; the kernel picks another address if it is taken.
        let p = unsafe { libc::mmap(hint, size, prot, flags, fd, 0) };
        if p == hint || p == libc::MAP_FAILED {
            return p;
        }
        // SAFETY: unmapping the mapping just made at the wrong place.
        unsafe { libc::munmap(p, size) };
    }
    // Reserve address space with slack, then place the object at the aligned spot inside it.
    let span = size + BASE_ALIGN;
    // SAFETY: an anonymous PROT_NONE reservation; checked below.
    let r = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if r == libc::MAP_FAILED {
        return r;
    }
    let start = r as usize;
    let aligned = (start + BASE_ALIGN - 1) & !(BASE_ALIGN - 1);
    // SAFETY: MAP_FIXED inside our own reservation replaces only reserved pages.
    let p = unsafe { libc::mmap(aligned as *mut c_void, size, prot, flags | libc::MAP_FIXED, fd, 0) };
    // SAFETY: trimming the unused head and tail of our reservation.
    unsafe {
        if aligned > start {
            libc::munmap(r, aligned - start);
        }
        let end = aligned + size;
        if start + span > end {
            libc::munmap(end as *mut c_void, start + span - end);
        }
    }
    p
}

/// A new shared object of `size` bytes mapped here; returns (address, name).
fn create_object(name: &str, size: usize, hint: *mut c_void) -> Result<*mut c_void, String> {
    let cname = CString::new(name).map_err(|e| e.to_string())?;
    // SAFETY: plain system calls on a fresh name; every result is checked.
    unsafe {
        let fd = libc::shm_open(cname.as_ptr(), libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o600);
        if fd < 0 {
            return Err(format!("shm_open({name}): {}", errno()));
        }
        if libc::ftruncate(fd, size as libc::off_t) != 0 {
            let e = format!("ftruncate({name}, {size}): {}", errno());
            libc::close(fd);
            libc::shm_unlink(cname.as_ptr());
            return Err(e);
        }
        let p = map_aligned(fd, size, hint);
        libc::close(fd);
        if p == libc::MAP_FAILED {
            let e = format!("mmap({name}, {size}): {}", errno());
            libc::shm_unlink(cname.as_ptr());
            return Err(e);
        }
        Ok(p)
    }
}

/// Map an existing object by name.
fn attach_object(name: &str, size: usize) -> Result<*mut c_void, String> {
    let cname = CString::new(name).map_err(|e| e.to_string())?;
    // SAFETY: plain system calls; results checked.
    unsafe {
        let fd = libc::shm_open(cname.as_ptr(), libc::O_RDWR, 0);
        if fd < 0 {
            return Err(format!("shm_open({name}): {}", errno()));
        }
        let p = libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_NORESERVE,
            fd,
            0,
        );
        libc::close(fd);
        if p == libc::MAP_FAILED {
            return Err(format!("mmap({name}): {}", errno()));
        }
        Ok(p)
    }
}

fn unlink_name(name: &str) {
    if let Ok(c) = CString::new(name) {
        // SAFETY: plain system call; ENOENT is fine.
        unsafe { libc::shm_unlink(c.as_ptr()) };
    }
}

fn blob_name(seg: &SegmentDesc) -> String {
    String::from_utf8_lossy(&seg.blob[..seg.blob_len]).into_owned()
}

unsafe extern "C" fn query(core: *const CoreServices, result: *mut QueryResult) {
    let _ = std::panic::catch_unwind(|| {
        CORE.store(core as *mut _, Ordering::Release);
        // SAFETY: the core passes a valid result pointer.
        let r = unsafe { &mut *result };
        let (job, pe) = core_ids();
        let name = format!("/rshmem-{job}-{pe}-probe");
        match create_object(&name, 1 << 16, std::ptr::null_mut()) {
            Ok(p) => {
                // SAFETY: unmapping the probe mapping just made.
                unsafe { libc::munmap(p, 1 << 16) };
                unlink_name(&name);
                r.available = 1;
                r.priority = 30;
                r.set_reason("POSIX shared memory works");
            }
            Err(e) => {
                r.available = 0;
                r.set_reason(&format!("POSIX shared memory unusable: {e}"));
            }
        }
    });
}

unsafe extern "C" fn create(size: usize, hint: *mut c_void, out: *mut SegmentDesc) -> c_int {
    std::panic::catch_unwind(|| {
        let (job, pe) = core_ids();
        let name = format!("/rshmem-{job}-{pe}-{}", COUNTER.fetch_add(1, Ordering::Relaxed));
        if name.len() > 255 {
            return RC_ERROR;
        }
        match create_object(&name, size, hint) {
            Ok(p) => {
                // SAFETY: the core passes a valid out-pointer.
                let seg = unsafe { &mut *out };
                *seg = SegmentDesc::default();
                seg.base = p;
                seg.size = size;
                seg.blob[..name.len()].copy_from_slice(name.as_bytes());
                seg.blob_len = name.len();
                RC_OK
            }
            Err(e) => {
                let c = CORE.load(Ordering::Acquire);
                if !c.is_null() {
                    // SAFETY: the core table is valid for the job.
                    unsafe { rshmem_plugin_api::log(c, rshmem_plugin_api::LOG_ERROR, "sshmem mmap", &e) };
                }
                RC_ERROR
            }
        }
    })
    .unwrap_or(RC_ERROR)
}

unsafe extern "C" fn attach(blob: *const u8, blob_len: usize, size: usize, addr: *mut *mut c_void) -> c_int {
    std::panic::catch_unwind(|| {
        // SAFETY: the core passes the peer's blob with its length.
        let name =
            String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(blob, blob_len) }).into_owned();
        match attach_object(&name, size) {
            Ok(p) => {
                // SAFETY: valid out-pointer from the core.
                unsafe { *addr = p };
                RC_OK
            }
            Err(_) => RC_ERROR,
        }
    })
    .unwrap_or(RC_ERROR)
}

unsafe extern "C" fn detach(addr: *mut c_void, size: usize) {
    // SAFETY: unmapping a mapping made by `attach`.
    unsafe { libc::munmap(addr, size) };
}

unsafe extern "C" fn unlink(seg: *mut SegmentDesc) {
    // SAFETY: the core passes a segment this component created.
    let _ = std::panic::catch_unwind(|| unlink_name(&blob_name(unsafe { &*seg })));
}

unsafe extern "C" fn destroy(seg: *mut SegmentDesc) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: the core passes a segment this component created.
        let seg = unsafe { &mut *seg };
        unlink_name(&blob_name(seg));
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(seg.base, seg.size) };
        seg.base = std::ptr::null_mut();
    });
}

static OPS: SshmemOps =
    SshmemOps { struct_size: std::mem::size_of::<SshmemOps>(), create, attach, detach, unlink, destroy };

unsafe extern "C" fn open(core: *const CoreServices) -> *const c_void {
    CORE.store(core as *mut _, Ordering::Release);
    &OPS as *const SshmemOps as *const c_void
}

rshmem_plugin_api::export_plugin! {
    framework: Framework::Sshmem,
    name: "mmap",
    description: "symmetric segments in POSIX shared memory (shm_open + mmap), mappable by local peers",
    params: &[],
    query: query,
    open: open,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_mappings_of_one_segment_share_memory() {
        let mut seg = SegmentDesc::default();
        // SAFETY: test calls through the component's own table.
        unsafe {
            assert_eq!(create(1 << 20, std::ptr::null_mut(), &mut seg), RC_OK);
            let mut other = std::ptr::null_mut();
            assert_eq!(attach(seg.blob.as_ptr(), seg.blob_len, 1 << 20, &mut other), RC_OK);
            assert_ne!(other, seg.base);
            assert_eq!(seg.base as usize % BASE_ALIGN, 0);
            *(seg.base as *mut u64).add(1000) = 0xfeed;
            assert_eq!(*(other as *const u64).add(1000), 0xfeed);
            unlink(&mut seg);
            // still mapped after the name is gone
            *(other as *mut u64) = 7;
            assert_eq!(*(seg.base as *const u64), 7);
            let mut third = std::ptr::null_mut();
            assert_eq!(attach(seg.blob.as_ptr(), seg.blob_len, 1 << 20, &mut third), RC_ERROR);
            detach(other, 1 << 20);
            destroy(&mut seg);
        }
    }

    #[test]
    fn the_descriptor_is_an_sshmem_component() {
        use rshmem_plugin_api::ABI_VERSION;
        let d = shmem_plugin_descriptor_v1();
        // SAFETY: static descriptor.
        let d = unsafe { &*d };
        assert_eq!(d.abi_version, ABI_VERSION);
        assert_eq!(d.framework, Framework::Sshmem as u32);
    }
}
