//! C global and static variables are symmetric objects (1.3 spec §3). With PIE and ASLR their
//! addresses differ per PE, so they are a segment of their own with per-peer translation.
//!
//! To let local peers reach them with plain loads and stores (fast, and no target-side
//! progress needed), `shmem_init` moves the program's writable data onto a shared-memory
//! object: it copies the pages of the main executable's writable PT_LOAD segment into a new
//! POSIX shm object and maps that object over the same addresses with MAP_FIXED. Peers then
//! map the object by name. Costs and caveats (see docs/architecture.md): the copy happens once
//! at init (the data segment is usually small); RELRO pages in that range become writable;
//! after `fork()` a child shares these variables with its parent; threads must not write
//! globals while `shmem_init` runs.

use std::ffi::CString;

pub struct DataSegment {
    pub base: usize,
    pub len: usize,
    pub name: String,
    unlinked: bool,
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

fn page_size() -> usize {
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
    let name = format!("/rshmem-{job}-{pe}-data");
    let cname = CString::new(name.clone()).map_err(|e| e.to_string())?;
    // SAFETY: plain syscalls on a fresh name; every result is checked.
    unsafe {
        let fd = libc::shm_open(cname.as_ptr(), libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o600);
        if fd < 0 {
            return Err(format!("shm_open({name}): {}", errno()));
        }
        let fail = |what: &str| {
            let e = format!("{what}: {}", errno());
            libc::close(fd);
            libc::shm_unlink(cname.as_ptr());
            Err(e)
        };
        if libc::ftruncate(fd, len as libc::off_t) != 0 {
            return fail("ftruncate");
        }
        // Copy the current contents (RELRO pages may be read-only: reading is enough).
        let mut done = 0;
        while done < len {
            let n =
                libc::pwrite(fd, (f.start + done) as *const libc::c_void, len - done, done as libc::off_t);
            if n <= 0 {
                return fail("copying the data segment");
            }
            done += n as usize;
        }
        let p = libc::mmap(
            f.start as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            fd,
            0,
        );
        if p == libc::MAP_FAILED || p as usize != f.start {
            return fail("mapping the data segment");
        }
        libc::close(fd);
    }
    Ok(Some(DataSegment { base: f.start, len, name, unlinked: false }))
}

/// Map a local peer's data segment.
pub fn attach(name: &str, len: usize) -> Result<*mut u8, String> {
    let cname = CString::new(name).map_err(|e| e.to_string())?;
    // SAFETY: plain syscalls; results checked.
    unsafe {
        let fd = libc::shm_open(cname.as_ptr(), libc::O_RDWR, 0);
        if fd < 0 {
            return Err(format!("shm_open({name}): {}", errno()));
        }
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        libc::close(fd);
        if p == libc::MAP_FAILED {
            return Err(format!("mmap({name}): {}", errno()));
        }
        Ok(p as *mut u8)
    }
}

impl DataSegment {
    /// Remove the name once every local peer has mapped it (nothing leaks if the job dies).
    pub fn unlink(&mut self) {
        if !self.unlinked {
            if let Ok(c) = CString::new(self.name.clone()) {
                // SAFETY: plain syscall on our own name.
                unsafe { libc::shm_unlink(c.as_ptr()) };
            }
            self.unlinked = true;
        }
    }
}
