//! Unit tests: the pure helpers, and the collectives run through the component's C ABI on a
//! simulated job (`rshmem_plugin_api::testing::job`). PE threads record failures instead of panicking, since a PE
//! that stops early would leave the others waiting in a collective.

use super::*;
use crate::team::{tree, Team};
use crate::tuning::{Bcast, Fcollect, Form, Reduce, Tuning};
use rshmem_plugin_api::testing::job::{self as fake, run_job, HEAP_BYTES};
use rshmem_plugin_api::{
    Framework, QueryResult, ScollOps, TeamDesc, ABI_VERSION, DT_F64, DT_I64, OP_MAX, OP_SUM, RC_ERROR, RC_OK,
    REDUCE_ALL,
};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;

/// Heap layout of the simulated jobs: scratch slots for up to four teams, a source, then
/// `DESTS` destinations (each with a guard), so that broadcasts can run back to back: the
/// binomial tree has no handshake, and the spec makes every `dest` ready to accept data when
/// the call is made, so a member that runs ahead may already write the next call's `dest`.
const SCRATCH_SLOT: usize = 512;
const SRC: usize = 4096;
const DEST: usize = SRC + 8192;
const MAX_BYTES: usize = 4096;
const DEST_STRIDE: usize = MAX_BYTES + 64;
const DESTS: usize = 8;
const SIZES: [usize; 9] = [0, 1, 7, 8, 13, 64, 1000, 4095, MAX_BYTES];
const GARBAGE: u8 = 0xee;
// Four scratch slots fit before the buffers, and the buffers (plus a guard) fit in the heap.
const _: () = assert!(4 * SCRATCH_SLOT <= SRC && DEST + DESTS * DEST_STRIDE <= HEAP_BYTES);

/// Both broadcast and fcollect algorithms, and each form of reduction at every size.
const BINOMIAL: Tuning =
    Tuning { bcast: Bcast::Binomial, fcollect: Fcollect::Bruck, reduce: Reduce::Only(Form::Linear) };
const LINEAR: Tuning =
    Tuning { bcast: Bcast::Linear, fcollect: Fcollect::Linear, reduce: Reduce::Only(Form::Linear) };
const SPLIT: Tuning =
    Tuning { bcast: Bcast::Binomial, fcollect: Fcollect::Bruck, reduce: Reduce::Only(Form::Split) };
const TREE: Tuning =
    Tuning { bcast: Bcast::Binomial, fcollect: Fcollect::Bruck, reduce: Reduce::Only(Form::Tree) };

/// Make the team `t` (from `enable`) use `tuning` instead of the job's.
fn set_tuning(t: *mut c_void, tuning: Tuning) {
    // SAFETY: `enable` returns a boxed `Team`, used by this PE's thread only.
    unsafe { (*(t as *mut Team)).tuning = tuning };
}

/// Destination `k` of this PE.
fn dest_slot(heap: *mut u8, k: usize) -> *mut u8 {
    heap.wrapping_add(DEST + (k % DESTS) * DEST_STRIDE)
}

/// Fill every destination with garbage, then synchronise the team: the next `DESTS` calls
/// may run back to back.
fn fresh_dests(t: *mut c_void, heap: *mut u8) {
    for k in 0..DESTS {
        // SAFETY: inside the heap (the layout assertion).
        unsafe { std::ptr::write_bytes(dest_slot(heap, k), GARBAGE, MAX_BYTES + 16) };
    }
    barrier(t);
}

pub(crate) fn ops() -> &'static ScollOps {
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

fn fcollect(t: *mut c_void, dest: *mut u8, src: *const u8, nbytes: usize) -> c_int {
    // SAFETY: state from enable; dest holds n * nbytes and src nbytes (symmetric buffers).
    unsafe { (ops().collect.unwrap())(t, dest.cast(), src.cast(), nbytes, 1) }
}

fn disable(t: *mut c_void) {
    // SAFETY: state from enable, not used after this.
    unsafe { (ops().disable)(t) }
}

fn pattern(iter: usize, j: usize) -> u8 {
    (iter * 31 + j * 7 + 1) as u8
}

/// One broadcast of a test sequence into destination `seq % DESTS` (filled with garbage
/// since the team last synchronised): `seq` numbers it, the team's index `me` of `n`. Every
/// third call is in place. Returns what went wrong, if anything.
fn checked_broadcast(t: *mut c_void, heap: *mut u8, seq: usize, me: c_int, n: c_int) -> Option<String> {
    let root = (seq % n as usize) as c_int;
    let nbytes = SIZES[seq % SIZES.len()];
    let in_place = seq % 3 == 2;
    let dest = dest_slot(heap, seq);
    let src = if in_place { dest } else { heap.wrapping_add(SRC) };
    // SAFETY: the source lies inside this PE's heap with room for MAX_BYTES.
    let src_buf = unsafe { std::slice::from_raw_parts_mut(src, MAX_BYTES) };
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
    for tuning in [BINOMIAL, LINEAR] {
        for n in 1..=9usize {
            let errors = Mutex::new(Vec::new());
            run_job(n, |pe, heap| {
                let t = enable_team(pe, heap, 0, 0, 1, n as c_int);
                set_tuning(t, tuning);
                for seq in 0..n * SIZES.len() * 2 {
                    if seq % DESTS == 0 {
                        fresh_dests(t, heap);
                    }
                    // Not `errors.lock().extend(checked_broadcast(..))`: that would hold the
                    // lock through the collective and deadlock the other PEs.
                    let e = checked_broadcast(t, heap, seq, pe, n as c_int);
                    errors.lock().unwrap().extend(e);
                }
                disable(t);
            });
            let errors = errors.into_inner().unwrap();
            assert!(errors.is_empty(), "{tuning:?} n={n}: {errors:#?}");
        }
    }
}

