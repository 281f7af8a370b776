//! Unit tests: the pure helpers, and the collectives run through the component's C ABI on a
//! simulated job (`rshmem_plugin_api::testing::job`). PE threads record failures instead of panicking, since a PE
//! that stops early would leave the others waiting in a collective.

use super::*;
use rshmem_plugin_api::testing::job::{self as fake, run_job, HEAP_BYTES};
use rshmem_plugin_api::{Framework, QueryResult, ScollOps, TeamDesc, ABI_VERSION, RC_ERROR, RC_OK};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;

/// Heap layout of the simulated jobs: scratch slots for up to four teams, then buffers.
const SCRATCH_SLOT: usize = 512;
const SRC: usize = 4096;
const DEST: usize = SRC + 8192;
const MAX_BYTES: usize = 4096;
const SIZES: [usize; 9] = [0, 1, 7, 8, 13, 64, 1000, 4095, MAX_BYTES];
const GARBAGE: u8 = 0xee;
// Four scratch slots fit before the buffers, and the buffers (plus a guard) fit in the heap.
const _: () = assert!(4 * SCRATCH_SLOT <= SRC && DEST + MAX_BYTES + 16 <= HEAP_BYTES);

fn ops() -> &'static ScollOps {
    // SAFETY: the static descriptor's `open` (which records the core) returns the static
    // ScollOps table.
    unsafe { &*(((*shmem_plugin_descriptor()).open.unwrap())(fake::core()) as *const ScollOps) }
}

/// Enable team (start, stride, size) on this PE, with its scratch in slot `slot`. NULL when
/// `pe` is not a member.
fn enable_team(
    pe: c_int,
    heap: *mut u8,
    slot: usize,
    start: c_int,
    stride: c_int,
    size: c_int,
) -> *mut c_void {
    let offset = pe - start;
    let my_index =
        if offset >= 0 && offset % stride == 0 && offset / stride < size { offset / stride } else { -1 };
    let desc = TeamDesc {
        id: slot as c_int,
        start,
        stride,
        size,
        my_index,
        scratch: heap.wrapping_add(slot * SCRATCH_SLOT).cast(),
        scratch_len: SCRATCH_SLOT,
        flags: 0,
    };
    // SAFETY: a valid description; enable copies it.
    unsafe { (ops().enable)(&desc) }
}

fn barrier(t: *mut c_void) -> c_int {
    // SAFETY: state from enable; the fake job is running.
    unsafe { (ops().barrier.unwrap())(t) }
}

fn broadcast(t: *mut c_void, dest: *mut u8, src: *const u8, nbytes: usize, root: c_int) -> c_int {
    // SAFETY: state from enable; dest and src are symmetric buffers of MAX_BYTES.
    unsafe { (ops().broadcast.unwrap())(t, dest.cast(), src.cast(), nbytes, root) }
}

fn disable(t: *mut c_void) {
    // SAFETY: state from enable, not used after this.
    unsafe { (ops().disable)(t) }
}

fn pattern(iter: usize, j: usize) -> u8 {
    (iter * 31 + j * 7 + 1) as u8
}

/// One broadcast of a test sequence: `seq` numbers it, the team's index `me` of `n`.
/// Returns what went wrong, if anything.
fn checked_broadcast(t: *mut c_void, heap: *mut u8, seq: usize, me: c_int, n: c_int) -> Option<String> {
    let root = (seq % n as usize) as c_int;
    let nbytes = SIZES[seq % SIZES.len()];
    let in_place = seq % 3 == 2;
    let src = heap.wrapping_add(SRC);
    let dest = if in_place { src } else { heap.wrapping_add(DEST) };
    // SAFETY: both buffers lie inside this PE's heap with room for MAX_BYTES + 16.
    let (src_buf, dest_buf) = unsafe {
        (std::slice::from_raw_parts_mut(src, MAX_BYTES), std::slice::from_raw_parts_mut(dest, MAX_BYTES + 16))
    };
    dest_buf.fill(GARBAGE);
    if me == root {
        for (j, b) in src_buf.iter_mut().enumerate() {
            *b = pattern(seq, j);
        }
    }
    let rc = broadcast(t, dest, src, nbytes, root);
    // SAFETY: as above; the broadcast has completed on this PE.
    let got = unsafe { std::slice::from_raw_parts(dest, MAX_BYTES + 16) };
    if rc != RC_OK {
        return Some(format!("broadcast {seq}: rc {rc}"));
    }
    if let Some(j) = (0..nbytes).find(|&j| got[j] != pattern(seq, j)) {
        return Some(format!("broadcast {seq} (root {root}, {nbytes} bytes): byte {j} wrong on index {me}"));
    }
    let untouched_from = if me == root && in_place { MAX_BYTES } else { nbytes };
    if got[untouched_from..].iter().any(|b| *b != GARBAGE) {
        return Some(format!("broadcast {seq} (root {root}, {nbytes} bytes): wrote past the end on {me}"));
    }
    None
}

#[test]
fn the_descriptor_is_an_always_available_scoll_component() {
    // SAFETY: static descriptor; query writes only into the local result.
    let d = unsafe { &*shmem_plugin_descriptor() };
    assert_eq!(d.abi_version, ABI_VERSION);
    assert_eq!(d.framework, Framework::Scoll as u32);
    let mut r = QueryResult::default();
    // SAFETY: as above, with the fake core.
    unsafe { (d.query.unwrap())(fake::core(), &mut r) };
    assert_eq!((r.available, r.priority), (1, 10));
    assert!(ops().scratch_needed <= SCRATCH_SLOT);
}

