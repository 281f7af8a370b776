//! Unit tests: the cut into hosts and the tree, and the collectives run through the
//! component's C ABI on simulated jobs spread over pretend hosts
//! (`rshmem_plugin_api::testing::job`, whose `ptr` reaches only the caller's host). PE threads
//! record failures instead of panicking, since a PE that stops early would leave the others
//! waiting in a collective.

use super::*;
use crate::team::{cut, tree, Team};
use rshmem_plugin_api::testing::job::{self as fake, run_job_on_hosts, HEAP_BYTES};
use rshmem_plugin_api::{
    Framework, QueryResult, ScollOps, TeamDesc, ABI_VERSION, DT_F64, DT_I64, OP_MAX, OP_SUM, RC_DECLINED,
    RC_ERROR, RC_OK, REDUCE_ALL, REDUCE_EXSCAN, REDUCE_INSCAN, TEAM_EPHEMERAL, TEAM_HOSTS_MAPPED,
    TEAM_MAPPED,
};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;

/// Heap layout: the team's scratch, a source and two result buffers of `DEST_LEN`.
const SCRATCH: usize = 0;
const SRC: usize = 32768;
const DEST_LEN: usize = 65536;
const DEST: [usize; 2] = [65536, 65536 + DEST_LEN];
/// Sizes up to more than a staging slot holds on two hosts (the largest slot), so that
/// reductions take both paths on every layout.
const MAX_BYTES: usize = 20000;
const SIZES: [usize; 8] = [0, 8, 16, 104, 1000, 2048, 9000, MAX_BYTES];
const GARBAGE: u8 = 0xee;
const _: () = assert!(SCRATCH_BYTES <= SRC && SRC + MAX_BYTES <= DEST[0]);
const _: () = assert!(DEST[1] + DEST_LEN <= HEAP_BYTES && MAX_BYTES > crate::team::STAGE_AREA / 2);

/// Host layouts: PE i runs on host `layout[i]`.
const LAYOUTS: &[&[c_int]] = &[
    &[0, 1],
    &[0, 0, 1, 1],
    &[0, 1, 0, 1],
    &[0, 0, 0, 1],
    &[0, 1, 2],
    &[0, 0, 1, 1, 2, 2, 2],
    &[3, 1, 1, 2, 2, 0, 2],
    &[0, 1, 2, 3, 4],
    &[5, 4, 3, 2, 1, 0],
];

pub(crate) fn ops() -> &'static ScollOps {
    // SAFETY: the static descriptor's `open` (which records the core) returns the static
    // ScollOps table.
    unsafe { &*(((*shmem_plugin_descriptor()).open.unwrap())(fake::core()) as *const ScollOps) }
}

fn desc(pe: c_int, heap: *mut u8, n: c_int, flags: u32) -> TeamDesc {
    TeamDesc {
        id: 0,
        start: 0,
        stride: 1,
        size: n,
        my_index: pe,
        scratch: heap.wrapping_add(SCRATCH).cast(),
        scratch_len: SCRATCH_BYTES,
        flags,
    }
}

/// Enable the world team of `n` PEs on this PE, as the core would across hosts that map
/// their own PEs.
fn enable(pe: c_int, heap: *mut u8, n: c_int) -> *mut c_void {
    // SAFETY: a valid description; enable copies it.
    unsafe { (ops().enable)(&desc(pe, heap, n, TEAM_HOSTS_MAPPED)) }
}

fn disable(t: *mut c_void) {
    // SAFETY: state from enable, not used after this.
    unsafe { (ops().disable)(t) }
}

fn barrier(t: *mut c_void) -> c_int {
    // SAFETY: state from enable; the fake job is running.
    unsafe { (ops().barrier.unwrap())(t) }
}

fn buf<'a>(heap: *mut u8, off: usize, len: usize) -> &'a mut [u8] {
    // SAFETY: every buffer of the layout lies inside the PE's heap.
    unsafe { std::slice::from_raw_parts_mut(heap.wrapping_add(off), len) }
}

fn pattern(seq: usize, j: usize) -> u8 {
    (seq * 31 + j * 7 + 1) as u8
}

/// Run `pe_main(pe, n, heap, team)` on every layout; collect what the PEs report.
fn on_every_layout(pe_main: impl Fn(c_int, c_int, *mut u8, *mut c_void, &mut Vec<String>) + Sync) {
    on_layouts(|_| true, pe_main)
}

/// As [`on_every_layout`], on the layouts `pick` chooses.
fn on_layouts(
    pick: impl Fn(&[c_int]) -> bool,
    pe_main: impl Fn(c_int, c_int, *mut u8, *mut c_void, &mut Vec<String>) + Sync,
) {
    for layout in LAYOUTS.iter().filter(|l| pick(l)) {
        let errors = Mutex::new(Vec::new());
        let n = layout.len() as c_int;
        run_job_on_hosts(layout, |pe, heap| {
            let t = enable(pe, heap, n);
            if t.is_null() {
                errors.lock().unwrap().push(format!("pe {pe}: the team was declined"));
                return;
            }
            let mut mine = Vec::new();
            pe_main(pe, n, heap, t, &mut mine);
            disable(t);
            errors.lock().unwrap().extend(mine);
        });
        let errors = errors.into_inner().unwrap();
        assert!(errors.is_empty(), "layout {layout:?}: {errors:#?}");
    }
}

