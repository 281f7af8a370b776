//! Generates the C API (Rust entry points and headers) from the tables in `gen/`.
//! The headers are committed under `include/`; a test fails when they differ from what this
//! generates, and `RSHMEM_REGEN_HEADERS=1 cargo build -p rshmem-core` rewrites them.

#[path = "gen/mod.rs"]
mod gen;

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=gen");
    println!("cargo:rerun-if-env-changed=RSHMEM_REGEN_HEADERS");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    soname(&out);
    let all = gen::routines();
    std::fs::write(out.join("capi.rs"), gen::rust_entry_points(&all)).unwrap();
    let headers = [
        ("shmem.h", gen::header::shmem_h(&all)),
        ("shmemx.h", gen::header::shmemx_h(&all)),
        ("pshmem.h", gen::header::pshmem_h(&all)),
    ];
    for (name, text) in &headers {
        std::fs::write(out.join(name), text).unwrap();
        if std::env::var_os("RSHMEM_REGEN_HEADERS").is_some() {
            std::fs::write(PathBuf::from("include").join(name), text).unwrap();
        }
    }
}

/// libshmem.so carries the SONAME `libshmem.so.<major>`, so programs record that name and an
/// installed tree can hold several versions (scripts/install.sh installs
/// `libshmem.so.<version>` with both links). Programs built against the build directory find
/// the SONAME through a link made here beside the library (`target/<profile>/`, three levels
/// above OUT_DIR), dangling until the library is linked.
fn soname(out: &std::path::Path) {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    let name = format!("libshmem.so.{major}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{name}");
    if let Some(profile_dir) = out.ancestors().nth(3) {
        let link = profile_dir.join(&name);
        if std::fs::symlink_metadata(&link).is_err() {
            let _ = std::os::unix::fs::symlink("libshmem.so", &link);
        }
    }
}
