//! Builds the one C file: long double arithmetic for `arith`, which Rust cannot express.
fn main() {
    println!("cargo:rerun-if-changed=csrc/longdouble.c");
    cc::Build::new().file("csrc/longdouble.c").opt_level(2).compile("rshmem_plugin_ld");
}
