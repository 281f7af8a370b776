//! The installed tree (scripts/install.sh): its layout, the library's SONAME, and programs built
//! against it from a directory outside the source, with the installed wrappers and with
//! pkg-config, run with the installed oshrun and plugins.

use rshmem_tests::*;
use std::path::Path;
use std::process::Command;

/// Runs a command without cargo's LD_LIBRARY_PATH (which names the build directory and would
/// win over the installed rpath).
fn sh(cmd: &mut Command) -> String {
    let o = cmd.env_remove("LD_LIBRARY_PATH").output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{cmd:?} failed: {out}{}", String::from_utf8_lossy(&o.stderr));
    out
}

const HELLO: &str = r#"#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
int main(void) {
    static long x;
    shmem_init();
    double t = shmemx_wtime();
    shmem_long_atomic_inc(&x, 0);
    shmem_barrier_all();
    if (shmem_my_pe() == 0) printf("sum %ld of %d\n", x, shmem_n_pes());
    printf("PE %d ok %d\n", shmem_my_pe(), t >= 0);
    shmem_finalize();
    return 0;
}
"#;

/// scripts/install.sh of this build into `prefix`.
fn install(prefix: &Path) {
    sh(Command::new("bash")
        .arg(source_dir().join("../scripts/install.sh"))
        .arg("--prefix")
        .arg(prefix)
        .arg("--build-dir")
        .arg(target_dir()));
}

fn run_two(prefix: &Path, prog: &Path, cwd: &Path) -> String {
    let _g = job_lock();
    sh(Command::new(prefix.join("bin/oshrun"))
        .current_dir(cwd)
        .args(["-np", "2", "--timeout", "60"])
        .arg(prog)
        .env_remove("SHMEM_MCA_plugin_path"))
}

