//! Settings every PE must agree on. Each PE publishes its values at init and every PE compares
//! every PE's with PE 0's, so all reach the same verdict and name the same PEs:
//!
//! - the variables the predefined-spaces proposal requires to be identical on every PE
//!   (`SHMEM_ENABLE_*_SPACE`, `SHMEM_DEFAULT_SPACE`, `SHMEM_*SYMMETRIC_SIZE`): "if these
//!   variables differ across PEs, OpenSHMEM initialization shall fail";
//! - the parameters of the collective components (`SHMEM_MCA_scoll_<comp>_<param>`): a
//!   component picks its algorithm from them, and members of a team that picked differently
//!   would wait for each other forever.
//!
//! Values are compared as they act, not as they are spelt: sizes by their byte count (`4M` and
//! `4194304` agree), booleans as 0 or 1, the enable variables by set or not, the default space by
//! name, an unset parameter as its declared default.

use super::params::Declared;
use crate::config;
use rshmem_plugin_api::{PARAM_BOOL, PARAM_INT, PARAM_SIZE};

/// The bootstrap key carrying a PE's values.
pub const KEY: &str = "rshmem.agreed_settings";

const SPACE_VARS: [&str; 7] = [
    "SHMEM_SYMMETRIC_SIZE",
    "SHMEM_CPU_SYMMETRIC_SIZE",
    "SHMEM_GPU_SYMMETRIC_SIZE",
    "SHMEM_DEFAULT_SPACE",
    "SHMEM_ENABLE_CPU_SPACE",
    "SHMEM_ENABLE_GPU_SPACE",
    "SHMEM_GPU_COLLECTIVES",
];

/// One line per setting, `NAME=effective value`: the space variables, then the parameters
/// `scoll` declares (`(component, declaration)` pairs, in discovery order).
pub fn fingerprint(scoll_params: &[(&str, Declared)]) -> String {
    let mut s: String =
        SPACE_VARS.iter().map(|v| format!("{v}={}\n", effective(v, &config::raw(v)))).collect();
    for (component, d) in scoll_params {
        let var = config::params::var("scoll", component, &d.name);
        let raw =
            config::params::value("scoll", component, &d.name).map_or_else(|| d.default.clone(), |(v, _)| v);
        s += &format!("{var}={}\n", param_effective(d.kind, &raw));
    }
    s
}

fn effective(var: &str, raw: &str) -> String {
    let raw = raw.trim();
    match config::lookup(var).kind {
        config::Kind::Size if !raw.is_empty() => {
            config::parse_size(raw).map_or_else(|| raw.to_string(), |n| n.to_string())
        }
        config::Kind::Bool => {
            // Unset is the default: `SHMEM_GPU_COLLECTIVES` unset and `yes` agree.
            let v = if raw.is_empty() { config::lookup(var).default } else { raw };
            config::parse_bool(v).map_or_else(|| raw.to_string(), |b| (b as u8).to_string())
        }
        _ if var.starts_with("SHMEM_ENABLE_") => if raw.is_empty() { "" } else { "set" }.into(),
        _ if var == "SHMEM_DEFAULT_SPACE" => raw.to_ascii_uppercase(),
        _ => raw.to_string(),
    }
}

/// A component parameter's value as it acts (its kind was checked at init).
fn param_effective(kind: u32, raw: &str) -> String {
    let raw = raw.trim();
    let n = match kind {
        PARAM_SIZE => config::parse_size(raw).map(|n| n.to_string()),
        PARAM_BOOL => config::parse::parse_bool(raw).map(|b| (b as u8).to_string()),
        PARAM_INT => raw.parse::<i64>().ok().map(|n| n.to_string()),
        _ => None,
    };
    n.unwrap_or_else(|| raw.to_string())
}

/// Compare every PE's fingerprint (`all[pe]`) with PE 0's. The error names the first setting
/// that differs, PE 0's value, and the PEs with another value (the first few of them).
pub fn compare(all: &[String]) -> Result<(), String> {
    let pes: Vec<(usize, &str)> = all.iter().map(String::as_str).enumerate().collect();
    compare_pes(&pes)
}

