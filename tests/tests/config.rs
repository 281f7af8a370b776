//! Configuration from three sources (issue 12 item 4): TOML files (the install-wide one, the
//! user's, and `SHMEM_CONFIG`'s, each overriding the one before), the environment over them
//! all, and defaults. A file selects components and sets their parameters; values of the wrong
//! type end the job naming the file and the key; unknown keys are warned about; `shmem_info`
//! says where each value came from.

use rshmem_tests::*;
use std::process::Command;
use std::time::Duration;

const T: Duration = Duration::from_secs(60);
const MIB: usize = 1 << 20;

/// The heap size every PE of a `heap_report` run printed (all must agree).
fn heap_of(r: &Run) -> usize {
    r.assert_all_pes_ok("heap_report", 2);
    let sizes: Vec<usize> = r
        .stdout
        .lines()
        .filter_map(|l| l.split(" heap ").nth(1))
        .map(|v| v.trim().parse().unwrap())
        .collect();
    assert_eq!(sizes.len(), 2, "{}", r.stdout);
    assert_eq!(sizes[0], sizes[1], "{}", r.stdout);
    sizes[0]
}

/// Run heap_report on 2 PEs with `env`, with no user file unless `env` names one.
fn run(env: &[(&str, &str)], home: &Scratch) -> Run {
    let mut all: Vec<(&str, &str)> = vec![("XDG_CONFIG_HOME", home.0.to_str().unwrap())];
    all.extend_from_slice(env);
    oshrun(2, &c_test("heap_report"), &all, T)
}

#[test]
fn a_toml_file_sets_sizes_components_and_parameters_and_the_environment_overrides_it() {
    let home = Scratch::new("config-home");
    let file = home.0.join("job.toml");
    std::fs::write(
        &file,
        r#"
# A job's configuration.
symmetric_size = "24M"
info = true
[mca]
sshmem = "ucx"
[mca.spml.ucx]
progress_thread = false
"#,
    )
    .unwrap();
    let path = file.to_str().unwrap();

    let r = run(&[("SHMEM_CONFIG", path)], &home);
    assert_eq!(heap_of(&r), 24 * MIB);
    // `info = true` printed the settings, with their sources, and the selection.
    for want in [
        format!("SHMEM_SYMMETRIC_SIZE (also SMA_SYMMETRIC_SIZE, SHMEM_SYMMETRIC_HEAP_SIZE) = \"24M\"  [file {path}, file key symmetric_size]"),
        "selected sshmem: ucx".into(),
        "selected spml: ucx".into(),
    ] {
        assert!(r.stderr.contains(&want), "missing `{want}` in:\n{}", r.stderr);
    }

    // The environment wins over the file, for settings and for component lists.
    let r =
        run(&[("SHMEM_CONFIG", path), ("SHMEM_SYMMETRIC_SIZE", "32M"), ("SHMEM_MCA_sshmem", "mmap")], &home);
    assert_eq!(heap_of(&r), 32 * MIB);
    assert!(r.stderr.contains("selected sshmem: mmap"), "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "SHMEM_SYMMETRIC_SIZE (also SMA_SYMMETRIC_SIZE, SHMEM_SYMMETRIC_HEAP_SIZE) = \"32M\"  [environment (SHMEM_SYMMETRIC_SIZE)"
        ),
        "{}",
        r.stderr
    );
    // So does a legacy spelling.
    let r = run(&[("SHMEM_CONFIG", path), ("SMA_SYMMETRIC_SIZE", "16M")], &home);
    assert_eq!(heap_of(&r), 16 * MIB);
    // And Open MPI's, which a job script written for OSHMEM sets, with no warning about it;
    // the older OpenSHMEM spelling comes first where both are set.
    let r = run(&[("SHMEM_CONFIG", path), ("SHMEM_SYMMETRIC_HEAP_SIZE", "24M")], &home);
    assert_eq!(heap_of(&r), 24 * MIB);
    assert!(!r.stderr.contains("not an rshmem setting"), "{}", r.stderr);
    let r = run(
        &[("SHMEM_CONFIG", path), ("SHMEM_SYMMETRIC_HEAP_SIZE", "24M"), ("SMA_SYMMETRIC_SIZE", "16M")],
        &home,
    );
    assert_eq!(heap_of(&r), 16 * MIB);

    // shmem_info, without a job, reports the parameter's value and origin.
    let o = Command::new(target_dir().join("shmem_info"))
        .arg("--selection")
        .env("SHMEM_CONFIG", path)
        .env("XDG_CONFIG_HOME", &home.0)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains(&format!("SHMEM_MCA_spml_ucx_progress_thread = \"false\"  [file {path}; boolean")),
        "{out}"
    );
    assert!(out.contains(&format!("sshmem components (SHMEM_MCA_sshmem=\"ucx\" [file {path}]):")), "{out}");
    assert!(out.contains("mmap ") && out.contains("not selected by SHMEM_MCA_sshmem"), "{out}");
}

