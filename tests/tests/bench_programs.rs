//! The benchmark programs must keep building with our oshcc (the same sources build with Open
//! MPI's), and the hot-path program must run. Timings are not checked here: see
//! scripts/bench.sh and docs/performance.md.

use rshmem_tests::*;

#[test]
fn benchmark_sources_build_and_the_hot_path_program_runs() {
    let dir = source_dir().join("bench");
    for name in [
        "put_get_latency",
        "put_get_bandwidth",
        "collectives",
        "coll_sizes",
        "atomics",
        "signal",
        "hotpath",
        "ctx_amo",
        "netpath",
        "hints",
        "hot_ops",
        "barrier_cpus",
        "get_loop",
        "get_percentiles",
        "startup",
        "histogram",
        "bcast_trace",
        "team_split",
    ] {
        build_c(&dir.join(format!("{name}.c")), &["-Wno-unused-variable"]);
    }
    let prog = build_c(&dir.join("hotpath.c"), &[]);
    oshrun(2, &prog, &[], DEFAULT_TIMEOUT).assert_ok("hotpath");
    let hot = build_c(&dir.join("hot_ops.c"), &[]);
    let r = oshrun(2, &hot, &[("HOT_N", "1000")], DEFAULT_TIMEOUT);
    r.assert_ok("hot_ops");
    assert!(r.stdout.contains("RESULT hot_fetch_add 8 "), "{}", r.stdout);
    let st = build_c(&dir.join("startup.c"), &[]);
    let r = oshrun(3, &st, &[], DEFAULT_TIMEOUT);
    r.assert_ok("startup");
    assert!(r.stdout.contains("RESULT startup_init_slowest_pe 3 "), "{}", r.stdout);
    let ts = build_c(&dir.join("team_split.c"), &[]);
    let r = oshrun(5, &ts, &[], DEFAULT_TIMEOUT);
    r.assert_ok("team_split");
    assert!(r.stdout.contains("RESULT team_split_2d_rows_of_4 5 "), "{}", r.stdout);
    let gp = build_c(&dir.join("get_percentiles.c"), &[]);
    let r = oshrun(2, &gp, &[("ITERS", "1000"), ("OP", "1")], DEFAULT_TIMEOUT);
    r.assert_ok("get_percentiles");
    assert!(r.stdout.contains("RESULT fadd_p99 8 "), "{}", r.stdout);
    // The collective benchmark at small sizes, so that a collective path that hangs or fails
    // in the benchmark's shape (active-set calls on the world, alternating pSync) shows here.
    let coll = build_c(&dir.join("coll_sizes.c"), &[]);
    for (np, whole) in [(2, "0"), (3, "0"), (3, "1")] {
        let r = oshrun(np, &coll, &[("COLL_MAX", "4096"), ("COLL_WHOLE", whole)], DEFAULT_TIMEOUT);
        r.assert_ok("coll_sizes");
        assert!(r.stdout.contains("RESULT coll_alltoall 1024 "), "{}", r.stdout);
        assert!(r.stdout.contains("RESULT coll_collect 4096 "), "{}", r.stdout);
    }
    // OSU's way (the mean over the PEs, a broadcast into its own buffer), on 4 PEs: on a
    // 2-core machine that is the crowded node whose barrier lets a broadcast's root lead.
    let env = [("COLL_MAX", "256"), ("COLL_AVG", "1"), ("COLL_INPLACE", "1"), ("COLL_ONLY", "broadcast")];
    let r = oshrun(4, &coll, &env, DEFAULT_TIMEOUT);
    r.assert_ok("coll_sizes, OSU's way");
    assert!(r.stdout.contains("RESULT coll_broadcast 256 "), "{}", r.stdout);
    let tr = build_c(&dir.join("bcast_trace.c"), &[]);
    let r = oshrun(4, &tr, &[("TRACE_ITERS", "400"), ("TRACE_SHOW", "3")], DEFAULT_TIMEOUT);
    r.assert_ok("bcast_trace");
    assert_eq!(r.stdout.lines().filter(|l| l.starts_with("TRACE ")).count(), 12, "{}", r.stdout);
    assert_eq!(r.stdout.lines().filter(|l| l.starts_with("AVG ")).count(), 4, "{}", r.stdout);
}
