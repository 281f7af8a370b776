//! C global and static variables are symmetric objects (1.3 spec §3). With PIE and ASLR their
//! addresses differ per PE, so they are a segment of their own with per-peer translation.
//!
//! To let local peers reach them with plain loads and stores (fast, and no target-side
//! progress needed), `shmem_init` moves the program's writable data onto a shared-memory
//! object: it copies the pages of the main executable's writable PT_LOAD segment into a new
//! memfd and maps that object over the same addresses with MAP_FIXED. Peers then fetch the
//! object's descriptor from this PE (`rshmem_plugin_api::share`: it never has a name that could
//! outlive a killed PE) and map it. Costs and caveats (see docs/architecture.md): the copy
//! happens once at init (the data segment is usually small); RELRO pages in that range become
//! writable; after `fork()` a child shares these variables with its parent; threads must not
//! write globals while `shmem_init` runs.

use rshmem_plugin_api::share::{self, Server};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// How long a peer waits for this PE's thread to hand its data segment over (it answers at once
/// unless this PE is stopped).
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

pub struct DataSegment {
    pub base: usize,
    pub len: usize,
    /// What a local peer needs to fetch the segment (see `attach`).
    pub ticket: Vec<u8>,
    server: Option<Server>,
}

struct Found {
    start: usize,
    end: usize,
}

unsafe extern "C" fn phdr_cb(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: the loader passes a valid dl_phdr_info; `data` is our `Option<Found>`.
    let (info, out) = unsafe { (&*info, &mut *(data as *mut Option<Found>)) };
    // The first object is the main program.
    let phdrs = if info.dlpi_phdr.is_null() {
        &[][..]
    } else {
        // SAFETY: dlpi_phdr points at dlpi_phnum program headers.
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) }
    };
    let page = page_size();
    let mut start = usize::MAX;
    let mut end = 0;
    for ph in phdrs {
        if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_W != 0 {
            let s = info.dlpi_addr as usize + ph.p_vaddr as usize;
            let e = s + ph.p_memsz as usize;
            start = start.min(s & !(page - 1));
            end = end.max((e + page - 1) & !(page - 1));
        }
    }
    if start < end {
        *out = Some(Found { start, end });
    }
    1 // stop after the main program
}

pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

fn errno() -> String {
    std::io::Error::last_os_error().to_string()
}

/// Move the main program's writable data onto a shared object named after the job and PE.
pub fn remap(job: &str, pe: i32) -> Result<Option<DataSegment>, String> {
    let mut found: Option<Found> = None;
    // SAFETY: the callback matches dl_iterate_phdr's contract and `found` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(phdr_cb), &mut found as *mut _ as *mut libc::c_void) };
    let Some(f) = found else { return Ok(None) };
    let len = f.end - f.start;
    let fd = share::memfd("rshmem-data", len)?;
    // SAFETY: plain syscalls on our own descriptor and the program's own data pages, whose
    // range the loader reported; every result is checked.
    unsafe {
        // Copy the current contents (RELRO pages may be read-only: reading is enough).
        let mut done = 0;
        while done < len {
            let n = libc::pwrite(
                fd.as_raw_fd(),
                (f.start + done) as *const libc::c_void,
                len - done,
                done as libc::off_t,
            );
            if n <= 0 {
                return Err(format!("copying the data segment: {}", errno()));
            }
            done += n as usize;
        }
        let p = libc::mmap(
            f.start as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            fd.as_raw_fd(),
            0,
        );
        if p == libc::MAP_FAILED || p as usize != f.start {
            return Err(format!("mapping the data segment: {}", errno()));
        }
    }
    let (server, ticket) = Server::start(&fd, &format!("{job}-{pe}-data"))?;
    Ok(Some(DataSegment { base: f.start, len, ticket, server: Some(server) }))
}

/// Map a local peer's data segment, fetched with the `ticket` it published.
pub fn attach(ticket: &[u8], len: usize) -> Result<*mut u8, String> {
    let fd = share::fetch(ticket, FETCH_TIMEOUT)?;
    // SAFETY: mapping a descriptor we hold; the mapping outlives it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(format!("mmap(a peer's data segment): {}", errno()));
    }
    Ok(p as *mut u8)
}

impl DataSegment {
    /// Stop handing the segment out once every local peer has mapped it.
    pub fn unlink(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop();
        }
    }
}