#[test]
fn the_descriptor_is_an_scoll_component_between_shm_and_basic() {
    // SAFETY: static descriptor; query writes only into the local result.
    let d = unsafe { &*shmem_plugin_descriptor() };
    assert_eq!(d.abi_version, ABI_VERSION);
    assert_eq!(d.framework, Framework::Scoll as u32);
    let mut r = QueryResult::default();
    // SAFETY: as above, with the fake core.
    unsafe { (d.query.unwrap())(fake::core(), &mut r) };
    assert_eq!((r.available, r.priority), (1, 20));
    assert_eq!(ops().scratch_needed, SCRATCH_BYTES);
}

/// A staged exchange (alltoall, scans) cuts a staging half into one piece per host: every
/// host count served must leave each at least 64 bytes (16 KiB of staging left 0 at 127).
#[test]
fn every_host_count_served_gets_staging_pieces_of_64_bytes() {
    use crate::team::{piece_bytes_for, slot_bytes_for, STAGE_AREA};
    for hosts in 2..=MAX_HOSTS {
        let (slot, piece) = (slot_bytes_for(hosts), piece_bytes_for(hosts));
        assert!(piece >= 64, "{hosts} hosts: pieces of {piece} bytes");
        assert!(slot >= 64 && slot % 64 == 0, "{hosts} hosts: slots of {slot} bytes");
        assert!(piece * hosts <= STAGE_AREA / 2, "{hosts} hosts: the pieces overflow a half");
    }
}

#[test]
fn teams_are_cut_by_host_in_order_of_their_lowest_member() {
    let (groups, place) = cut(&[5, 2, 5, 7, 2]);
    assert_eq!(groups, vec![vec![0, 2], vec![1, 4], vec![3]]);
    assert_eq!(place, vec![(0, 0), (1, 0), (0, 1), (2, 0), (1, 1)]);
}

#[test]
fn the_tree_reaches_every_group_once_from_any_root() {
    for hosts in 1..=13 {
        for root in 0..hosts {
            let mut reached = vec![0; hosts];
            for g in 0..hosts {
                let (parent, kids) = tree(g, root, hosts);
                assert_eq!(parent.is_none(), g == root, "hosts {hosts} root {root} g {g}");
                for k in kids {
                    reached[k] += 1;
                    assert_eq!(tree(k, root, hosts).0, Some(g), "{k}'s parent is {g}");
                }
            }
            reached[root] += 1;
            assert!(reached.iter().all(|r| *r == 1), "hosts {hosts} root {root}: {reached:?}");
        }
    }
    // ceil(log2 8) = 3 levels: the root has three children.
    assert_eq!(tree(0, 0, 8).1.collect::<Vec<_>>(), [4, 2, 1]);
}

