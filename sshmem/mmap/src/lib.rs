//! sshmem "mmap": each segment is a POSIX shared-memory object, mapped `MAP_SHARED` by its owner
//! and, by name, by every local peer, so on-node RMA can be plain loads and stores. The name
//! travels in the segment's `blob`; it is unlinked as soon as every peer has attached, so a job
//! that dies leaves nothing behind in /dev/shm.

mod shm;

pub use shm::BASE_ALIGN;

use rshmem_plugin_api::boundary::{self, slot};
use rshmem_plugin_api::{CoreServices, Framework, QueryResult, SegmentDesc, SshmemOps, RC_ERROR, RC_OK};
use std::ffi::{c_int, c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const COMPONENT: &str = "sshmem mmap";
/// Makes every segment name of this process unique.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Longest object name Linux accepts (a file name in /dev/shm, plus the leading '/').
const NAME_MAX: usize = 255;
const PROBE_SIZE: usize = 1 << 16;

/// What `SegmentDesc::handle` points at: the name, and whether `unlink` already removed it.
struct Owned {
    name: CString,
    unlinked: AtomicBool,
}

fn log_error(msg: &str) {
    boundary::log(rshmem_plugin_api::LOG_ERROR, COMPONENT, msg)
}

/// (job id, my PE), from the core's table (recorded before `query` and `open` run).
fn job_and_pe() -> (String, c_int) {
    let Some(c) = boundary::core() else {
        return (format!("p{}", std::process::id()), 0);
    };
    // SAFETY: job_id is NULL or a NUL-terminated string owned by the core.
    let job = unsafe { rshmem_plugin_api::c_str(c.job_id) }.unwrap_or_default();
    // Object names are single path components: keep only portable file-name characters.
    let job = job.chars().map(|ch| if ch.is_ascii_alphanumeric() || ch == '-' { ch } else { '_' }).collect();
    (job, c.my_pe)
}

fn object_name(suffix: &str) -> Result<CString, String> {
    let (job, pe) = job_and_pe();
    let name = format!("/rshmem-{job}-{pe}-{suffix}");
    if name.len() > NAME_MAX {
        return Err(format!("shared-memory name too long ({} bytes): {name}", name.len()));
    }
    CString::new(name).map_err(|e| e.to_string())
}

/// Can POSIX shared memory be created, sized, mapped and removed here?
fn probe() -> Result<(), String> {
    let name = object_name(&format!("{}-probe", std::process::id()))?;
    let p = shm::create(&name, PROBE_SIZE, std::ptr::null_mut())?;
    // SAFETY: the probe mapping was just made and is used by nobody.
    unsafe { shm::unmap(p, PROBE_SIZE) };
    shm::unlink(&name)
}

fn query(_core: &'static CoreServices, r: &mut QueryResult) {
    match probe() {
        Ok(()) => {
            r.available = 1;
            r.priority = 30;
            r.set_reason("POSIX shared memory works");
        }
        Err(e) => {
            r.available = 0;
            r.set_reason(&format!("POSIX shared memory unusable: {e}"));
        }
    }
}

unsafe extern "C" fn create(size: usize, hint: *mut c_void, out: *mut SegmentDesc) -> c_int {
    slot(COMPONENT, "create", || {
        if out.is_null() || size == 0 {
            return RC_ERROR;
        }
        let made = object_name(&COUNTER.fetch_add(1, Ordering::Relaxed).to_string())
            .and_then(|name| shm::create(&name, size, hint).map(|p| (name, p)));
        let (name, base) = match made {
            Ok(x) => x,
            Err(e) => {
                log_error(&e);
                return RC_ERROR;
            }
        };
        // SAFETY: checked non-NULL; the core passes a writable descriptor.
        let seg = unsafe { &mut *out };
        *seg = SegmentDesc::default();
        let bytes = name.as_bytes();
        seg.blob[..bytes.len()].copy_from_slice(bytes);
        seg.blob_len = bytes.len();
        seg.base = base;
        seg.size = size;
        seg.handle = Box::into_raw(Box::new(Owned { name, unlinked: AtomicBool::new(false) })) as *mut c_void;
        RC_OK
    })
}

unsafe extern "C" fn attach(blob: *const u8, blob_len: usize, size: usize, addr: *mut *mut c_void) -> c_int {
    slot(COMPONENT, "attach", || {
        if blob.is_null() || addr.is_null() || blob_len == 0 || blob_len > NAME_MAX {
            return RC_ERROR;
        }
        // SAFETY: the core passes the peer's blob with its length.
        let bytes = unsafe { std::slice::from_raw_parts(blob, blob_len) };
        let Ok(name) = CString::new(bytes) else { return RC_ERROR };
        match shm::attach(&name, size) {
            Ok(p) => {
                // SAFETY: checked non-NULL; the core passes a writable out-pointer.
                unsafe { *addr = p };
                RC_OK
            }
            Err(e) => {
                log_error(&e);
                RC_ERROR
            }
        }
    })
}

unsafe extern "C" fn detach(addr: *mut c_void, size: usize) {
    // SAFETY: the core detaches only mappings `attach` made, once it no longer uses them.
    slot(COMPONENT, "detach", || unsafe { shm::unmap(addr, size) })
}

/// The name of a segment this component created, and its unlink flag.
fn owned<'a>(seg: *mut SegmentDesc) -> Option<&'a Owned> {
    // SAFETY: the core passes NULL or a segment `create` filled in.
    let h = unsafe { seg.as_ref() }?.handle as *const Owned;
    // SAFETY: a non-NULL handle is the Box `create` leaked, freed only by `destroy`.
    unsafe { h.as_ref() }
}

unsafe extern "C" fn unlink(seg: *mut SegmentDesc) {
    slot(COMPONENT, "unlink", || {
        if let Some(o) = owned(seg) {
            match shm::unlink(&o.name) {
                Ok(()) => o.unlinked.store(true, Ordering::Release),
                Err(e) => log_error(&e),
            }
        }
    })
}

unsafe extern "C" fn destroy(seg: *mut SegmentDesc) {
    slot(COMPONENT, "destroy", || {
        if let Some(o) = owned(seg) {
            if !o.unlinked.load(Ordering::Acquire) {
                if let Err(e) = shm::unlink(&o.name) {
                    log_error(&e);
                }
            }
        }
        // SAFETY: `owned` returned Some or None, so `seg` is NULL or the core's descriptor.
        let Some(seg) = (unsafe { seg.as_mut() }) else { return };
        // SAFETY: our own mapping; the core destroys a segment only once it is unused.
        unsafe { shm::unmap(seg.base, seg.size) };
        if !seg.handle.is_null() {
            // SAFETY: the Box `create` leaked; nothing refers to it after this.
            drop(unsafe { Box::from_raw(seg.handle as *mut Owned) });
        }
        seg.base = std::ptr::null_mut();
        seg.handle = std::ptr::null_mut();
    })
}

static OPS: SshmemOps =
    SshmemOps { struct_size: std::mem::size_of::<SshmemOps>(), create, attach, detach, unlink, destroy };

fn open(_core: &'static CoreServices) -> *const c_void {
    &OPS as *const SshmemOps as *const c_void
}

rshmem_plugin_api::export_plugin! {
    framework: Framework::Sshmem,
    name: "mmap",
    description: "symmetric segments in POSIX shared memory (shm_open + mmap), mappable by local peers",
    params: &[],
    caps: rshmem_plugin_api::SSHMEM_CAP_PEER_ATTACH,
    query: query,
    open: open,
}

#[cfg(test)]
mod tests;
