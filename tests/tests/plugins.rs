//! Plugins from outside the build: components written in C (skeletons for all four frameworks),
//! compiled here with gcc against the header the project ships, are found through
//! SHMEM_MCA_plugin_path and selected by the environment or a configuration file; a plugin of
//! another ABI version is skipped with a warning; a table with a required slot NULL or too short
//! is refused naming the slot; shmem_info reports what it finds.

use rshmem_tests::*;
use std::path::PathBuf;
use std::process::Command;

#[test]
fn a_c_plugin_is_loaded_and_selected() {
    let dir = target_dir().join("rshmem-test-plugins/c-example");
    let so = gcc_plugin(&repo().join("plugins/c-example/scoll_cbarrier.c"), &dir, "libcbarrier.so");
    let nm = Command::new("nm").args(["-D", "--defined-only"]).arg(&so).output().unwrap();
    let syms = String::from_utf8_lossy(&nm.stdout);
    assert_eq!(
        syms.lines().filter(|l| l.contains(" T ")).count(),
        1,
        "exactly one exported function:\n{syms}"
    );
    assert!(syms.contains("shmem_plugin_descriptor"));

    let prog = c_test("barrier");
    let path = dir.display().to_string();
    for np in [1, 2, 4] {
        let env = [
            ("SHMEM_MCA_plugin_path", path.as_str()),
            ("SHMEM_MCA_scoll", "cbarrier,basic"),
            ("SHMEM_INFO", "1"),
        ];
        let r = oshrun(np, &prog, &env, DEFAULT_TIMEOUT);
        r.assert_all_pes_ok("barrier", np);
        assert!(r.stderr.contains("selected scoll: cbarrier, basic"), "{}", r.stderr);
        assert!(
            r.stderr.contains("world team collectives: barrier by cbarrier, broadcast by basic"),
            "{}",
            r.stderr
        );
    }
}

/// The four C skeletons (plugins/c-example), built into one directory.
fn skeletons() -> PathBuf {
    let dir = target_dir().join("rshmem-test-plugins/skeletons");
    for name in ["spml_counting", "sshmem_anon", "memheap_bump", "scoll_cbarrier"] {
        gcc_plugin(&repo().join(format!("plugins/c-example/{name}.c")), &dir, &format!("lib{name}.so"));
    }
    dir
}

/// A 2-PE heap_report run on the four skeletons: each selected, and the counting spml saw the
/// ring's put (every peer is reached through the spml, since sshmem anon cannot be mapped).
fn assert_skeletons_ran(r: &Run) {
    r.assert_all_pes_ok("heap_report", 2);
    for want in [
        "selected spml: counting",
        "selected sshmem: anon",
        "selected memheap: bump (CPU memory)",
        "selected scoll: cbarrier, basic",
        "world team collectives: barrier by cbarrier",
        "rshmem[PE 0] info rshmem::spml::counting: PE 0: 1 puts, ",
        "rshmem[PE 1] info rshmem::spml::counting: PE 1: 1 puts, ",
        "quiets through ucx",
    ] {
        assert!(r.stderr.contains(want), "missing `{want}` in:\n{}", r.stderr);
    }
}

#[test]
fn c_skeletons_of_all_four_frameworks_are_selected_by_environment_and_by_toml() {
    let dir = skeletons();
    let ucx = target_dir().join("librshmem_spml_ucx.so");
    let (dir_s, ucx_s) = (dir.display().to_string(), ucx.display().to_string());
    let prog = c_test("heap_report");
    let log = [("SHMEM_INFO", "1"), ("SHMEM_LOG_LEVEL", "info")];
    let mut env = vec![
        ("SHMEM_MCA_plugin_path", dir_s.as_str()),
        ("SHMEM_MCA_spml", "counting"),
        ("SHMEM_MCA_sshmem", "anon"),
        ("SHMEM_MCA_memheap", "bump"),
        ("SHMEM_MCA_scoll", "cbarrier,basic"),
        ("SHMEM_MCA_spml_counting_delegate", ucx_s.as_str()),
    ];
    env.extend_from_slice(&log);
    assert_skeletons_ran(&oshrun(2, &prog, &env, DEFAULT_TIMEOUT));

    let scratch = Scratch::new("skeleton-config");
    let file = scratch.0.join("vendor.toml");
    std::fs::write(
        &file,
        format!(
            "[mca]\nplugin_path = [{dir_s:?}]\nsshmem = \"anon\"\nmemheap = \"bump\"\nscoll = [\"cbarrier\", \"basic\"]\n\
             [mca.spml]\ncomponents = \"counting\"\n[mca.spml.counting]\ndelegate = {ucx_s:?}\n"
        ),
    )
    .unwrap();
    let mut env = vec![("SHMEM_CONFIG", file.to_str().unwrap())];
    env.extend_from_slice(&log);
    assert_skeletons_ran(&oshrun(2, &prog, &env, DEFAULT_TIMEOUT));
}

