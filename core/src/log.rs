//! Minimal logging, prefixed with the PE. Never used on hot paths.

use std::sync::atomic::{AtomicI32, Ordering};

pub const ERROR: i32 = 0;
pub const WARN: i32 = 1;
pub const INFO: i32 = 2;
pub const DEBUG: i32 = 3;

static LEVEL: AtomicI32 = AtomicI32::new(-1);
static PE: AtomicI32 = AtomicI32::new(-1);

pub fn set_pe(pe: i32) {
    PE.store(pe, Ordering::Relaxed);
}

pub fn level() -> i32 {
    let l = LEVEL.load(Ordering::Relaxed);
    if l >= 0 {
        return l;
    }
    let l = match crate::config::raw("SHMEM_LOG_LEVEL").to_ascii_lowercase().as_str() {
        "error" => ERROR,
        "info" => INFO,
        "debug" => DEBUG,
        _ => WARN,
    };
    LEVEL.store(l, Ordering::Relaxed);
    l
}

pub fn prefix() -> String {
    match PE.load(Ordering::Relaxed) {
        pe if pe >= 0 => format!("rshmem[PE {pe}]"),
        _ => "rshmem".to_string(),
    }
}

pub fn log(lvl: i32, what: &str, msg: &str) {
    if lvl <= level() {
        let tag = ["error", "warning", "info", "debug"][lvl.clamp(0, 3) as usize];
        line(&format!("{} {tag}: {what}: {msg}", prefix()));
    }
}

/// Write one line to stderr with a single write(2), so lines from several PEs sharing the
/// terminal or pipe never interleave mid-line (pipes keep writes up to 4 KiB whole).
pub fn line(text: &str) {
    use std::io::Write;
    let mut buf = String::with_capacity(text.len() + 1);
    buf.push_str(text);
    buf.push('\n');
    let _ = std::io::stderr().lock().write_all(buf.as_bytes());
}
