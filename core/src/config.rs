//! Settings: each is declared once here (name, kind, default, doc); parsing, `SHMEM_INFO`
//! output and the `shmem_info` tool all read this table. Component parameters are
//! `SHMEM_MCA_<framework>_<component>_<name>` and are declared by the components themselves.

use std::ffi::CString;
use std::sync::{Mutex, OnceLock};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Size,
    Str,
    Int,
}

pub struct Setting {
    pub name: &'static str,
    /// Older spelling still honoured (e.g. `SMA_SYMMETRIC_SIZE`).
    pub legacy: Option<&'static str>,
    pub kind: Kind,
    pub default: &'static str,
    pub doc: &'static str,
}

const fn setting(name: &'static str, kind: Kind, default: &'static str, doc: &'static str) -> Setting {
    Setting { name, legacy: None, kind, default, doc }
}

pub const SETTINGS: &[Setting] = &[
    Setting {
        legacy: Some("SMA_SYMMETRIC_SIZE"),
        ..setting("SHMEM_SYMMETRIC_SIZE", Kind::Size, "512M", "Bytes of symmetric heap per PE (suffixes K, M, G, T)")
    },
    Setting { legacy: Some("SMA_VERSION"), ..setting("SHMEM_VERSION", Kind::Bool, "0", "Print the library version at start-up") },
    Setting { legacy: Some("SMA_INFO"), ..setting("SHMEM_INFO", Kind::Bool, "0", "Print the settings and the selected components at start-up") },
    Setting {
        legacy: Some("SMA_DEBUG"),
        ..setting("SHMEM_DEBUG", Kind::Bool, "0", "Debugging output, as in Sandia OpenSHMEM: the log level becomes debug unless SHMEM_LOG_LEVEL is set. Every argument check (transfer bounds, handles, hint bits) runs always, with or without it")
    },
    setting("SHMEM_LOG_LEVEL", Kind::Str, "", "Log level: error, warn, info, debug, trace or off (empty: warn, or debug under SHMEM_DEBUG). RUST_LOG refines it per target with env_logger directives (RUST_LOG=rshmem::spml=debug); lines read rshmem[PE n] <level> <target>: <message>"),
    setting("SHMEM_MCA_plugin_path", Kind::Str, "", "Extra directories (colon-separated) searched for component plugins"),
    setting("SHMEM_MCA_spml", Kind::Str, "", "spml components to consider: 'a,b' (in this order) or '^a,b' (all but these)"),
    setting("SHMEM_MCA_sshmem", Kind::Str, "", "sshmem components to consider (same syntax as SHMEM_MCA_spml)"),
    setting("SHMEM_MCA_memheap", Kind::Str, "", "memheap components to consider (same syntax as SHMEM_MCA_spml)"),
    setting("SHMEM_MCA_scoll", Kind::Str, "", "scoll components to stack, best first (same syntax as SHMEM_MCA_spml)"),
    setting(
        "SHMEM_CPU_SYMMETRIC_SIZE",
        Kind::Size,
        "",
        "Bytes of the CPU space's symmetric heap per PE; as the default space it takes precedence over SHMEM_SYMMETRIC_SIZE",
    ),
    setting(
        "SHMEM_GPU_SYMMETRIC_SIZE",
        Kind::Size,
        "",
        "Bytes of the GPU space's symmetric heap per PE (the GPU space is not available yet: see SHMEM_ENABLE_GPU_SPACE)",
    ),
    setting(
        "SHMEM_DEFAULT_SPACE",
        Kind::Str,
        "CPU",
        "The space SHMEM_SPACE_DEFAULT (shmem_malloc) uses: CPU (GPU is not available yet, so asking for it fails init)",
    ),
    setting(
        "SHMEM_ENABLE_CPU_SPACE",
        Kind::Str,
        "",
        "Enable SHMEM_SPACE_CPU; as the default space it is always enabled",
    ),
    setting(
        "SHMEM_ENABLE_GPU_SPACE",
        Kind::Str,
        "",
        "Enable SHMEM_SPACE_GPU; rshmem cannot move data to and from device memory yet, so the handle stays SHMEM_SPACE_INVALID, with a warning saying why (no GPU memheap here, with its reason, or the missing data path)",
    ),
    setting(
        "SHMEM_EXIT_WAIT_MS",
        Kind::Int,
        "750",
        "A PE that exits without calling shmem_finalize finalizes implicitly, waiting this long (ms) for the others to finalize before it ends the job; 0 waits forever",
    ),
    setting(
        "SHMEM_LOCAL_MAP",
        Kind::Bool,
        "1",
        "Map the symmetric memory of PEs on the same node and access it with loads and stores; 0 sends everything through the spml",
    ),
];