#[test]
fn the_users_file_is_read_and_shmem_config_overrides_it() {
    let home = Scratch::new("config-user");
    std::fs::create_dir_all(home.0.join("rshmem")).unwrap();
    std::fs::write(home.0.join("rshmem/config.toml"), "symmetric_size = 20971520\nlocal_map = false\n")
        .unwrap();
    assert_eq!(heap_of(&run(&[], &home)), 20 * MIB);

    let job = home.0.join("job.toml");
    std::fs::write(&job, "symmetric_size = \"12M\"\n").unwrap();
    let r = run(&[("SHMEM_CONFIG", job.to_str().unwrap()), ("SHMEM_INFO", "1")], &home);
    assert_eq!(heap_of(&r), 12 * MIB);
    // Keys the job's file does not set still come from the user's.
    let user = home.0.join("rshmem/config.toml");
    assert!(
        r.stderr.contains(&format!("SHMEM_LOCAL_MAP = \"false\"  [file {}", user.display())),
        "{}",
        r.stderr
    );
}

#[test]
fn bad_files_and_values_end_the_job_naming_the_file_and_key() {
    let home = Scratch::new("config-bad");
    let file = home.0.join("bad.toml");
    let path = file.to_str().unwrap().to_string();
    let fails = |text: &str, env: &[(&str, &str)], needle: &str| {
        std::fs::write(&file, text).unwrap();
        let mut all = vec![("SHMEM_CONFIG", path.as_str())];
        all.extend_from_slice(env);
        let r = run(&all, &home);
        assert_eq!(r.code(), Some(1), "{text}: {}\n{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(needle), "{text}: expected `{needle}` in:\n{}", r.stderr);
        assert!(r.elapsed < Duration::from_secs(30), "{text}: took {:?}", r.elapsed);
        // shmem_info's report of the selection fails alike, saying why.
        let o = Command::new(target_dir().join("shmem_info"))
            .arg("--selection")
            .env("HOME", &home.0)
            .env("XDG_CONFIG_HOME", &home.0)
            .envs(all.iter().copied())
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{text}: shmem_info --selection:\n{out}");
        assert!(out.contains("error (a job would not start): "), "{text}: {out}");
    };
    fails(
        "symmetric_size = true\n",
        &[],
        &format!("configuration file {path}: symmetric_size = true: expected a size"),
    );
    fails("symmetric_size = \"1G\n", &[], &format!("configuration file {path}: not valid TOML"));
    fails(
        "[mca.spml.ucx]\nprogress_thread = \"sometimes\"\n",
        &[],
        &format!(
            "SHMEM_MCA_spml_ucx_progress_thread=sometimes (file {path}) is not a boolean: spml ucx declares progress_thread as a boolean"
        ),
    );
    fails(
        "",
        &[("SHMEM_MCA_spml_ucx_progress_thread", "2")],
        "SHMEM_MCA_spml_ucx_progress_thread=2 (environment (SHMEM_MCA_spml_ucx_progress_thread)) is not a boolean",
    );
    fails(
        "",
        &[("SHMEM_LOCAL_MAP", "maybe")],
        "SHMEM_LOCAL_MAP=maybe (environment (SHMEM_LOCAL_MAP)) is not a boolean",
    );
    fails(
        "[mca]\nsshmem = \"nonesuch\"\n",
        &[],
        "SHMEM_MCA_sshmem=nonesuch: there is no sshmem component named 'nonesuch'",
    );
    let missing = home.0.join("absent.toml");
    let r = run(&[("SHMEM_CONFIG", missing.to_str().unwrap())], &home);
    assert_eq!(r.code(), Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("SHMEM_CONFIG names configuration file {}", missing.display())),
        "{}",
        r.stderr
    );
}

