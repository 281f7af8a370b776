//! Generate bindings for the system's UCP API. The crates.io `ucx-sys` bundles UCX 1.4 and does
//! not build, so we bind whatever UCX pkg-config finds (at least 1.13).

fn main() {
    let ucx = pkg_config::Config::new()
        .atleast_version("1.13")
        .probe("ucx")
        .expect("UCX >= 1.13 with its pkg-config file is required (Debian: apt-get install libucx-dev)");
    println!("cargo:rustc-link-lib=ucp");
    println!("cargo:rustc-link-lib=ucs");
    println!("cargo:rerun-if-changed=wrapper.h");
    let mut b = bindgen::Builder::default()
        .header("wrapper.h")
        .allowlist_function("ucp_.*|ucs_status_string")
        .allowlist_type("ucp_.*|ucs_.*")
        .allowlist_var("UCP_.*|UCS_.*")
        .derive_default(true)
        .prepend_enum_name(false)
        .layout_tests(false);
    for p in &ucx.include_paths {
        b = b.clang_arg(format!("-I{}", p.display()));
    }
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("ucp.rs");
    b.generate().expect("bindgen failed on ucp/api/ucp.h").write_to_file(out).unwrap();
}
