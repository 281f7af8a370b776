//! Tier 2 for Rust: the safe API's example programs (rshmem/examples) as multi-PE jobs, under
//! the launcher `RSHMEM_TEST_LAUNCHER` names (oshrun by default; mpirun, srun and emulated hosts
//! in scripts/test.sh), and run from elsewhere as a single PE: a Rust program finds the plugins
//! without sitting beside them.

use rshmem_tests::*;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// The example `name` of the rshmem crate, built (once per test process) for the profile these
/// tests run in.
fn example(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    let dir = target_dir();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = std::process::Command::new(cargo);
        cmd.args(["build", "--quiet", "-p", "rshmem", "--examples"]).current_dir(repo());
        if dir.file_name().is_some_and(|p| p == "release") {
            cmd.arg("--release");
        }
        let st = cmd.status().expect("cargo runs");
        assert!(st.success(), "building the rshmem examples failed");
    });
    let p = dir.join("examples").join(name);
    assert!(p.exists(), "{} was not built", p.display());
    p
}

fn nps() -> Vec<usize> {
    match Launcher::from_env() {
        Launcher::Hosts(h) => (1..=4 / h).map(|k| k * h).collect(),
        _ => vec![1, 2, 3, 4],
    }
}

/// The configurations of the C programs' matrix that matter to the Rust layer: the default
/// mapped path, and (under oshrun) everything through UCX.
fn configurations() -> Vec<(usize, Vec<(&'static str, &'static str)>)> {
    let mut v: Vec<_> = nps().into_iter().map(|np| (np, vec![])).collect();
    if Launcher::from_env() == Launcher::Oshrun {
        v.push((4, vec![("SHMEM_LOCAL_MAP", "0"), ("SHMEM_MCA_sshmem", "ucx")]));
    }
    v
}

#[test]
fn the_ring_passes_its_token_around() {
    let prog = example("ring");
    for (np, env) in configurations() {
        let r = job(np, &prog, &env, TIMEOUT);
        r.assert_all_pes_ok("ring", np);
        assert!(r.stdout.contains(&format!("ring: {np} PEs, 1000 rounds")), "{}", r.stdout);
    }
}

#[test]
fn the_tour_checks_every_part_of_the_safe_api() {
    let prog = example("tour");
    for (np, env) in configurations() {
        job(np, &prog, &env, TIMEOUT).assert_all_pes_ok("tour", np);
    }
}

/// Threads at `SHMEM_THREAD_MULTIPLE`: moved and private contexts, the shared default context
/// and shared views, every thread's atomics, puts and signals counted on every PE; then
/// collectives from three threads at once on three teams (two lent to threads), each round's
/// results checked.
#[test]
fn threads_share_contexts_and_views_at_thread_multiple() {
    let prog = example("threads");
    for (np, env) in configurations() {
        let r = job(np, &prog, &env, TIMEOUT);
        r.assert_all_pes_ok("threads", np);
        assert!(r.stdout.contains(&format!("threads: {np} PEs x 4 threads")), "{}", r.stdout);
        assert!(r.stdout.contains("threads: collectives from 3 threads on 3 teams"), "{}", r.stdout);
    }
}

/// A panic in one PE ends the whole job with the panic's message, instead of leaving the others
/// waiting for it (the runtime's drop during unwinding is `shmem_global_exit`).
#[test]
fn a_panicking_pe_ends_the_job() {
    let prog = example("ring");
    let np = if matches!(Launcher::from_env(), Launcher::Hosts(h) if h > 2) { 4 } else { 2 };
    let r = job(np, &prog, &[("RSHMEM_RING_PANIC_PE", "1")], TIMEOUT);
    assert!(!r.status.success(), "the job succeeded:\n{}", r.stdout);
    assert!(r.elapsed < Duration::from_secs(30), "the job took {:?} to end", r.elapsed);
    assert!(r.stderr.contains("PE 1 panics as asked"), "{}", r.stderr);
}