#[test]
fn teams_it_does_not_serve_are_declined() {
    let errors = Mutex::new(Vec::new());
    run_job_on_hosts(&[0, 0, 1, 1], |pe, heap| {
        let cases: [(&str, TeamDesc); 6] = [
            ("hosts not mapped", desc(pe, heap, 4, 0)),
            ("one host (shm's)", desc(pe, heap, 4, TEAM_HOSTS_MAPPED | TEAM_MAPPED)),
            ("a pSync team", desc(pe, heap, 4, TEAM_HOSTS_MAPPED | TEAM_EPHEMERAL)),
            ("one PE", TeamDesc { size: 1, my_index: 0, ..desc(pe, heap, 4, TEAM_HOSTS_MAPPED) }),
            (
                "the PEs of one host",
                TeamDesc {
                    start: pe - pe % 2,
                    size: 2,
                    my_index: pe % 2,
                    ..desc(pe, heap, 4, TEAM_HOSTS_MAPPED)
                },
            ),
            (
                "too little scratch",
                TeamDesc { scratch_len: SCRATCH_BYTES - 8, ..desc(pe, heap, 4, TEAM_HOSTS_MAPPED) },
            ),
        ];
        for (what, d) in cases {
            // SAFETY: a valid description; enable copies it.
            let t = unsafe { (ops().enable)(&d) };
            if !t.is_null() {
                errors.lock().unwrap().push(format!("pe {pe}: {what} was accepted"));
                disable(t);
            }
        }
    });
    let errors = errors.into_inner().unwrap();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn barrier_holds_everyone_until_all_arrive() {
    const ITERS: u64 = 100;
    for layout in LAYOUTS {
        let n = layout.len() as u64;
        let entered = AtomicU64::new(0);
        let errors = Mutex::new(Vec::new());
        run_job_on_hosts(layout, |pe, heap| {
            let t = enable(pe, heap, n as c_int);
            for i in 0..ITERS {
                entered.fetch_add(1, SeqCst);
                let rc = barrier(t);
                let seen = entered.load(SeqCst);
                // Everyone has entered barrier i; nobody can be past barrier i+1's entry.
                if rc != RC_OK || seen < n * (i + 1) || seen > n * (i + 2) {
                    errors.lock().unwrap().push(format!("pe {pe} barrier {i}: rc {rc}, {seen} entries"));
                }
            }
            disable(t);
        });
        let errors = errors.into_inner().unwrap();
        assert!(errors.is_empty(), "layout {layout:?}: {errors:#?}");
    }
}

/// Two calls a round, into alternate buffers, after a barrier that follows everyone's garbage
/// fill (pushes may land as soon as a peer enters a call).
fn round<F: Fn(usize, usize) -> Option<String>>(
    t: *mut c_void,
    heap: *mut u8,
    seq: usize,
    errs: &mut Vec<String>,
    call: F,
) {
    for d in DEST {
        buf(heap, d, DEST_LEN).fill(GARBAGE);
    }
    barrier(t);
    for (b, d) in DEST.iter().enumerate() {
        errs.extend(call(2 * seq + b, *d));
    }
}

#[test]
fn broadcast_delivers_from_every_root_at_every_size() {
    on_every_layout(|me, n, heap, t, errs| {
        for seq in 0..(n as usize) * SIZES.len() {
            round(t, heap, seq, errs, |seq, d| {
                let root = (seq % n as usize) as c_int;
                let nbytes = SIZES[seq % SIZES.len()];
                let keep_root = seq % 3 == 1;
                if me == root {
                    for (j, b) in buf(heap, SRC, MAX_BYTES).iter_mut().enumerate() {
                        *b = pattern(seq, j);
                    }
                }
                let (dest, src) = (heap.wrapping_add(d), heap.wrapping_add(SRC));
                let slot = if keep_root { ops().broadcast_keep_root } else { ops().broadcast };
                // SAFETY: state from enable; symmetric buffers of the layout.
                let rc = unsafe { (slot.unwrap())(t, dest.cast(), src.cast(), nbytes, root) };
                let got = buf(heap, d, MAX_BYTES + 16);
                let written = if me == root && keep_root { 0 } else { nbytes };
                if rc != RC_OK {
                    Some(format!("broadcast {seq}: rc {rc}"))
                } else if let Some(j) = (0..written).find(|&j| got[j] != pattern(seq, j)) {
                    Some(format!("broadcast {seq} (root {root}, {nbytes} B): byte {j} wrong on {me}"))
                } else if got[written..].iter().any(|b| *b != GARBAGE) {
                    Some(format!("broadcast {seq} (root {root}, {nbytes} B): wrote past the end on {me}"))
                } else {
                    None
                }
            });
        }
        let heap_buf = heap.wrapping_add(SRC);
        // SAFETY: as above.
        let rc = unsafe { (ops().broadcast.unwrap())(t, heap_buf.cast(), heap_buf.cast(), 8, n) };
        if rc != RC_ERROR {
            errs.push(format!("root {n} of {n}: rc {rc}"));
        }
    });
}

#[test]
fn reductions_give_every_pe_the_same_result_in_place_or_not() {
    on_every_layout(|me, n, heap, t, errs| {
        for (seq, &nbytes) in SIZES.iter().enumerate() {
            let ne = nbytes / 8;
            round(t, heap, seq, errs, |seq, d| {
                let in_place = seq % 2 == 1;
                let at = if in_place { d } else { SRC };
                // SAFETY: 8-aligned buffers of the layout, MAX_BYTES long.
                let (src, dest) = unsafe {
                    (
                        std::slice::from_raw_parts_mut(heap.wrapping_add(at) as *mut i64, ne),
                        heap.wrapping_add(d) as *mut i64,
                    )
                };
                for (i, v) in src.iter_mut().enumerate() {
                    *v = i64::from(me) * 1000 + i as i64 + seq as i64;
                }
                // SAFETY: state from enable; symmetric buffers of `ne` elements.
                let rc = unsafe {
                    (ops().reduce.unwrap())(
                        t,
                        dest.cast(),
                        src.as_ptr().cast(),
                        ne,
                        DT_I64,
                        OP_SUM,
                        REDUCE_ALL,
                    )
                };
                let n = i64::from(n);
                // SAFETY: the reduction is complete here.
                let got = unsafe { std::slice::from_raw_parts(dest, ne) };
                let want = |i: usize| 1000 * n * (n - 1) / 2 + n * (i as i64 + seq as i64);
                if rc != RC_OK {
                    Some(format!("reduce {seq}: rc {rc}"))
                } else {
                    (0..ne).find(|&i| got[i] != want(i)).map(|i| {
                        format!(
                            "reduce {seq} ({ne} elements, in place {in_place}): [{i}] = {} on {me}",
                            got[i]
                        )
                    })
                }
            });
        }
        // Floating point, combined in group order: close to the sum in any order.
        round(t, heap, 99, errs, |seq, d| {
            let ne = 64;
            // SAFETY: as above.
            let (src, dest) = unsafe {
                (
                    std::slice::from_raw_parts_mut(heap.wrapping_add(SRC) as *mut f64, ne),
                    heap.wrapping_add(d) as *mut f64,
                )
            };
            for (i, v) in src.iter_mut().enumerate() {
                *v = 1.0 / (f64::from(me) + 3.0) + i as f64 * 1e-17;
            }
            let op = if seq % 2 == 0 { OP_SUM } else { OP_MAX };
            // SAFETY: as above.
            let rc = unsafe {
                (ops().reduce.unwrap())(t, dest.cast(), src.as_ptr().cast(), ne, DT_F64, op, REDUCE_ALL)
            };
            // SAFETY: the reduction is complete here.
            let got = unsafe { std::slice::from_raw_parts(dest, ne) };
            let mut want = vec![0.0f64; ne];
            for (i, w) in want.iter_mut().enumerate() {
                let part = |p: c_int| 1.0 / (f64::from(p) + 3.0) + i as f64 * 1e-17;
                *w = if op == OP_MAX { part(0) } else { (0..n).map(part).sum::<f64>() };
            }
            let close = got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-12);
            (rc != RC_OK || !close).then(|| format!("f64 reduce {seq}: rc {rc}, {:?} on {me}", &got[..2]))
        });
    });
}