/// One fcollect of a test sequence into destination `seq % DESTS`: every member contributes
/// `nbytes` of its own pattern. Returns what went wrong, if anything.
fn checked_fcollect(
    t: *mut c_void,
    heap: *mut u8,
    seq: usize,
    me: c_int,
    n: c_int,
    nbytes: usize,
) -> Option<String> {
    let dest = dest_slot(heap, seq);
    let src = heap.wrapping_add(SRC);
    let block = |i: usize, j: usize| pattern(seq + 3 * i, j);
    // SAFETY: the source lies inside this PE's heap with room for MAX_BYTES.
    let src_buf = unsafe { std::slice::from_raw_parts_mut(src, MAX_BYTES) };
    for (j, b) in src_buf.iter_mut().enumerate().take(nbytes) {
        *b = block(me as usize, j);
    }
    let rc = fcollect(t, dest, src, nbytes);
    // SAFETY: as above; the fcollect has completed on this PE.
    let got = unsafe { std::slice::from_raw_parts(dest, MAX_BYTES + 16) };
    if rc != RC_OK {
        return Some(format!("fcollect {seq}: rc {rc}"));
    }
    let total = n as usize * nbytes;
    if let Some(k) = (0..total).find(|&k| got[k] != block(k / nbytes, k % nbytes)) {
        return Some(format!(
            "fcollect {seq} ({nbytes} bytes each): byte {k} (block {}) wrong on {me}",
            k / nbytes
        ));
    }
    if got[total..].iter().any(|b| *b != GARBAGE) {
        return Some(format!("fcollect {seq} ({nbytes} bytes each): wrote past the end on {me}"));
    }
    None
}

#[test]
fn fcollect_in_both_forms_amid_broadcasts() {
    // Back to back, alternating with broadcasts from every root: Bruck's signals share the
    // broadcast tree's words, so a signal of either kind landing in the other would show here.
    for tuning in [BINOMIAL, LINEAR] {
        for n in 1..=9usize {
            let errors = Mutex::new(Vec::new());
            run_job(n, |pe, heap| {
                let t = enable_team(pe, heap, 0, 0, 1, n as c_int);
                set_tuning(t, tuning);
                let sizes = [0, 1, 7, 8, 13, 64, MAX_BYTES / n];
                for seq in 0..sizes.len() * 4 {
                    if seq % DESTS == 0 {
                        fresh_dests(t, heap);
                    }
                    let e = if seq % 2 == 0 {
                        checked_fcollect(t, heap, seq, pe, n as c_int, sizes[seq / 2 % sizes.len()])
                    } else {
                        checked_broadcast(t, heap, seq, pe, n as c_int)
                    };
                    errors.lock().unwrap().extend(e);
                }
                disable(t);
            });
            let errors = errors.into_inner().unwrap();
            assert!(errors.is_empty(), "{tuning:?} n={n}: {errors:#?}");
        }
    }
}

#[test]
fn the_binomial_tree_reaches_every_member_once_from_any_root() {
    for n in 1..=70 {
        for root in [0, 1 % n, n / 2, n - 1] {
            let mut parents = vec![0; n as usize];
            let mut depth = vec![0u32; n as usize];
            // Members in order of their offset from the root: parents come before children.
            for rel in 0..n {
                let me = (root + rel) % n;
                let (parent, kids) = tree(me, root, n);
                assert_eq!(parent.is_none(), me == root, "n={n} root={root} me={me}");
                let mut last = c_int::MAX;
                for (j, d) in kids {
                    assert_eq!(d, 1 << j);
                    assert!(d < last, "largest subtree first");
                    last = d;
                    let kid = partner(me, d, n);
                    parents[kid as usize] += 1;
                    depth[kid as usize] = depth[me as usize] + 1;
                    assert_eq!(
                        tree(kid, root, n).0,
                        Some(j),
                        "the kid waits on the word of its parent's distance"
                    );
                }
            }
            for (i, p) in parents.iter().enumerate() {
                assert_eq!(*p, usize::from(i as c_int != root), "n={n} root={root}: {i} has {p} parents");
            }
            let levels = rounds(n).count() as u32;
            assert!(depth.iter().all(|d| *d <= levels), "n={n}: depth within ceil(log2 n)");
        }
    }
}