#[test]
fn unknown_keys_and_parameters_are_warned_about_once() {
    let home = Scratch::new("config-unknown");
    let file = home.0.join("job.toml");
    std::fs::write(
        &file,
        "symetric_size = \"8M\"\n[mca.spml.ucx]\nprogres_thread = 1\n[mca.sshmem.nonesuch]\nx = 1\n",
    )
    .unwrap();
    let r = run(&[("SHMEM_CONFIG", file.to_str().unwrap())], &home);
    assert_eq!(heap_of(&r), 512 * MIB);
    let path = file.display().to_string();
    for want in [
        format!("configuration file {path}: symetric_size is not an rshmem setting and is ignored; did you mean symmetric_size?"),
        format!("SHMEM_MCA_spml_ucx_progres_thread (file {path}) is not a parameter of spml ucx and is ignored; did you mean SHMEM_MCA_spml_ucx_progress_thread?"),
        format!("SHMEM_MCA_sshmem_nonesuch_x (file {path}) names no sshmem component that was found"),
    ] {
        assert_eq!(r.stderr.matches(want.as_str()).count(), 1, "`{want}` once in:\n{}", r.stderr);
    }
}

/// UCX's shared-memory transports (posix, sysv) are opened only where sshmem "ucx" may map
/// peers' memory through them (issue 51: their receive queues were 4 MB of each PE's 7.3 MB):
/// not by default (sshmem "mmap" maps, and the peers are still mapped), but when the
/// environment or a file selects sshmem "ucx" or excludes "mmap", or the spml's parameter asks.
#[test]
fn ucx_shared_memory_transports_are_opened_only_for_sshmem_ucx() {
    let home = Scratch::new("ucx-shm-home");
    let file = home.0.join("job.toml");
    std::fs::write(&file, "[mca]\nsshmem = \"ucx\"\n").unwrap();
    let report = |env: &[(&str, &str)]| -> Vec<(usize, usize)> {
        let mut all: Vec<(&str, &str)> = vec![("XDG_CONFIG_HOME", home.0.to_str().unwrap())];
        all.extend_from_slice(env);
        let r = oshrun(2, &c_test("ucx_shm"), &all, T);
        r.assert_all_pes_ok("ucx_shm", 2);
        let v: Vec<(usize, usize)> = r
            .stdout
            .lines()
            .filter_map(|l| l.strip_prefix("ucx_shm: PE ").filter(|l| l.contains(" segments ")))
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f[2].parse().unwrap(), f[4].parse().unwrap())
            })
            .collect();
        assert_eq!(v.len(), 2, "{}", r.stdout);
        v
    };
    for (segments, mapped) in report(&[]) {
        assert_eq!((segments, mapped), (0, 1), "by default");
    }
    for env in [
        vec![("SHMEM_MCA_sshmem", "ucx")],
        vec![("SHMEM_MCA_sshmem", "^mmap")],
        vec![("SHMEM_CONFIG", file.to_str().unwrap())],
    ] {
        for (segments, mapped) in report(&env) {
            assert!(segments > 0 && mapped == 1, "{env:?}: {segments} segments, mapped {mapped}");
        }
    }
    for (segments, _) in report(&[("SHMEM_MCA_spml_ucx_shm_transports", "1")]) {
        assert!(segments > 0, "shm_transports=1: no UCX shared-memory segment");
    }
}