pub fn lookup(name: &str) -> &'static Setting {
    SETTINGS.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("undeclared setting {name}"))
}

/// The raw value of a declared setting: environment (new name, then legacy), else default.
pub fn raw(name: &str) -> String {
    let s = lookup(name);
    std::env::var(s.name)
        .ok()
        .or_else(|| s.legacy.and_then(|l| std::env::var(l).ok()))
        .unwrap_or_else(|| s.default.to_string())
}

/// Where a value came from, for reports.
pub fn source(name: &str) -> &'static str {
    let s = lookup(name);
    if std::env::var_os(s.name).is_some() {
        "environment"
    } else if s.legacy.is_some_and(|l| std::env::var_os(l).is_some()) {
        "environment (legacy name)"
    } else {
        "default"
    }
}

pub fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "y" | "yes" | "true" | "on" => Some(true),
        "0" | "n" | "no" | "false" | "off" | "" => Some(false),
        _ => None,
    }
}

/// A size as the spec writes it: a non-negative integer or decimal number with an optional
/// binary suffix (`4096`, `512M`, `1g`, `2KiB`, `1.5G`, `.5m`, `3.1M`). A decimal becomes the
/// integer ceiling of number × scale, as the spec requires ("at least as large as").
pub fn parse_size(v: &str) -> Option<usize> {
    let v = v.trim();
    let end = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len());
    let (num, unit) = v.split_at(end);
    let shift = match unit.trim().to_ascii_uppercase().trim_end_matches("IB").trim_end_matches('B') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return None,
    };
    if !num.contains('.') {
        return num.parse::<usize>().ok()?.checked_mul(1usize << shift);
    }
    // One point, digits on at least one side ("1.", ".5" and "1.5", not "." or "1.2.3").
    let (int, frac) = num.split_once('.')?;
    if frac.contains('.') || (int.is_empty() && frac.is_empty()) {
        return None;
    }
    // Exact arithmetic: the number is int + frac / 10^digits; scale it, then round up.
    let den = 10u128.checked_pow(frac.len() as u32)?;
    let int: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let frac: u128 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    let scaled = int.checked_mul(den)?.checked_add(frac)?.checked_mul(1u128 << shift)?;
    usize::try_from(scaled.div_ceil(den)).ok()
}

pub fn get_bool(name: &str) -> Result<bool, String> {
    let v = raw(name);
    parse_bool(&v).ok_or_else(|| format!("{name}={v} is not a boolean (use 0 or 1)"))
}

pub fn get_size(name: &str) -> Result<usize, String> {
    let v = raw(name);
    parse_size(&v).ok_or_else(|| format!("{name}={v} is not a size (examples: 4096, 64K, 512M, 1.5G)"))
}

/// `SHMEM_MCA_<framework>_<component>_<param>` as a C string owned for the job's lifetime
/// (plugins keep the pointer).
pub fn component_param(framework: &str, component: &str, param: &str) -> Option<*const std::ffi::c_char> {
    static CACHE: OnceLock<Mutex<Vec<(String, CString)>>> = OnceLock::new();
    let key = format!("SHMEM_MCA_{framework}_{component}_{param}");
    let value = std::env::var(&key).ok()?;
    let mut cache = CACHE.get_or_init(|| Mutex::new(Vec::new())).lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, v)) = cache.iter().find(|(k, v)| *k == key && v.to_str() == Ok(value.as_str())) {
        return Some(v.as_ptr());
    }
    let c = CString::new(value).ok()?;
    // The CString's heap buffer does not move when the Vec grows, so the pointer stays valid.
    let ptr = c.as_ptr();
    cache.push((key, c));
    Some(ptr)
}