#[test]
fn a_table_with_a_required_slot_null_or_missing_is_refused_naming_it() {
    let dir = target_dir().join("rshmem-test-plugins/broken");
    let write = |name: &str, table: &str| {
        let src = dir.join(format!("{name}.c"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            &src,
            format!(
                "#include <stddef.h>\n#include \"shmem_plugin.h\"\n\
                 static void *create(void *b, size_t s) {{ (void)b; (void)s; return NULL; }}\n\
                 static void *alloc(void *h, size_t s, size_t a) {{ (void)h; (void)s; (void)a; return NULL; }}\n\
                 static int release(void *h, void *p) {{ (void)h; (void)p; return 0; }}\n\
                 static void *resize(void *h, void *p, size_t s) {{ (void)h; (void)p; (void)s; return NULL; }}\n\
                 static size_t usable(void *h, void *p) {{ (void)h; (void)p; return 0; }}\n\
                 static void destroy(void *h) {{ (void)h; }}\n\
                 static const shmem_plugin_memheap_ops_t ops = {{ {table} }};\n\
                 static void query(const shmem_plugin_core_t *c, shmem_plugin_query_t *r) {{ (void)c; r->available = 1; r->priority = 99; }}\n\
                 static const void *open_(const shmem_plugin_core_t *c) {{ (void)c; (void)create; (void)alloc; (void)release; (void)resize; (void)usable; (void)destroy; return &ops; }}\n\
                 static const shmem_plugin_descriptor_t d = {{ .abi_version = SHMEM_PLUGIN_ABI_VERSION, .framework = SHMEM_PLUGIN_FRAMEWORK_MEMHEAP,\n\
                   .struct_size = sizeof(shmem_plugin_descriptor_t), .name = \"{name}\", .query = query, .open = open_ }};\n\
                 __attribute__((visibility(\"default\"))) const shmem_plugin_descriptor_t *shmem_plugin_descriptor(void) {{ return &d; }}\n"
            ),
        )
        .unwrap();
        gcc_plugin(&src, &dir, &format!("lib{name}.so"));
    };
    // realloc left NULL, as in the report (it used to crash the job at first use).
    write(
        "noresize",
        ".struct_size = sizeof ops, .create = create, .alloc = alloc, .free = release, .usable_size = usable, .destroy = destroy",
    );
    // A table that ends before destroy (an older header).
    write(
        "short",
        ".struct_size = offsetof(shmem_plugin_memheap_ops_t, destroy), .create = create, .alloc = alloc, .free = release, .realloc = resize, .usable_size = usable",
    );
    let path = dir.display().to_string();
    let hello = c_test("hello");
    for (name, needle) in [
        ("noresize", "memheap noresize: the required slot shmem_plugin_memheap_ops_t.realloc is NULL"),
        ("short", "memheap short: its shmem_plugin_memheap_ops_t is 48 bytes (struct_size), too short to hold the required slot destroy"),
    ] {
        // Alone, it ends the job with the reason.
        let env = [("SHMEM_MCA_plugin_path", path.as_str()), ("SHMEM_MCA_memheap", name)];
        let r = oshrun(2, &hello, &env, DEFAULT_TIMEOUT);
        assert_eq!(r.code(), Some(1), "{}", r.stderr);
        assert!(r.stderr.contains(needle), "expected `{needle}` in:\n{}", r.stderr);
        // Ranked first (priority 99) but refused: the job runs on the next one, saying why.
        let r = oshrun(2, &hello, &[("SHMEM_MCA_plugin_path", path.as_str())], DEFAULT_TIMEOUT);
        r.assert_ok(name);
        assert!(r.stderr.contains(needle), "expected `{needle}` in:\n{}", r.stderr);
    }
}

/// Only the memheap used for a device type is opened (docs/plugin-abi.md): a CPU memheap
/// ranked below the built-in one is probed, listed, and never opened.
#[test]
fn a_memheap_that_is_not_used_is_never_opened_and_c_plugins_get_normalized_parameters() {
    let dir = target_dir().join("rshmem-test-plugins/unused-memheap");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("unused.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include \"shmem_plugin.h\"\n\
         static const shmem_plugin_param_t ps[] = { { \"loud\", SHMEM_PLUGIN_PARAM_BOOL, \"0\", \"d\" }, { \"room\", SHMEM_PLUGIN_PARAM_SIZE, \"0\", \"d\" } };\n\
         static void query(const shmem_plugin_core_t *c, shmem_plugin_query_t *r) {\n\
           const char *l = c->param(\"memheap\", \"unused\", \"loud\"), *m = c->param(\"memheap\", \"unused\", \"room\");\n\
           if (l && m) fprintf(stderr, \"memheap unused: loud=%s room=%s\\n\", l, m);\n\
           r->available = 1; r->priority = 1; }\n\
         static const void *open_(const shmem_plugin_core_t *c) { (void)c; fprintf(stderr, \"memheap unused: opened\\n\"); return NULL; }\n\
         static const shmem_plugin_descriptor_t d = { .abi_version = SHMEM_PLUGIN_ABI_VERSION, .framework = SHMEM_PLUGIN_FRAMEWORK_MEMHEAP,\n\
           .struct_size = sizeof(shmem_plugin_descriptor_t), .name = \"unused\", .params = ps, .n_params = 2, .query = query, .open = open_ };\n\
         __attribute__((visibility(\"default\"))) const shmem_plugin_descriptor_t *shmem_plugin_descriptor(void) { return &d; }\n",
    )
    .unwrap();
    gcc_plugin(&src, &dir, "libunused.so");
    let path = dir.display().to_string();
    let r = oshrun(2, &c_test("hello"), &[("SHMEM_MCA_plugin_path", path.as_str())], DEFAULT_TIMEOUT);
    r.assert_ok("hello beside an unused memheap");
    assert!(!r.stderr.contains("memheap unused: opened"), "{}", r.stderr);
    // Asked for by name, it is the CPU memheap, and opened (and refuses, saying so).
    let r = oshrun(
        1,
        &c_test("hello"),
        &[("SHMEM_MCA_plugin_path", path.as_str()), ("SHMEM_MCA_memheap", "unused")],
        DEFAULT_TIMEOUT,
    );
    assert!(r.stderr.contains("memheap unused: opened"), "{}", r.stderr);
    // Its boolean and size parameters arrive in one spelling, whatever the user wrote.
    let env = [
        ("SHMEM_MCA_plugin_path", path.as_str()),
        ("SHMEM_MCA_memheap_unused_loud", "true"),
        ("SHMEM_MCA_memheap_unused_room", "64K"),
    ];
    let r = oshrun(1, &c_test("hello"), &env, DEFAULT_TIMEOUT);
    r.assert_ok("hello with the unused memheap's parameters set");
    assert!(r.stderr.contains("memheap unused: loud=1 room=65536"), "{}", r.stderr);
}

#[test]
fn a_plugin_of_another_abi_version_is_skipped_with_a_warning() {
    let dir = target_dir().join("rshmem-test-plugins/bad-abi");
    let src = dir.join("bad_abi.c");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        &src,
        "#include \"shmem_plugin.h\"\n\
         static const shmem_plugin_descriptor_t d = { .abi_version = 99, .framework = SHMEM_PLUGIN_FRAMEWORK_SCOLL, .name = \"future\" };\n\
         __attribute__((visibility(\"default\"))) const shmem_plugin_descriptor_t *shmem_plugin_descriptor(void) { return &d; }\n",
    )
    .unwrap();
    gcc_plugin(&src, &dir, "libfuture.so");
    let path = dir.display().to_string();
    let r = oshrun(2, &c_test("hello"), &[("SHMEM_MCA_plugin_path", path.as_str())], DEFAULT_TIMEOUT);
    r.assert_ok("hello with a bad plugin around");
    // A warning, once for the job (by PE 0).
    let says = "libfuture.so: plugin ABI version 99 (this library speaks 2)";
    assert_eq!(r.stderr.matches(says).count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("rshmem[PE 0] warning rshmem::plugin::loader: skipped "), "{}", r.stderr);
    // Selecting it by name is an error that lists what exists.
    let r = oshrun(
        1,
        &c_test("hello"),
        &[("SHMEM_MCA_plugin_path", path.as_str()), ("SHMEM_MCA_scoll", "future")],
        DEFAULT_TIMEOUT,
    );
    assert!(!r.status.success());
    assert!(
        r.stderr.contains(
            "there is no scoll component named 'future'; the scoll components that exist are: basic, hier, shm"
        ),
        "{}",
        r.stderr
    );
    // ... and names the file that did not load, and why, though its name does not say scoll.
    assert!(r.stderr.contains("; skipped: ") && r.stderr.contains(says), "{}", r.stderr);
}