#[test]
fn fcollect_gathers_every_block_in_team_order() {
    on_every_layout(|me, n, heap, t, errs| {
        // n blocks must fit one result buffer (every PE skips the same sizes).
        let fits = |s: &(usize, &usize)| n as usize * *s.1 + 16 <= DEST_LEN;
        for (seq, &nbytes) in SIZES.iter().enumerate().filter(fits) {
            round(t, heap, seq, errs, |seq, d| {
                for (j, b) in buf(heap, SRC, nbytes).iter_mut().enumerate() {
                    *b = pattern(seq + me as usize, j);
                }
                // SAFETY: state from enable; `dest` has room for n blocks.
                let rc = unsafe {
                    (ops().collect.unwrap())(
                        t,
                        heap.wrapping_add(d).cast(),
                        heap.wrapping_add(SRC).cast(),
                        nbytes,
                        1,
                    )
                };
                let got = buf(heap, d, n as usize * nbytes + 16);
                let bad = (0..n as usize * nbytes).find(|&k| got[k] != pattern(seq + k / nbytes, k % nbytes));
                if rc != RC_OK {
                    Some(format!("fcollect {seq}: rc {rc}"))
                } else if let Some(k) = bad {
                    Some(format!("fcollect {seq} ({nbytes} B blocks): byte {k} wrong on {me}"))
                } else if got[n as usize * nbytes..].iter().any(|b| *b != GARBAGE) {
                    Some(format!("fcollect {seq}: wrote past the end on {me}"))
                } else {
                    None
                }
            });
        }
    });
}

#[test]
fn collect_gathers_blocks_of_every_size_in_team_order() {
    on_every_layout(|me, n, heap, t, errs| {
        for seq in 0..6usize {
            // Sizes differ by member and call; some are empty.
            let size = |pe: c_int| {
                (pe as usize * 37 + seq * 101) % 300 * usize::from(!(pe as usize + seq).is_multiple_of(3))
            };
            round(t, heap, seq, errs, |seq, d| {
                for (j, b) in buf(heap, SRC, size(me)).iter_mut().enumerate() {
                    *b = pattern(seq + me as usize, j);
                }
                // SAFETY: state from enable; `dest` has room for every block.
                let rc = unsafe {
                    (ops().collect.unwrap())(
                        t,
                        heap.wrapping_add(d).cast(),
                        heap.wrapping_add(SRC).cast(),
                        size(me),
                        0,
                    )
                };
                let total: usize = (0..n).map(size).sum();
                let got = buf(heap, d, total + 16);
                let mut want = Vec::with_capacity(total);
                for pe in 0..n {
                    want.extend((0..size(pe)).map(|j| pattern(seq + pe as usize, j)));
                }
                if rc != RC_OK {
                    Some(format!("collect {seq}: rc {rc}"))
                } else if let Some(k) = (0..total).find(|&k| got[k] != want[k]) {
                    Some(format!("collect {seq} ({total} B in all): byte {k} wrong on {me}"))
                } else if got[total..].iter().any(|b| *b != GARBAGE) {
                    Some(format!("collect {seq}: wrote past the end on {me}"))
                } else {
                    None
                }
            });
        }
    });
}

/// What PE `from` sends PE `to` in alltoall call `seq`: byte `k` of its block.
fn a2a(seq: usize, from: c_int, to: c_int, k: usize) -> u8 {
    pattern(seq + from as usize * 7 + to as usize * 13, k)
}

