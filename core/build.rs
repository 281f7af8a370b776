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
    plugin_fallbacks(&out);
    let all = gen::routines();
    std::fs::write(out.join("capi.rs"), gen::rust_entry_points(&all)).unwrap();
    let headers = [
        ("shmem.h", gen::header::shmem_h(&all)),
        ("shmemx.h", gen::header::shmemx_h(&all)),
        ("pshmem.h", gen::header::pshmem_h(&all)),
        ("shmemg.h", gen::header::shmemg_h(&all)),
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

/// Where a program that links the core in (a Rust program using the `rshmem` crate) looks for
/// plugins when none sit beside it (core/src/paths.rs): the profile directory this build
/// writes (`target/<profile>`, where the workspace builds the plugins), and the installed
/// plugin directory: `$RSHMEM_PREFIX/lib`, else the `libdir` of an installed `rshmem.pc`.
fn plugin_fallbacks(out: &std::path::Path) {
    println!("cargo:rerun-if-env-changed=RSHMEM_PREFIX");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if let Some(profile_dir) = out.ancestors().nth(3) {
        println!("cargo:rustc-env=RSHMEM_BUILD_PROFILE_DIR={}", profile_dir.display());
    }
    let libdir = match std::env::var("RSHMEM_PREFIX") {
        Ok(p) if !p.is_empty() => Some(format!("{p}/lib")),
        _ => std::process::Command::new("pkg-config")
            .args(["--variable=libdir", "rshmem"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|d| !d.is_empty() && !d.contains("${")),
    };
    println!("cargo:rustc-env=RSHMEM_INSTALLED_LIBDIR={}", libdir.unwrap_or_default());
}