/// Reduce `ne` longs (sum) or doubles (sum, then max) on team `t`, into destination `seq`.
/// `exact`: the bits of the linear order, ((x0 op x1) op x2) ...; otherwise the doubles need
/// only be close (the tree combines in its own order) and `bits` collects (seq, a hash of the
/// result) from every member, which must all be equal.
#[allow(clippy::too_many_arguments)]
fn checked_reduce(
    t: *mut c_void,
    heap: *mut u8,
    seq: usize,
    me: c_int,
    n: c_int,
    ne: usize,
    exact: bool,
    bits: &Mutex<Vec<(usize, u64)>>,
) -> Option<String> {
    let in_place = seq % 2 == 1;
    let dest = dest_slot(heap, seq);
    let src = if in_place { dest } else { heap.wrapping_add(SRC) };
    let float = seq.is_multiple_of(3);
    let (dtype, op) = if !float {
        (DT_I64, OP_SUM)
    } else if seq.is_multiple_of(2) {
        (DT_F64, OP_SUM)
    } else {
        (DT_F64, OP_MAX)
    };
    let x = |p: c_int, i: usize| -> u64 {
        if float {
            (1.0 / (f64::from(p) + 3.0) + i as f64 * 1e-3 + seq as f64).to_bits()
        } else {
            (i64::from(p) * 1000 + i as i64 + seq as i64) as u64
        }
    };
    // SAFETY: 8-aligned buffers of the layout, MAX_BYTES long.
    let src_words = unsafe { std::slice::from_raw_parts_mut(src as *mut u64, ne) };
    for (i, v) in src_words.iter_mut().enumerate() {
        *v = x(me, i);
    }
    // SAFETY: state from enable; symmetric buffers of `ne` elements.
    let rc = unsafe { (ops().reduce.unwrap())(t, dest.cast(), src.cast(), ne, dtype, op, REDUCE_ALL) };
    // SAFETY: the reduction is complete here.
    let got = unsafe { std::slice::from_raw_parts(dest as *const u64, ne + 2) };
    let f = |b: u64| f64::from_bits(b);
    let want = |i: usize| -> u64 {
        (1..n).fold(x(0, i), |acc, p| match (float, op) {
            (false, _) => (acc as i64 + x(p, i) as i64) as u64,
            (true, OP_SUM) => (f(acc) + f(x(p, i))).to_bits(),
            (true, _) => f(acc).max(f(x(p, i))).to_bits(),
        })
    };
    let right = |i: usize| got[i] == want(i) || (!exact && float && (f(got[i]) - f(want(i))).abs() <= 1e-9);
    if rc != RC_OK {
        return Some(format!("reduce {seq}: rc {rc}"));
    }
    if let Some(i) = (0..ne).find(|&i| !right(i)) {
        return Some(format!(
            "reduce {seq} ({ne} elements, in place {in_place}): [{i}] = {:#x} on {me}",
            got[i]
        ));
    }
    let hash = got[..ne].iter().fold(0xcbf29ce484222325u64, |h, w| (h ^ w).wrapping_mul(0x100000001b3));
    bits.lock().unwrap().push((seq, hash));
    let guard = [u64::from_ne_bytes([GARBAGE; 8]); 2];
    (got[ne..] != guard).then(|| format!("reduce {seq}: wrote past the end on {me}"))
}

#[test]
fn reductions_in_every_form_agree_in_place_or_not() {
    for tuning in [SPLIT, LINEAR, TREE] {
        for n in 1..=9usize {
            let errors = Mutex::new(Vec::new());
            let bits = Mutex::new(Vec::new());
            run_job(n, |pe, heap| {
                let t = enable_team(pe, heap, 0, 0, 1, n as c_int);
                set_tuning(t, tuning);
                for (seq, ne) in [0, 1, 2, 7, 8, 9, 17, 63, 64, 100, 511].into_iter().enumerate() {
                    if seq % DESTS == 0 {
                        fresh_dests(t, heap);
                    }
                    let e = checked_reduce(t, heap, seq, pe, n as c_int, ne, tuning != TREE, &bits);
                    errors.lock().unwrap().extend(e);
                }
                disable(t);
            });
            let errors = errors.into_inner().unwrap();
            assert!(errors.is_empty(), "{tuning:?} n={n}: {errors:#?}");
            let mut bits = bits.into_inner().unwrap();
            bits.sort();
            bits.dedup();
            let seqs: std::collections::BTreeSet<_> = bits.iter().map(|b| b.0).collect();
            assert_eq!(seqs.len(), bits.len(), "{tuning:?} n={n}: members got different bits");
        }
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
        set_tuning(t, if pe % 2 == 1 { LINEAR } else { BINOMIAL });
        fresh_dests(t, heap);
        for seq in 0..40 {
            if seq % 4 == 3 {
                // SAFETY: inside the heap; this PE's broadcasts have returned, so nobody
                // writes these destinations before the barrier below.
                unsafe { std::ptr::write_bytes(dest_slot(heap, 0), GARBAGE, DESTS * DEST_STRIDE) };
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