/// One alltoall of `bs`-byte blocks from `SRC` into `d`; what went wrong on this PE, if anything.
fn alltoall_round(
    t: *mut c_void,
    heap: *mut u8,
    me: c_int,
    n: c_int,
    seq: usize,
    bs: usize,
    d: usize,
) -> Option<String> {
    for to in 0..n {
        for (k, b) in buf(heap, SRC + to as usize * bs, bs).iter_mut().enumerate() {
            *b = a2a(seq, me, to, k);
        }
    }
    // SAFETY: state from enable; `dest` and the source have room for n blocks.
    let rc = unsafe {
        (ops().alltoall.unwrap())(t, heap.wrapping_add(d).cast(), heap.wrapping_add(SRC).cast(), 1, bs, 1, 1)
    };
    let got = buf(heap, d, n as usize * bs + 16);
    let bad = (0..n as usize * bs).find(|&k| got[k] != a2a(seq, (k / bs) as c_int, me, k % bs));
    if rc != RC_OK {
        Some(format!("alltoall {seq}: rc {rc}"))
    } else if let Some(k) = bad {
        Some(format!("alltoall {seq} ({bs} B blocks): byte {k} wrong on {me}"))
    } else if got[n as usize * bs..].iter().any(|b| *b != GARBAGE) {
        Some(format!("alltoall {seq}: wrote past the end on {me}"))
    } else {
        None
    }
}

#[test]
fn alltoall_gives_every_pe_its_block_from_every_pe() {
    on_every_layout(|me, n, heap, t, errs| {
        for (seq, bs) in [0usize, 1, 8, 104, 1000, 4096].into_iter().enumerate() {
            round(t, heap, seq, errs, |seq, d| alltoall_round(t, heap, me, n, seq, bs, d));
        }
    });
}

/// One alltoalls of `nelems` elements of `es` bytes, read every `sst` elements of `SRC` and
/// written every `dst` elements of `d`; what went wrong on this PE, if anything. The bytes
/// between the elements must keep their garbage.
#[allow(clippy::too_many_arguments)]
fn alltoalls_round(
    t: *mut c_void,
    heap: *mut u8,
    me: c_int,
    n: c_int,
    seq: usize,
    (es, nelems, dst, sst): (usize, usize, usize, usize),
    d: usize,
) -> Option<String> {
    let at = |pe: c_int, e: usize, stride: usize| (pe as usize * nelems + e) * stride * es;
    for to in 0..n {
        for e in 0..nelems {
            for b in 0..es {
                buf(heap, SRC, DEST[0] - SRC)[at(to, e, sst) + b] = a2a(seq, me, to, e * es + b);
            }
        }
    }
    // SAFETY: state from enable; `dest` and the source have room for n strided blocks.
    let rc = unsafe {
        (ops().alltoall.unwrap())(
            t,
            heap.wrapping_add(d).cast(),
            heap.wrapping_add(SRC).cast(),
            es,
            nelems,
            dst as isize,
            sst as isize,
        )
    };
    let len = at(n, 0, dst);
    let got = buf(heap, d, len + 16);
    // SAFETY: the team state enable made.
    let team = unsafe { &*(t as *const Team) };
    let sizes: Vec<usize> = (0..team.hosts()).map(|k| team.members(k).len()).collect();
    let most = (0..sizes.len())
        .flat_map(|a| (0..sizes.len()).filter(move |b| *b != a).map(move |b| (a, b)))
        .map(|(a, b)| sizes[a] * sizes[b] * es * nelems)
        .max()
        .unwrap_or(0);
    let shape =
        format!("{es} B x {nelems}, dst {dst}, sst {sst}, {} rounds", most.div_ceil(team.piece_bytes()));
    let want = |k: usize| {
        let (block, off) = (k / (nelems * dst * es), k % (nelems * dst * es));
        let (e, b) = (off / (dst * es), off % (dst * es));
        (b < es).then(|| a2a(seq, block as c_int, me, e * es + b))
    };
    let bad = (0..len).find(|&k| got[k] != want(k).unwrap_or(GARBAGE));
    if rc != RC_OK {
        Some(format!("alltoalls {seq} ({shape}): rc {rc}"))
    } else if let Some(k) = bad {
        Some(format!("alltoalls {seq} ({shape}): byte {k} wrong on {me}"))
    } else if got[len..].iter().any(|b| *b != GARBAGE) {
        Some(format!("alltoalls {seq} ({shape}): wrote past the end on {me}"))
    } else {
        None
    }
}

#[test]
fn alltoalls_moves_strided_blocks_and_leaves_the_gaps_alone() {
    // (element size, elements per block, dst, sst): strided on either side or both, empty
    // blocks, and blocks whose streams take more than one round of staging pieces on every
    // layout (the last shape: 4600 bytes a block, where a piece is at most 4 KiB).
    let shapes = [
        (4, 3, 1, 2),
        (8, 5, 2, 1),
        (4, 2, 3, 2),
        (1, 7, 2, 3),
        (8, 0, 2, 2),
        (8, 130, 1, 2),
        (8, 130, 2, 1),
        (4, 1150, 2, 1),
    ];
    on_every_layout(|me, n, heap, t, errs| {
        for (seq, shape) in shapes.into_iter().enumerate() {
            round(t, heap, seq, errs, |seq, d| alltoalls_round(t, heap, me, n, seq, shape, d));
        }
    });
}

