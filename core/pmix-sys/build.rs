//! Generate bindings for the system's PMIx client API at build time, from whatever PMIx
//! pkg-config finds (Debian 12: libpmix-dev, PMIx 4.2), so they match the installed library.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let pmix = match pkg_config::Config::new().atleast_version("4").cargo_metadata(false).probe("pmix") {
        Ok(lib) => lib,
        Err(e) => panic!(
            "PMIx >= 4 with its pkg-config file (pmix.pc) is required \
             (Debian/Ubuntu: apt-get install libpmix-dev): {e}"
        ),
    };
    for dir in &pmix.link_paths {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    println!("cargo:rustc-link-lib=pmix");

    let mut builder = bindgen::Builder::default()
        .header("wrapper.h")
        .allowlist_function(
            "PMIx_(Init|Finalize|Initialized|Abort|Put|Commit|Fence|Get|Error_string|Value_destruct|Info_load|Resolve_nodes|Resolve_peers)",
        )
        .allowlist_type("pmix_(proc|info|value|byte_object|status|rank|scope|data_type)_t")
        .allowlist_var("PMIX_.*")
        .derive_default(true)
        .prepend_enum_name(false)
        .layout_tests(false);
    for dir in &pmix.include_paths {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    let bindings = builder.generate().expect("bindgen could not process pmix.h");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("pmix.rs");
    bindings.write_to_file(&out).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