/// A plugin directory that cannot be read is a warning (once for the job), and shmem_info
/// says so too.
#[test]
fn a_plugin_path_that_cannot_be_read_is_warned_about() {
    let missing = "/nonexistent/rshmem-plugins";
    let r = oshrun(2, &c_test("hello"), &[("SHMEM_MCA_plugin_path", missing)], DEFAULT_TIMEOUT);
    r.assert_ok("hello with a missing plugin directory");
    let says = format!("SHMEM_MCA_plugin_path names {missing}, which cannot be read");
    assert_eq!(r.stderr.matches(&says).count(), 1, "{}", r.stderr);
    let o = Command::new(target_dir().join("shmem_info"))
        .arg("--components")
        .env("SHMEM_MCA_plugin_path", missing)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&says), "{out}");
}

/// A vendor component named like a built-in (here: a copy of scoll basic in a vendor directory)
/// wins, and the job's log (once, by PE 0) and shmem_info say which file it hides.
#[test]
fn a_plugin_shadowing_a_built_in_is_reported() {
    let dir = target_dir().join("rshmem-test-plugins/shadow");
    std::fs::create_dir_all(&dir).unwrap();
    let vendor = dir.join("libvendor_basic.so");
    std::fs::copy(target_dir().join("librshmem_scoll_basic.so"), &vendor).unwrap();
    let path = dir.display().to_string();
    let built_in = target_dir().join("librshmem_scoll_basic.so").canonicalize().unwrap();
    let says = format!("skipped {}: scoll basic is shadowed by {}", built_in.display(), vendor.display());
    let r = oshrun(2, &c_test("hello"), &[("SHMEM_MCA_plugin_path", path.as_str())], DEFAULT_TIMEOUT);
    r.assert_ok("hello with a shadowing plugin");
    assert_eq!(r.stderr.matches(&says).count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("rshmem[PE 0] warning rshmem::plugin::loader: "), "{}", r.stderr);
    let o = Command::new(target_dir().join("shmem_info"))
        .arg("--components")
        .env("SHMEM_MCA_plugin_path", &path)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&says), "{out}");
    assert!(out.contains(&format!("basic {} ({})", env!("CARGO_PKG_VERSION"), vendor.display())), "{out}");
}

/// A vendor's sshmem "mmap" at priority 5 hides the built-in mmap (priority 30), so another
/// sshmem (ucx) becomes the default choice: PE 0's log and shmem_info say so, naming both
/// files and both priorities (issue 53). Chosen explicitly, nothing is said.
#[test]
fn a_plugin_hiding_a_built_in_at_another_priority_says_what_the_default_becomes() {
    let dir = target_dir().join("rshmem-test-plugins/low-mmap");
    let vendor = gcc_plugin(&repo().join("tests/plugins/sshmem_low_mmap.c"), &dir, "libvendor_sshmem.so");
    let path = dir.display().to_string();
    let built_in = target_dir().join("librshmem_sshmem_mmap.so").canonicalize().unwrap();
    let says = format!(
        "sshmem mmap from {} (priority 5) hides the one from {} (priority 30): sshmem ucx is the default choice where it would be sshmem mmap",
        vendor.display(),
        built_in.display()
    );
    let r = oshrun(2, &c_test("hello"), &[("SHMEM_MCA_plugin_path", path.as_str())], DEFAULT_TIMEOUT);
    r.assert_ok("hello with a low-priority vendor mmap");
    assert_eq!(r.stderr.matches(&says).count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("rshmem[PE 0] warning rshmem::plugin::select: sshmem mmap from"),
        "{}",
        r.stderr
    );
    let info = |env: &[(&str, &str)]| {
        let o = Command::new(target_dir().join("shmem_info"))
            .arg("--components")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let out = info(&[("SHMEM_MCA_plugin_path", &path)]);
    assert!(out.contains(&format!("note: {says}")), "{out}");
    let r = oshrun(
        2,
        &c_test("hello"),
        &[("SHMEM_MCA_plugin_path", path.as_str()), ("SHMEM_MCA_sshmem", "ucx")],
        DEFAULT_TIMEOUT,
    );
    r.assert_ok("hello choosing sshmem ucx");
    assert!(!r.stderr.contains("hides the one from"), "{}", r.stderr);
}

#[test]
fn shmem_info_reports_from_the_library_beside_it_and_says_when_there_is_none() {
    let o = Command::new(target_dir().join("shmem_info")).arg("--settings").output().unwrap();
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    let lib_dir = target_dir().canonicalize().unwrap();
    let first = out.lines().next().unwrap_or_default();
    assert!(first.ends_with(&format!("library in {}", lib_dir.display())), "{out}");
    // Alone in a directory, and no libshmem.so.0 on the loader's path: a clear error, no report.
    let alone = Scratch::new("shmem-info-alone");
    std::fs::copy(target_dir().join("shmem_info"), alone.0.join("shmem_info")).unwrap();
    let o = Command::new(alone.0.join("shmem_info")).env_remove("LD_LIBRARY_PATH").output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(o.stdout.is_empty(), "{}", String::from_utf8_lossy(&o.stdout));
    // (A system could have another OpenSHMEM's libshmem.so.0: then it is named as not ours.)
    assert!(
        err.contains("cannot load the rshmem library") && err.contains("libshmem.so.0")
            || err.contains("is not rshmem's"),
        "{err}"
    );
}

#[test]
fn shmem_info_lists_components_and_settings() {
    let o = Command::new(target_dir().join("shmem_info")).env("SHMEM_MCA_sshmem", "^ucx").output().unwrap();
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for want in [
        "spml components (SHMEM_MCA_spml=\"\" [default]):",
        "  ucx ",
        "available, priority 50",
        "SHMEM_MCA_spml_ucx_progress_thread = \"1\"  [default; boolean, default \"1\", file key mca.spml.ucx.progress_thread]",
        "sshmem components (SHMEM_MCA_sshmem=\"^ucx\" [environment (SHMEM_MCA_sshmem)]):",
        "not selected by SHMEM_MCA_sshmem",
        "=> selected: mmap",
        "memheap components",
        "=> selected: shm, hier, basic",
        "=> selected: cpu for CPU memory",
        "  cuda ",
        "SHMEM_SYMMETRIC_SIZE (also SMA_SYMMETRIC_SIZE, SHMEM_SYMMETRIC_HEAP_SIZE) = \"512M\"  [default, file key symmetric_size]",
    ] {
        assert!(out.contains(want), "missing `{want}` in:\n{out}");
    }
}

#[test]
fn oshcc_builds_cxx_programs_too() {
    let dir = target_dir().join("rshmem-test-programs");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("cxx_hello.cpp");
    std::fs::write(
        &src,
        "#include <shmem.h>\n#include <cstdio>\nint main() { shmem_init(); static long x; shmem_long_p(&x, 5, shmem_my_pe()); shmem_barrier_all();\n\
         std::printf(\"cxx: PE %d x=%ld\\n\", shmem_my_pe(), x); shmem_finalize(); return 0; }\n",
    )
    .unwrap();
    let out = dir.join("cxx_hello");
    let o = Command::new(target_dir().join("oshcxx")).arg(&src).arg("-o").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = oshrun(2, &out, &[], DEFAULT_TIMEOUT);
    r.assert_ok("cxx");
    assert!(r.stdout.contains("cxx: PE 1 x=5"), "{}", r.stdout);
}

#[test]
fn every_built_in_plugin_exports_exactly_the_descriptor() {
    let mut seen = 0;
    for e in std::fs::read_dir(target_dir()).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("librshmem_") && name.ends_with(".so")) {
            continue;
        }
        seen += 1;
        let nm = Command::new("nm").args(["-D", "--defined-only"]).arg(e.path()).output().unwrap();
        let funcs: Vec<String> = String::from_utf8_lossy(&nm.stdout)
            .lines()
            .filter(|l| l.contains(" T "))
            .map(|l| l.split_whitespace().last().unwrap_or_default().to_string())
            .collect();
        assert_eq!(funcs, ["shmem_plugin_descriptor"], "{name}");
    }
    assert!(seen >= 5, "expected the built-in plugins beside libshmem.so, found {seen}");
}