#[test]
fn dissemination_rounds_and_partners() {
    let r = |n| rounds(n).collect::<Vec<_>>();
    assert!(r(1).is_empty());
    assert_eq!(r(2), [1]);
    assert_eq!(r(3), [1, 2]);
    assert_eq!(r(4), [1, 2]);
    assert_eq!(r(5), [1, 2, 4]);
    assert_eq!(r(8), [1, 2, 4]);
    assert_eq!(r(9).len(), 4);
    assert_eq!(rounds(c_int::MAX).count(), 31);
    assert_eq!(partner(0, 1, 3), 1);
    assert_eq!(partner(2, 2, 3), 1);
    assert_eq!(partner(4, 4, 5), 3);
    assert_eq!(partner(c_int::MAX - 1, 1 << 30, c_int::MAX), (1 << 30) - 1, "no overflow");
}

#[test]
fn teams_it_cannot_serve_are_declined() {
    let mut scratch = [0u64; 64];
    let mut d = TeamDesc {
        id: 0,
        start: 0,
        stride: 1,
        size: 2,
        my_index: 0,
        scratch: scratch.as_mut_ptr().cast(),
        scratch_len: std::mem::size_of_val(&scratch),
        flags: 0,
    };
    let ops = ops();
    // SAFETY: enable only reads the description; each accepted state is disabled at once.
    unsafe {
        let t = (ops.enable)(&d);
        assert!(!t.is_null());
        (ops.disable)(t);
        d.scratch_len = ops.scratch_needed - 1;
        assert!((ops.enable)(&d).is_null(), "too little scratch");
        d.scratch_len = ops.scratch_needed;
        d.my_index = 2;
        assert!((ops.enable)(&d).is_null(), "not a member");
        d.my_index = 0;
        d.scratch = std::ptr::null_mut();
        assert!((ops.enable)(&d).is_null(), "no scratch");
        assert!((ops.enable)(std::ptr::null()).is_null());
        (ops.disable)(std::ptr::null_mut());
    }
}

#[test]
fn barrier_holds_everyone_until_all_arrive() {
    const ITERS: u64 = 150;
    for n in 1..=7u64 {
        let entered = AtomicU64::new(0);
        let errors = Mutex::new(Vec::new());
        run_job(n as usize, |pe, heap| {
            let t = enable_team(pe, heap, 0, 0, 1, n as c_int);
            for i in 0..ITERS {
                entered.fetch_add(1, SeqCst);
                let rc = barrier(t);
                let seen = entered.load(SeqCst);
                // Everyone has entered barrier i; nobody can be past barrier i+1's entry.
                if rc != RC_OK || seen < n * (i + 1) || seen > n * (i + 2) {
                    errors
                        .lock()
                        .unwrap()
                        .push(format!("n={n} pe={pe} barrier {i}: rc {rc}, {seen} entries"));
                }
            }
            disable(t);
        });
        let errors = errors.into_inner().unwrap();
        assert!(errors.is_empty(), "{errors:#?}");
    }
}

#[test]
fn broadcast_delivers_from_every_root_at_every_size() {
    for n in 1..=6usize {
        let errors = Mutex::new(Vec::new());
        run_job(n, |pe, heap| {
            let t = enable_team(pe, heap, 0, 0, 1, n as c_int);
            for seq in 0..n * SIZES.len() * 2 {
                // Not `errors.lock().extend(checked_broadcast(..))`: that would hold the lock
                // through the collective and deadlock the other PEs.
                let e = checked_broadcast(t, heap, seq, pe, n as c_int);
                errors.lock().unwrap().extend(e);
            }
            disable(t);
        });
        let errors = errors.into_inner().unwrap();
        assert!(errors.is_empty(), "n={n}: {errors:#?}");
    }
}

#[test]
fn a_bad_root_is_an_error() {
    run_job(2, |pe, heap| {
        let t = enable_team(pe, heap, 0, 0, 1, 2);
        let buf = heap.wrapping_add(SRC);
        assert_eq!(broadcast(t, buf, buf, 8, 2), RC_ERROR);
        assert_eq!(broadcast(t, buf, buf, 8, -1), RC_ERROR);
        disable(t);
    });
}

#[test]
fn strided_teams_run_side_by_side() {
    // Odd PEs and even PEs of 7 form two teams working at the same time, with barriers and
    // broadcasts interleaved; then the whole world synchronises on a third team.
    let errors = Mutex::new(Vec::new());
    let world_barriers = AtomicU64::new(0);
    run_job(7, |pe, heap| {
        let (slot, start, size) = if pe % 2 == 1 { (1, 1, 3) } else { (2, 0, 4) };
        let t = enable_team(pe, heap, slot, start, 2, size);
        let w = enable_team(pe, heap, 3, 0, 1, 7);
        if t.is_null() || w.is_null() {
            errors.lock().unwrap().push(format!("pe {pe}: enable declined"));
            return;
        }
        let me = (pe - start) / 2;
        for seq in 0..40 {
            if seq % 4 == 3 {
                if barrier(t) != RC_OK {
                    errors.lock().unwrap().push(format!("pe {pe}: barrier failed"));
                }
            } else {
                let e = checked_broadcast(t, heap, seq, me, size);
                errors.lock().unwrap().extend(e);
            }
        }
        world_barriers.fetch_add(1, SeqCst);
        barrier(w);
        if world_barriers.load(SeqCst) != 7 {
            errors.lock().unwrap().push(format!("pe {pe} left the world barrier early"));
        }
        disable(t);
        disable(w);
    });
    let errors = errors.into_inner().unwrap();
    assert!(errors.is_empty(), "{errors:#?}");
}
