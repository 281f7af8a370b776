//! Settings: each is declared once here (name, kind, default, doc); parsing, `SHMEM_INFO`
//! output and the `shmem_info` tool all read this table. A value comes from the environment,
//! else from a configuration file (`file`), else the default; `check` validates every one of
//! them by its kind at init. Component parameters (`SHMEM_MCA_<framework>_<component>_<name>`)
//! are declared by the components themselves and checked against those declarations (`params`).

pub mod agree;
pub mod file;
pub mod params;
pub mod parse;

pub use params::component_param;
pub use parse::{parse_bool, parse_size};
use std::path::Path;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Size,
    Str,
    Int,
}

pub struct Setting {
    pub name: &'static str,
    /// Other spellings still honoured, in order, where the setting's own name is not set:
    /// older OpenSHMEM names (`SMA_SYMMETRIC_SIZE`) and other implementations' (Open MPI's
    /// `SHMEM_SYMMETRIC_HEAP_SIZE`), so that job scripts written for them keep working.
    pub legacy: &'static [&'static str],
    pub kind: Kind,
    pub default: &'static str,
    pub doc: &'static str,
}

const fn setting(name: &'static str, kind: Kind, default: &'static str, doc: &'static str) -> Setting {
    Setting { name, legacy: &[], kind, default, doc }
}