#[test]
fn every_shmem_routine_has_a_pshmem_twin() {
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(target_dir().join("libshmem.so"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&nm.stdout);
    let names: std::collections::HashSet<&str> =
        out.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    let shmem: Vec<&&str> = names.iter().filter(|n| n.starts_with("shmem_")).collect();
    assert!(shmem.len() > 1000, "only {} shmem_ symbols", shmem.len());
    for n in shmem {
        assert!(names.contains(format!("p{n}").as_str()), "p{n} is missing");
    }
}

/// SHMEM_SPACE_GPU and a created GPU space on fake device memory: RMA between host and
/// device memory both ways, strided and non-blocking forms, every kind of AMO, waits and
/// put-with-signal on device words, calloc, and every collective (through the host shadow). A
/// load or store the core made on device memory itself instead of through the memheap's copy
/// would end the PE with SIGSEGV. Nothing of
/// the fake device may be left in /dev/shm.
#[test]
fn gpu_spaces_move_data_only_through_the_device_memheap() {
    let prog = c_test("device_space");
    let env = on_fakedev(&[("SHMEM_ENABLE_GPU_SPACE", "1"), ("SHMEM_GPU_SYMMETRIC_SIZE", "4M")]);
    let before = leftovers();
    for np in [1, 2, 4] {
        let r = oshrun(np, &prog, &env, DEFAULT_TIMEOUT);
        r.assert_all_pes_ok("device_space", np);
        assert!(shm_names("rshmem-fakedev-").is_empty(), "{:?}", shm_names("rshmem-fakedev-"));
    }
    // Which memheap serves GPU memory, in its own words (memheap cuda names the device and why
    // that one): under SHMEM_INFO for PE 0, in every PE's info log.
    let said = "memheap fakedev: stand-in GPU memory the CPU cannot touch (tests)";
    let told = [env.as_slice(), &[("SHMEM_INFO", "1"), ("SHMEM_LOG_LEVEL", "info")]].concat();
    let r = oshrun(2, &prog, &told, DEFAULT_TIMEOUT);
    r.assert_all_pes_ok("device_space", 2);
    assert!(r.stderr.contains(&format!("  GPU memory of PE 0: {said}")), "{}", r.stderr);
    for pe in 0..2 {
        let line = format!("rshmem[PE {pe}] info rshmem::plugin::select: {said}");
        assert!(r.stderr.contains(&line), "{line} missing: {}", r.stderr);
    }
    // Host memory reached only through the spml (sshmem anon cannot be mapped), device memory
    // mapped: a put from device memory to a peer's host memory is staged through host memory.
    // The staging buffers are the memheap's pinned host memory (fakedev counts the copies
    // through them), each freed at finalize; a memheap that cannot pin leaves ordinary memory.
    let staged = [env.as_slice(), &[("SHMEM_MCA_sshmem", "anon"), ("FAKEDEV_STATS", "1")]].concat();
    for pinned in ["1", "0"] {
        let with = [staged.as_slice(), &[("FAKEDEV_PINNED", pinned)]].concat();
        let r = oshrun(2, &prog, &with, DEFAULT_TIMEOUT);
        r.assert_all_pes_ok("device_space", 2);
        assert!(r.stderr.contains("reach each other through the spml"), "{}", r.stderr);
        let stats: Vec<Vec<u64>> = r
            .stderr
            .lines()
            .filter_map(|l| l.strip_prefix("fakedev stats: "))
            .map(|l| l.split_whitespace().filter_map(|w| w.parse().ok()).collect())
            .collect();
        assert_eq!(stats.len(), 2, "one line per PE: {}", r.stderr);
        for s in &stats {
            let [made, freed, copies] = s[..] else { panic!("{}", r.stderr) };
            if pinned == "1" {
                assert!(made >= 1 && copies >= 1, "staged through pinned memory: {}", r.stderr);
                assert_eq!(made, freed, "every pinned buffer freed at finalize: {}", r.stderr);
            } else {
                assert_eq!((made, copies), (0, 0), "{}", r.stderr);
            }
        }
    }
    // The GPU space's host shadow is page-locked (the memheap's host_register) as collectives
    // first copy through it, one 2 MiB range at a time, each unlocked before the shadow goes;
    // not under SHMEM_GPU_PIN_SHADOW=0; a memheap that refuses leaves it pageable, with a
    // warning, and the collectives run on.
    let registered = |r: &Run| -> Vec<[u64; 4]> {
        r.stderr
            .lines()
            .filter_map(|l| l.strip_prefix("fakedev registered: "))
            .map(|l| {
                let v: Vec<u64> = l.split_whitespace().filter_map(|w| w.parse().ok()).collect();
                v.try_into().unwrap_or_else(|_| panic!("{}", r.stderr))
            })
            .collect()
    };
    let counted = [env.as_slice(), &[("FAKEDEV_STATS", "1")]].concat();
    let cases: [(&[(&str, &str)], &str); 3] = [
        (&[], "locked"),
        (&[("SHMEM_GPU_PIN_SHADOW", "0")], "off"),
        (&[("FAKEDEV_REGISTER", "0")], "refused"),
    ];
    for (more, case) in cases {
        let with = [counted.as_slice(), more].concat();
        let r = oshrun(2, &prog, &with, DEFAULT_TIMEOUT);
        r.assert_all_pes_ok("device_space", 2);
        let lines = registered(&r);
        assert_eq!(lines.len(), 2, "one line per PE: {}", r.stderr);
        for [ranges, unlocked, copies, errors] in lines {
            assert_eq!(
                errors, 0,
                "{case}: whole pages, no overlap, only what was locked unlocked: {}",
                r.stderr
            );
            assert_eq!(ranges, unlocked, "{case}: every range unlocked: {}", r.stderr);
            if case == "locked" {
                assert!(ranges >= 1 && copies >= 1, "{case}: copies through a locked shadow: {}", r.stderr);
            } else {
                assert_eq!((ranges, copies), (0, 0), "{case}: {}", r.stderr);
            }
        }
        let warned = r.stderr.contains("could not page-lock");
        assert_eq!(warned, case == "refused", "{case}: {}", r.stderr);
    }
    assert_nothing_left(&before, "device_space");
}

/// A program, its PEs and its environment beyond the common one.
type FakecudaRun<'a> = (&'a str, usize, &'a [(&'a str, &'a str)]);

/// The counts fakecuda prints at exit (FAKECUDA_STATS=1), one map per PE.
fn fakecuda_stats(stderr: &str) -> Vec<std::collections::BTreeMap<String, u64>> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("fakecuda stats: "))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.chunks(2).map(|p| (p[0].to_string(), p[1].parse().unwrap())).collect()
        })
        .collect()
}

