//! Generate bindings for the system's UCP API at build time. We bind whatever UCX pkg-config
//! finds (at least 1.13), so the bindings always match the installed headers and library.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let ucx = match pkg_config::Config::new().atleast_version("1.13").cargo_metadata(false).probe("ucx") {
        Ok(lib) => lib,
        Err(e) => panic!(
            "UCX >= 1.13 with its pkg-config file (ucx.pc) is required \
             (Debian/Ubuntu: apt-get install libucx-dev): {e}"
        ),
    };
    for dir in &ucx.link_paths {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    println!("cargo:rustc-link-lib=ucp");
    println!("cargo:rustc-link-lib=ucs");

    let mut builder = bindgen::Builder::default()
        .header("wrapper.h")
        .allowlist_function("ucp_.*|ucs_.*")
        .allowlist_type("ucp_.*|ucs_.*")
        .allowlist_var("UCP_.*|UCS_.*")
        .derive_default(true)
        .prepend_enum_name(false)
        .layout_tests(false);
    for dir in &ucx.include_paths {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    let bindings = builder.generate().expect("bindgen could not process ucp/api/ucp.h");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("ucp.rs");
    bindings.write_to_file(&out).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