pub const SETTINGS: &[Setting] = &[
    setting("SHMEM_CONFIG", Kind::Str, "", "A TOML configuration file for this job, read after the install-wide file (PREFIX/etc/rshmem.toml) and the user's ($XDG_CONFIG_HOME/rshmem/config.toml, else ~/.config/rshmem/config.toml); each overrides the one before and the environment overrides them all. It must exist"),
    Setting {
        legacy: &["SMA_SYMMETRIC_SIZE", "SHMEM_SYMMETRIC_HEAP_SIZE"],
        ..setting("SHMEM_SYMMETRIC_SIZE", Kind::Size, "512M", "Bytes of symmetric heap per PE (suffixes K, M, G, T)")
    },
    Setting { legacy: &["SMA_VERSION"], ..setting("SHMEM_VERSION", Kind::Bool, "0", "Print the library version at start-up") },
    Setting { legacy: &["SMA_INFO"], ..setting("SHMEM_INFO", Kind::Bool, "0", "Print the settings and the selected components at start-up") },
    Setting {
        legacy: &["SMA_DEBUG"],
        ..setting("SHMEM_DEBUG", Kind::Bool, "0", "Debugging output, as in Sandia OpenSHMEM: the log level becomes debug unless SHMEM_LOG_LEVEL is set. Every argument check (transfer bounds, handles, hint bits) runs always, with or without it; SHMEM_DEBUG adds the checks that cost a few barriers per call: that every PE passed the same sizes (and root, strides) to team collectives and the same sizes and blocks to the symmetric allocation routines")
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
        "256M",
        "Bytes of the GPU space's symmetric heap per PE (SHMEM_SPACE_GPU, made at init when SHMEM_ENABLE_GPU_SPACE is set)",
    ),
    setting(
        "SHMEM_DEVICE_SYMMETRIC_SIZE",
        Kind::Size,
        "",
        "Bytes of the GPU heap per PE (the GPU auxiliary specification's name; shmemg_malloc, SHMEM_SPACE_GPU): where set it takes precedence over SHMEM_GPU_SYMMETRIC_SIZE. The GPU heap is made when shmem_init_thread asks for SHMEM_DEVICE_HOST_INIT, or SHMEM_ENABLE_GPU_SPACE or SHMEM_DEFAULT_SPACE=GPU is set",
    ),
    setting(
        "SHMEM_GPU_COLLECTIVES",
        Kind::Bool,
        "1",
        "Give each GPU space SHMEM_SPACE_CAP_COLLECTIVES: a host shadow segment of its size (pages touched only where collectives run) through which collectives on its memory are staged; 0 makes GPU spaces without collectives, which then end the job with a clear error",
    ),
    setting(
        "SHMEM_GPU_DIRECT_COLLECTIVES",
        Kind::Bool,
        "1",
        "Run broadcasts, fcollects and contiguous alltoalls whose buffers are all in GPU spaces device to device between the members' copies, where every member is on one host and the PEs map each other's GPU memory (CUDA IPC): no copies through the host shadow. 0 sends them through the shadow like the other collectives",
    ),
    setting(
        "SHMEM_GPU_PIN_SHADOW",
        Kind::Bool,
        "1",
        "Page-lock a GPU space's host shadow 2 MiB at a time as collectives first copy through it (the device memheap's host_register, cuMemHostRegister), so that those copies run at the device's full speed; 0 leaves shadows pageable, costing no memory the system cannot reclaim",
    ),
    setting(
        "SHMEM_DEFAULT_SPACE",
        Kind::Str,
        "CPU",
        "The space SHMEM_SPACE_DEFAULT (shmem_malloc and its kin) uses: CPU, or GPU (the GPU space, made whether SHMEM_ENABLE_GPU_SPACE is set or not, sized by SHMEM_GPU_SYMMETRIC_SIZE, else SHMEM_SYMMETRIC_SIZE; init fails on every PE where it cannot be made)",
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
        "Enable SHMEM_SPACE_GPU and SHMEM_TEAM_GPU: a symmetric heap of SHMEM_GPU_SYMMETRIC_SIZE bytes of GPU memory per PE, made at init by the GPU memheap (cuda). Where it cannot be made (no GPU memheap here, with its reason; a size the device cannot back) the handles stay invalid, with a warning saying why",
    ),
    setting(
        "SHMEM_EXIT_WAIT_MS",
        Kind::Int,
        "750",
        "A PE that exits without calling shmem_finalize finalizes implicitly, waiting this long (ms) for the others to finalize before it ends the job; 0 waits forever",
    ),
    setting(
        "SHMEM_REINIT",
        Kind::Bool,
        "1",
        "Keep the library's connections after the last shmem_finalize (no communication, peers may exit), so that a later shmem_init resumes them, as OpenSHMEM 1.6 allows; they are released at exit. 0 releases them at that finalize, and initializing again then ends the job",
    ),
    setting(
        "SHMEM_STOP_TIMEOUT",
        Kind::Int,
        "5",
        "Under mpirun and srun, a PE on this host stopped by a signal (SIGSTOP, SIGTSTP) for this many seconds ends the job, naming it, since the others cannot progress without it (a PE under a debugger, a busy one, or a whole job suspended at once is not counted); 0 never. oshrun watches its PEs itself and ends the job after 1 s",
    ),
    setting(
        "SHMEM_WAIT_STALL_WARN",
        Kind::Int,
        "0",
        "A PE waiting this many seconds in shmem_wait_until (or a signal wait) says what it waits for: the variable's address and symmetric offset, the condition and the value it holds (in shmem_set_lock: the lock), and again each time the wait doubles, so that a hang is diagnosable without a debugger; 0 (the default) never says",
    ),
    setting(
        "SHMEM_COLL_STALL_WARN",
        Kind::Int,
        "60",
        "A PE waiting this many seconds inside one collective says so, naming the team's PEs that have not entered it yet (and again each time the wait doubles): every PE of a team must call the same collectives in the same order, and one that skipped a call leaves the others waiting. shmem_init's fences in the launcher count too. Only a warning, since a PE may legitimately be busy that long; 0 never warns",
    ),
    setting(
        "SHMEM_INIT_TIMEOUT",
        Kind::Int,
        "0",
        "A PE that has waited this many seconds in one of shmem_init's fences in the launcher for the other PEs ends the job, saying so: for jobs where a PE stopped or hung before or during its shmem_init must not leave the others waiting, in the one case no watch can tell from a PE still starting (a PE alone on its host, across hosts). Set it above the job's longest start-up (512 PEs on 2 cores take 80 s); 0 (the default) never ends it, and SHMEM_COLL_STALL_WARN still warns",
    ),
    setting(
        "SHMEM_PEER_MEMORY",
        Kind::Int,
        "0",
        "Report what a PE holds in memory for its peers at the last shmem_finalize: the tables with a slot per PE (bytes per PE, and how much of them is resident), and the private memory added per peer mapped on this host and per peer reached through the spml on this host and on others (measured as that state was made). 1: PE 0 reports; 2: every PE; 0 (the default): none",
    ),
    setting(
        "SHMEM_LOCAL_MAP",
        Kind::Bool,
        "1",
        "Map the symmetric memory of PEs on the same node and access it with loads and stores; 0 sends everything through the spml",
    ),
    setting(
        "SHMEM_LOCAL_MAP_RELAY",
        Kind::Bool,
        "1",
        "At start-up, the lowest PE of each host fetches the other PEs' segments once and hands all of them to each PE of the host in one connection; 0: each PE fetches every same-host peer's segments from that peer itself (two connections per pair of PEs, which at 128 PEs on 2 cores was most of shmem_init)",
    ),
    setting(
        "SHMEM_PERTURB",
        Kind::Int,
        "0",
        "For testing: at about one in this many of the points where a PE reads or writes memory other PEs see through mappings (puts, gets, between a put-with-signal's data and its signal, atomics, the end of a wait), give up the core (one time in four, sleep a moment), so that stress runs reach interleavings a quiet machine never shows; 0 (the default) never",
    ),
    setting(
        "SHMEM_ACTIVE_SET_TEAMS",
        Kind::Bool,
        "1",
        "Run the active-set (pSync) collectives on a team kept per active set and pSync, built at the first call (16 such teams at most; later pairs run on the pSync); 0 runs every call on its pSync, as a team built for that call",
    ),
];

pub fn lookup(name: &str) -> &'static Setting {
    SETTINGS.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("undeclared setting {name}"))
}