/// Whether every host's PEs are consecutive (else scans take `scan_interleaved`).
fn consecutive(layout: &[c_int]) -> bool {
    let (groups, _) = cut(layout);
    groups.iter().all(|m| m.windows(2).all(|w| w[1] == w[0] + 1))
}

#[test]
fn scans_give_each_pe_the_combination_up_to_it_on_every_layout() {
    on_every_layout(|me, _, heap, t, errs| {
        for (seq, &nbytes) in SIZES.iter().enumerate() {
            let ne = nbytes / 8;
            round(t, heap, seq, errs, |seq, d| {
                let in_place = seq % 2 == 1;
                let exclusive = seq % 4 >= 2;
                let at = if in_place { d } else { SRC };
                // SAFETY: 8-aligned buffers of the layout, MAX_BYTES long.
                let (src, dest) = unsafe {
                    (
                        std::slice::from_raw_parts_mut(heap.wrapping_add(at) as *mut i64, ne),
                        heap.wrapping_add(d) as *mut i64,
                    )
                };
                let part = |p: c_int, i: usize| i64::from(p) * 1000 + i as i64 + seq as i64;
                for (i, v) in src.iter_mut().enumerate() {
                    *v = part(me, i);
                }
                let kind = if exclusive { REDUCE_EXSCAN } else { REDUCE_INSCAN };
                // SAFETY: state from enable; symmetric buffers of `ne` elements.
                let rc = unsafe {
                    (ops().reduce.unwrap())(t, dest.cast(), src.as_ptr().cast(), ne, DT_I64, OP_SUM, kind)
                };
                // SAFETY: the scan is complete here.
                let got = unsafe { std::slice::from_raw_parts(dest, ne) };
                let upto = if exclusive { me } else { me + 1 };
                let want = |i: usize| {
                    if upto == 0 {
                        // The first PE's exclusive result is the core's to write: `dest` is
                        // left as it was (its source when in place).
                        if in_place {
                            part(me, i)
                        } else {
                            i64::from_ne_bytes([GARBAGE; 8])
                        }
                    } else {
                        (0..upto).map(|p| part(p, i)).sum()
                    }
                };
                if rc != RC_OK {
                    return Some(format!("scan {seq}: rc {rc}"));
                }
                (0..ne).find(|&i| got[i] != want(i)).map(|i| {
                    format!(
                        "scan {seq} ({ne} elements, in place {in_place}, exclusive {exclusive}): [{i}] = {} on {me}, want {}",
                        got[i],
                        want(i)
                    )
                })
            });
        }
    });
    // Hosts whose PEs interleave, and more than `INTERLEAVED_SCAN_BYTES` of results: every
    // member declines, before anyone waits or reads (the buffers are far smaller).
    on_layouts(
        |l| !consecutive(l),
        |me, n, heap, t, errs| {
            let (d, s) = (heap.wrapping_add(DEST[0]).cast(), heap.wrapping_add(SRC).cast());
            let ne = crate::algo::INTERLEAVED_SCAN_BYTES / 8 / n as usize + 2;
            for kind in [REDUCE_INSCAN, REDUCE_EXSCAN] {
                // SAFETY: state from enable; nothing is read or written by a declined call.
                let rc = unsafe { (ops().reduce.unwrap())(t, d, s, ne, DT_I64, OP_SUM, kind) };
                if rc != RC_DECLINED {
                    errs.push(format!("scan kind {kind} of {ne} elements on {me}: rc {rc}, not declined"));
                }
            }
            barrier(t);
        },
    );
}

/// Scans and reductions back to back, without a barrier, on two destinations in turn, at a
/// size that fits the staging slots and one that lands in `dest`: a leader that only sends in
/// a scan must not overwrite a total or partial its partner has not read.
#[test]
fn scans_and_reductions_back_to_back_need_no_barrier() {
    on_every_layout(|me, n, heap, t, errs| {
        for k in 0..60usize {
            let ne = if k % 3 == 2 { MAX_BYTES / 8 } else { 4 };
            let kind = [REDUCE_INSCAN, REDUCE_ALL, REDUCE_EXSCAN][k % 3];
            let part = |p: c_int| i64::from(p) * 10 + k as i64;
            // SAFETY: 8-aligned buffers of the layout, MAX_BYTES long.
            let (src, dest) = unsafe {
                (
                    std::slice::from_raw_parts_mut(heap.wrapping_add(SRC) as *mut i64, ne),
                    heap.wrapping_add(DEST[k % 2]) as *mut i64,
                )
            };
            src.fill(part(me));
            // SAFETY: state from enable; symmetric buffers of `ne` elements.
            let rc = unsafe {
                (ops().reduce.unwrap())(t, dest.cast(), src.as_ptr().cast(), ne, DT_I64, OP_SUM, kind)
            };
            let upto = [me + 1, n, me][k % 3];
            let want: i64 = (0..upto).map(part).sum();
            // SAFETY: the call is complete here.
            let got = unsafe { std::slice::from_raw_parts(dest, ne) };
            // Every PE makes every call even after an error: leaving early would hang the rest.
            if errs.is_empty() && (rc != RC_OK || (upto > 0 && got.iter().any(|v| *v != want))) {
                errs.push(format!("call {k} on {me}: rc {rc}, {} want {want}", got[ne - 1]));
            }
        }
    });
}

