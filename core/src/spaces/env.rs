//! The variables the predefined-spaces proposal requires to be identical on every PE
//! (`SHMEM_ENABLE_*_SPACE`, `SHMEM_DEFAULT_SPACE`, `SHMEM_*SYMMETRIC_SIZE`): "if these variables
//! differ across PEs, OpenSHMEM initialization shall fail". Each PE publishes its values at init
//! and every PE compares every PE's with PE 0's, so all reach the same verdict and name the same
//! PEs.
//!
//! Values are compared as they act, not as they are spelt: sizes by their byte count (`4M` and
//! `4194304` agree), the enable variables by set or not, the default space by name.

use crate::config;

/// The bootstrap key carrying a PE's values.
pub const KEY: &str = "rshmem.space_env";

const VARS: [&str; 6] = [
    "SHMEM_SYMMETRIC_SIZE",
    "SHMEM_CPU_SYMMETRIC_SIZE",
    "SHMEM_GPU_SYMMETRIC_SIZE",
    "SHMEM_DEFAULT_SPACE",
    "SHMEM_ENABLE_CPU_SPACE",
    "SHMEM_ENABLE_GPU_SPACE",
];

/// One line per variable, `NAME=effective value`, in `VARS` order.
pub fn fingerprint() -> String {
    VARS.iter().map(|v| format!("{v}={}\n", effective(v, &config::raw(v)))).collect()
}

fn effective(var: &str, raw: &str) -> String {
    let raw = raw.trim();
    match config::lookup(var).kind {
        config::Kind::Size if !raw.is_empty() => {
            config::parse_size(raw).map_or_else(|| raw.to_string(), |n| n.to_string())
        }
        _ if var.starts_with("SHMEM_ENABLE_") => if raw.is_empty() { "" } else { "set" }.into(),
        _ if var == "SHMEM_DEFAULT_SPACE" => raw.to_ascii_uppercase(),
        _ => raw.to_string(),
    }
}

/// Compare every PE's fingerprint (`all[pe]`) with PE 0's. The error names the first variable
/// that differs, PE 0's value, and the PEs with another value (the first few of them).
pub fn compare(all: &[String]) -> Result<(), String> {
    let Some(first) = all.first() else { return Ok(()) };
    let lines = |s: &str| s.lines().map(str::to_owned).collect::<Vec<_>>();
    let base = lines(first);
    for (i, var) in VARS.iter().enumerate() {
        let want = base.get(i).map(String::as_str).unwrap_or_default();
        let differ: Vec<String> = all
            .iter()
            .enumerate()
            .skip(1)
            .filter_map(|(pe, fp)| {
                let got = lines(fp).get(i).cloned().unwrap_or_default();
                (got != want).then(|| format!("PE {pe} has {}", shown(&got)))
            })
            .collect();
        if !differ.is_empty() {
            let more =
                if differ.len() > 4 { format!(" and {} more", differ.len() - 4) } else { String::new() };
            return Err(format!(
                "{var} must have the same value on every PE (memory-spaces rule), but PE 0 has {}, {}{more}",
                shown(want),
                differ[..differ.len().min(4)].join(", ")
            ));
        }
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
            "SHMEM_SYMMETRIC_SIZE={size}\nSHMEM_CPU_SYMMETRIC_SIZE=\nSHMEM_GPU_SYMMETRIC_SIZE=\nSHMEM_DEFAULT_SPACE=CPU\nSHMEM_ENABLE_CPU_SPACE=\nSHMEM_ENABLE_GPU_SPACE={enable_gpu}\n"
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
    fn sizes_compare_by_value() {
        assert_eq!(effective("SHMEM_SYMMETRIC_SIZE", "4M"), effective("SHMEM_SYMMETRIC_SIZE", "4194304"));
        assert_eq!(effective("SHMEM_SYMMETRIC_SIZE", "1.5k"), "1536");
        assert_eq!(effective("SHMEM_ENABLE_GPU_SPACE", "yes"), "set");
        assert_eq!(effective("SHMEM_DEFAULT_SPACE", " cpu"), "CPU");
    }
}
