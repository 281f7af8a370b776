//! The rshmem plugin ABI, version 2.
//!
//! A component is a shared object that exports exactly one symbol,
//! [`DESCRIPTOR_SYMBOL`] (`shmem_plugin_descriptor`), a C function that returns a pointer to a
//! static [`PluginDescriptor`]. The core `dlopen`s every candidate file, checks the descriptor's
//! `abi_version` and `struct_size`, calls `query` to learn whether the component can run here
//! (and at what priority, or why not), and calls `open` on the winner, which returns the
//! framework's operations table ([`SpmlOps`], [`SshmemOps`], [`MemheapOps`] or [`ScollOps`]).
//! The core binds that table before using it ([`OpsTable`]): a table shorter than its required
//! slots, or with a required slot NULL, refuses the component with a message naming the slot;
//! optional slots beyond a shorter table read as NULL.
//!
//! The C ABI itself is in [`abi`] (re-exported here), from which build.rs generates
//! `plugins/include/shmem_plugin.h`, so vendors can write components in C. Plugins never link
//! `libshmem.so`: whatever they need from the core arrives through the [`CoreServices`] table
//! passed to `query` and `open`.
//!
//! Compatibility rule: within one ABI version, structs only grow at the end, by optional slots
//! (`Option` here, NULL-able in C), and each table starts with its `struct_size`, so the core can
//! tell which slots a plugin knows about. Anything else (a new required slot, a changed field)
//! bumps [`ABI_VERSION`].
#![allow(clippy::missing_safety_doc)]

pub mod abi;
pub use abi::*;

/// The component frameworks (the `FRAMEWORK_*` values of the C ABI).
#[repr(u32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Framework {
    Spml = FRAMEWORK_SPML,
    Scoll = FRAMEWORK_SCOLL,
    Sshmem = FRAMEWORK_SSHMEM,
    Memheap = FRAMEWORK_MEMHEAP,
}

impl Framework {
    pub const ALL: [Framework; 4] =
        [Framework::Spml, Framework::Sshmem, Framework::Memheap, Framework::Scoll];

    pub fn from_u32(v: u32) -> Option<Framework> {
        Self::ALL.into_iter().find(|f| *f as u32 == v)
    }

    pub const fn name(self) -> &'static str {
        match self {
            Framework::Spml => "spml",
            Framework::Scoll => "scoll",
            Framework::Sshmem => "sshmem",
            Framework::Memheap => "memheap",
        }
    }
}

use std::ffi::{c_char, c_int};

/// Helpers for scoll components (not part of the C ABI): the element-wise arithmetic of
/// reductions, so that every Rust component computes the same bits.
pub mod arith;

/// Storing a put's bytes where a peer may be watching: each byte once (not part of the C ABI).
pub mod deliver;

/// What the process holds in memory, for the per-peer memory report (not part of the C ABI).
pub mod footprint;

/// Helpers for memheap components (not part of the C ABI): the deterministic first-fit
/// allocator over offsets, and the memheap slots over it.
pub mod heap_slots;
pub mod offset_heap;

/// Helper for scoll components (not part of the C ABI): the `scoll_component!` macro.
pub mod scoll_component;

pub mod boundary;

/// Randomness, hex and constant-time comparison for secrets (not part of the C ABI), shared by
/// the bootstrap and `share`.
pub mod secret;

/// Helper for sshmem components and the core (not part of the C ABI): memory objects without
/// a name, handed to local peers over a socket.
pub mod share;

/// How setting and parameter values read (booleans, sizes), shared with the core.
pub mod values;

/// A stand-in core for components' unit tests (not part of the C ABI).
pub mod testing;

/// The names of the capability bits set in `caps` for a component of `framework`, and the bits
/// this ABI does not define (for reports).
pub fn cap_names(framework: Framework, caps: u64) -> Vec<String> {
    let known: &[(u64, &str)] = match framework {
        Framework::Spml => &[
            (SPML_CAP_MULTI_HOST, "SPML_CAP_MULTI_HOST"),
            (SPML_CAP_THREAD_MULTIPLE, "SPML_CAP_THREAD_MULTIPLE"),
        ],
        Framework::Sshmem => &[(SSHMEM_CAP_PEER_ATTACH, "SSHMEM_CAP_PEER_ATTACH")],
        Framework::Scoll => &[(SCOLL_CAP_EPHEMERAL, "SCOLL_CAP_EPHEMERAL")],
        Framework::Memheap => &[(MEMHEAP_CAP_GPU, "MEMHEAP_CAP_GPU")],
    };
    let mut out: Vec<String> =
        known.iter().filter(|(b, _)| caps & b != 0).map(|(_, n)| n.to_string()).collect();
    let rest = caps & !known.iter().fold(0, |a, (b, _)| a | b);
    if rest != 0 {
        out.push(format!("unknown bits {rest:#x}"));
    }
    out
}

