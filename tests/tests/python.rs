//! Python programs through shmem4py, the OpenSHMEM binding for Python (issue 53): shmem4py 1.0.0
//! from PyPI, built with our oshcc as docs/python.md says, runs its own test suite on 1, 2 and
//! 4 PEs under oshrun. Needs python3 with venv and pip (scripts/deps.sh) and PyPI.

use rshmem_tests::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const SHMEM4PY: &str = "shmem4py==1.0.0";

fn run(cmd: &mut Command) {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A virtual environment under the target directory with what shmem4py needs (its release
/// predates NumPy 2, whose `copy=False` it trips over) and shmem4py's source unpacked.
fn venv() -> (PathBuf, PathBuf) {
    let venv = target_dir().join("shmem4py-venv");
    let py = venv.join("bin/python");
    if !py.exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        run(Command::new(&py).args(["-m", "pip", "install", "-q", "cffi", "numpy<2", "setuptools", "wheel"]));
    }
    let src = venv.join("src");
    let tree = src.join("shmem4py-1.0.0");
    if !tree.join("test").exists() {
        run(Command::new(&py)
            .args(["-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d"])
            .arg(&src)
            .arg(SHMEM4PY));
        run(Command::new("tar").arg("-xzf").arg(src.join("shmem4py-1.0.0.tar.gz")).arg("-C").arg(&src));
    }
    (py, tree)
}

#[test]
fn shmem4py_s_own_suite_passes_on_1_2_and_4_pes() {
    let (py, tree) = venv();
    // The build line of docs/python.md, with this build's oshcc. Rebuilt every time: the
    // module links the libshmem.so of this target directory.
    let oshcc = format!("{} -include shmem4py-rshmem.h", target_dir().join("oshcc").display());
    run(Command::new(&py)
        .env("OSHCC", &oshcc)
        .args(["-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", "--no-build-isolation"])
        .arg(&tree));
    // Each PE writes unittest's report (stderr) to its own file: through one shared stderr the
    // PEs' lines interleave ("." of one PE before "OK" of another) and cannot be counted.
    let logs = tree.join("suite-logs");
    let script = tree.join("run-suite.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncd '{}' && exec '{}' -m unittest discover -s . 2> '{}/pe.'$$\n",
            tree.join("test").display(),
            py.display(),
            logs.display()
        ),
    )
    .unwrap();
    run(Command::new("chmod").arg("+x").arg(&script));
    for np in [1, 2, 4] {
        let _ = std::fs::remove_dir_all(&logs);
        std::fs::create_dir_all(&logs).unwrap();
        let r = oshrun(np, Path::new(&script), &[], Duration::from_secs(180));
        let reports: Vec<String> = std::fs::read_dir(&logs)
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect();
        let all = reports.join("\n==== next PE ====\n");
        r.assert_ok(&format!("shmem4py's suite on {np} PE(s); its reports:\n{all}"));
        // A passing report has "Ran N tests" with N > 0 and ends with "OK".
        let passed = reports
            .iter()
            .filter(|t| {
                t.lines().any(|l| l.starts_with("Ran ") && !l.starts_with("Ran 0 "))
                    && t.trim_end().ends_with("\nOK")
            })
            .count();
        assert!(
            reports.len() == np && passed == np,
            "{np} PE(s): {passed} passing reports of {}:\n{all}",
            reports.len()
        );
    }
    let _ = std::fs::remove_dir_all(&logs);
}