#[test]
fn an_installed_tree_builds_and_runs_programs_from_outside_the_source() {
    let scratch = Scratch::new("install");
    let prefix = scratch.0.join("prefix");
    let work = scratch.0.join("work");
    std::fs::create_dir_all(&work).unwrap();
    install(&prefix);

    // Layout.
    for f in [
        "bin/oshcc",
        "bin/oshc++",
        "bin/oshcxx",
        "bin/oshrun",
        "bin/shmem_info",
        "lib/libshmem.so",
        "lib/libshmem.so.0",
        "lib/pkgconfig/rshmem.pc",
        "include/shmem.h",
        "include/shmemx.h",
        "include/pshmem.h",
        "include/shmem4py-rshmem.h",
        "include/mpp/shmem.h",
        "include/shmem_plugin.h",
        "share/man/man1/oshcc.1",
        "share/man/man1/oshc++.1",
        "share/man/man1/oshrun.1",
        "share/man/man1/shmem_info.1",
        "etc/rshmem.toml",
    ] {
        assert!(prefix.join(f).exists(), "{f} is not installed");
    }
    let versioned = format!("lib/libshmem.so.{}", env!("CARGO_PKG_VERSION"));
    assert!(prefix.join(&versioned).is_file() && !prefix.join(&versioned).is_symlink());
    let plugins: Vec<_> = std::fs::read_dir(prefix.join("lib/rshmem")).unwrap().flatten().collect();
    assert!(plugins.len() >= 5, "plugins in lib/rshmem: {}", plugins.len());
    let dynamic = sh(Command::new("readelf").arg("-d").arg(prefix.join(&versioned)));
    assert!(dynamic.contains("Library soname: [libshmem.so.0]"), "{dynamic}");
    for man in ["oshcc.1", "oshrun.1", "shmem_info.1"] {
        let text = std::fs::read_to_string(prefix.join("share/man/man1").join(man)).unwrap();
        assert!(text.starts_with(".TH "), "{man}");
    }

    // The wrappers point into the install, not the source tree.
    let inc = prefix.join("include").canonicalize().unwrap();
    let lib = prefix.join("lib").canonicalize().unwrap();
    let compile = sh(Command::new(prefix.join("bin/oshcc")).arg("--showme:compile"));
    assert_eq!(compile.trim(), format!("-I{}", inc.display()));
    let link = sh(Command::new(prefix.join("bin/oshc++")).arg("--showme:link"));
    assert_eq!(link.trim(), format!("-L{0} -Wl,-rpath,{0} -lshmem", lib.display()));
    assert!(sh(Command::new(prefix.join("bin/oshcc")).arg("--showme:version")).contains("rshmem"));

    std::fs::write(work.join("hello.c"), HELLO).unwrap();
    // With the installed wrapper.
    sh(Command::new(prefix.join("bin/oshcc")).current_dir(&work).args([
        "-O2",
        "-o",
        "hello_wrapper",
        "hello.c",
    ]));
    // With pkg-config and the plain compiler.
    let pc = || {
        let mut c = Command::new("pkg-config");
        c.env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"));
        c
    };
    assert_eq!(sh(pc().args(["--modversion", "rshmem"])).trim(), env!("CARGO_PKG_VERSION"));
    let cflags = sh(pc().args(["--cflags", "rshmem"]));
    let libs = sh(pc().args(["--libs", "rshmem"]));
    sh(Command::new("cc")
        .current_dir(&work)
        .args(cflags.split_whitespace())
        .args(["-o", "hello_pc", "hello.c"])
        .args(libs.split_whitespace()));

    for prog in ["hello_wrapper", "hello_pc"] {
        let exe = work.join(prog);
        let needed = sh(Command::new("readelf").arg("-d").arg(&exe));
        assert!(needed.contains("Shared library: [libshmem.so.0]"), "{prog}: {needed}");
        let ldd = sh(Command::new("ldd").arg(&exe));
        let resolved = ldd.lines().find(|l| l.contains("libshmem.so.0")).unwrap_or_default().to_string();
        assert!(resolved.contains(&lib.display().to_string()), "{prog} loads {resolved}");
        let out = run_two(&prefix, &exe, &work);
        assert!(
            out.contains("sum 2 of 2") && out.contains("PE 0 ok 1") && out.contains("PE 1 ok 1"),
            "{out}"
        );
    }

    // shmem_info in bin/ finds the installed plugins in lib/rshmem.
    let info = sh(Command::new(prefix.join("bin/shmem_info"))
        .arg("--components")
        .env_remove("SHMEM_MCA_plugin_path"));
    let installed_plugins = prefix.join("lib/rshmem").canonicalize().unwrap();
    assert!(info.contains(&installed_plugins.display().to_string()), "{info}");
    // --version asks the library beside it, and each tool says what it is.
    let v = sh(Command::new(prefix.join("bin/shmem_info")).arg("--version"));
    assert!(v.starts_with("rshmem (OpenSHMEM 1.6); shmem_info "), "{v}");
    let v = sh(Command::new(prefix.join("bin/oshrun")).arg("--version"));
    assert!(v.starts_with("oshrun (rshmem) "), "{v}");

    // The install-wide configuration file: installed commented out, read from PREFIX/etc by the
    // installed tools, and kept (with a site's edits) when rshmem is installed again.
    let site = prefix.join("etc/rshmem.toml").canonicalize().unwrap();
    let example = std::fs::read_to_string(&site).unwrap();
    assert!(example.lines().all(|l| l.is_empty() || l.starts_with('#')), "{example}");
    std::fs::write(&site, "symmetric_size = \"40M\"\n[mca]\nsshmem = \"ucx\"\n").unwrap();
    let settings = || {
        sh(Command::new(prefix.join("bin/shmem_info"))
            .arg("--settings")
            .env("XDG_CONFIG_HOME", &work)
            .env_remove("SHMEM_CONFIG"))
    };
    let info = settings();
    assert!(info.contains(&format!("  {} (read)", site.display())), "{info}");
    assert!(
        info.contains(&format!("= \"40M\"  [file {}, file key symmetric_size]", site.display())),
        "{info}"
    );
    assert!(info.contains(&format!("SHMEM_MCA_sshmem = \"ucx\"  [file {}", site.display())), "{info}");
    install(&prefix);
    assert!(settings().contains("= \"40M\"  [file "), "a reinstall replaced the site's configuration");

    // A moved install: pkg-config follows it, as oshcc does.
    let moved = scratch.0.join("moved");
    std::fs::rename(&prefix, &moved).unwrap();
    let cflags = sh(Command::new("pkg-config")
        .env("PKG_CONFIG_PATH", moved.join("lib/pkgconfig"))
        .args(["--cflags", "rshmem"]));
    let inc = sh(Command::new("pkg-config")
        .env("PKG_CONFIG_PATH", moved.join("lib/pkgconfig"))
        .args(["--variable=includedir", "rshmem"]));
    assert!(
        std::path::Path::new(inc.trim()).join("shmem.h").is_file(),
        "includedir {inc} after the move ({cflags})"
    );
    let compile = sh(Command::new(moved.join("bin/oshcc")).arg("--showme:compile"));
    assert!(compile.contains("moved"), "{compile}");
    drop(scratch);
}