#[test]
fn bad_calls_are_refused_before_anyone_waits() {
    on_every_layout(|_, _, heap, t, errs| {
        let (d, s) = (heap.wrapping_add(DEST[0]).cast(), heap.wrapping_add(SRC).cast());
        // SAFETY: state from enable; nothing is read or written by a refused call.
        let rc = unsafe { (ops().reduce.unwrap())(t, d, s, 1, 999, OP_SUM, REDUCE_ALL) };
        if rc != RC_ERROR {
            errs.push(format!("bad type: rc {rc}"));
        }
        // SAFETY: as above.
        let rc = unsafe { (ops().alltoall.unwrap())(t, d, s, 8, 1, 0, 1) };
        if rc != RC_ERROR {
            errs.push(format!("dst 0: rc {rc}"));
        }
        barrier(t);
    });
}

/// The fake core's table, or the same without `put_signal_u64` (as a core that predates the
/// service gives), shared by the PE threads.
struct Core(rshmem_plugin_api::CoreServices);
// SAFETY: function pointers and a pointer to a static string, never written.
unsafe impl Sync for Core {}

impl Core {
    fn get(&self) -> &rshmem_plugin_api::CoreServices {
        &self.0
    }
}

fn fake_core(put_signal: bool) -> Core {
    // SAFETY: the fake's table is plain data: integers and pointers, nothing to drop.
    let mut c = unsafe { std::ptr::read(fake::core()) };
    if !put_signal {
        c.put_signal_u64 = None;
    }
    Core(c)
}

#[test]
fn leaders_send_data_with_its_signal_or_put_fence_and_add_without_the_service() {
    const NBYTES: usize = 104;
    for put_signal in [true, false] {
        for layout in [&[0, 0, 1, 1][..], &[0, 1, 2], &[3, 1, 1, 2, 2, 0, 2]] {
            let n = layout.len() as c_int;
            let core = fake_core(put_signal);
            let errors = Mutex::new(Vec::new());
            let (adds, put_signals) = run_job_on_hosts(layout, |me, heap| {
                let c = core.get();
                let Some(t) = crate::team::Team::new(c, &desc(me, heap, n, TEAM_HOSTS_MAPPED)) else {
                    errors.lock().unwrap().push(format!("pe {me}: declined"));
                    return;
                };
                let (dest, src) = (heap.wrapping_add(DEST[0]), heap.wrapping_add(SRC));
                for root in 0..n {
                    buf(heap, DEST[0], DEST_LEN).fill(GARBAGE);
                    for (j, b) in buf(heap, SRC, NBYTES).iter_mut().enumerate() {
                        *b = pattern(root as usize, j);
                    }
                    crate::algo::barrier(c, &t);
                    // SAFETY: symmetric buffers of the layout.
                    let rc = unsafe {
                        crate::algo::broadcast(c, &t, dest.cast(), src.cast(), NBYTES, root, false)
                    };
                    let got = buf(heap, DEST[0], NBYTES + 1);
                    if rc != RC_OK
                        || (0..NBYTES).any(|j| got[j] != pattern(root as usize, j))
                        || got[NBYTES] != GARBAGE
                    {
                        errors.lock().unwrap().push(format!("broadcast from {root}: rc {rc}, wrong on {me}"));
                    }
                }
                buf(heap, DEST[0], DEST_LEN).fill(GARBAGE);
                for (j, b) in buf(heap, SRC, 16).iter_mut().enumerate() {
                    *b = pattern(me as usize, j);
                }
                crate::algo::barrier(c, &t);
                // SAFETY: as above; `dest` has room for n blocks.
                let rc = unsafe { crate::algo::collect(c, &t, dest.cast(), src.cast(), 16, true) };
                let got = buf(heap, DEST[0], n as usize * 16);
                if rc != RC_OK || (0..n as usize * 16).any(|k| got[k] != pattern(k / 16, k % 16)) {
                    errors.lock().unwrap().push(format!("fcollect: rc {rc}, wrong on {me}"));
                }
                crate::algo::barrier(c, &t);
                buf(heap, DEST[0], DEST_LEN).fill(GARBAGE);
                for to in 0..n {
                    for (k, b) in buf(heap, SRC + to as usize * 24, 24).iter_mut().enumerate() {
                        *b = a2a(0, me, to, k);
                    }
                }
                crate::algo::barrier(c, &t);
                // SAFETY: as above; `dest` and the source have room for n blocks.
                let rc = unsafe { crate::algo::alltoall(c, &t, dest.cast(), src.cast(), 8, 3, 1, 1) };
                let got = buf(heap, DEST[0], n as usize * 24);
                if rc != RC_OK
                    || (0..n as usize * 24).any(|k| got[k] != a2a(0, (k / 24) as c_int, me, k % 24))
                {
                    errors.lock().unwrap().push(format!("alltoall: rc {rc}, wrong on {me}"));
                }
                crate::algo::barrier(c, &t);
            });
            let errors = errors.into_inner().unwrap();
            assert!(errors.is_empty(), "layout {layout:?}, put_signal {put_signal}: {errors:#?}");
            // The fake aborts if one word was updated both ways; here each path is used alone.
            let used = if put_signal { (adds, put_signals > 0) } else { (put_signals, adds > 0) };
            assert_eq!(
                used,
                (0, true),
                "layout {layout:?}, put_signal {put_signal}: {adds} adds, {put_signals} put-signals"
            );
        }
    }
}