/// [`compare`] over some PEs' fingerprints, `(PE, fingerprint)`, PE 0's first. Start-up
/// compares only PE 0's with its own (one lookup, not one per PE: under PMIx each is a
/// request to the launcher's server): a PE that differs from PE 0 ends the job, naming both.
pub fn compare_pes(all: &[(usize, &str)]) -> Result<(), String> {
    let Some((_, first)) = all.first() else { return Ok(()) };
    let lines = |s: &str| s.lines().map(str::to_owned).collect::<Vec<_>>();
    let base = lines(first);
    for (i, want) in base.iter().enumerate() {
        let var = want.split_once('=').map_or(want.as_str(), |(v, _)| v);
        let differ: Vec<String> = all
            .iter()
            .skip(1)
            .filter_map(|&(pe, fp)| {
                let got = lines(fp).get(i).cloned().unwrap_or_default();
                (got != *want).then(|| format!("PE {pe} has {}", shown(&got)))
            })
            .collect();
        if !differ.is_empty() {
            let more =
                if differ.len() > 4 { format!(" and {} more", differ.len() - 4) } else { String::new() };
            let why = if var.starts_with("SHMEM_MCA_scoll_") {
                "a collective component chooses its algorithm from it"
            } else if var == "SHMEM_GPU_COLLECTIVES" {
                "every PE makes a GPU space's host shadow, or none does"
            } else {
                "memory-spaces rule"
            };
            return Err(format!(
                "{var} must have the same value on every PE ({why}), but PE 0 has {}, {}{more}",
                shown(want),
                differ[..differ.len().min(4)].join(", ")
            ));
        }
    }
    // PE 0 has fewer lines than some PE (another set of scoll components).
    if let Some(&(pe, _)) = all.iter().find(|(_, fp)| fp.lines().count() != base.len()) {
        return Err(format!(
            "PE {pe} loaded other collective components than PE 0 (their parameters differ): every PE must see the same plugins"
        ));
    }
    Ok(())
}

/// `NAME=value` as read back, for the message ("unset" when empty).
fn shown(line: &str) -> String {
    match line.split_once('=') {
        Some((_, "")) => "it unset".into(),
        Some((_, v)) => v.to_string(),
        None => "nothing".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(size: &str, enable_gpu: &str) -> String {
        format!(
            "SHMEM_SYMMETRIC_SIZE={size}\nSHMEM_CPU_SYMMETRIC_SIZE=\nSHMEM_GPU_SYMMETRIC_SIZE=\nSHMEM_DEFAULT_SPACE=CPU\nSHMEM_ENABLE_CPU_SPACE=\nSHMEM_ENABLE_GPU_SPACE={enable_gpu}\nSHMEM_GPU_COLLECTIVES=1\n"
        )
    }

    #[test]
    fn equal_values_pass_and_differences_name_variable_and_pes() {
        assert!(compare(&[fp("4194304", ""), fp("4194304", "")]).is_ok());
        let e = compare(&[fp("1", ""), fp("1", ""), fp("2", ""), fp("1", "set")]).unwrap_err();
        assert!(e.starts_with("SHMEM_SYMMETRIC_SIZE must have the same value"), "{e}");
        assert!(e.contains("PE 0 has 1, PE 2 has 2") && !e.contains("PE 1 "), "{e}");
        let e = compare(&[fp("1", ""), fp("1", "set")]).unwrap_err();
        assert!(e.contains("SHMEM_ENABLE_GPU_SPACE") && e.contains("PE 0 has it unset, PE 1 has set"), "{e}");
        let many: Vec<String> = (0..8).map(|i| fp(if i == 0 { "1" } else { "2" }, "")).collect();
        assert!(compare(&many).unwrap_err().ends_with("and 3 more"));
    }

    #[test]
    fn collective_parameters_compare_by_value_and_name_their_reason() {
        let decl = |kind, default: &str| Declared {
            name: "push_max".into(),
            kind,
            default: default.into(),
            doc: String::new(),
        };
        assert_eq!(param_effective(PARAM_SIZE, "64K"), param_effective(PARAM_SIZE, "65536"));
        assert_eq!(param_effective(PARAM_BOOL, "yes"), "1");
        assert_eq!(param_effective(PARAM_INT, " 8"), "8");
        let base = fp("1", "");
        let fp0 =
            format!("{base}{}", fingerprint(&[("shm", decl(PARAM_SIZE, "64K"))]).lines().last().unwrap());
        assert!(fp0.ends_with("SHMEM_MCA_scoll_shm_push_max=65536"), "{fp0}");
        let fp1 = format!("{base}SHMEM_MCA_scoll_shm_push_max=1024");
        let e = compare(&[fp0.clone(), fp0.clone(), fp1]).unwrap_err();
        assert!(
            e.starts_with("SHMEM_MCA_scoll_shm_push_max must have the same value on every PE (a collective"),
            "{e}"
        );
        assert!(e.contains("PE 0 has 65536, PE 2 has 1024"), "{e}");
        let e = compare(&[base.clone(), fp0]).unwrap_err();
        assert!(e.contains("PE 1 loaded other collective components"), "{e}");
    }

    #[test]
    fn sizes_compare_by_value() {
        assert_eq!(effective("SHMEM_SYMMETRIC_SIZE", "4M"), effective("SHMEM_SYMMETRIC_SIZE", "4194304"));
        assert_eq!(effective("SHMEM_SYMMETRIC_SIZE", "1.5k"), "1536");
        assert_eq!(effective("SHMEM_ENABLE_GPU_SPACE", "yes"), "set");
        assert_eq!(effective("SHMEM_DEFAULT_SPACE", " cpu"), "CPU");
    }
}