/// scripts/bundle.sh: the install tree plus the libraries it loads beyond the C runtime and
/// UCX's loadable transports, with an env.sh that makes programs load them from the bundle (for
/// a machine without the packages, such as the GPU machine of docs/performance.md).
#[test]
fn a_bundle_carries_its_libraries_and_programs_load_them_from_it() {
    let scratch = Scratch::new("bundle");
    let dir = scratch.0.join("bundle");
    let work = scratch.0.join("work");
    std::fs::create_dir_all(&work).unwrap();
    sh(Command::new("bash")
        .arg(source_dir().join("../scripts/bundle.sh"))
        .arg(&dir)
        .arg("--build-dir")
        .arg(target_dir()));
    let deps = dir.join("lib/deps").canonicalize().unwrap();
    for lib in ["libucp.so.0", "libucs.so.0", "libuct.so.0", "libpmix.so.2", "libhwloc.so.15"] {
        assert!(deps.join(lib).is_file(), "{lib} is not in the bundle");
    }
    for runtime in ["libc.so.6", "libm.so.6", "libgcc_s.so.1"] {
        assert!(!deps.join(runtime).exists(), "{runtime} must come from the machine, not the bundle");
    }
    assert!(deps.join("ucx/libuct_cma.so.0").is_file(), "UCX's shared-memory transport module");
    let debug_info = sh(Command::new("readelf").arg("-S").arg(dir.join("lib/rshmem/librshmem_spml_ucx.so")));
    assert!(!debug_info.contains(".debug_info"), "plugins are stripped of debug information");

    std::fs::write(work.join("hello.c"), HELLO).unwrap();
    let env = dir.join("env.sh");
    let in_bundle = |script: &str| {
        sh(Command::new("bash")
            .current_dir(&work)
            .arg("-c")
            .arg(format!("source '{}' && {script}", env.display())))
    };
    in_bundle("oshcc -O2 -o hello hello.c");
    // libshmem loads PMIx and hwloc; the spml plugin loads UCX.
    let spml = dir.join("lib/rshmem/librshmem_spml_ucx.so");
    for (object, lib) in [("hello".to_string(), "libpmix.so.2"), (spml.display().to_string(), "libucp.so.0")]
    {
        let ldd = in_bundle(&format!("ldd '{object}'"));
        let line = ldd.lines().find(|l| l.contains(lib)).unwrap_or_default();
        assert!(line.contains(&deps.display().to_string()), "{object}: {lib} resolves to {line}");
    }
    let _g = job_lock();
    let out = in_bundle("UCX_LOG_LEVEL=debug oshrun -np 2 --timeout 60 ./hello 2>&1");
    assert!(out.contains("sum 2 of 2") && out.contains("PE 0 ok 1") && out.contains("PE 1 ok 1"), "{out}");
    let modules = deps.join("ucx").display().to_string();
    assert!(out.contains(&modules), "UCX did not look for its modules in {modules}: {out}");
    drop(scratch);
}

/// A Rust program built with cargo against the `rshmem` crate, outside the workspace and with
/// its own target directory (so no plugins are built beside it), finds the installed plugins:
/// the core records the install's plugin directory when it is built (`RSHMEM_PREFIX` here, or
/// an installed `rshmem.pc`), and the program runs from any directory under the installed
/// oshrun.
#[test]
fn a_cargo_built_rust_program_finds_the_installed_plugins() {
    let scratch = Scratch::new("install-rust");
    let prefix = scratch.0.join("prefix");
    let krate = scratch.0.join("app");
    let run_dir = scratch.0.join("run");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::create_dir_all(&run_dir).unwrap();
    install(&prefix);
    std::fs::write(
        krate.join("Cargo.toml"),
        format!(
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n\
             rshmem = {{ path = \"{}\" }}\n\n[workspace]\n",
            repo().join("rshmem").display()
        ),
    )
    .unwrap();
    // The workspace's resolved versions, so the build needs nothing it has not fetched.
    std::fs::copy(repo().join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    std::fs::write(
        krate.join("src/main.rs"),
        r#"fn main() -> Result<(), rshmem::Error> {
    let shmem = rshmem::Shmem::init()?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    shmem.scope(|s| {
        let x = s.alloc::<i64>(1)?;
        shmem.atomic_inc(&x, 0, 0)?;
        shmem.barrier_all();
        if me == 0 {
            println!("sum {} of {n}", x.read(0));
        }
        println!("PE {me} ok");
        Ok(())
    })
}
"#,
    )
    .unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    sh(Command::new(cargo)
        .current_dir(&krate)
        .args(["build", "--quiet", "--offline"])
        .env("CARGO_TARGET_DIR", scratch.0.join("target"))
        .env("RSHMEM_PREFIX", &prefix)
        .env_remove("CARGO_MANIFEST_DIR"));
    let exe = run_dir.join("app");
    std::fs::copy(scratch.0.join("target/debug/app"), &exe).unwrap();
    let out = run_two(&prefix, &exe, &run_dir);
    assert!(out.contains("sum 2 of 2") && out.contains("PE 0 ok") && out.contains("PE 1 ok"), "{out}");
    // Alone, it is one PE, and still finds them.
    let out = sh(Command::new(&exe).current_dir(&run_dir).env_remove("SHMEM_MCA_plugin_path"));
    assert!(out.contains("sum 1 of 1"), "{out}");
    drop(scratch);
}
