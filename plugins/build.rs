//! Builds the one C file (long double arithmetic for `arith`, which Rust cannot express) and
//! generates the C plugin header from the Rust definitions in `src/abi.rs`, with cbindgen.
//!
//! The header is committed as `include/shmem_plugin.h` (C plugin authors and `install.sh` use
//! it without building anything); a unit test fails when it differs from what this generates,
//! and `RSHMEM_REGEN_HEADERS=1 cargo build -p rshmem-plugin-api` rewrites it.

use std::path::{Path, PathBuf};

/// The ABI itself, compiled into this build script too, so the header's version and symbol
/// come from the same constants the crate exports.
#[allow(dead_code)]
#[path = "src/abi.rs"]
mod abi;

/// Rust name -> C name of every type in the ABI (each one exported even when no function
/// names it). Constants take the `SHMEM_PLUGIN_` prefix instead.
const TYPES: &[(&str, &str)] = &[
    ("ParamDecl", "shmem_plugin_param_t"),
    ("QueryResult", "shmem_plugin_query_t"),
    ("PluginDescriptor", "shmem_plugin_descriptor_t"),
    ("TransportHandle", "shmem_plugin_transport_t"),
    ("CoreServices", "shmem_plugin_core_t"),
    ("SegmentDesc", "shmem_plugin_segment_t"),
    ("SshmemOps", "shmem_plugin_sshmem_ops_t"),
    ("MemheapOps", "shmem_plugin_memheap_ops_t"),
    ("StreamWordOp", "shmem_plugin_stream_word_op_t"),
    ("SpmlCtx", "shmem_plugin_spml_ctx_t"),
    ("SpmlOps", "shmem_plugin_spml_ops_t"),
    ("SpmlPeerMemory", "shmem_plugin_spml_peer_memory_t"),
    ("TeamDesc", "shmem_plugin_team_t"),
    ("ScollOps", "shmem_plugin_scoll_ops_t"),
];

const PREFIX: &str = "SHMEM_PLUGIN_";

fn main() {
    println!("cargo:rerun-if-changed=csrc/longdouble.c");
    cc::Build::new().file("csrc/longdouble.c").opt_level(2).compile("rshmem_plugin_ld");

    println!("cargo:rerun-if-changed=src/abi.rs");
    println!("cargo:rerun-if-env-changed=RSHMEM_REGEN_HEADERS");
    let text = header();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("shmem_plugin.h"), &text).unwrap();
    if std::env::var_os("RSHMEM_REGEN_HEADERS").is_some() {
        std::fs::write(Path::new("include").join("shmem_plugin.h"), &text).unwrap();
    }
}

fn header() -> String {
    let mut cfg = cbindgen::Config {
        language: cbindgen::Language::C,
        header: Some(preamble()),
        include_guard: Some("SHMEM_PLUGIN_H".into()),
        cpp_compat: true,
        no_includes: true,
        sys_includes: vec!["stddef.h".into(), "stdint.h".into()],
        usize_is_size_t: true,
        style: cbindgen::Style::Type,
        documentation_style: cbindgen::DocumentationStyle::Doxy,
        ..Default::default()
    };
    cfg.export.prefix = Some(PREFIX.into());
    cfg.export.renaming_overrides_prefixing = true;
    for (rust, c) in TYPES {
        cfg.export.rename.insert(rust.to_string(), c.to_string());
        cfg.export.include.push(rust.to_string());
    }
    let mut raw = Vec::new();
    cbindgen::Builder::new()
        .with_config(cfg)
        .with_src("src/abi.rs")
        .generate()
        .expect("cbindgen could not read src/abi.rs")
        .write(&mut raw);
    let text = polish(&String::from_utf8(raw).expect("cbindgen writes UTF-8"));
    // cbindgen's own trailer would land outside the include guard.
    let guard_end = text.rfind("#endif").expect("an include guard");
    format!("{}{}\n\n{}", &text[..guard_end], trailer(), &text[guard_end..])
}

/// What cbindgen leaves Rust-flavoured: negative constants without parentheses (`x-RC_ERROR`
/// would not parse), and comments that name Rust types, link with `[`...`]` and use the
/// constants' Rust names.
fn polish(raw: &str) -> String {
    let constants: Vec<&str> = raw
        .lines()
        .filter_map(|l| l.strip_prefix("#define ")?.split_whitespace().next()?.strip_prefix(PREFIX))
        .collect();
    let mut out = String::with_capacity(raw.len());
    for line in raw.lines() {
        let fixed = if let Some(rest) = line.strip_prefix("#define ") {
            match rest.split_once(' ') {
                Some((name, value)) if value.starts_with('-') => format!("#define {name} ({value})"),
                _ => line.to_string(),
            }
        } else if line.trim_start().starts_with('*') {
            c_names(&line.replace("[`", "`").replace("`]", "`"), &constants)
        } else {
            line.to_string()
        };
        out.push_str(&fixed);
        out.push('\n');
    }
    out
}

/// Rename, in a comment line, each word that is a Rust type of the ABI (with `::` for a field
/// becoming `.`), a constant, or a constant family such as `AMO_*`.
fn c_names(line: &str, constants: &[&str]) -> String {
    let mut out = String::with_capacity(line.len() + 32);
    let b = line.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        if !word(b[i]) {
            out.push(b[i] as char);
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && word(b[i]) {
            i += 1;
        }
        let w = &line[start..i];
        let family =
            w.ends_with('_') && b.get(i) == Some(&b'*') && constants.iter().any(|c| c.starts_with(w));
        if let Some((_, c)) = TYPES.iter().find(|(r, _)| *r == w) {
            out.push_str(c);
            if line[i..].starts_with("::") {
                out.push('.');
                i += 2;
            }
        } else if constants.contains(&w) || family {
            out.push_str(PREFIX);
            out.push_str(w);
        } else {
            out.push_str(w);
        }
    }
    out
}

fn preamble() -> String {
    format!(
        "/*
 * shmem_plugin.h: the rshmem component plugin ABI, version {version}, for plugins written in C.
 *
 * GENERATED from plugins/src/abi.rs by plugins/build.rs (cbindgen): do not edit; change the
 * Rust definitions and run `RSHMEM_REGEN_HEADERS=1 cargo build -p rshmem-plugin-api`.
 *
 * A plugin is a shared object exporting exactly one function,
 *     const shmem_plugin_descriptor_t *{symbol}(void);
 * that returns a static descriptor. The core dlopens the file, checks abi_version and
 * struct_size, calls query() to learn whether the component can run (and its priority, or why
 * not), then open() on the selected component, which returns the framework's ops table. The
 * core refuses a table whose struct_size ends before its last required slot, or with a
 * required slot NULL, naming the slot. Every function pointer in a table is required unless
 * its comment says optional; an optional one may be NULL.
 *
 * Plugins never link libshmem.so: what they need from the core arrives in the
 * shmem_plugin_core_t passed to query() and open(). See docs/plugin-abi.md for the lifetimes,
 * threading rules and the versioning policy.
 */",
        version = abi::ABI_VERSION,
        symbol = abi::DESCRIPTOR_SYMBOL,
    )
}

fn trailer() -> String {
    format!(
        "/* The name of the one symbol a plugin exports, for dlsym. */
#define SHMEM_PLUGIN_DESCRIPTOR_SYMBOL \"{symbol}\"

#ifdef __cplusplus
extern \"C\" {{
#endif
/* Defined by the plugin. */
const shmem_plugin_descriptor_t *{symbol}(void);
#ifdef __cplusplus
}}
#endif",
        symbol = abi::DESCRIPTOR_SYMBOL,
    )
}
