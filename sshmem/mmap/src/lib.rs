//! sshmem "mmap": each segment is an anonymous shared-memory object (a memfd), mapped
//! `MAP_SHARED` by its owner and by every local peer, so on-node RMA can be plain loads and
//! stores. The object never has a name: from `create` to `unlink` a thread of the owner hands
//! its descriptor to the local peers that present the ticket in the segment's `blob`
//! (`rshmem_plugin_api::share`), so a job that dies at any moment leaves nothing in /dev/shm.

mod shm;

pub use shm::BASE_ALIGN;

use rshmem_plugin_api::boundary::{self, slot};
use rshmem_plugin_api::share::{self, Server};
use rshmem_plugin_api::{CoreServices, Framework, QueryResult, SegmentDesc, SshmemOps, RC_ERROR, RC_OK};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

const COMPONENT: &str = "sshmem mmap";
/// Makes every segment's label in this process unique.
static COUNTER: AtomicU64 = AtomicU64::new(0);

const PROBE_SIZE: usize = 1 << 16;
/// How long `attach` waits for the owner's thread to hand over its segment: it answers at
/// once unless the owner is stopped, so this only bounds a hang.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// What `SegmentDesc::handle` points at: the thread handing the segment out, until `unlink`.
struct Owned {
    server: Mutex<Option<Server>>,
}

impl Owned {
    fn stop_serving(&self) {
        let server = self.server.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(s) = server {
            s.stop();
        }
    }
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

/// A label for a segment's socket: job, PE and `suffix` (`share` adds the pid and random
/// digits).
fn label(suffix: &str) -> String {
    let (job, pe) = job_and_pe();
    format!("{job}-{pe}-{suffix}")
}

/// Can an anonymous shared object be created, mapped, handed over a socket and mapped again?
fn probe() -> Result<(), String> {
    let fd = share::memfd("rshmem-probe", PROBE_SIZE)?;
    let p = shm::map_new(&fd, PROBE_SIZE, std::ptr::null_mut())?;
    let handed = Server::start(&fd, &label("probe")).and_then(|(server, ticket)| {
        let got = share::fetch(&ticket, FETCH_TIMEOUT);
        server.stop();
        shm::map_peer(&got?, PROBE_SIZE)
    });
    let result = handed.map(|q| {
        // SAFETY: both probe mappings view one object, used by nobody else.
        let same = unsafe {
            *(p as *mut u64) = 0x5eed;
            *(q as *const u64) == 0x5eed
        };
        // SAFETY: the probe's own second mapping, unused from here.
        unsafe { shm::unmap(q, PROBE_SIZE) };
        same
    });
    // SAFETY: the probe mapping was just made and is used by nobody.
    unsafe { shm::unmap(p, PROBE_SIZE) };
    match result? {
        true => Ok(()),
        false => Err("a handed-over memfd did not show the owner's writes".into()),
    }
}

fn query(_core: &'static CoreServices, r: &mut QueryResult) {
    match probe() {
        Ok(()) => {
            r.available = 1;
            r.priority = 30;
            r.set_reason("shared memory works, and can be handed to peers over a Unix socket");
        }
        Err(e) => {
            r.available = 0;
            r.set_reason(&format!("shared memory cannot be shared here: {e}"));
        }
    }
}

unsafe extern "C" fn create(size: usize, hint: *mut c_void, out: *mut SegmentDesc) -> c_int {
    slot(COMPONENT, "create", || {
        if out.is_null() || size == 0 {
            return RC_ERROR;
        }
        let made = share::memfd("rshmem-segment", size).and_then(|fd| {
            let base = shm::map_new(&fd, size, hint)?;
            match Server::start(&fd, &label(&COUNTER.fetch_add(1, Ordering::Relaxed).to_string())) {
                Ok((server, ticket)) => Ok((base, server, ticket)),
                Err(e) => {
                    // SAFETY: the mapping just made, seen by nobody.
                    unsafe { shm::unmap(base, size) };
                    Err(e)
                }
            }
        });
        let (base, server, ticket) = match made {
            Ok(x) => x,
            Err(e) => {
                log_error(&e);
                return RC_ERROR;
            }
        };
        // SAFETY: checked non-NULL; the core passes a writable descriptor.
        let seg = unsafe { &mut *out };
        *seg = SegmentDesc::default();
        seg.blob[..ticket.len()].copy_from_slice(&ticket);
        seg.blob_len = ticket.len();
        seg.base = base;
        seg.size = size;
        seg.handle = Box::into_raw(Box::new(Owned { server: Mutex::new(Some(server)) })) as *mut c_void;
        RC_OK
    })
}

unsafe extern "C" fn attach(blob: *const u8, blob_len: usize, size: usize, addr: *mut *mut c_void) -> c_int {
    slot(COMPONENT, "attach", || {
        if blob.is_null() || addr.is_null() || blob_len == 0 || blob_len > share::TICKET_MAX {
            return RC_ERROR;
        }
        // SAFETY: the core passes the peer's blob with its length.
        let ticket = unsafe { std::slice::from_raw_parts(blob, blob_len) };
        match share::fetch(ticket, FETCH_TIMEOUT).and_then(|fd| shm::map_peer(&fd, size)) {
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

/// The bookkeeping of a segment this component created.
fn owned<'a>(seg: *mut SegmentDesc) -> Option<&'a Owned> {
    // SAFETY: the core passes NULL or a segment `create` filled in.
    let h = unsafe { seg.as_ref() }?.handle as *const Owned;
    // SAFETY: a non-NULL handle is the Box `create` leaked, freed only by `destroy`.
    unsafe { h.as_ref() }
}

unsafe extern "C" fn unlink(seg: *mut SegmentDesc) {
    slot(COMPONENT, "unlink", || {
        if let Some(o) = owned(seg) {
            o.stop_serving();
        }
    })
}

unsafe extern "C" fn destroy(seg: *mut SegmentDesc) {
    slot(COMPONENT, "destroy", || {
        if let Some(o) = owned(seg) {
            o.stop_serving();
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
    description: "symmetric segments in anonymous shared memory (memfd + mmap), handed to local peers over a Unix socket",
    params: &[],
    caps: rshmem_plugin_api::SSHMEM_CAP_PEER_ATTACH,
    query: query,
    open: open,
}

#[cfg(test)]
mod tests;
