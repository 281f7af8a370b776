//! The collectives run through the component's C ABI on simulated one-host jobs
//! (`rshmem_plugin_api::testing::job`: a thread per PE, each with its own heap, which every
//! other maps), at the sizes around the largest team served: the arrays of the scratch have
//! one word per member, and a wait word holds a sender's index in `log2 MAX_PES` bits. PE
//! threads record failures instead of panicking, since a PE that stops early would leave the
//! others waiting in a collective.

use super::*;
use rshmem_plugin_api::testing::job::{self as fake, run_job, HEAP_BYTES};
use rshmem_plugin_api::{ScollOps, TeamDesc, DT_I64, OP_SUM, RC_OK, REDUCE_ALL, TEAM_MAPPED};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;

/// Heap layout: the team's scratch, a source and a result buffer.
const SCRATCH: usize = 0;
const SRC: usize = 16384;
const DEST: usize = 65536;
const _: () = assert!(SCRATCH_BYTES <= SRC && DEST + 4 * 65536 / 2 <= HEAP_BYTES);

fn ops() -> &'static ScollOps {
    // SAFETY: the static descriptor's `open` (which records the core) returns the static
    // ScollOps table.
    unsafe { &*(((*shmem_plugin_descriptor()).open.unwrap())(fake::core()) as *const ScollOps) }
}

fn desc(pe: c_int, heap: *mut u8, n: c_int) -> TeamDesc {
    TeamDesc {
        id: 0,
        start: 0,
        stride: 1,
        size: n,
        my_index: pe,
        scratch: heap.wrapping_add(SCRATCH).cast(),
        scratch_len: SCRATCH_BYTES,
        flags: TEAM_MAPPED,
    }
}

fn heap_i64<'a>(heap: *mut u8, off: usize, len: usize) -> &'a mut [i64] {
    // SAFETY: every buffer of the layout lies inside the PE's heap, 8-aligned.
    unsafe { std::slice::from_raw_parts_mut(heap.wrapping_add(off).cast(), len) }
}

/// On a team of `n` PEs (`crowded`: waiting as on a node with more PEs than CPUs): 50 barriers, each holding every PE until all have entered; a
/// broadcast from 4 roots; sums of 1 and 300 elements (staged, then reduce-scatter +
/// allgather); an fcollect of one element per PE. Every result checked on every PE.
fn run_team(n: usize, crowded: bool) -> Vec<String> {
    let errors = Mutex::new(Vec::new());
    let entered = AtomicU64::new(0);
    run_job(n, |pe, heap| {
        let mut errs = Vec::new();
        // SAFETY: a valid description; enable copies it.
        let t: *mut c_void = unsafe { (ops().enable)(&desc(pe, heap, n as c_int)) };
        if t.is_null() {
            errors.lock().unwrap().push(format!("pe {pe}: the team of {n} was declined"));
            return;
        }
        if crowded {
            // SAFETY: `enable` returned this component's team state, not shared yet.
            unsafe { &mut *t.cast::<crate::team::Team>() }.crowd();
        }
        // SAFETY: state from enable, on every PE of the running fake job.
        let barrier = || unsafe { (ops().barrier.unwrap())(t) };
        for i in 0..50u64 {
            entered.fetch_add(1, SeqCst);
            let rc = barrier();
            let seen = entered.load(SeqCst);
            if rc != RC_OK || seen < n as u64 * (i + 1) || seen > n as u64 * (i + 2) {
                errs.push(format!("pe {pe} barrier {i}: rc {rc}, {seen} entries"));
            }
        }
        for root in [0, n - 1, n / 2, 1 % n] {
            heap_i64(heap, SRC, 8).iter_mut().enumerate().for_each(|(j, v)| *v = (root * 100 + j) as i64);
            heap_i64(heap, DEST, 8).fill(-1);
            barrier();
            // SAFETY: state from enable; symmetric buffers of the layout.
            let rc = unsafe {
                (ops().broadcast.unwrap())(
                    t,
                    heap.wrapping_add(DEST).cast(),
                    heap.wrapping_add(SRC).cast(),
                    64,
                    root as c_int,
                )
            };
            let got = heap_i64(heap, DEST, 8);
            if rc != RC_OK || got.iter().enumerate().any(|(j, v)| *v != (root * 100 + j) as i64) {
                errs.push(format!("pe {pe} broadcast from {root}: rc {rc}, {got:?}"));
            }
        }
        for ne in [1usize, 300] {
            heap_i64(heap, SRC, ne)
                .iter_mut()
                .enumerate()
                .for_each(|(j, v)| *v = (pe as usize * 7 + j) as i64);
            heap_i64(heap, DEST, ne).fill(-1);
            barrier();
            // SAFETY: state from enable; symmetric buffers of the layout.
            let rc = unsafe {
                (ops().reduce.unwrap())(
                    t,
                    heap.wrapping_add(DEST).cast(),
                    heap.wrapping_add(SRC).cast(),
                    ne,
                    DT_I64,
                    OP_SUM,
                    REDUCE_ALL,
                )
            };
            let want = |j: usize| (0..n).map(|p| (p * 7 + j) as i64).sum::<i64>();
            let got = heap_i64(heap, DEST, ne);
            if rc != RC_OK {
                errs.push(format!("pe {pe} sum of {ne}: rc {rc}"));
            } else if let Some(j) = (0..ne).find(|&j| got[j] != want(j)) {
                errs.push(format!("pe {pe} sum of {ne}: element {j} is {}, not {}", got[j], want(j)));
            }
        }
        heap_i64(heap, SRC, 1)[0] = 1000 + pe as i64;
        heap_i64(heap, DEST, n).fill(-1);
        barrier();
        // SAFETY: state from enable; symmetric buffers of the layout.
        let rc = unsafe {
            (ops().collect.unwrap())(t, heap.wrapping_add(DEST).cast(), heap.wrapping_add(SRC).cast(), 8, 1)
        };
        let got = heap_i64(heap, DEST, n);
        if rc != RC_OK || got.iter().enumerate().any(|(p, v)| *v != 1000 + p as i64) {
            errs.push(format!("pe {pe} fcollect: rc {rc}"));
        }
        barrier();
        // SAFETY: state from enable, not used after this.
        unsafe { (ops().disable)(t) };
        errors.lock().unwrap().extend(errs);
    });
    errors.into_inner().unwrap()
}

#[test]
fn teams_up_to_the_largest_served_run_every_collective() {
    for n in [2, 3, 63, 64, 65, 127, 128, 129, MAX_PES] {
        // Crowded: the waits of a node with more PEs than CPUs (the machine's 2 CPUs hold
        // them all), which keep the members of this PE's CPU in a set.
        for crowded in [false, true] {
            let errors = run_team(n, crowded);
            assert!(
                errors.is_empty(),
                "{n} PEs (crowded: {crowded}): {:#?}",
                &errors[..errors.len().min(10)]
            );
        }
    }
}

#[test]
fn a_team_larger_than_the_largest_served_is_declined() {
    let declined = Mutex::new(0);
    run_job(MAX_PES + 1, |pe, heap| {
        // SAFETY: a valid description; enable copies it.
        let t = unsafe { (ops().enable)(&desc(pe, heap, MAX_PES as c_int + 1)) };
        if t.is_null() {
            *declined.lock().unwrap() += 1;
        } else {
            // SAFETY: state from enable, not used after this.
            unsafe { (ops().disable)(t) };
        }
    });
    assert_eq!(declined.into_inner().unwrap(), MAX_PES + 1, "every member declines alike");
}
