//! Entry points for rshmem's own tools, not part of the OpenSHMEM API (and not in `shmem.h`):
//! `shmem_info` loads the library with `dlopen` and asks it for its reports, so what it prints
//! is what this copy of the library, with its plugins and configuration files, would do.

use super::boundary;
use std::ffi::{c_char, c_uint, CString};

/// [`rshmem_info_report`] sections.
pub const INFO_SETTINGS: c_uint = 1;
pub const INFO_COMPONENTS: c_uint = 2;

/// The library's version and path, then the reports `sections` asks for, as one NUL-terminated
/// string to hand back to [`rshmem_info_free`]. Needs no job: nothing is initialised.
#[no_mangle]
pub extern "C" fn rshmem_info_report(sections: c_uint) -> *mut c_char {
    boundary(c"rshmem_info_report", || {
        let lib = crate::paths::own_dir().map(|d| d.display().to_string()).unwrap_or_else(|| "?".into());
        let mut out = format!(
            "rshmem {} (OpenSHMEM 1.6, vendor string \"rshmem\"), library in {lib}\n",
            env!("CARGO_PKG_VERSION")
        );
        if sections & INFO_SETTINGS != 0 {
            out += &format!("\n{}", crate::ops::info::settings_report());
        }
        if sections & INFO_COMPONENTS != 0 {
            out += &format!("\n{}", crate::ops::info::components_report());
        }
        // The reports are text of our own making: no NUL inside.
        CString::new(out.replace('\0', " ")).map(CString::into_raw).unwrap_or(std::ptr::null_mut())
    })
}

/// Free a string from [`rshmem_info_report`].
///
/// # Safety
/// `s` is NULL or a string `rshmem_info_report` returned, not freed before.
#[no_mangle]
pub unsafe extern "C" fn rshmem_info_free(s: *mut c_char) {
    boundary(c"rshmem_info_free", || {
        if !s.is_null() {
            // SAFETY: the caller hands back what CString::into_raw gave it, once.
            drop(unsafe { CString::from_raw(s) });
        }
    })
}