/// The variables that run a GPU space on fakecuda (its stats printed), then `more`.
fn on_fakecuda(more: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let base = [
        ("LD_LIBRARY_PATH", fakecuda()),
        ("SHMEM_ENABLE_GPU_SPACE", "1"),
        ("SHMEM_GPU_SYMMETRIC_SIZE", "4M"),
        ("SHMEM_MCA_memheap", "cuda,cpu"),
        ("FAKECUDA_STATS", "1"),
    ];
    [base.as_slice(), more].concat()
}

/// Each of `runs` under oshrun with `base` and its own variables: every PE says ok, prints
/// its fakecuda stats, freed every allocation and closed every IPC mapping, and made no call
/// in the wrong context; then `check` sees the run and each PE's stats.
fn fakecuda_runs(
    base: &[(&'static str, &'static str)],
    runs: &[FakecudaRun],
    check: impl Fn(&FakecudaRun, &Run, &std::collections::BTreeMap<String, u64>),
) {
    for run in runs {
        let (name, np, more) = *run;
        let env = [base, more].concat();
        let r = oshrun(np, &c_test(name), &env, DEFAULT_TIMEOUT);
        r.assert_all_pes_ok(name, np);
        let stats = fakecuda_stats(&r.stderr);
        assert_eq!(stats.len(), np, "{name}: one line per PE: {}", r.stderr);
        for st in &stats {
            let n = |k: &str| st.get(k).copied().unwrap_or_else(|| panic!("no {k}: {}", r.stderr));
            assert_eq!(n("alloc"), n("free"), "{name}: every allocation freed: {}", r.stderr);
            assert_eq!(n("ipc_open"), n("ipc_close"), "{name}: every IPC mapping closed: {}", r.stderr);
            assert_eq!(n("context_errors"), 0, "{name}: {}", r.stderr);
            check(run, &r, st);
        }
    }
}

/// memheap cuda itself, on the test CUDA driver fakecuda (tests/plugins/fake_libcuda.c):
/// device memory the CPU cannot touch, contexts current per thread, copies that land only when
/// their stream is synchronised, IPC handles that peers open. device_space runs on it on 1, 2
/// and 4 PEs, through the target's CPU and staged through pinned buffers, default_gpu with
/// shmem_malloc on the device, and with copies waited for by polling; gpu_context checks that a program's own driver-API
/// context stays current across rshmem's calls. Each PE must free every allocation, close
/// every IPC mapping and unpin every buffer by the end of shmem_finalize, and never call the driver without the
/// right context. With two devices, PEs spread over them by local rank unless the program
/// chose one before init.
#[test]
fn memheap_cuda_runs_on_a_stand_in_driver() {
    let base = on_fakecuda(&[]);
    let before = leftovers();
    // Host memory through the spml (sshmem anon), device memory mapped: staged through pinned
    // buffers.
    let staged = [("SHMEM_MCA_plugin_path", fakedev()), ("SHMEM_MCA_sshmem", "anon")];
    let poll = [("SHMEM_MCA_memheap_cuda_poll_copies", "1")];
    let runs: [FakecudaRun; 9] = [
        ("device_space", 1, &[]),
        ("device_space", 2, &poll),
        ("device_space", 2, &[("SHMEM_INFO", "1")]),
        ("device_space", 4, &[]),
        ("device_space", 2, &[("SHMEM_LOCAL_MAP", "0")]),
        ("device_space", 2, &staged),
        ("default_gpu", 2, &[("SHMEM_DEFAULT_SPACE", "GPU"), ("EXPECT_HEAP_SIZE", "4194304")]),
        ("gpu_context", 2, &[]),
        ("gpu_context", 1, &[]),
    ];
    for (name, np, more) in runs {
        let env = [base.as_slice(), more].concat();
        let r = oshrun(np, &c_test(name), &env, DEFAULT_TIMEOUT);
        r.assert_all_pes_ok(name, np);
        let stats = fakecuda_stats(&r.stderr);
        assert_eq!(stats.len(), np, "{name}: one line per PE: {}", r.stderr);
        for s in &stats {
            let n = |k: &str| s.get(k).copied().unwrap_or_else(|| panic!("no {k}: {}", r.stderr));
            assert!(n("alloc") >= 1 && n("copies") >= 1, "{name}: {}", r.stderr);
            assert_eq!(n("alloc"), n("free"), "{name}: every allocation freed: {}", r.stderr);
            assert_eq!(n("ipc_open"), n("ipc_close"), "{name}: every IPC mapping closed: {}", r.stderr);
            assert_eq!(n("pinned"), n("unpinned"), "{name}: every pinned buffer freed: {}", r.stderr);
            // device_space's collectives on device memory copy through the GPU space's host
            // shadow, page-locked as they reach it and unlocked when the space goes.
            assert_eq!(
                n("registered"),
                n("unregistered"),
                "{name}: every locked range unlocked: {}",
                r.stderr
            );
            if name == "device_space" {
                assert!(n("registered") >= 1, "{name}: the shadow page-locked: {}", r.stderr);
            }
            assert_eq!(n("context_errors"), 0, "{name}: {}", r.stderr);
            // Polling: every wait is by querying the stream until it is done (the test driver
            // says "not ready" once per wait), a wait per copy except where several copies are
            // queued and waited for together (direct collectives); else by synchronising.
            let q = n("queries");
            if more == poll {
                assert!(q >= 2 && q % 2 == 0 && q <= 2 * n("copies"), "{name}: {q} queries: {}", r.stderr);
            } else {
                assert_eq!(q, 0, "{name}: {}", r.stderr);
            }
            if more == staged {
                assert!(n("pinned") >= 1, "{name}: staged through pinned memory: {}", r.stderr);
            }
            let mapped = np > 1 && !more.contains(&("SHMEM_LOCAL_MAP", "0"));
            assert_eq!(n("ipc_open") >= 1, mapped, "{name}: peers map device memory by IPC: {}", r.stderr);
        }
        if more.contains(&("SHMEM_INFO", "1")) {
            let said =
                "GPU memory of PE 0: memheap cuda: GPU memory: device 0 of 1 (rshmem fake CUDA device 0, \
                        16.0 GiB) for local rank 0";
            assert!(r.stderr.contains(said), "{said} missing: {}", r.stderr);
        }
    }
    // PEs finalizing explicitly and implicitly (at exit) in one job meet in finalize's fences;
    // the implicit one makes no driver call, so only the explicit ones free.
    let mixed = [base.as_slice(), &[("GPU_CONTEXT_EXIT", "implicit-odd")]].concat();
    let r = oshrun(4, &c_test("gpu_context"), &mixed, DEFAULT_TIMEOUT);
    r.assert_all_pes_ok("gpu_context", 4);
    let freed: Vec<bool> = fakecuda_stats(&r.stderr).iter().map(|s| s["alloc"] == s["free"]).collect();
    assert_eq!(freed.iter().filter(|f| **f).count(), 2, "{}", r.stderr);
    // Two devices: local rank modulo devices, unless a context was current at init.
    let two = [base.as_slice(), &[("FAKECUDA_DEVICES", "2"), ("SHMEM_LOG_LEVEL", "info")]].concat();
    let r = oshrun(2, &c_test("device_space"), &two, DEFAULT_TIMEOUT);
    r.assert_all_pes_ok("device_space", 2);
    for pe in 0..2 {
        let line = format!("memheap cuda: GPU memory: device {pe} of 2 (rshmem fake CUDA device {pe}, ");
        assert!(r.stderr.contains(&line), "PE {pe}: {line} missing: {}", r.stderr);
    }
    let r = oshrun(2, &c_test("gpu_context"), &two, DEFAULT_TIMEOUT);
    r.assert_all_pes_ok("gpu_context", 2);
    let chosen =
        "memheap cuda: GPU memory: device 0 of 2 (rshmem fake CUDA device 0, 16.0 GiB) current at shmem_init";
    assert_eq!(r.stderr.matches(chosen).count(), 2, "{}", r.stderr);
    assert_nothing_left(&before, "memheap cuda on fakecuda");
}

