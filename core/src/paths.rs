//! Where this copy of rshmem is installed, found from the object the core is linked into
//! (`PREFIX/lib/libshmem.so`; `shmem_info` loads that library too). Plugin directories and the
//! install-wide configuration file are found from here, so a relocated install keeps working
//! without environment variables.

use std::path::{Path, PathBuf};

/// The directory holding the object this code is linked into.
pub fn own_dir() -> Option<PathBuf> {
    // SAFETY: Dl_info is plain data, for which all zeroes is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let addr = own_dir as *const libc::c_void;
    // SAFETY: dladdr only reads loader tables; `info` is a valid out-pointer.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
    let path = unsafe { rshmem_plugin_api::c_str(info.dli_fname) }?;
    let path = std::fs::canonicalize(path).ok()?;
    path.parent().map(Path::to_path_buf)
}

/// The install prefix: the directory above [`own_dir`].
pub fn prefix() -> Option<PathBuf> {
    own_dir()?.parent().map(Path::to_path_buf)
}