/// An operations table a plugin's `open` returns, as the core binds it: the framework it belongs
/// to and the slots it must fill (name, offset). A table whose `struct_size` ends before the last
/// required slot, or with one of them NULL, is refused naming the slot; the core copies the
/// rest into a table of its own size, so optional slots a shorter table lacks read as NULL.
///
/// # Safety
/// `REQUIRED` must list every field of `Self` that is a non-nullable function pointer (reading
/// one that is NULL as such is undefined behaviour), and `Self` must start with `struct_size`.
pub unsafe trait OpsTable: Sized + 'static {
    const FRAMEWORK: Framework;
    /// The C name of the table, for messages.
    const C_NAME: &'static str;
    const REQUIRED: &'static [(&'static str, usize)];
}

/// `(slot name, offset)` for each named field of `$ty`.
macro_rules! slots {
    ($ty:ty: $($f:ident),* $(,)?) => {
        &[$((stringify!($f), ::std::mem::offset_of!($ty, $f))),*]
    };
}

// SAFETY: every non-Option function pointer of SpmlOps is listed; struct_size comes first.
unsafe impl OpsTable for SpmlOps {
    const FRAMEWORK: Framework = Framework::Spml;
    const C_NAME: &'static str = "shmem_plugin_spml_ops_t";
    const REQUIRED: &'static [(&'static str, usize)] = slots!(SpmlOps:
        connect, mem_register, mem_deregister, add_segment, remote_ptr, put, get, put_nbi,
        get_nbi, quiet, fence, progress, finalize, atomic);
}

// SAFETY: as above.
unsafe impl OpsTable for SshmemOps {
    const FRAMEWORK: Framework = Framework::Sshmem;
    const C_NAME: &'static str = "shmem_plugin_sshmem_ops_t";
    const REQUIRED: &'static [(&'static str, usize)] =
        slots!(SshmemOps: create, attach, detach, unlink, destroy);
}

// SAFETY: as above.
unsafe impl OpsTable for MemheapOps {
    const FRAMEWORK: Framework = Framework::Memheap;
    const C_NAME: &'static str = "shmem_plugin_memheap_ops_t";
    const REQUIRED: &'static [(&'static str, usize)] =
        slots!(MemheapOps: create, alloc, free, realloc, usable_size, destroy);
}

// SAFETY: as above (every collective slot is optional).
unsafe impl OpsTable for ScollOps {
    const FRAMEWORK: Framework = Framework::Scoll;
    const C_NAME: &'static str = "shmem_plugin_scoll_ops_t";
    const REQUIRED: &'static [(&'static str, usize)] = slots!(ScollOps: enable, disable);
}

