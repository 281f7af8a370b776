//! Logging through the `log` facade, written by `env_logger` to stderr, one line per message
//! tagged with the PE and the target. Never used on hot paths.
//!
//! Targets are `rshmem::<area>` (`rshmem::init`, `rshmem::spaces`, `rshmem::plugin::loader`,
//! a routine's name) and, for what components log through the core's services,
//! `rshmem::<framework>::<component>` (`rshmem::spml::ucx`). The level comes from
//! `SHMEM_LOG_LEVEL` (error, warn, info, debug, trace, off; default warn, or debug under
//! `SHMEM_DEBUG=1` as in Sandia OpenSHMEM), then `RUST_LOG` refines it with env_logger's
//! directives (`RUST_LOG=rshmem::spml=debug`; a bare level replaces the default).

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Once;

pub const ERROR: i32 = 0;
pub const WARN: i32 = 1;
pub const INFO: i32 = 2;
pub const DEBUG: i32 = 3;
pub const TRACE: i32 = 4;

static PE: AtomicI32 = AtomicI32::new(-1);
static INIT: Once = Once::new();

pub fn set_pe(pe: i32) {
    PE.store(pe, Ordering::Relaxed);
}

pub fn prefix() -> String {
    match PE.load(Ordering::Relaxed) {
        pe if pe >= 0 => format!("rshmem[PE {pe}]"),
        _ => "rshmem".to_string(),
    }
}

fn to_level(lvl: i32) -> log::Level {
    match lvl {
        i32::MIN..=ERROR => log::Level::Error,
        WARN => log::Level::Warn,
        INFO => log::Level::Info,
        DEBUG => log::Level::Debug,
        _ => log::Level::Trace,
    }
}

/// The default level: `SHMEM_LOG_LEVEL` when set, else debug under `SHMEM_DEBUG`, else warn.
pub fn default_filter(log_level: &str, debug: bool) -> Result<log::LevelFilter, String> {
    match log_level.trim().to_ascii_lowercase().as_str() {
        "" if debug => Ok(log::LevelFilter::Debug),
        "" => Ok(log::LevelFilter::Warn),
        "off" | "none" => Ok(log::LevelFilter::Off),
        "error" => Ok(log::LevelFilter::Error),
        "warn" | "warning" => Ok(log::LevelFilter::Warn),
        "info" => Ok(log::LevelFilter::Info),
        "debug" => Ok(log::LevelFilter::Debug),
        "trace" => Ok(log::LevelFilter::Trace),
        other => Err(format!("SHMEM_LOG_LEVEL={other}: use error, warn, info, debug, trace or off")),
    }
}

/// The env_logger set up from the settings (once per process; a logger installed before, by
/// a Rust program that links the core, is kept).
fn init() {
    INIT.call_once(|| {
        let debug = crate::config::get_bool("SHMEM_DEBUG").unwrap_or(false);
        let (base, bad) = match default_filter(&crate::config::raw("SHMEM_LOG_LEVEL"), debug) {
            Ok(f) => (f, None),
            Err(e) => (log::LevelFilter::Warn, Some(e)),
        };
        let mut b = env_logger::Builder::new();
        b.filter_level(base);
        if let Ok(directives) = std::env::var("RUST_LOG") {
            b.parse_filters(&directives);
        }
        b.target(env_logger::Target::Stderr).write_style(env_logger::WriteStyle::Never);
        b.format(|buf, r| {
            use std::io::Write;
            let tag = match r.level() {
                log::Level::Error => "error",
                log::Level::Warn => "warning",
                log::Level::Info => "info",
                log::Level::Debug => "debug",
                log::Level::Trace => "trace",
            };
            // One formatted line per record: env_logger writes each record's buffer at once,
            // so lines from PEs sharing a pipe do not interleave.
            writeln!(buf, "{} {tag} {}: {}", prefix(), r.target(), r.args())
        });
        let _ = b.try_init();
        if let Some(e) = bad {
            log::warn!(target: "rshmem::settings", "{e}; logging at warn");
        }
    });
}

/// The target of an area name: `rshmem::` and the words joined by `::` (`spml ucx` becomes
/// `rshmem::spml::ucx`).
pub fn target(what: &str) -> String {
    let words: Vec<&str> = what.split_whitespace().collect();
    format!("rshmem::{}", words.join("::"))
}

/// Whether a message at `lvl` for `what` would be written (to skip costly formatting).
pub fn enabled(lvl: i32, what: &str) -> bool {
    init();
    log::log_enabled!(target: &target(what), to_level(lvl))
}

pub fn log(lvl: i32, what: &str, msg: &str) {
    init();
    log::log!(target: &target(what), to_level(lvl), "{msg}");
}

/// Write one line to stderr with a single write(2), so lines from several PEs sharing the
/// terminal or pipe never interleave mid-line (pipes keep writes up to 4 KiB whole). For
/// messages that must appear whatever the log level (fatal errors).
pub fn line(text: &str) {
    use std::io::Write;
    let mut buf = String::with_capacity(text.len() + 1);
    buf.push_str(text);
    buf.push('\n');
    let _ = std::io::stderr().lock().write_all(buf.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_from_the_settings() {
        assert_eq!(default_filter("", false), Ok(log::LevelFilter::Warn));
        assert_eq!(default_filter("", true), Ok(log::LevelFilter::Debug));
        assert_eq!(default_filter("INFO", true), Ok(log::LevelFilter::Info));
        assert_eq!(default_filter("trace", false), Ok(log::LevelFilter::Trace));
        assert_eq!(default_filter("off", false), Ok(log::LevelFilter::Off));
        assert!(default_filter("loud", false).unwrap_err().contains("SHMEM_LOG_LEVEL=loud"));
    }

    #[test]
    fn targets_from_area_names() {
        assert_eq!(target("init"), "rshmem::init");
        assert_eq!(target("spml ucx"), "rshmem::spml::ucx");
        assert_eq!(target("plugin loader"), "rshmem::plugin::loader");
    }
}
