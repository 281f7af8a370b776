//! Failure handling: bad input ends the job with a clear message; a dead PE or a global exit
//! ends every PE promptly with the right status; bad selections fail init with a useful list.

use rshmem_tests::*;
use std::time::Duration;

const T: Duration = Duration::from_secs(60);

#[test]
fn put_to_a_pe_out_of_range_names_the_routine_and_pe() {
    let r = oshrun(2, &c_test("bad_pe"), &[], T);
    assert_eq!(r.code(), Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("rshmem[PE 0] shmem_long_p: pe 5 is out of range: the job has 2 PEs"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("not reached"));
}

#[test]
fn put_to_a_stack_address_is_refused() {
    let r = oshrun(2, &c_test("not_symmetric"), &[], T);
    assert_eq!(r.code(), Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("shmem_long_put: dest 0x") && r.stderr.contains("is not a symmetric address"),
        "{}",
        r.stderr
    );
}

/// After the last finalize the library stays ready to be initialized again (OpenSHMEM 1.6),
/// connections included: a PE that leaves then is expected, whether the others go on without
/// the library (the job succeeds) or initialize again without it (the job ends, naming it).
#[test]
fn a_pe_leaving_after_the_last_finalize_ends_nothing_unless_others_initialize_again() {
    for np in [2, 3] {
        let env = [("MODE", "linger"), ("SHMEM_LOCAL_MAP", "0")];
        let r = oshrun(np, &c_test("after_finalize"), &env, T);
        assert_eq!(r.code(), Some(0), "{}", r.stderr);
        for pe in 1..np {
            assert!(r.stdout.contains(&format!("after_finalize: PE {pe} ok")), "{}", r.stdout);
        }
        assert!(!r.stderr.contains("unreachable"), "{}", r.stderr);
    }
    // PEs finalizing explicitly (keeping the runtime) and at exit (tearing it down) meet in
    // the same synchronisations, a created space alive.
    let r = oshrun(3, &c_test("after_finalize"), &[("MODE", "mixed")], T);
    r.assert_all_pes_ok("after_finalize", 3);
    let r = oshrun(3, &c_test("after_finalize"), &[("MODE", "leave")], T);
    r.assert_fails_saying("oshrun: PE 0 (pid ");
    // PE 1, PE 2 or both wait by the time oshrun looks.
    assert!(r.stderr.contains("has exited, but PE(s) ["), "{}", r.stderr);
    assert!(r.stderr.contains("] wait for it in shmem_init"), "{}", r.stderr);
    assert!(!r.stdout.contains("not reached"), "{}", r.stdout);
    assert!(r.elapsed < Duration::from_secs(10), "job took {:?}", r.elapsed);
}

#[test]
fn a_killed_pe_ends_the_job_within_a_second_naming_it() {
    let r = oshrun(4, &c_test("die"), &[], T);
    assert_eq!(r.code(), Some(128 + 9), "{}", r.stderr);
    assert!(r.stderr.contains("oshrun: PE 2 (pid "), "{}", r.stderr);
    assert!(r.stderr.contains("was killed by signal 9"), "{}", r.stderr);
    // The survivors sleep 30 s after the barriers: the job must not wait for them (a bound
    // with slack for a loaded machine; measured ~0.1 s).
    assert!(r.elapsed < Duration::from_secs(5), "job took {:?}", r.elapsed);
}

#[test]
fn global_exit_ends_every_pe_with_its_status() {
    let r = oshrun(4, &c_test("global_exit"), &[], T);
    assert_eq!(r.code(), Some(7), "{}", r.stderr);
    assert!(r.elapsed < Duration::from_secs(20), "job took {:?}", r.elapsed);
}

#[test]
fn an_unknown_spml_fails_init_listing_the_ones_that_exist() {
    let r = oshrun(2, &c_test("hello"), &[("SHMEM_MCA_spml", "nonexistent")], T);
    assert_ne!(r.code(), Some(0));
    assert!(
        r.stderr.contains("SHMEM_MCA_spml=nonexistent: there is no spml component named 'nonexistent'"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("the spml components that exist are: ucx"), "{}", r.stderr);
}

#[test]
fn an_excluded_only_backend_is_reported() {
    let r = oshrun(1, &c_test("hello"), &[("SHMEM_MCA_sshmem", "^mmap,ucx")], T);
    assert_ne!(r.code(), Some(0));
    assert!(r.stderr.contains("no sshmem component is available"), "{}", r.stderr);
}

#[test]
fn oshrun_without_a_program_explains_usage() {
    let o = std::process::Command::new(target_dir().join("oshrun")).arg("-np").arg("2").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("usage: oshrun -np N"));
}

#[test]
fn a_job_whose_init_fails_leaves_no_shared_memory_behind() {
    let before = shm_names("rshmem-");
    let r = oshrun(3, &c_test("init_mismatch"), &[], T);
    assert_eq!(r.code(), Some(1), "{}", r.stderr);
    // PE 1 finds its setting differs from PE 0's; PEs 0 and 2, which agree with each other,
    // may first find PE 1's heap segment of another length. Whichever PE says it first, the
    // launcher ends the job on that, and either message names the setting and PE 1.
    let settings =
        "SHMEM_SYMMETRIC_SIZE must have the same value on every PE (memory-spaces rule), but PE 0 has 4194304, PE 1 has 8388608";
    let segment = r.stderr.contains("bytes on PE 1 but ")
        && r.stderr
            .contains("bytes here: every PE must run the same program with the same SHMEM_SYMMETRIC_SIZE");
    assert!(r.stderr.contains(settings) || segment, "{}", r.stderr);
    assert!(!r.stdout.contains("not reached"), "{}", r.stdout);
    let left: Vec<_> = shm_names("rshmem-").difference(&before).cloned().collect();
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
}

#[test]
fn space_variables_that_differ_across_pes_fail_init_naming_variable_and_pe() {
    for (var, a, b, said) in [
        ("SHMEM_ENABLE_GPU_SPACE", "", "1", "but PE 0 has it unset, PE 1 has set"),
        ("SHMEM_CPU_SYMMETRIC_SIZE", "2M", "3M", "but PE 0 has 2097152, PE 1 has 3145728"),
        ("SHMEM_GPU_SYMMETRIC_SIZE", "1.5G", "1G", "but PE 0 has 1610612736, PE 1 has 1073741824"),
    ] {
        let env = [("MISMATCH_VAR", var), ("MISMATCH_A", a), ("MISMATCH_B", b)];
        let r = oshrun(3, &c_test("init_mismatch"), &env, T);
        assert_eq!(r.code(), Some(1), "{var}: {}", r.stderr);
        let want = format!("{var} must have the same value on every PE (memory-spaces rule), {said}");
        assert!(r.stderr.contains(&want), "{var}: wanted `{want}` in:\n{}", r.stderr);
        assert!(!r.stdout.contains("not reached"), "{}", r.stdout);
    }
    // Whether GPU spaces get a host shadow: made collectively, so it must match too.
    let env = [("MISMATCH_VAR", "SHMEM_GPU_COLLECTIVES"), ("MISMATCH_A", "1"), ("MISMATCH_B", "0")];
    let r = oshrun(3, &c_test("init_mismatch"), &env, T);
    assert_eq!(r.code(), Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("SHMEM_GPU_COLLECTIVES must have the same value on every PE (every PE makes a GPU space's host shadow, or none does), but PE 0 has 1, PE 1 has 0"),
        "{}",
        r.stderr
    );
    // The same value spelt two ways is the same value (the default space unset means CPU, a
    // boolean unset its default).
    for (var, a, b) in [
        ("SHMEM_CPU_SYMMETRIC_SIZE", "4M", "4194304"),
        ("SHMEM_DEFAULT_SPACE", "", "cpu"),
        ("SHMEM_GPU_COLLECTIVES", "", "yes"),
    ] {
        let env = [("MISMATCH_VAR", var), ("MISMATCH_A", a), ("MISMATCH_B", b)];
        let r = oshrun(3, &c_test("init_mismatch"), &env, T);
        r.assert_ok(var);
        assert_eq!(r.stdout.matches("not reached: PE").count(), 3, "{}", r.stdout);
    }
}

/// A collective component picks its algorithm from its parameters, so members that read other
/// values would run different algorithms and wait for each other forever: init refuses instead.
#[test]
fn collective_parameters_that_differ_across_pes_fail_init_naming_them() {
    let var = "SHMEM_MCA_scoll_shm_bcast_push_max";
    let env = [("MISMATCH_VAR", var), ("MISMATCH_A", "64K"), ("MISMATCH_B", "1K")];
    let r = oshrun(3, &c_test("init_mismatch"), &env, T);
    assert_eq!(r.code(), Some(1), "{}", r.stderr);
    let want = format!(
        "{var} must have the same value on every PE (a collective component chooses its algorithm from it), but PE 0 has 65536, PE 1 has 1024"
    );
    assert!(r.stderr.contains(&want), "wanted `{want}` in:\n{}", r.stderr);
    assert!(!r.stdout.contains("not reached"), "{}", r.stdout);
    // Unset on PE 0 is its default: the same value spelt otherwise elsewhere is no mismatch.
    let env = [("MISMATCH_VAR", var), ("MISMATCH_A", ""), ("MISMATCH_B", "65536")];
    let r = oshrun(3, &c_test("init_mismatch"), &env, T);
    r.assert_ok(var);
}

/// An algorithm scoll basic does not have ends the job at init, naming the variable and the
/// choices, on every PE alike.
#[test]
fn an_unknown_collective_algorithm_fails_init_naming_it() {
    let env = [("SHMEM_MCA_scoll", "basic"), ("SHMEM_MCA_scoll_basic_reduce_algorithm", "ring")];
    let r = oshrun(2, &c_test("hello"), &env, T);
    assert_eq!(r.code(), Some(1), "{}", r.stderr);
    let want = "SHMEM_MCA_scoll_basic_reduce_algorithm=\"ring\": not an algorithm of scoll basic (expected one of: auto, tree, split, linear)";
    assert!(r.stderr.contains(want), "wanted `{want}` in:\n{}", r.stderr);
    assert!(!r.stdout.contains("Hello"), "{}", r.stdout);
}