/// Declare a Rust plugin's descriptor and export it as the one symbol
/// `shmem_plugin_descriptor`:
///
/// ```ignore
/// rshmem_plugin_api::export_plugin! {
///     framework: Framework::Sshmem, name: "mmap", description: "...",
///     params: &[], caps: SSHMEM_CAP_PEER_ATTACH, query: query, open: open,
/// }
/// ```
///
/// `query` is a `fn(&'static CoreServices, &mut QueryResult)` and `open` a
/// `fn(&'static CoreServices) -> *const c_void` (the ops table or NULL): plain Rust functions.
/// The macro writes the `extern "C"` slots around them, which check the core's pointers,
/// record the core's table for [`boundary`] and run them as [`boundary::probe`]s.
#[macro_export]
macro_rules! export_plugin {
    (framework: $fw:expr, name: $name:literal, description: $desc:literal, params: $params:expr, caps: $caps:expr, query: $query:expr, open: $open:expr $(,)?) => {
        struct __RshmemParams(&'static [$crate::ParamDecl]);
        // SAFETY: the table holds only pointers to static strings.
        unsafe impl Sync for __RshmemParams {}
        static __RSHMEM_PARAMS: __RshmemParams = __RshmemParams($params);
        static __RSHMEM_DESCRIPTOR: $crate::PluginDescriptor = $crate::PluginDescriptor {
            abi_version: $crate::ABI_VERSION,
            framework: $fw as u32,
            struct_size: ::std::mem::size_of::<$crate::PluginDescriptor>(),
            name: $crate::cstr!($name),
            version: $crate::cstr!(env!("CARGO_PKG_VERSION")),
            description: $crate::cstr!($desc),
            params: __RSHMEM_PARAMS.0.as_ptr(),
            n_params: __RSHMEM_PARAMS.0.len(),
            caps: $caps,
            query: Some(__rshmem_query),
            open: Some(__rshmem_open),
        };
        unsafe extern "C" fn __rshmem_query(
            core: *const $crate::CoreServices,
            result: *mut $crate::QueryResult,
        ) {
            // SAFETY: the core's arguments, passed on as they came.
            unsafe { $crate::boundary::query_shim($fw, $name, core, result, $query) }
        }
        unsafe extern "C" fn __rshmem_open(core: *const $crate::CoreServices) -> *const ::std::ffi::c_void {
            // SAFETY: as above.
            unsafe { $crate::boundary::open_shim($fw, $name, core, $open) }
        }
        /// The plugin's one exported symbol.
        #[no_mangle]
        pub extern "C" fn shmem_plugin_descriptor() -> *const $crate::PluginDescriptor {
            &__RSHMEM_DESCRIPTOR
        }
    };
}

/// Helper for Rust plugins: a `'static` C string literal.
#[macro_export]
macro_rules! cstr {
    ($s:expr) => {
        concat!($s, "\0").as_ptr() as *const ::std::ffi::c_char
    };
}

/// Read a NUL-terminated C string (lossy). NULL gives `None`.
///
/// # Safety
/// `p` must be NULL or point at a NUL-terminated string.
pub unsafe fn c_str(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        // SAFETY: the caller guarantees a NUL-terminated string.
        Some(unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

/// Convenience for Rust plugins: read a component parameter through the core.
///
/// # Safety
/// `core` must be the pointer the core passed to `query`/`open`.
pub unsafe fn param(
    core: *const CoreServices,
    framework: &str,
    component: &str,
    name: &str,
) -> Option<String> {
    let f = std::ffi::CString::new(framework).ok()?;
    let c = std::ffi::CString::new(component).ok()?;
    let n = std::ffi::CString::new(name).ok()?;
    // SAFETY: the core table is valid for the job's lifetime; strings are NUL-terminated.
    unsafe { c_str(((*core).param)(f.as_ptr(), c.as_ptr(), n.as_ptr())) }
}

/// Convenience for Rust plugins: log through the core.
///
/// # Safety
/// `core` must be the pointer the core passed to `query`/`open`.
pub unsafe fn log(core: *const CoreServices, level: c_int, component: &str, msg: &str) {
    let c = std::ffi::CString::new(component).unwrap_or_default();
    let m = std::ffi::CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // SAFETY: as above.
    unsafe { ((*core).log)(level, c.as_ptr(), m.as_ptr()) }
}

#[cfg(test)]
mod tests {
    /// The committed C header must be exactly what build.rs generates from `abi.rs`.
    #[test]
    fn committed_header_matches_the_generator() {
        let generated = include_str!(concat!(env!("OUT_DIR"), "/shmem_plugin.h"));
        let committed =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/shmem_plugin.h"))
                .unwrap_or_default();
        assert!(
            committed == generated,
            "plugins/include/shmem_plugin.h is stale: run `RSHMEM_REGEN_HEADERS=1 cargo build -p rshmem-plugin-api` and commit it"
        );
    }

    unsafe extern "C" fn named(
        pe: std::ffi::c_int,
        buf: *mut std::ffi::c_char,
        len: usize,
    ) -> std::ffi::c_int {
        let name = match pe {
            1 => "node-b".to_string(),
            2 => "x".repeat(300),
            _ => return -1,
        };
        let n = name.len().min(len - 1);
        // SAFETY: the accessor passes a buffer writable for `len` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(name.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
        }
        name.len() as std::ffi::c_int
    }

    /// `host_name` reads the slot only inside the table the core described, gives None where
    /// the core knows no name, and a name cut to its buffer when it is longer.
    #[test]
    fn the_host_name_accessor_respects_the_table_size_and_the_answer() {
        let mut c = *crate::testing::fake_core(0, 3, "hostnames", None);
        assert_eq!(c.host_name(1), None, "no slot filled");
        c.host_name = Some(named);
        assert_eq!(c.host_name(1).as_deref(), Some("node-b"));
        assert_eq!(c.host_name(0), None, "the core knows no name");
        assert_eq!(c.host_name(2).map(|n| n.len()), Some(255), "cut to the buffer");
        c.struct_size = std::mem::offset_of!(crate::CoreServices, host_name);
        assert_eq!(c.host_name(1), None, "a table that predates the slot");
    }
}