/// One i64 sum of `nbytes` from `SRC` into `DEST[0]`, call `seq` (each PE gives `me + seq`);
/// what went wrong on this PE, if anything.
fn sum_round(t: *mut c_void, heap: *mut u8, me: c_int, n: c_int, nbytes: usize, seq: i64) -> Option<String> {
    let ne = nbytes / 8;
    // SAFETY: 8-aligned buffers of the layout.
    let (src, dest) = unsafe {
        (
            std::slice::from_raw_parts_mut(heap.wrapping_add(SRC) as *mut i64, ne),
            heap.wrapping_add(DEST[0]) as *mut i64,
        )
    };
    src.fill(i64::from(me) + seq);
    // SAFETY: state from enable; symmetric buffers of `ne` elements.
    let rc = unsafe {
        (ops().reduce.unwrap())(t, dest.cast(), src.as_ptr().cast(), ne, DT_I64, OP_SUM, REDUCE_ALL)
    };
    let want = i64::from(n) * (i64::from(n) - 1) / 2 + i64::from(n) * seq;
    // SAFETY: the reduction is complete here.
    let got = unsafe { std::slice::from_raw_parts(dest, ne) };
    (rc != RC_OK || got.iter().any(|v| *v != want))
        .then(|| format!("{nbytes} B, call {seq}: rc {rc}, {:?} on {me}, want {want}", got.first()))
}

#[test]
fn back_to_back_reductions_into_one_dest_need_no_barrier() {
    // What users expect (and tests/c/collectives.c does): the next reduction into the same
    // `dest` right after this one returned. Nothing may write a peer's `dest` before that peer
    // has read its own result there.
    on_every_layout(|me, n, heap, t, errs| {
        for size in [8usize, 1000, MAX_BYTES] {
            for seq in 0..40i64 {
                // Keep calling after a failure: a PE that stopped would leave the others waiting.
                let e = sum_round(t, heap, me, n, size, seq);
                if errs.is_empty() {
                    errs.extend(e);
                }
            }
        }
    });
}

#[test]
fn a_partner_ahead_by_a_broadcast_cannot_overwrite_a_partial_not_yet_read() {
    // A broadcast's root returns without hearing from anyone, so a leader can finish a
    // reduction, broadcast, and send its next reduction's partial while a partner host's
    // leader (the laggard, napping in every wait) has not yet read this one's.
    let cases: &[(&[c_int], c_int)] =
        &[(&[0, 1], 1), (&[0, 0, 1, 1], 2), (&[0, 1, 2], 1), (&[0, 1, 2], 2), (&[0, 1, 2, 3, 4], 1)];
    for &(layout, laggard) in cases {
        let n = layout.len() as c_int;
        let errors = Mutex::new(Vec::new());
        fake::run_job_lagging(layout, laggard, |me, heap| {
            let t = enable(me, heap, n);
            let mut errs = Vec::new();
            for seq in 0..12i64 {
                let nbytes = [8usize, 8, 1000, 8, MAX_BYTES, 8][seq as usize % 6];
                let e = sum_round(t, heap, me, n, nbytes, seq);
                if errs.is_empty() {
                    errs.extend(e);
                }
                let b = heap.wrapping_add(DEST[1]);
                // SAFETY: state from enable; an empty broadcast, which only signals.
                let rc = unsafe { (ops().broadcast.unwrap())(t, b.cast(), b.cast(), 0, 0) };
                if rc != RC_OK && errs.is_empty() {
                    errs.push(format!("broadcast after call {seq}: rc {rc} on {me}"));
                }
            }
            disable(t);
            errors.lock().unwrap().extend(errs);
        });
        let errors = errors.into_inner().unwrap();
        assert!(errors.is_empty(), "layout {layout:?}, laggard {laggard}: {errors:#?}");
    }
}