/// Where a value came from, for reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The environment, under this variable name (the setting's, or its legacy spelling).
    Env(String),
    File(&'static Path),
    Default,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Env(var) => write!(f, "environment ({var})"),
            Source::File(p) => write!(f, "file {}", p.display()),
            Source::Default => f.write_str("default"),
        }
    }
}

/// A variable's value from the environment, else from the configuration files.
pub fn lookup_var(var: &str) -> Option<(String, Source)> {
    if let Ok(v) = std::env::var(var) {
        return Some((v, Source::Env(var.to_string())));
    }
    let layer = file::layer().as_ref().ok()?;
    layer.get(var).map(|(v, p)| (v.to_string(), Source::File(p)))
}

/// A declared setting's value and where it came from: the environment (its name, then its
/// other spellings in order), else the configuration files, else the default.
pub fn resolve(name: &str) -> (String, Source) {
    let s = lookup(name);
    if std::env::var_os(s.name).is_none() {
        for l in s.legacy {
            if let Ok(v) = std::env::var(l) {
                return (v, Source::Env(l.to_string()));
            }
        }
    }
    lookup_var(s.name).unwrap_or_else(|| (s.default.to_string(), Source::Default))
}

/// The value of a declared setting (see [`resolve`]).
pub fn raw(name: &str) -> String {
    resolve(name).0
}

/// Where a setting's value came from.
pub fn source(name: &str) -> Source {
    resolve(name).1
}

/// Read the configuration files and check every setting's value by its kind, so that a bad
/// value fails init with its name and origin whether or not this job would have used it.
pub fn check() -> Result<(), String> {
    file::layer().as_ref().map_err(Clone::clone)?;
    for s in SETTINGS {
        let (v, from) = resolve(s.name);
        let ok = match s.kind {
            Kind::Bool => parse_bool(&v).is_some(),
            Kind::Size => v.trim().is_empty() || parse_size(&v).is_some(),
            Kind::Int => v.trim().parse::<i64>().is_ok(),
            Kind::Str => true,
        };
        if !ok {
            let want = match s.kind {
                Kind::Bool => "a boolean (1 or 0, true or false)",
                Kind::Size => "a size (examples: 4096, 64K, 512M, 1.5G)",
                _ => "an integer",
            };
            return Err(format!("{}={v} ({from}) is not {want}", s.name));
        }
    }
    Ok(())
}

pub fn get_bool(name: &str) -> Result<bool, String> {
    let (v, from) = resolve(name);
    parse_bool(&v).ok_or_else(|| format!("{name}={v} ({from}) is not a boolean (use 0 or 1)"))
}

pub fn get_int(name: &str) -> Result<i64, String> {
    let (v, from) = resolve(name);
    v.trim().parse().map_err(|_| format!("{name}={v} ({from}) is not an integer"))
}

pub fn get_size(name: &str) -> Result<usize, String> {
    let (v, from) = resolve(name);
    parse_size(&v)
        .ok_or_else(|| format!("{name}={v} ({from}) is not a size (examples: 4096, 64K, 512M, 1.5G)"))
}

/// `SHMEM_*` names in `vars` that are no setting of ours, each with the nearest declared name
/// when one is close enough to be a likely misspelling. Component parameters
/// (`SHMEM_MCA_<framework>_...`) are judged against the components' declarations
/// ([`params::check`]).
pub fn unknown_settings<'a>(vars: impl Iterator<Item = &'a str>) -> Vec<(String, Option<&'static str>)> {
    let mut out = Vec::new();
    for v in vars {
        if !v.starts_with("SHMEM_") || SETTINGS.iter().any(|s| s.name == v || s.legacy.contains(&v)) {
            continue;
        }
        if file::frameworks().iter().any(|f| v.starts_with(&format!("SHMEM_MCA_{f}_"))) {
            continue;
        }
        let near = SETTINGS
            .iter()
            .map(|s| (parse::distance(v, s.name), s.name))
            .filter(|(d, _)| *d <= 3)
            .min()
            .map(|(_, n)| n);
        out.push((v.to_string(), near));
    }
    out
}

/// The warnings about misspelt or foreign `SHMEM_*` variables and configuration-file keys (for
/// the caller to log, once per job: the caller is PE 0; logging sits above this module).
pub fn unknown_warnings() -> Vec<String> {
    let mut out = file::layer().as_ref().map(|layer| layer.warnings.clone()).unwrap_or_default();
    let names: Vec<String> = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()).collect();
    for (name, near) in unknown_settings(names.iter().map(String::as_str)) {
        let hint = match near {
            Some(n) => format!("; did you mean {n}?"),
            None => " (shmem_info lists the settings)".to_string(),
        };
        out.push(format!("{name} is not an rshmem setting and is ignored{hint}"));
    }
    out
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
                "SHMEM_SYMMETRIC_HEAP_SIZE",
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