/// A Rust program copied anywhere, run without a launcher, is one PE and finds the plugins
/// where the core was built (or installed), not beside itself.
#[test]
fn a_rust_program_finds_the_plugins_from_anywhere() {
    let scratch = Scratch::new("rust-anywhere");
    let prog = scratch.0.join("ring");
    std::fs::copy(example("ring"), &prog).unwrap();
    let o = std::process::Command::new(&prog).arg("10").current_dir(&scratch.0).output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("ring: 1 PEs, 10 rounds") && out.contains("ring: PE 0 ok"), "{out}");
}

/// The histogram kernel (random remote atomic increments, then every PE checks its counters
/// against a replay of every PE's random stream), from Rust and from C, on the same job sizes.
#[test]
fn the_histogram_kernel_counts_every_update_in_rust_and_in_c() {
    let rust = example("histogram");
    let c = build_c(&source_dir().join("bench/histogram.c"), &[]);
    let env = [("HIST_N", "20000"), ("HIST_T", "100")];
    for np in nps() {
        for prog in [&rust, &c] {
            let r = job(np, prog, &env, TIMEOUT);
            r.assert_all_pes_ok("histogram", np);
            assert!(r.stdout.contains(&format!("RESULT histogram_updates_per_s {np} ")), "{}", r.stdout);
        }
    }
}

/// Device memory from Rust (`rshmem/examples/device.rs`): on the stand-in CUDA driver, whose
/// device memory this PE's CPU cannot touch (a load or store there faults), every PE's device
/// arrays are written, read, put to, signalled and added into through the library only, a GPU
/// space is created and destroyed with a scope, and every allocation and IPC mapping is given
/// back at the end. Without a GPU the same program
/// finds no GPU space and says so.
#[test]
fn device_arrays_are_reached_only_through_the_library() {
    let prog = example("device");
    let np = nps().into_iter().find(|&k| k >= 2).unwrap_or(2);
    let plain = job(np, &prog, &[], TIMEOUT);
    plain.assert_ok("device (no GPU)");
    assert_eq!(plain.stdout.matches("no GPU space here").count(), np, "{}", plain.stdout);
    if Launcher::from_env() != Launcher::Oshrun {
        return; // the stand-in driver's variables reach the PEs under oshrun
    }
    for (np, more) in configurations() {
        let base = [
            ("LD_LIBRARY_PATH", fakecuda()),
            ("SHMEM_GPU_SYMMETRIC_SIZE", "4M"),
            ("SHMEM_MCA_memheap", "cuda,cpu"),
            ("FAKECUDA_STATS", "1"),
            ("RSHMEM_EXPECT_GPU", "1"),
        ];
        let r = job(np, &prog, &[base.as_slice(), &more].concat(), TIMEOUT);
        r.assert_all_pes_ok("device", np);
        let threaded = r.stdout.matches("threads put and added through shared views").count();
        assert_eq!(threaded, np, "every PE ran its threads part: {}", r.stdout);
        let stats: Vec<&str> = r.stderr.lines().filter_map(|l| l.strip_prefix("fakecuda stats: ")).collect();
        assert_eq!(stats.len(), np, "one line per PE: {}", r.stderr);
        for st in stats {
            let w: Vec<&str> = st.split_whitespace().collect();
            let n = |k: &str| -> u64 {
                let i = w.iter().position(|x| *x == k).unwrap_or_else(|| panic!("no {k}: {st}"));
                w[i + 1].parse().unwrap()
            };
            // The predefined GPU space and the one the example creates.
            assert!(n("alloc") >= 2 && n("copies") >= 4, "the device was used: {st}");
            assert_eq!(n("alloc"), n("free"), "every allocation freed: {st}");
            assert_eq!(n("ipc_open"), n("ipc_close"), "every IPC mapping closed: {st}");
            assert_eq!(n("context_errors"), 0, "{st}");
        }
    }
}