/// Edit distance between two names (case-insensitive), for "did you mean".
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) =
        (a.to_ascii_uppercase().chars().collect(), b.to_ascii_uppercase().chars().collect());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// `SHMEM_*` names in `vars` that are no setting of ours, each with the nearest declared name
/// when one is close enough to be a likely misspelling. Component parameters
/// (`SHMEM_MCA_<framework>_...`) belong to the components and are not judged here.
pub fn unknown_settings<'a>(vars: impl Iterator<Item = &'a str>) -> Vec<(String, Option<&'static str>)> {
    const FRAMEWORKS: [&str; 4] = ["spml", "sshmem", "memheap", "scoll"];
    let mut out = Vec::new();
    for v in vars {
        if !v.starts_with("SHMEM_") || SETTINGS.iter().any(|s| s.name == v) {
            continue;
        }
        if FRAMEWORKS.iter().any(|f| v.starts_with(&format!("SHMEM_MCA_{f}_"))) {
            continue;
        }
        let near = SETTINGS
            .iter()
            .map(|s| (distance(v, s.name), s.name))
            .filter(|(d, _)| *d <= 3)
            .min()
            .map(|(_, n)| n);
        out.push((v.to_string(), near));
    }
    out
}

/// Warn about misspelt or foreign `SHMEM_*` variables (once per job: the caller is PE 0).
pub fn warn_unknown() {
    let names: Vec<String> = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()).collect();
    for (name, near) in unknown_settings(names.iter().map(String::as_str)) {
        let hint = match near {
            Some(n) => format!("; did you mean {n}?"),
            None => " (shmem_info lists the settings)".to_string(),
        };
        crate::log::log(
            crate::log::WARN,
            "settings",
            &format!("{name} is not an rshmem setting and is ignored{hint}"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_variables_are_named_with_the_nearest_setting() {
        let got = unknown_settings(
            [
                "SHMEM_SYMETRIC_SIZE",
                "SHMEM_DEBUG",
                "SHMEM_MCA_spml_ucx_progress_thread",
                "SHMEM_FOO_BAR_BAZ_QUUX",
                "PATH",
            ]
            .into_iter(),
        );
        assert_eq!(
            got,
            vec![
                ("SHMEM_SYMETRIC_SIZE".to_string(), Some("SHMEM_SYMMETRIC_SIZE")),
                ("SHMEM_FOO_BAR_BAZ_QUUX".to_string(), None)
            ]
        );
        assert_eq!(distance("abc", "abd"), 1);
        assert_eq!(distance("", "ab"), 2);
    }

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("512m"), Some(512 << 20));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("1T"), Some(1 << 40));
        assert_eq!(parse_size("12Q"), None);
        assert_eq!(parse_size("M"), None);
    }

    #[test]
    fn decimal_sizes_round_up() {
        assert_eq!(parse_size("1.5G"), Some(3 << 29));
        assert_eq!(parse_size(".5m"), Some(1 << 19));
        // 3.1 MiB is 3250585.6 bytes: the ceiling.
        assert_eq!(parse_size("3.1M"), Some(3_250_586));
        assert_eq!(parse_size("2."), Some(2));
        assert_eq!(parse_size("0.1"), Some(1));
        assert_eq!(parse_size("1.25k"), Some(1280));
        for bad in [".", "1.2.3", "1.5Q", "-1", "1e3", "", "0x10"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn bools_parse() {
        assert_eq!(parse_bool("1"), Some(true));
        assert_eq!(parse_bool("off"), Some(false));
        assert_eq!(parse_bool("maybe"), None);
    }

    #[test]
    fn every_default_parses_as_its_kind() {
        for s in SETTINGS {
            match s.kind {
                Kind::Bool => assert!(parse_bool(s.default).is_some(), "{}", s.name),
                // An empty default means "unset" (a size that only applies when given).
                Kind::Size => assert!(s.default.is_empty() || parse_size(s.default).is_some(), "{}", s.name),
                Kind::Int => assert!(s.default.parse::<i64>().is_ok(), "{}", s.name),
                Kind::Str => {}
            }
        }
    }
}
