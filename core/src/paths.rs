//! Where this copy of rshmem is installed, found from the object the core is linked into
//! (`PREFIX/lib/libshmem.so`; `shmem_info` loads that library too). Plugin directories and the
//! install-wide configuration file are found from here, so a relocated install keeps working
//! without environment variables.

use std::path::{Path, PathBuf};

/// The directory holding the object this code is linked into.
pub fn own_dir() -> Option<PathBuf> {
    own_object()?.parent().map(Path::to_path_buf)
}

/// The object this code is linked into: `libshmem.so`, or a program that links the core in
/// (a Rust program using the `rshmem` crate).
fn own_object() -> Option<PathBuf> {
    // SAFETY: Dl_info is plain data, for which all zeroes is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let addr = own_dir as *const libc::c_void;
    // SAFETY: dladdr only reads loader tables; `info` is a valid out-pointer.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
    let path = unsafe { rshmem_plugin_api::c_str(info.dli_fname) }?;
    std::fs::canonicalize(path).ok()
}

/// Whether the core is linked into a program rather than being `libshmem.so`: then the
/// program's directory says nothing about where the plugins are, and [`fallback_plugin_dirs`]
/// are searched too.
pub fn linked_into_program() -> bool {
    own_object()
        .and_then(|p| p.file_name().map(|n| !n.to_string_lossy().starts_with("libshmem.so")))
        .unwrap_or(false)
}

/// Where a program that links the core in finds plugins, in order: the build directory the
/// core was built in (`target/<profile>`, where the workspace builds the plugins too), then the
/// installed plugin directory known when the core was built (`RSHMEM_PREFIX`, or the `libdir`
/// of an installed `rshmem.pc`; core/build.rs). The first is searched for our file naming only.
pub fn fallback_plugin_dirs() -> Vec<(PathBuf, bool)> {
    let mut dirs = Vec::new();
    if let Some(d) = option_env!("RSHMEM_BUILD_PROFILE_DIR").filter(|d| !d.is_empty()) {
        dirs.push((PathBuf::from(d), false));
    }
    if let Some(d) = option_env!("RSHMEM_INSTALLED_LIBDIR").filter(|d| !d.is_empty()) {
        dirs.push((Path::new(d).join("rshmem"), true));
    }
    dirs
}

/// The install prefix: the directory above [`own_dir`].
pub fn prefix() -> Option<PathBuf> {
    own_dir()?.parent().map(Path::to_path_buf)
}