/// The stream-ordered operations (`shmemx_*_on_stream`, tests/c/on_stream.c) on the test
/// driver fakecuda, whose streams run their operations only when synchronized, so anything
/// the library did on the host instead of queuing, or queued out of order, shows in the
/// values. Where every peer is mapped, signals and barriers are stream writes and waits; with
/// no peer mapped only waits on a PE's own device words are (everything else waits for the
/// stream, then runs on the host); a device without stream memory operations queues only
/// copies.
#[test]
fn stream_ordered_operations_run_on_a_stand_in_driver() {
    let dir = fakecuda();
    let before = leftovers();
    let unmapped = [("SHMEM_LOCAL_MAP", "0")];
    let no_ops = [("FAKECUDA_NO_STREAM_MEM_OPS", "1")];
    let single = [("SHMEM_MCA_memheap_cuda_batch_stream_ops", "0")];
    // PEs giving up their core at the points where they read or write what others see
    // (docs/configuration.md, SHMEM_PERTURB), 4 PEs on CI's 2 cores.
    let perturbed = [("SHMEM_PERTURB", "16")];
    let runs: [FakecudaRun; 7] = [
        ("on_stream", 1, &[]),
        ("on_stream", 2, &[]),
        ("on_stream", 4, &[]),
        ("on_stream", 4, &perturbed),
        ("on_stream", 4, &single),
        ("on_stream", 2, &unmapped),
        ("on_stream", 2, &no_ops),
    ];
    fakecuda_runs(&on_fakecuda(&[]), &runs, |&(_, np, more), r, st| {
        // 20 rounds: a signal and two stream barriers each (a write to every other PE), and
        // the first barrier's own-slot write; waits: 3 on signals, and 2 barriers of one per
        // other PE. Then the typed forms' barrier, signal and wait, and the zero-length put's
        // signal and wait. A barrier with other PEs is one batch, unless batches are off.
        let (writes, waits) = (st["writes"], st["waits"]);
        let batched = more.is_empty() || more == perturbed;
        let batches = if np > 1 && batched { 41 } else { 0 };
        assert_eq!(st["batches"], batches, "{more:?}: {}", r.stderr);
        if more == no_ops {
            assert_eq!((writes, waits), (0, 0), "no stream memory operations: {}", r.stderr);
        } else if more == unmapped && np > 1 {
            assert_eq!(writes, 0, "no peer mapped, nothing written on the stream: {}", r.stderr);
            assert!(waits >= 20 * 3, "waits on own words stay on the stream: {waits}: {}", r.stderr);
        } else {
            let others = np as u64 - 1;
            assert_eq!(writes, 1 + 20 * (1 + 2 * others) + others + 2, "stream writes: {}", r.stderr);
            assert_eq!(waits, 20 * (3 + 2 * others) + others + 2, "stream waits: {}", r.stderr);
        }
    });
    // Without a GPU memheap the stream routines end the job, naming the routine and the reason.
    let none = [("LD_LIBRARY_PATH", dir), ("FAKECUDA_DEVICES", "0"), ("ON_STREAM_WITHOUT_GPU", "1")];
    let r = oshrun(2, &c_test("on_stream"), &none, DEFAULT_TIMEOUT);
    assert!(!r.success(), "{}", r.stderr);
    let said = "shmemx_quiet_on_stream: operations on a GPU stream need a GPU memheap, and this PE has none";
    assert!(r.stderr.contains(said), "{said} missing: {}", r.stderr);
    assert!(!r.stderr.contains("returned without a GPU memheap"), "{}", r.stderr);
    assert_nothing_left(&before, "stream-ordered operations on fakecuda");
}

