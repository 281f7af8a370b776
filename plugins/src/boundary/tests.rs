//! The two policies, with the stand-in core. A panic in a `slot` ends the process, so those
//! cases run in a child: this test binary again, filtered to a `child_*` test that does nothing
//! unless `CHILD` is set.

use super::*;
use crate::testing::{fake_core, logged, ABORT_EXIT};
use std::process::Command;

const CHILD: &str = "RSHMEM_BOUNDARY_TEST_CHILD";

fn core() -> &'static CoreServices {
    fake_core(0, 2, "boundary-test", None)
}

#[test]
fn slot_returns_what_the_body_returns() {
    assert_eq!(slot("memheap bump", "alloc", || 41 + 1), 42);
}

#[test]
fn panic_message_reads_both_payloads() {
    let e = catch_unwind(|| panic!("static text")).unwrap_err();
    assert_eq!(panic_message(&*e), "static text");
    let e = catch_unwind(|| panic!("formatted {}", 7)).unwrap_err();
    assert_eq!(panic_message(&*e), "formatted 7");
}

#[test]
fn a_panicking_probe_declines_and_says_so_in_the_log() {
    set_core(core());
    let got = probe(Framework::Memheap, "bump", "open", 7, || -> i32 { panic!("no device") });
    assert_eq!(got, 7);
    let want = "memheap bump: open panicked: no device; the component declines";
    assert!(logged().iter().any(|l| l == want), "log: {:?}", logged());
}

#[test]
fn a_panicking_query_answers_unavailable() {
    let mut r = QueryResult::default();
    fn query(_: &'static CoreServices, r: &mut QueryResult) {
        r.available = 1;
        panic!("probe failed half-way");
    }
    // SAFETY: a valid core table and result.
    unsafe { query_shim(Framework::Scoll, "x", core(), &mut r, query) };
    assert_eq!(r.available, 0);
    assert_eq!(r.reason_str(), "query panicked (see the log)");
}

#[test]
fn a_query_without_a_core_is_not_run() {
    let mut r = QueryResult::default();
    fn query(_: &'static CoreServices, r: &mut QueryResult) {
        r.available = 1;
    }
    // SAFETY: NULL core, valid result: the shim must not call `query`.
    unsafe { query_shim(Framework::Scoll, "x", std::ptr::null(), &mut r, query) };
    assert_eq!(r.available, 0);
}

/// Run the child test `name` and return its exit code (None: killed by a signal) and stderr.
fn run_child(name: &str) -> (Option<i32>, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_panicking_slot_ends_the_job_through_the_core_naming_the_slot() {
    let (code, err) = run_child("boundary::tests::child_slot_panics_with_a_core");
    assert_eq!(code, Some(ABORT_EXIT), "stderr: {err}");
    assert!(err.contains("fake core abort(1): memheap bump alloc panicked: bad free list"), "stderr: {err}");
    assert!(!err.contains("after the slot"), "the slot returned: {err}");
}

#[test]
fn a_panicking_slot_without_a_core_aborts_the_process_with_the_message() {
    let (code, err) = run_child("boundary::tests::child_slot_panics_without_a_core");
    assert_eq!(code, None, "expected death by SIGABRT; stderr: {err}");
    assert!(err.contains("rshmem: spml x put panicked: lost"), "stderr: {err}");
}

#[test]
fn child_slot_panics_with_a_core() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    set_core(core());
    slot("memheap bump", "alloc", || -> usize { panic!("bad free list") });
    eprintln!("after the slot");
}

#[test]
fn child_slot_panics_without_a_core() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    slot("spml x", "put", || -> i32 { panic!("lost") });
}
