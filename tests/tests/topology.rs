//! Topology through hwloc (issue 8 item 6): `oshrun --bind-to core|numa|none` (and
//! `core:overload-allowed`, with more PEs than cores) binds each PE
//! from the host's real topology, a PE bound within one NUMA node gets its symmetric heap bound
//! to that node, and `shmem_info --topology` prints the host's summary.

use rshmem_tests::*;
use rshmem_topology::Host;
use std::process::Command;
use std::time::Duration;

const T: Duration = Duration::from_secs(60);

/// (cpus, heap policy) per PE, from `binding.c`'s lines.
fn placements(r: &Run, np: usize) -> Vec<(String, String)> {
    r.assert_all_pes_ok("binding", np);
    (0..np)
        .map(|pe| {
            let prefix = format!("binding: PE {pe} cpus ");
            let line = r.stdout.lines().find_map(|l| l.strip_prefix(&prefix)).expect("a line per PE");
            let (cpus, heap) = line.split_once(" heap ").expect("cpus and heap");
            (cpus.to_string(), heap.to_string())
        })
        .collect()
}

fn all_cpus(h: &Host) -> String {
    let mut all: Vec<usize> = h.cores().concat();
    all.sort_unstable();
    rshmem_topology::cpu_list(&all)
}

#[test]
fn bind_to_core_gives_each_pe_a_core_and_its_heap_that_core_s_node() {
    let h = Host::load().unwrap();
    let cores = h.cores();
    let np = cores.len().min(4);
    let p = placements(&oshrun_with(np, &["--bind-to", "core"], &c_test("binding"), &[], T), np);
    for (pe, (cpus, heap)) in p.iter().enumerate() {
        assert_eq!(*cpus, rshmem_topology::cpu_list(&cores[pe]), "PE {pe}");
        let nodes = h.numa_nodes();
        let node = nodes.iter().find(|(_, c, _)| cores[pe].iter().all(|x| c.contains(x))).unwrap().0;
        // Asked to bind to every node there is (a machine of one node), hwloc sets "local
        // allocation" (numa_maps: "prefer" without a node), which places pages on that node
        // all the same; an unplaced heap would show "default".
        let want = if nodes.len() == 1 { "prefer".to_string() } else { format!("bind:{node}") };
        assert_eq!(*heap, want, "PE {pe}'s heap");
    }
}

#[test]
fn bind_to_numa_gives_each_pe_its_node_s_cpus() {
    let h = Host::load().unwrap();
    let nodes = h.numa_nodes();
    let p = placements(&oshrun_with(2, &["--bind-to", "numa"], &c_test("binding"), &[], T), 2);
    for (pe, (cpus, heap)) in p.iter().enumerate() {
        let node = nodes.iter().find(|(_, c, _)| rshmem_topology::cpu_list(c) == *cpus);
        let node =
            node.unwrap_or_else(|| panic!("PE {pe} runs on {cpus}, not a NUMA node's CPUs: {nodes:?}"));
        // Bound to a node smaller than the machine, the heap follows; bound to every CPU (a
        // machine of one node), the PE is not bound at all and keeps the default policy.
        let want = if *cpus == all_cpus(&h) { "default".to_string() } else { format!("bind:{}", node.0) };
        assert_eq!(*heap, want, "PE {pe}");
    }
}

#[test]
fn unbound_pes_run_anywhere_with_the_default_policy() {
    let h = Host::load().unwrap();
    for opts in [&[][..], &["--bind-to", "none"][..]] {
        let p = placements(&oshrun_with(2, opts, &c_test("binding"), &[], T), 2);
        for (cpus, heap) in p {
            assert_eq!(cpus, all_cpus(&h), "{opts:?}");
            assert_eq!(heap, "default", "{opts:?}");
        }
    }
}

#[test]
fn more_pes_than_cores_run_unbound_with_a_warning() {
    let h = Host::load().unwrap();
    let np = h.cores().len() + 1;
    let r = oshrun_with(np, &["--bind-to", "core"], &c_test("binding"), &[], T);
    assert!(r.stderr.contains("--bind-to core:") && r.stderr.contains("the PEs run unbound"), "{}", r.stderr);
    assert!(r.stderr.contains("core:overload-allowed"), "the message names the way out: {}", r.stderr);
    for (cpus, _) in placements(&r, np) {
        assert_eq!(cpus, all_cpus(&h));
    }
}

#[test]
fn more_pes_than_cores_share_the_cores_out_evenly_when_overload_is_allowed() {
    let h = Host::load().unwrap();
    let cores = h.cores();
    let np = 2 * cores.len() + 1;
    let r = oshrun_with(np, &["--bind-to", "core:overload-allowed"], &c_test("binding"), &[], T);
    assert!(!r.stderr.contains("unbound"), "{}", r.stderr);
    for (pe, (cpus, _)) in placements(&r, np).iter().enumerate() {
        assert_eq!(*cpus, rshmem_topology::cpu_list(&cores[pe % cores.len()]), "PE {pe}");
    }
}

/// Whether a host has more PEs than CPUs is judged from the CPUs its PEs may use between them:
/// a PE bound to a core of its own sees one CPU, and used to take its host for oversubscribed
/// (its waits then yielded the CPU at every look: a put-with-signal ping-pong took 0.34 µs
/// instead of 0.055, docs/performance.md).
#[test]
fn pes_bound_to_their_own_cores_do_not_count_as_oversubscribed() {
    let cores = Host::load().unwrap().cores().len();
    let log = [("RUST_LOG", "rshmem::init=debug")];
    let np = cores.min(4);
    let r = oshrun_with(np, &["--bind-to", "core"], &c_test("binding"), &log, T);
    r.assert_all_pes_ok("binding", np);
    let want = format!("{np} PE(s) on this host, {np} CPU(s) between them: waits spin first");
    assert_eq!(r.stderr.matches(&want).count(), np, "{}", r.stderr);
    let np = 2 * cores;
    let r = oshrun_with(np, &["--bind-to", "core:overload-allowed"], &c_test("binding"), &log, T);
    r.assert_all_pes_ok("binding", np);
    let want = format!("{np} PE(s) on this host, {cores} CPU(s) between them: waits yield the CPU at once");
    assert_eq!(r.stderr.matches(&want).count(), np, "{}", r.stderr);
}

#[test]
fn an_unknown_binding_is_refused() {
    let r = oshrun_with(2, &["--bind-to", "socket"], &c_test("binding"), &[], T);
    assert_ne!(r.code(), Some(0));
    assert!(
        r.stderr.contains("--bind-to socket: use core, core:overload-allowed, numa or none"),
        "{}",
        r.stderr
    );
}

#[test]
fn shmem_info_prints_the_topology() {
    let out = Command::new(target_dir().join("shmem_info")).arg("--topology").output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    let h = Host::load().unwrap();
    assert!(out.status.success());
    assert!(s.contains(&format!("{} core(s)", h.cores().len())), "{s}");
    for (idx, cpus, _) in h.numa_nodes() {
        assert!(s.contains(&format!("NUMA node {idx}: CPUs {}", rshmem_topology::cpu_list(&cpus))), "{s}");
    }
}