/// The GPU auxiliary specification's host-side API (shmemg.h, tests/c/gpu_aux.c) on the test
/// driver fakecuda: `SHMEM_DEVICE_HOST_INIT` alone makes the GPU heap (no
/// SHMEM_ENABLE_GPU_SPACE), sized by SHMEM_DEVICE_SYMMETRIC_SIZE; the device teams; and, with
/// no device, HOST_INIT not granted and the device teams invalid.
#[test]
fn the_gpu_aux_host_api_runs_on_a_stand_in_driver() {
    let dir = fakecuda();
    let base = [("LD_LIBRARY_PATH", dir), ("FAKECUDA_STATS", "1")];
    let before = leftovers();
    let sized = [
        ("SHMEM_DEVICE_SYMMETRIC_SIZE", "2M"),
        ("SHMEM_GPU_SYMMETRIC_SIZE", "8M"),
        ("EXPECT_HEAP", "2097152"),
    ];
    let unmapped = [("SHMEM_LOCAL_MAP", "0"), ("EXPECT_SHARED", "1"), ("SHMEM_DEVICE_SYMMETRIC_SIZE", "4M")];
    let none = [("FAKECUDA_DEVICES", "0"), ("EXPECT_GPU", "0")];
    let runs: [FakecudaRun; 5] = [
        ("gpu_aux", 1, &sized),
        ("gpu_aux", 2, &sized),
        ("gpu_aux", 4, &sized),
        ("gpu_aux", 2, &unmapped),
        ("gpu_aux", 2, &none),
    ];
    for (name, np, more) in runs {
        let env = [base.as_slice(), more].concat();
        let r = oshrun(np, &c_test(name), &env, DEFAULT_TIMEOUT);
        r.assert_all_pes_ok(name, np);
        if more == none {
            assert!(
                r.stderr.contains("SHMEM_DEVICE_HOST_INIT"),
                "the warning names the request: {}",
                r.stderr
            );
            continue;
        }
        for st in fakecuda_stats(&r.stderr) {
            assert_eq!(st["alloc"], 1, "one GPU heap per PE: {}", r.stderr);
            assert_eq!(st["alloc"], st["free"], "freed at finalize: {}", r.stderr);
            assert_eq!(st["ipc_open"], st["ipc_close"], "{}", r.stderr);
        }
    }
    assert_nothing_left(&before, "the GPU auxiliary API on fakecuda");
}

/// Broadcasts, fcollects and alltoalls on GPU-space buffers (tests/c/gpu_direct_coll.c) copy
/// device to device between the members' copies where every PE maps its host's, and
/// reductions run as one kernel over them (fakecuda stats: the host shadow is never
/// page-locked, so never used; a kernel per reduction), and through the shadow under
/// SHMEM_GPU_DIRECT_COLLECTIVES=0 or SHMEM_LOCAL_MAP=0, or where PEs share a device without
/// MPS; the values are right either way. A device per PE (FAKECUDA_DEVICES=4) unless said.
#[test]
fn collectives_on_mapped_gpu_memory_copy_device_to_device() {
    let before = leftovers();
    let off = [("SHMEM_GPU_DIRECT_COLLECTIVES", "0")];
    let unmapped = [("SHMEM_LOCAL_MAP", "0")];
    let shared = [("FAKECUDA_DEVICES", "1")];
    let in_place = [("IN_PLACE", "1")];
    let perturbed = [("SHMEM_PERTURB", "16")];
    let runs: [FakecudaRun; 8] = [
        ("gpu_direct_coll", 1, &[]),
        ("gpu_direct_coll", 2, &[]),
        ("gpu_direct_coll", 4, &[]),
        ("gpu_direct_coll", 4, &perturbed),
        ("gpu_direct_coll", 2, &off),
        ("gpu_direct_coll", 2, &unmapped),
        ("gpu_direct_coll", 2, &shared),
        ("gpu_direct_coll", 2, &in_place),
    ];
    fakecuda_runs(&on_fakecuda(&[("FAKECUDA_DEVICES", "4")]), &runs, |&(_, _, more), r, st| {
        // 3 rounds of 4 reductions, each one kernel where direct (the test driver runs them).
        let (shadow, kernels) = (st["registered"], st["kernels"]);
        if more.is_empty() || more == perturbed {
            assert_eq!(shadow, 0, "device to device, no shadow: {}", r.stderr);
            assert_eq!(kernels, 12, "a kernel per reduction: {}", r.stderr);
        } else if more == in_place {
            assert!(shadow >= 1, "in place, through the shadow: {}", r.stderr);
            assert_eq!(kernels, 12, "the others on the device: {}", r.stderr);
        } else {
            assert!(shadow >= 1, "{more:?}: through the shadow: {}", r.stderr);
            assert_eq!(kernels, 0, "{more:?}: {}", r.stderr);
        }
    });
    assert_nothing_left(&before, "direct collectives on fakecuda");
}

/// PEs of a host on one GPU without CUDA MPS are told so at init, once, by the first of them
/// (fakecuda gives device d the UUID of sixteen bytes 0xd0 + d); not when MPS serves them (its
/// control pipe in CUDA_MPS_PIPE_DIRECTORY), nor when each PE has a device of its own.
#[test]
fn pes_sharing_a_gpu_without_mps_are_warned_once() {
    let dir = fakecuda();
    let base = [("LD_LIBRARY_PATH", dir), ("SHMEM_DEVICE_SYMMETRIC_SIZE", "2M")];
    let said = "PEs [0, 1] share GPU GPU-d0d0d0d0-d0d0-d0d0-d0d0-d0d0d0d0d0d0 without CUDA MPS";
    let r = oshrun(2, &c_test("gpu_aux"), &base, DEFAULT_TIMEOUT);
    r.assert_all_pes_ok("gpu_aux", 2);
    assert_eq!(r.stderr.matches(said).count(), 1, "{}", r.stderr);
    let r = oshrun(4, &c_test("gpu_aux"), &base, DEFAULT_TIMEOUT);
    r.assert_all_pes_ok("gpu_aux", 4);
    assert_eq!(r.stderr.matches("PEs [0, 1, 2, 3] share GPU").count(), 1, "{}", r.stderr);
    let mps = target_dir().join("rshmem-test-mps");
    std::fs::create_dir_all(&mps).unwrap();
    std::fs::write(mps.join("control"), "").unwrap();
    let served = [base.as_slice(), &[("CUDA_MPS_PIPE_DIRECTORY", mps.to_str().unwrap())]].concat();
    let r = oshrun(2, &c_test("gpu_aux"), &served, DEFAULT_TIMEOUT);
    r.assert_all_pes_ok("gpu_aux", 2);
    assert!(!r.stderr.contains("without CUDA MPS"), "MPS serves them: {}", r.stderr);
    let two = [base.as_slice(), &[("FAKECUDA_DEVICES", "2")]].concat();
    let r = oshrun(2, &c_test("gpu_aux"), &two, DEFAULT_TIMEOUT);
    r.assert_all_pes_ok("gpu_aux", 2);
    assert!(!r.stderr.contains("without CUDA MPS"), "a device each: {}", r.stderr);
}

/// SHMEM_DEFAULT_SPACE=GPU: shmem_malloc and its kin allocate device memory from the GPU
/// space, whose team is SHMEM_TEAM_WORLD, sized by SHMEM_GPU_SYMMETRIC_SIZE, else by
/// SHMEM_SYMMETRIC_SIZE; RMA, atomics and world collectives run on it. Where no GPU space can
/// be made, init fails on every PE saying why, and leaves nothing behind.
#[test]
fn a_gpu_default_space_takes_shmem_malloc_or_init_fails() {
    let prog = c_test("default_gpu");
    let env = on_fakedev(&[("SHMEM_DEFAULT_SPACE", "GPU"), ("SHMEM_SYMMETRIC_SIZE", "8M")]);
    let before = leftovers();
    for np in [2, 4] {
        let sized = [env.as_slice(), &[("EXPECT_HEAP_SIZE", "8388608")]].concat();
        oshrun(np, &prog, &sized, DEFAULT_TIMEOUT).assert_all_pes_ok("default_gpu", np);
    }
    let gpu_sized =
        [env.as_slice(), &[("SHMEM_GPU_SYMMETRIC_SIZE", "2M"), ("EXPECT_HEAP_SIZE", "2097152")]].concat();
    oshrun(2, &prog, &gpu_sized, DEFAULT_TIMEOUT).assert_all_pes_ok("default_gpu", 2);
    assert!(shm_names("rshmem-fakedev-").is_empty(), "{:?}", shm_names("rshmem-fakedev-"));
    let none = [("SHMEM_DEFAULT_SPACE", "GPU"), ("CUDA_VISIBLE_DEVICES", "")];
    let r = oshrun(2, &prog, &none, DEFAULT_TIMEOUT);
    assert!(!r.status.success() && !r.stdout.contains("ok"), "{}", r.stdout);
    assert!(
        r.stderr
            .contains("shmem_init: SHMEM_DEFAULT_SPACE=GPU, but no memheap component serves GPU memory here"),
        "{}",
        r.stderr
    );
    let no_coll = [env.as_slice(), &[("SHMEM_GPU_COLLECTIVES", "0")]].concat();
    let r = oshrun(2, &prog, &no_coll, DEFAULT_TIMEOUT);
    assert!(!r.status.success(), "{}", r.stdout);
    assert!(r.stderr.contains("SHMEM_DEFAULT_SPACE=GPU with SHMEM_GPU_COLLECTIVES=0"), "{}", r.stderr);
    assert_nothing_left(&before, "default_gpu");
}

/// Under SHMEM_GPU_COLLECTIVES=0 a GPU space has no host shadow and no collectives: a
/// collective on its memory ends the job naming the routine and why instead of touching
/// device memory. Destroying the predefined GPU space ends the job too.
#[test]
fn a_collective_on_gpu_memory_is_a_clear_error() {
    let env = on_fakedev(&[
        ("SHMEM_ENABLE_GPU_SPACE", "1"),
        ("DEVICE_MODE", "coll"),
        ("SHMEM_GPU_COLLECTIVES", "0"),
    ]);
    let r = oshrun(2, &c_test("device_space"), &env, DEFAULT_TIMEOUT);
    assert!(!r.status.success(), "{}", r.stdout);
    assert!(
        r.stderr.contains("shmem_float_sum_reduce: dest 0x")
            && r.stderr.contains("is in a GPU space without SHMEM_SPACE_CAP_COLLECTIVES"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("ran a reduction"), "{}", r.stdout);
    // The predefined GPU space is not the program's to destroy.
    let destroy = [&env[..3], &[("DEVICE_MODE", "destroy")]].concat();
    let r = oshrun(2, &c_test("device_space"), &destroy, DEFAULT_TIMEOUT);
    assert!(!r.status.success() && !r.stdout.contains("destroyed"), "{}", r.stdout);
    assert!(
        r.stderr.contains("shmem_space_destroy: the predefined spaces cannot be destroyed"),
        "{}",
        r.stderr
    );
}

/// GPU memory that no PE maps for its peers (SHMEM_LOCAL_MAP=0 here; other hosts in
/// c_programs' `gpu_space_on_fake_device_memory`), with an spml that cannot move device memory
/// (Debian's UCX has no CUDA support): every byte a PE moves to or from a peer's device memory
/// goes as a message the peer's CPU copies in or out (spml ucx's transfers through the
/// target), atomics and waits included, and the GPU space works as when it is mapped.
#[test]
fn gpu_memory_no_peer_maps_is_reached_through_the_targets_cpu() {
    let prog = c_test("device_space");
    let env = on_fakedev(&[
        ("SHMEM_ENABLE_GPU_SPACE", "1"),
        ("SHMEM_GPU_SYMMETRIC_SIZE", "4M"),
        ("SHMEM_LOCAL_MAP", "0"),
    ]);
    let before = leftovers();
    for np in [2, 4] {
        let r = oshrun(np, &prog, &env, DEFAULT_TIMEOUT);
        r.assert_all_pes_ok("device_space", np);
        assert!(!r.stderr.contains("could not be made"), "{}", r.stderr);
    }
    assert!(shm_names("rshmem-fakedev-").is_empty(), "{:?}", shm_names("rshmem-fakedev-"));
    assert_nothing_left(&before, "device_space");
}

/// GPU memory that some PE can map neither itself nor through the spml (here SHMEM_LOCAL_MAP=0,
/// an spml without device memory, and its transfers through the target turned off) is no
/// space: SHMEM_SPACE_GPU stays invalid with a warning naming the setting, and
/// shmem_space_create returns nonzero on every PE. Without a GPU memheap (no
/// SHMEM_MCA_memheap narrowing to fakedev), the same.
#[test]
fn gpu_memory_some_pe_cannot_reach_makes_no_space() {
    let prog = c_test("device_space");
    let unmapped = on_fakedev(&[
        ("SHMEM_ENABLE_GPU_SPACE", "1"),
        ("SHMEM_LOCAL_MAP", "0"),
        ("SHMEM_MCA_spml_ucx_via_target", "0"),
        ("DEVICE_MODE", "absent"),
    ]);
    let r = oshrun(2, &prog, &unmapped, DEFAULT_TIMEOUT);
    r.assert_all_pes_ok("device_space", 2);
    for want in [
        "some PE cannot map every peer's GPU memory",
        "(spml ucx: SHMEM_MCA_spml_ucx_via_target)",
        "SHMEM_ENABLE_GPU_SPACE is set, but a GPU space of 268435456 bytes per PE (SHMEM_GPU_SYMMETRIC_SIZE) could not be made",
    ] {
        assert!(r.stderr.contains(want), "missing `{want}`:\n{}", r.stderr);
    }
    let none = [("SHMEM_ENABLE_GPU_SPACE", "1"), ("CUDA_VISIBLE_DEVICES", ""), ("DEVICE_MODE", "absent")];
    let r = oshrun(2, &prog, &none, DEFAULT_TIMEOUT);
    r.assert_all_pes_ok("device_space", 2);
    assert!(shm_names("rshmem-fakedev-").is_empty());
}
