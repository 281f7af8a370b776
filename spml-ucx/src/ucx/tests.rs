//! One-process tests of the UCX layer: a worker with an endpoint to itself stands in for a peer.

use super::*;
use rshmem_plugin_api::{AMO_ADD, AMO_AND, AMO_CSWAP, AMO_FETCH, AMO_OR, AMO_SET, AMO_SWAP, AMO_XOR};

/// A one-PE job: context, worker and our own address; the endpoint to it is made at the first
/// operation, as a same-host peer's is.
fn connected(opts: Options) -> Ucx {
    let u = Ucx::new(1, &opts).expect("UCX context and worker");
    let addr = u.address().to_vec();
    assert!(!addr.is_empty());
    u.connect(&[addr], &|_| false).expect("our own worker's address");
    u
}

/// Register memory as `mem_register` does: mapped, and noted as a region that put-with-signal
/// messages and batched puts may write (host memory, which this checks).
fn map(u: &Ucx, p: *mut c_void, len: usize, allocate: bool) -> (sys::ucp_mem_h, *mut c_void) {
    let (memh, base) = u.mem_map(p, len, allocate).expect("register memory");
    // SAFETY: the registration just made.
    let host = unsafe { u.is_host_memory(memh) };
    assert!(host, "UCX reports ordinary memory as host memory");
    u.add_region(base as usize, len, host);
    (memh, base)
}

/// Two workers of a 2-PE job in one process: `a` (PE 0) makes its endpoints at first use (a
/// same-host peer's way), `b` (PE 1) at once (another host's); `before` runs before they
/// connect. `b` registers the returned 8 words and `a` holds their key (for segment 0).
fn two_pes(before: impl FnOnce()) -> (Ucx, Ucx, Vec<u64>, sys::ucp_mem_h) {
    let opts = Options { progress_thread: false, loopback_only: true, ..Options::default() };
    let a = Ucx::new(2, &opts).unwrap();
    let b = Ucx::new(2, &opts).unwrap();
    before();
    let addrs = vec![a.address().to_vec(), b.address().to_vec()];
    a.connect(&addrs, &|_| false).unwrap();
    b.connect(&addrs, &|_| true).unwrap();
    let mut target = vec![0u64; 8];
    let (memh, _) = map(&b, target.as_mut_ptr().cast(), 64, false);
    // SAFETY: a live registration of b's context.
    let packed = unsafe { b.rkey_pack(memh) }.unwrap();
    a.add_rkey(1, 0, &packed).unwrap();
    (a, b, target, memh)
}

/// `a` puts `v` to `raddr` of PE 1 (`b`) and flushes, while `b` progresses from another
/// thread (target-side progress, for emulated RMA).
fn put_while_b_progresses(a: &Ucx, b: &Ucx, raddr: u64, v: u64) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Acquire) {
                b.progress();
            }
        });
        // SAFETY: `v` outlives the blocking put.
        unsafe { a.put(1, 0, raddr, (&v as *const u64).cast(), 8, true) }.unwrap();
        a.flush().unwrap();
        stop.store(true, Ordering::Release);
    });
}

/// Read a word UCX wrote behind the compiler's back.
fn read(v: &[u64], i: usize) -> u64 {
    // SAFETY: an in-bounds element of a live vector.
    unsafe { std::ptr::read_volatile(&v[i]) }
}

#[test]
fn probe_accepts_the_features_open_uses() {
    probe(features(&Options::default()), &Options::default()).expect("UCX is usable here");
    probe(
        features(&Options { progress_thread: false, loopback_only: true, ..Options::default() }),
        &Options::default(),
    )
    .expect("UCX is usable here");
}

/// A one-PE context (UCX's RMA and atomics, or with `rma` the spml's own messages) whose
/// segment `seg` of PE 0 is `buf`, registered and its key unpacked: its registration handle.
fn self_target(rma: bool, buf: &mut [u64], seg: usize) -> (Ucx, sys::ucp_mem_h) {
    let u = connected(Options {
        progress_thread: false,
        loopback_only: true,
        rma_in_messages: rma,
        ..Options::default()
    });
    assert_eq!(u.rma_in_messages(), rma);
    let (memh, base) = map(&u, buf.as_mut_ptr().cast(), std::mem::size_of_val(buf), false);
    assert_eq!(base, buf.as_mut_ptr().cast());
    // SAFETY: a live registration of this context.
    let packed = unsafe { u.rkey_pack(memh) }.expect("pack its key");
    assert!(!packed.is_empty());
    u.add_rkey(0, seg, &packed).expect("unpack the key");
    (u, memh)
}

#[test]
fn put_get_atomic_and_flush_through_a_self_endpoint() {
    put_get_atomic_and_flush_through_a_self_endpoint_with(false);
}

#[test]
fn put_get_atomic_and_flush_through_a_self_endpoint_in_messages() {
    put_get_atomic_and_flush_through_a_self_endpoint_with(true);
}

/// With UCX's RMA and atomics, or (`rma`) with the spml's own messages.
fn put_get_atomic_and_flush_through_a_self_endpoint_with(rma: bool) {
    let mut target = vec![0u64; 64];
    let (u, memh) = self_target(rma, &mut target, 1);
    assert_eq!(u.n_pes(), 1);
    let raddr = target.as_ptr() as u64;

    // blocking put, then the values are there after flush
    let src: Vec<u64> = (0..64).map(|i| i * 3 + 1).collect();
    // SAFETY: `src` outlives the blocking put.
    unsafe { u.put(0, 1, raddr, src.as_ptr().cast(), 64 * 8, true) }.expect("put");
    u.flush().expect("flush");
    assert!((0..64).all(|i| read(&target, i) == src[i]));

    // blocking get of a sub-range
    let mut back = vec![0u64; 8];
    // SAFETY: `back` is writable for 64 bytes.
    unsafe { u.get(0, 1, raddr + 8 * 8, back.as_mut_ptr().cast(), 64, true) }.expect("get");
    assert_eq!(back, src[8..16]);

    // bytes, not only words
    let msg = b"hello, ucx";
    // SAFETY: `msg` outlives the blocking put.
    unsafe { u.put(0, 1, raddr + 40 * 8 + 3, msg.as_ptr().cast(), msg.len(), true) }.expect("byte put");
    u.flush().expect("flush");
    let mut got = [0u8; 10];
    // SAFETY: `got` is writable for its length.
    unsafe { u.get(0, 1, raddr + 40 * 8 + 3, got.as_mut_ptr().cast(), got.len(), true) }.expect("byte get");
    assert_eq!(&got, msg);

    // atomic add (no fetch) is visible after flush
    u.atomic_add_u64(0, 1, raddr, 100).expect("atomic add");
    u.atomic_add_u64(0, 1, raddr, 5).expect("atomic add");
    u.flush().expect("flush");
    assert_eq!(read(&target, 0), 1 + 100 + 5);

    // non-blocking put and get complete at flush
    let v = [9u64; 4];
    // SAFETY: `v` outlives the flush below.
    unsafe { u.put(0, 1, raddr + 32 * 8, v.as_ptr().cast(), 32, false) }.expect("put_nbi");
    let mut w = [0u64; 4];
    u.flush().expect("flush");
    // SAFETY: `w` outlives the flush below.
    unsafe { u.get(0, 1, raddr + 32 * 8, w.as_mut_ptr().cast(), 32, false) }.expect("get_nbi");
    u.flush().expect("flush");
    assert_eq!(w, v);
    assert!((32..36).all(|i| read(&target, i) == 9));

    u.fence().expect("fence");
    u.progress();
    assert_eq!(u.peer_failure(), None);
    // SAFETY: our registration; nothing uses it any more.
    unsafe { u.mem_unmap(memh) };
    u.finalize().unwrap();
    assert!(u.context_released());
    drop(target);
}

#[test]
fn every_atomic_operation_in_both_widths() {
    every_atomic_operation_in_both_widths_with(false);
}

#[test]
fn every_atomic_operation_in_both_widths_in_messages() {
    every_atomic_operation_in_both_widths_with(true);
}

/// With UCX's RMA and atomics, or (`rma`) with the spml's own messages.
fn every_atomic_operation_in_both_widths_with(rma: bool) {
    let mut words = vec![0u64; 4];
    let (u, memh) = self_target(rma, &mut words, 0);
    let a64 = words.as_ptr() as u64;
    let a32 = a64 + 8; // the low half of words[1] on little-endian, a separate 4-byte word anyway
    let amo = |raddr, op, size, value, cond| u.atomic(0, 0, raddr, op, size, value, cond, true).unwrap();

    assert_eq!(amo(a64, AMO_SET, 8, 101, 0), 0);
    assert_eq!(amo(a64, AMO_FETCH, 8, 0, 0), 101);
    assert_eq!(amo(a64, AMO_CSWAP, 8, 5, 101), 101, "swaps when the compare value matches");
    assert_eq!(amo(a64, AMO_CSWAP, 8, 6, 999), 5, "leaves the word alone otherwise");
    assert_eq!(amo(a64, AMO_SWAP, 8, 0xf0f0, 0), 5);
    assert_eq!(amo(a64, AMO_AND, 8, 0xff00, 0), 0xf0f0);
    assert_eq!(amo(a64, AMO_OR, 8, 0x000f, 0), 0xf000);
    assert_eq!(amo(a64, AMO_XOR, 8, 0xffff, 0), 0xf00f);
    assert_eq!(amo(a64, AMO_ADD, 8, u64::MAX, 0), 0x0ff0);
    assert_eq!(amo(a64, AMO_FETCH, 8, 0, 0), 0x0fef);

    assert_eq!(amo(a32, AMO_SET, 4, 0xdead_beef, 0), 0);
    assert_eq!(amo(a32, AMO_ADD, 4, 1, 0), 0xdead_beef);
    assert_eq!(amo(a32, AMO_CSWAP, 4, 7, 0xdead_bef0), 0xdead_bef0);
    assert_eq!(amo(a32, AMO_FETCH, 4, 0, 0), 7);
    assert_eq!(read(&words, 0), 0x0fef, "4-byte operations stay in their word");

    // non-fetching forms: posted without a reply, visible after a flush
    assert_eq!(u.atomic(0, 0, a64, AMO_ADD, 8, 1, 0, false), Ok(0));
    u.flush().unwrap();
    assert_eq!(read(&words, 0), 0x0ff0);
    for (op, value, want) in [
        (AMO_OR, 0xf000_0000_0000_0001, 0xf000_0000_0000_0ff1),
        (AMO_AND, 0xffff_0000_0000_00ff, 0xf000_0000_0000_00f1),
        (AMO_XOR, 0x1, 0xf000_0000_0000_00f0),
        (AMO_ADD, 0x10, 0xf000_0000_0000_0100),
    ] {
        assert_eq!(u.atomic(0, 0, a64, op, 8, value, 0, false), Ok(0));
        u.flush().unwrap();
        assert_eq!(read(&words, 0), want, "64-bit post of op {op}");
    }
    for (op, value, want) in [
        (AMO_ADD, u32::MAX as u64, 6),
        (AMO_OR, 0x100, 0x106),
        (AMO_AND, 0xf0f, 0x106 & 0xf0f),
        (AMO_XOR, 0x3, (0x106 & 0xf0f) ^ 0x3),
    ] {
        assert_eq!(u.atomic(0, 0, a32, op, 4, value, 0, false), Ok(0));
        u.flush().unwrap();
        assert_eq!(read(&words, 1) as u32 as u64, want, "32-bit post of op {op}");
    }
    assert_eq!(read(&words, 1) >> 32, 0, "a 32-bit post stays in its word");

    assert_eq!(u.atomic(0, 0, a64, 99, 8, 0, 0, true), Err(OpError::Invalid));
    assert_eq!(u.atomic(0, 0, a64, AMO_ADD, 2, 0, 0, true), Err(OpError::Invalid));
    // SAFETY: our registration; nothing uses it any more.
    unsafe { u.mem_unmap(memh) };
    u.finalize().unwrap();
    drop(words);
}

#[test]
fn missing_endpoints_and_keys_are_errors_not_crashes() {
    let u =
        Ucx::new(2, &Options { progress_thread: false, loopback_only: true, ..Options::default() }).unwrap();
    let mut buf = [0u8; 8];
    // SAFETY: the call fails before touching the buffer.
    let r = unsafe { u.get(1, 0, 0, buf.as_mut_ptr().cast(), 8, true) };
    assert_eq!(r, Err(OpError::NotConnected));
    assert!(u.connect(&[u.address().to_vec()], &|_| true).is_err(), "one address for two PEs");
    let addr = u.address().to_vec();
    u.connect(&[addr.clone(), addr.clone()], &|pe| pe == 0).unwrap();
    assert!(u.connect(&[addr.clone(), addr], &|_| true).is_err(), "connect runs once");
    // SAFETY: as above.
    let r = unsafe { u.put(1, 3, 0, buf.as_ptr().cast(), 8, true) };
    assert_eq!(r, Err(OpError::NoKey));
    assert_eq!(u.atomic_add_u64(7, 0, 0, 1), Err(OpError::NotConnected));
    assert_eq!(u.atomic_add_u64(0, MAX_SEGMENTS, 0, 1), Err(OpError::NoKey));
    assert!(u.remote_ptr(1, 3, 0).is_null());
    assert!(u.add_rkey(0, MAX_SEGMENTS, &[0u8; 8]).is_err());
    assert!(!OpError::Status(sys::UCS_ERR_NO_MEMORY).to_string().is_empty());
}

#[test]
fn allocated_memory_can_be_mapped_through_its_key() {
    let u = connected(Options { progress_thread: false, loopback_only: true, ..Options::default() });
    let (memh, base) = map(&u, std::ptr::null_mut(), 1 << 20, true);
    assert!(!base.is_null());
    // SAFETY: a live registration of this context.
    let packed = unsafe { u.rkey_pack(memh) }.unwrap();
    u.add_rkey(0, 0, &packed).unwrap();
    // SAFETY: writing into memory UCX allocated for us.
    unsafe { *(base as *mut u64).add(10) = 77 };
    let p = u.remote_ptr(0, 0, base as u64 + 80);
    if !p.is_null() {
        // SAFETY: UCX maps the same memory for load/store.
        assert_eq!(unsafe { *(p as *const u64) }, 77);
    }
    let v = 5u64;
    // SAFETY: `v` outlives the blocking put.
    unsafe { u.put(0, 0, base as u64, (&v as *const u64).cast(), 8, true) }.unwrap();
    u.flush().unwrap();
    // SAFETY: reading memory UCX allocated and wrote.
    assert_eq!(unsafe { std::ptr::read_volatile(base as *const u64) }, 5);
    // As at the end of a job: the segment sshmem allocated is still live when the spml finalizes,
    // so the context must stay (UCX asserts when a context with live registrations is released).
    u.finalize().unwrap();
    assert!(!u.context_released());
    // SAFETY: reading memory that stays allocated.
    assert_eq!(unsafe { std::ptr::read_volatile(base as *const u64) }, 5);
    let _ = memh;
}

#[test]
fn progress_thread_runs_sleeps_and_stops() {
    let u = connected(Options::default());
    u.start_progress_thread(None, None).expect("progress thread");
    assert!(u.progress_thread_running());
    u.start_progress_thread(None, None).expect("starting twice is harmless");
    let mut target = vec![0u64; 8];
    let (memh, _) = map(&u, target.as_mut_ptr().cast(), 64, false);
    // SAFETY: a live registration of this context.
    let packed = unsafe { u.rkey_pack(memh) }.unwrap();
    u.add_rkey(0, 0, &packed).unwrap();
    for i in 0..1000u64 {
        // SAFETY: `i` outlives the blocking put.
        unsafe { u.put(0, 0, target.as_ptr() as u64 + 8, (&i as *const u64).cast(), 8, true) }.unwrap();
        u.atomic_add_u64(0, 0, target.as_ptr() as u64, 1).unwrap();
    }
    u.flush().unwrap();
    assert_eq!(read(&target, 0), 1000);
    assert_eq!(read(&target, 1), 999);
    // idle: the thread sleeps in poll(); stopping it must not take long
    std::thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    u.stop_progress_thread();
    assert!(!u.progress_thread_running());
    assert!(t.elapsed() < Duration::from_secs(1));
    // SAFETY: our registration; nothing uses it any more.
    unsafe { u.mem_unmap(memh) };
    u.finalize().unwrap();
    u.finalize().unwrap();
}

#[test]
fn the_progress_thread_stands_by_while_the_application_drives_the_worker() {
    let u = connected(Options::default());
    u.start_progress_thread(None, None).expect("progress thread");
    // Driving the worker moves the activity counter: the thread's next look sees it and
    // stands by (SCHED_BATCH) for the rest of the stretch.
    let until = Instant::now() + Duration::from_secs(5);
    let mut seen_batch = false;
    while !seen_batch && Instant::now() < until {
        for _ in 0..100 {
            u.progress();
        }
        seen_batch = u.progress_thread_policy() == Some(libc::SCHED_BATCH);
    }
    assert!(seen_batch, "the thread never stood by while the application drove the worker");
    // Left alone, it takes the worker over again under its own policy, so that it preempts a
    // computing PE to answer a peer.
    let until = Instant::now() + Duration::from_secs(5);
    while u.progress_thread_policy() != Some(libc::SCHED_OTHER) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(u.progress_thread_policy(), Some(libc::SCHED_OTHER));
    u.stop_progress_thread();
    u.finalize().unwrap();
}

#[test]
fn on_a_crowded_host_the_progress_thread_never_stands_by() {
    let u = connected(Options::default());
    u.start_progress_thread(None, Some(|| true)).expect("progress thread");
    // Long enough for many looks (pauses of 0.2-2 ms) while the application drives the worker.
    let until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < until {
        for _ in 0..100 {
            u.progress();
        }
        assert_ne!(u.progress_thread_policy(), Some(libc::SCHED_BATCH));
    }
    u.stop_progress_thread();
    u.finalize().unwrap();
}

#[test]
fn without_wakeup_there_is_no_progress_thread() {
    let u =
        Ucx::new(1, &Options { progress_thread: false, loopback_only: true, ..Options::default() }).unwrap();
    assert!(u.start_progress_thread(None, None).is_err());
}

#[test]
fn peer_failures_wait_out_the_grace_and_are_ignored_when_finalizing() {
    let h = Health::new();
    assert!(h.failure().is_none());
    h.record(3, sys::UCS_ERR_CONNECTION_RESET);
    h.record(4, sys::UCS_ERR_ENDPOINT_TIMEOUT);
    let (pe, st, since) = h.failure().unwrap();
    assert_eq!((pe, st), (3, sys::UCS_ERR_CONNECTION_RESET), "the first failure is kept");
    assert!(since < PEER_FAILURE_GRACE);
    assert!(h.overdue().is_none(), "within the grace");
    // pretend the failure is older than the grace
    h.failed_at.store(1, Ordering::Release);
    let h2 = Health { start: Instant::now() - PEER_FAILURE_GRACE * 2, ..h };
    assert_eq!(h2.overdue(), Some((3, sys::UCS_ERR_CONNECTION_RESET, Phase::First)));
    h2.finalizing.store(true, Ordering::Release);
    assert!(h2.overdue().is_none(), "peers leaving during finalize are expected");
    let lost = peer_lost_message(3, "", sys::UCS_ERR_CONNECTION_RESET, Phase::First);
    assert!(lost.contains("PE 3 is unreachable") && lost.contains("without shmem_finalize"), "{lost}");
}

#[test]
fn a_peer_lost_after_the_last_finalize_is_reported_once_initialized_again_as_having_left() {
    let h = Health { start: Instant::now() - PEER_FAILURE_GRACE * 2, ..Health::new() };
    let set = |phase: Phase| {
        h.phase.store(phase as u8, Ordering::Release);
        h.finalizing.store(phase == Phase::Suspended, Ordering::Release);
    };
    set(Phase::Suspended);
    h.record(1, sys::UCS_ERR_ENDPOINT_TIMEOUT);
    h.failed_at.store(1, Ordering::Release);
    assert!(h.overdue().is_none(), "expected while suspended");
    set(Phase::Again);
    assert_eq!(h.overdue(), Some((1, sys::UCS_ERR_ENDPOINT_TIMEOUT, Phase::Suspended)));
    let lost = peer_lost_message(1, "", sys::UCS_ERR_ENDPOINT_TIMEOUT, Phase::Suspended);
    assert!(
        lost.contains("PE 1 left after the last shmem_finalize") && lost.contains("every PE must call it"),
        "{lost}"
    );
    // Lost once resumed: either it died, or it never initialized again.
    let lost = peer_lost_message(1, ", on another host,", sys::UCS_ERR_ENDPOINT_TIMEOUT, Phase::Again);
    assert!(lost.contains("PE 1, on another host, is unreachable") && lost.contains("it died"), "{lost}");
    assert!(lost.contains("every PE must call it"), "{lost}");
}

/// Seen under load (4 busy loops, 4 of 30 runs under mpirun): PE 0 finalized and exited while
/// the others were still in the finalize fence; its loss was recorded before they were
/// suspended and reported, once they initialized again, as a death.
#[test]
fn a_peer_lost_while_this_pe_is_still_in_the_finalize_fence_had_finalized() {
    let h = Health { start: Instant::now() - PEER_FAILURE_GRACE * 2, ..Health::new() };
    h.record(0, sys::UCS_ERR_ENDPOINT_TIMEOUT);
    h.failed_at.store(1, Ordering::Release);
    assert_eq!(
        h.overdue(),
        Some((0, sys::UCS_ERR_ENDPOINT_TIMEOUT, Phase::First)),
        "never suspended: a death"
    );
    h.phase.store(Phase::Suspended as u8, Ordering::Release);
    h.finalizing.store(true, Ordering::Release);
    assert!(h.overdue().is_none(), "expected while suspended");
    h.phase.store(Phase::Again as u8, Ordering::Release);
    h.finalizing.store(false, Ordering::Release);
    assert_eq!(h.overdue(), Some((0, sys::UCS_ERR_ENDPOINT_TIMEOUT, Phase::Suspended)));
}

#[test]
fn a_failed_operation_waits_out_the_rest_of_the_grace_only_for_a_lost_peer() {
    let h = Health::new();
    assert_eq!(h.grace_left(false), Duration::ZERO, "not a peer failure: fail at once");
    assert_eq!(h.grace_left(true), PEER_FAILURE_GRACE, "the endpoint's report has not come yet");
    h.record(2, sys::UCS_ERR_ENDPOINT_TIMEOUT);
    let left = h.grace_left(false);
    assert!(left > PEER_FAILURE_GRACE / 2 && left <= PEER_FAILURE_GRACE, "{left:?}");
    h.failed_at.store(1, Ordering::Release);
    let old = Health { start: Instant::now() - PEER_FAILURE_GRACE * 2, ..h };
    assert_eq!(old.grace_left(true), Duration::ZERO, "a failure older than the grace");
    assert!(OpError::Status(sys::UCS_ERR_ENDPOINT_TIMEOUT).peer_lost());
    assert!(OpError::Status(sys::UCS_ERR_CONNECTION_RESET).peer_lost());
    assert!(!OpError::Status(sys::UCS_ERR_INVALID_PARAM).peer_lost());
    assert!(!OpError::NoKey.peer_lost());
}

#[test]
fn two_workers_exchange_data_and_one_leaves_without_hanging() {
    // Two workers in one process stand in for two PEs; the second goes away.
    let (a, b, target, memh) = two_pes(|| ());
    assert_eq!(
        a.endpoints_made(),
        Vec::<usize>::new(),
        "a connects lazily, and a key waits for its endpoint"
    );
    assert_eq!(b.endpoints_made(), vec![0, 1], "b connects at once");
    put_while_b_progresses(&a, &b, target.as_ptr() as u64, 42);
    assert_eq!(read(&target, 0), 42);
    assert_eq!(a.endpoints_made(), vec![1], "the put made a's endpoint to PE 1, and no other");
    // SAFETY: b's registration, unused from now on.
    unsafe { b.mem_unmap(memh) };
    // b leaves (a keeps progressing, as a live peer's progress thread would); whatever the
    // transport notices about it, neither side may hang.
    let t = Instant::now();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Acquire) {
                a.progress();
            }
        });
        assert_eq!(b.finalize(), Ok(()));
        stop.store(true, Ordering::Release);
    });
    for _ in 0..100 {
        a.progress();
    }
    let _ = a.flush();
    assert!(a.finalize().is_ok() || t.elapsed() >= FINALIZE_TIMEOUT);
    assert!(t.elapsed() < FINALIZE_TIMEOUT * 3);
}

#[test]
fn created_channels_have_their_own_worker_and_every_key() {
    let u = connected(Options { progress_thread: false, loopback_only: true, ..Options::default() });
    let mut words = vec![0u64; 8];
    let (memh, _) = map(&u, words.as_mut_ptr().cast(), 64, false);
    // SAFETY: a live registration of this context.
    let packed = unsafe { u.rkey_pack(memh) }.unwrap();
    u.add_rkey(0, 0, &packed).unwrap(); // announced before the channels exist
    let private = u.create_channel().expect("a private channel");
    let shared = u.create_channel().expect("a shared channel");
    assert_eq!(u.channels(), (2, 0));
    assert_ne!(private.worker(), u.worker(), "a worker of its own");
    assert_ne!(private.worker(), shared.worker());
    u.add_rkey(0, 3, &packed).unwrap(); // announced after: reaches the channels too
    let base = words.as_ptr() as u64;
    // The target side is the default worker (peers connect to it only): progress it from another
    // thread, as the progress thread of a PE does, for transports that emulate RMA or atomics.
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Acquire) {
                u.progress();
            }
        });
        for (i, ch) in [&*private, &*shared].into_iter().enumerate() {
            let v = 10 + i as u64;
            // SAFETY: `v` outlives the flush below.
            unsafe { ch.put(0, 0, base + 8 * i as u64, (&v as *const u64).cast(), 8, false) }.unwrap();
            ch.atomic_add_u64(0, 3, base + 48, 1).unwrap();
            assert_eq!(ch.atomic(0, 3, base + 56, AMO_ADD, 8, 2, 0, true), Ok(2 * i as u64));
            ch.flush().unwrap();
            ch.fence().unwrap();
        }
        let w = private.worker();
        u.destroy_channel(private).expect("completes and pools it");
        assert_eq!(u.channels(), (2, 1));
        let again = u.create_channel().expect("from the pool");
        assert_eq!(again.worker(), w, "the pooled channel serves the next context");
        assert!(u.create_channel().unwrap().worker() != w);
        u.destroy_channel(again).unwrap();
        stop.store(true, Ordering::Release);
    });
    assert_eq!((read(&words, 0), read(&words, 1)), (10, 11));
    assert_eq!((read(&words, 6), read(&words, 7)), (2, 4));
    assert_eq!(u.channels(), (3, 1));
    // `shared` is left open: finalize closes it, and the pooled ones
    // SAFETY: our registration; nothing uses it any more.
    unsafe { u.mem_unmap(memh) };
    u.finalize().unwrap();
    assert!(shared.is_closed());
    assert!(u.create_channel().is_err(), "no channels after finalize");
    drop(shared);
}

/// A one-PE job with batching on, one registered target buffer of `words` words keyed as
/// segment 0: the job, the buffer, its address and the registration.
fn batching_job(opts: Options, words: usize) -> (Ucx, Vec<u64>, u64, sys::ucp_mem_h) {
    let u = connected(Options { batch_puts: true, ..opts });
    assert!(u.batching(), "batching is on where UCX moves no device memory");
    let mut target = vec![0u64; words];
    let (memh, _) = map(&u, target.as_mut_ptr().cast(), words * 8, false);
    // SAFETY: a live registration of this context.
    let packed = unsafe { u.rkey_pack(memh) }.unwrap();
    u.add_rkey(0, 0, &packed).unwrap();
    let base = target.as_ptr() as u64;
    (u, target, base, memh)
}

#[test]
fn batched_puts_land_in_order_once_quiet_returns() {
    let (u, target, base, memh) =
        batching_job(Options { progress_thread: false, loopback_only: true, ..Options::default() }, 1024);
    // 2000 puts of 8 bytes fill several messages (a put's entry takes 20 of a buffer's 4096
    // bytes); every word is written twice, the later value must win.
    for round in 0..2u64 {
        for i in 0..1000u64 {
            let v = i * 10 + round;
            // SAFETY: `v` is read before the put returns.
            unsafe { u.put(0, 0, base + 8 * i, (&v as *const u64).cast(), 8, round == 0) }.unwrap();
        }
    }
    let (sent, _, waiting) = u.batch_counts(0);
    assert!(sent >= 9, "{sent} messages for 2000 puts: the buffer was sent when full");
    assert!(waiting > 0, "the last puts wait for the quiet");
    u.flush().unwrap();
    let (sent, acked, waiting) = u.batch_counts(0);
    assert_eq!((acked, waiting), (sent, 0), "quiet returns once every batch was acknowledged");
    assert!((0..1000).all(|i| read(&target, i) == i as u64 * 10 + 1));
    // Puts of every size up to the limit, and bytes at odd addresses.
    let bytes: Vec<u8> = (0..=255u8).collect();
    for len in [1usize, 7, 100, 255, BATCH_PUT_MAX] {
        // SAFETY: `bytes` holds 256 bytes.
        unsafe { u.put(0, 0, base + 8 * 512 + 3, bytes.as_ptr().cast(), len, false) }.unwrap();
        u.flush().unwrap();
        let mut back = vec![0u8; len];
        // SAFETY: `back` is writable for `len` bytes.
        unsafe { u.get(0, 0, base + 8 * 512 + 3, back.as_mut_ptr().cast(), len, true) }.unwrap();
        assert_eq!(back, bytes[..len]);
    }
    assert_eq!(u.refused_messages(), 0);
    // SAFETY: our registration; nothing uses it any more.
    unsafe { u.mem_unmap(memh) };
    u.finalize().unwrap();
}

#[test]
fn other_operations_to_the_peer_follow_its_batch_and_a_fence_waits_for_it() {
    let opts =
        Options { progress_thread: false, loopback_only: true, rma_in_messages: false, ..Options::default() };
    let (u, target, base, memh) = batching_job(opts, 16);
    let v = 42u64;
    // SAFETY: `v` outlives the put.
    unsafe { u.put(0, 0, base, (&v as *const u64).cast(), 8, true) }.unwrap();
    assert_eq!(u.batch_counts(0), (0, 0, 20), "waiting in the buffer");
    // A get of the same word goes after the batch, which it sends first.
    let mut got = 0u64;
    // SAFETY: `got` is writable.
    unsafe { u.get(0, 0, base, (&mut got as *mut u64).cast(), 8, true) }.unwrap();
    assert_eq!(got, 42);
    assert_eq!(u.batch_counts(0).0, 1);
    u.flush().unwrap();
    // After a fence, a get (RMA, which may take another lane) waits for the batch's answer.
    let w = 7u64;
    // SAFETY: `w` outlives the put.
    unsafe { u.put(0, 0, base + 8, (&w as *const u64).cast(), 8, true) }.unwrap();
    u.fence().unwrap();
    // SAFETY: `got` is writable.
    unsafe { u.get(0, 0, base + 40, (&mut got as *mut u64).cast(), 8, true) }.unwrap();
    let (sent, acked, waiting) = u.batch_counts(0);
    assert_eq!((sent, acked, waiting), (2, 2, 0), "the put before the fence is complete before the get");
    // An atomic after a fence follows the batch on the active-message lane (UCX's software
    // atomics over TCP): sent first, not waited for.
    // SAFETY: as above.
    unsafe { u.put(0, 0, base + 8, (&w as *const u64).cast(), 8, true) }.unwrap();
    u.fence().unwrap();
    u.atomic_add_u64(0, 0, base + 16, 1).unwrap();
    assert_eq!((u.batch_counts(0).0, u.batch_counts(0).2), (3, 0), "sent before the atomic");
    u.flush().unwrap();
    // A put after the fence rides in the buffer with no waiting at all.
    // SAFETY: as above.
    unsafe { u.put(0, 0, base + 24, (&w as *const u64).cast(), 8, true) }.unwrap();
    u.fence().unwrap();
    // SAFETY: as above.
    unsafe { u.put(0, 0, base + 32, (&w as *const u64).cast(), 8, true) }.unwrap();
    assert_eq!(u.batch_counts(0), (3, 3, 40));
    u.flush().unwrap();
    assert_eq!((read(&target, 1), read(&target, 2), read(&target, 3), read(&target, 4)), (7, 1, 7, 7));
    // SAFETY: our registration; nothing uses it any more.
    unsafe { u.mem_unmap(memh) };
    u.finalize().unwrap();
}

#[test]
fn in_messages_every_operation_follows_the_batch_and_is_acknowledged_or_answered() {
    let words = 3 * rma_am::CHUNK / 8;
    let opts = Options { progress_thread: false, loopback_only: true, ..Options::default() };
    let (u, target, base, memh) = batching_job(opts, words);
    assert!(u.rma_in_messages(), "on by default with batching");
    let v = 42u64;
    // SAFETY: `v` outlives the put.
    unsafe { u.put(0, 0, base, (&v as *const u64).cast(), 8, true) }.unwrap();
    assert_eq!(u.batch_counts(0), (0, 0, 20), "waiting in the buffer");
    let mut got = 0u64;
    // SAFETY: `got` is writable.
    unsafe { u.get(0, 0, base, (&mut got as *mut u64).cast(), 8, true) }.unwrap();
    assert_eq!((got, u.batch_counts(0).0), (42, 1), "the get follows the batch it sent first");
    // An atomic that fetches nothing rides in the batch after the put before it.
    // SAFETY: as above.
    unsafe { u.put(0, 0, base + 8, (&v as *const u64).cast(), 8, true) }.unwrap();
    u.fence().unwrap();
    u.atomic_add_u64(0, 0, base + 8, 1).unwrap();
    let entry = batch::ENTRY_HEADER + batch::ATOMIC_OPERAND;
    assert_eq!(u.batch_counts(0), (1, 1, 20 + entry), "both wait in the buffer");
    u.flush().unwrap();
    assert_eq!(u.batch_counts(0), (2, 2, 0));
    assert_eq!(read(&target, 1), 43, "the atomic applied after the put before it");
    // A put of more than one message's worth: two messages, each acknowledged.
    let len = rma_am::CHUNK + 1000;
    let big: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    // SAFETY: `big` outlives the put.
    unsafe { u.put(0, 0, base + 16, big.as_ptr().cast(), len, false) }.unwrap();
    assert_eq!(u.batch_counts(0).0, 4);
    u.flush().unwrap();
    assert_eq!(u.batch_counts(0), (4, 4, 0));
    // Gets of that size, blocking and not, bring back the same bytes.
    for blocking in [true, false] {
        let mut back = vec![0u8; len];
        // SAFETY: `back` is writable for `len` bytes until the flush.
        unsafe { u.get(0, 0, base + 16, back.as_mut_ptr().cast(), len, blocking) }.unwrap();
        u.flush().unwrap();
        assert!(back == big, "get (blocking: {blocking}) of {len} bytes");
    }
    // Fetching atomics at both widths, and a SET that fetches nothing.
    assert_eq!(u.atomic(0, 0, base + 8, AMO_FETCH, 8, 0, 0, true), Ok(43));
    assert_eq!(u.atomic(0, 0, base + 8, AMO_SET, 8, 9, 0, false), Ok(0));
    u.flush().unwrap();
    assert_eq!(u.atomic(0, 0, base + 8, AMO_CSWAP, 4, 10, 9, true), Ok(9));
    assert_eq!(read(&target, 1), 10);
    assert_eq!(u.atomic(0, 0, base + 8, 99, 8, 0, 0, true), Err(OpError::Invalid));
    assert_eq!(u.refused_messages(), 0);
    // SAFETY: our registration; nothing uses it any more.
    unsafe { u.mem_unmap(memh) };
    u.finalize().unwrap();
}

#[test]
fn in_messages_a_get_atomic_or_long_put_on_memory_not_registered_is_refused() {
    let opts = Options { progress_thread: false, loopback_only: true, ..Options::default() };
    let (u, _target, _base, memh) = batching_job(opts, 4);
    let elsewhere = vec![0u64; 64];
    let at = elsewhere.as_ptr() as u64;
    // The key of segment 0 passes the sender's checks; the address is the target's to refuse.
    let mut got = [0u64; 2];
    // SAFETY: `got` is writable.
    assert_eq!(unsafe { u.get(0, 0, at, got.as_mut_ptr().cast(), 16, true) }, Err(OpError::Refused));
    assert_eq!(u.refused_messages(), 1);
    assert_eq!(u.atomic(0, 0, at, AMO_FETCH, 8, 0, 0, true), Err(OpError::Refused));
    let ones = [1u64; 64];
    // SAFETY: `ones` outlives the put.
    unsafe { u.put(0, 0, at, ones.as_ptr().cast(), 512, true) }.unwrap();
    u.atomic_add_u64(0, 0, at, 1).unwrap();
    u.flush().unwrap();
    assert_eq!(u.refused_messages(), 4);
    assert!((0..64).all(|i| read(&elsewhere, i) == 0), "nothing written");
    // SAFETY: our registration; nothing uses it any more.
    unsafe { u.mem_unmap(memh) };
    u.finalize().unwrap();
}

#[test]
fn where_atomics_take_a_lane_of_their_own_they_wait_after_a_fence_too() {
    let opts = Options {
        progress_thread: false,
        loopback_only: true,
        sockets_only: false,
        rma_in_messages: false,
        ..Options::default()
    };
    let (u, target, base, memh) = batching_job(opts, 4);
    let w = 7u64;
    // SAFETY: `w` outlives the put.
    unsafe { u.put(0, 0, base, (&w as *const u64).cast(), 8, true) }.unwrap();
    u.atomic_add_u64(0, 0, base + 8, 1).unwrap();
    assert_eq!(u.batch_counts(0).0, 1, "no fence: the batch is sent first");
    // SAFETY: as above.
    unsafe { u.put(0, 0, base, (&w as *const u64).cast(), 8, true) }.unwrap();
    u.fence().unwrap();
    u.atomic_add_u64(0, 0, base + 8, 1).unwrap();
    assert_eq!(u.batch_counts(0), (2, 2, 0), "the put before the fence is complete before the atomic");
    u.flush().unwrap();
    assert_eq!((read(&target, 0), read(&target, 1)), (7, 2));
    // SAFETY: our registration; nothing uses it any more.
    unsafe { u.mem_unmap(memh) };
    u.finalize().unwrap();
}

#[test]
fn a_waiting_batch_reaches_the_target_while_the_pe_computes() {
    // The spec's progress rule: a put must not wait for this PE's next call into the library.
    let (u, target, base, memh) = batching_job(Options { loopback_only: true, ..Options::default() }, 4);
    u.start_progress_thread(None, None).expect("progress thread");
    std::thread::sleep(Duration::from_millis(30)); // the thread sleeps on the worker's fd
    for v in [5u64, 6] {
        // SAFETY: `v` is read before the put returns.
        unsafe { u.put(0, 0, base, (&v as *const u64).cast(), 8, true) }.unwrap();
        let t = Instant::now();
        while read(&target, 0) != v && t.elapsed() < Duration::from_secs(5) {
            std::hint::spin_loop(); // "computing": no call into the library
        }
        assert_eq!(read(&target, 0), v, "delivered without a library call");
        assert!(t.elapsed() < Duration::from_secs(1), "took {:?}", t.elapsed());
    }
    u.stop_progress_thread();
    u.flush().unwrap();
    // SAFETY: our registration; nothing uses it any more.
    unsafe { u.mem_unmap(memh) };
    u.finalize().unwrap();
}

#[test]
fn a_batched_put_into_memory_not_registered_is_refused() {
    let (u, _target, _base, memh) =
        batching_job(Options { progress_thread: false, loopback_only: true, ..Options::default() }, 4);
    let elsewhere = [0u64; 2];
    let v = 1u64;
    // The key of segment 0 passes the sender's checks; the address is the target's to refuse.
    // SAFETY: `v` outlives the put.
    unsafe { u.put(0, 0, elsewhere.as_ptr() as u64, (&v as *const u64).cast(), 8, true) }.unwrap();
    u.flush().unwrap();
    assert_eq!(u.refused_messages(), 1);
    assert_eq!(read(&elsewhere, 0), 0, "nothing written");
    // SAFETY: our registration; nothing uses it any more.
    unsafe { u.mem_unmap(memh) };
    u.finalize().unwrap();
}

#[test]
fn batching_is_for_sockets_only() {
    assert!(sockets_only(None, false), "no RDMA device: TCP it is");
    assert!(!sockets_only(None, true));
    assert!(sockets_only(Some("tcp,self"), true), "the user chose TCP");
    assert!(sockets_only(Some("sm,tcp"), true));
    assert!(!sockets_only(Some("rc,tcp"), false));
    assert!(!sockets_only(Some("ud_v,sm"), false));
    assert!(!sockets_only(Some("sm,self"), false), "nothing to batch without TCP");
    assert!(!sockets_only(Some("all"), false));
    assert!(sockets_only(Some("^rc"), false), "exclusions are judged by the devices");
    assert!(!sockets_only(Some("^tcp"), true));
}

#[test]
fn channels_need_a_connected_spml() {
    let u =
        Ucx::new(1, &Options { progress_thread: false, loopback_only: true, ..Options::default() }).unwrap();
    assert!(u.create_channel().is_err());
}

#[test]
fn a_job_on_one_host_uses_the_loopback_device_unless_the_user_chose() {
    let one_host = Options { progress_thread: false, loopback_only: true, ..Options::default() };
    assert_eq!(net_devices(&one_host, None).as_deref(), Some("lo"));
    assert_eq!(net_devices(&one_host, Some("eth0")).as_deref(), Some("eth0"));
    assert_eq!(net_devices(&Options::default(), None), None);
}

/// Progress until `v[i]` reads `want` (10 s at most).
fn await_word(u: &Ucx, v: &[u64], i: usize, want: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while read(v, i) != want {
        if Instant::now() > deadline {
            return false;
        }
        u.progress();
    }
    true
}

#[test]
fn put_with_signal_lands_the_data_before_the_word_and_refuses_unregistered_memory() {
    let u = connected(Options { progress_thread: false, loopback_only: true, ..Options::default() });
    assert_eq!(u.put_signal_ready(), Ok(()));
    // Words 0..8 are signals; the data goes from word 8 on. 8 MiB: a rendezvous over TCP.
    const WORDS: usize = 8 + (8 << 20) / 8;
    let mut target = vec![0u64; WORDS];
    let base = target.as_mut_ptr() as usize;
    let (memh, _) = map(&u, base as *mut c_void, WORDS * 8, false);
    u.add_region(base, WORDS * 8, true);
    let mut expected = 0u64;
    for (k, len) in [0usize, 1, 100, 8192, 64 << 10, 1 << 20, 8 << 20].into_iter().enumerate() {
        let src: Vec<u8> = (0..len).map(|j| (j * 7 + k) as u8).collect();
        let (dest, sig) = (base as u64 + 64, base as u64 + 8 * (k as u64 % 8));
        // SAFETY: `src` outlives the blocking call.
        unsafe { u.put_signal(0, dest, src.as_ptr().cast(), len, sig, 10 + k as u64) }
            .expect("put with signal");
        let before = read(&target, k % 8);
        assert!(await_word(&u, &target, k % 8, before + 10 + k as u64), "{len} B: the signal never came");
        // SAFETY: the data was delivered before the word changed.
        let got = unsafe { std::slice::from_raw_parts((base + 64) as *const u8, len) };
        assert!(got == &src[..], "{len} B: the data was not in place when the signal came");
        expected += 1;
    }
    assert_eq!(u.refused_messages(), 0);

    // Outside every registration: refused, nothing written; a small message is dropped at the
    // target, a rendezvous fails at the sender too.
    let outside = [0u64; 2];
    let small = [1u8; 16];
    // SAFETY: as above.
    let r = unsafe { u.put_signal(0, dest_of(&outside), small.as_ptr().cast(), 16, base as u64, 1) };
    assert!(r.is_ok(), "eager messages complete at the sender either way: {r:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while u.refused_messages() < 1 && Instant::now() < deadline {
        u.progress();
    }
    assert_eq!(u.refused_messages(), 1, "data outside the registered memory");
    // SAFETY: as above; a misaligned signal word inside the registration.
    let r = unsafe { u.put_signal(0, base as u64 + 64, small.as_ptr().cast(), 16, base as u64 + 3, 1) };
    assert!(r.is_ok());
    let deadline = Instant::now() + Duration::from_secs(10);
    while u.refused_messages() < 2 && Instant::now() < deadline {
        u.progress();
    }
    assert_eq!(u.refused_messages(), 2, "a misaligned signal word");
    assert_eq!(outside, [0, 0]);
    assert_eq!(read(&target, 0) & 0xff, 10, "signal word 0 got exactly its one signal");
    let big = vec![3u8; 8 << 20];
    // SAFETY: as above: 8 MiB, past the end of the registration.
    let r = unsafe { u.put_signal(0, base as u64 + 128, big.as_ptr().cast(), big.len(), base as u64, 1) };
    assert!(r.is_err(), "a refused rendezvous fails at the sender");
    assert_eq!(u.refused_messages(), 3);
    assert_eq!(expected, 7);

    u.remove_region(base, WORDS * 8);
    // SAFETY: our registration; nothing uses it any more.
    unsafe { u.mem_unmap(memh) };
    u.finalize().unwrap();
    drop(target);
}

fn dest_of(v: &[u64]) -> u64 {
    v.as_ptr() as u64
}

/// The "device memory" of the transfers through the target below: segment 5, 600 KiB, that
/// only the copier touches (a test stands in for the core's `segment_copy`).
static FAKE_SEGMENT: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());
const FAKE_SEG: u32 = 5;

fn fake_copier(seg: u32, off: u64, buf: *mut u8, len: usize, into: bool) -> Result<(), String> {
    let mut m = FAKE_SEGMENT.lock().unwrap();
    let (off, end) = (off as usize, off as usize + len);
    if seg != FAKE_SEG || end > m.len() {
        return Err(format!("segment {seg}, bytes {off}..{end}"));
    }
    // SAFETY: the transfer's host buffer, valid for `len` bytes in the direction asked.
    unsafe {
        if into {
            std::ptr::copy_nonoverlapping(buf, m[off..end].as_mut_ptr(), len);
        } else {
            std::ptr::copy_nonoverlapping(m[off..end].as_ptr(), buf, len);
        }
    }
    Ok(())
}

#[test]
fn transfers_through_the_target_copy_whole_messages_and_refuse_foreign_ranges() {
    let u = connected(Options { progress_thread: false, loopback_only: true, ..Options::default() });
    assert_eq!(u.via_target_ready(), Ok(()));
    *FAKE_SEGMENT.lock().unwrap() = vec![0u8; 600 << 10];
    // Without a copier the target refuses: the sender gets an error, not a hang.
    let one = [9u8; 8];
    let ch: &Channel = &u;
    // SAFETY: `one` is readable for its length.
    let r = unsafe { u.via_target(ch, 0, true, FAKE_SEG, 0, one.as_ptr().cast_mut(), 8) };
    assert_eq!(r, Err(OpError::Refused));
    assert_eq!(u.refused_transfers(), 1);
    u.set_target_copier(fake_copier);
    // Sizes around the message size (VIA_TARGET_CHUNK, 256 KiB): one message, exactly one,
    // and three, through the default channel and a created one (whose worker gets the replies).
    let created = u.create_channel().expect("a created channel");
    for (k, len) in
        [0usize, 1, 4096, VIA_TARGET_CHUNK, VIA_TARGET_CHUNK + 1, (600 << 10) - 100].into_iter().enumerate()
    {
        let ch: &Channel = if k % 2 == 0 { &u } else { &created };
        let src: Vec<u8> = (0..len).map(|j| (j * 13 + k) as u8).collect();
        // SAFETY: `src` is readable for `len` bytes.
        unsafe { u.via_target(ch, 0, true, FAKE_SEG, 100, src.as_ptr().cast_mut(), len) }.expect("put");
        assert!(FAKE_SEGMENT.lock().unwrap()[100..100 + len] == src[..], "{len} B: put through the target");
        let mut back = vec![0u8; len];
        // SAFETY: `back` is writable for `len` bytes.
        unsafe { u.via_target(ch, 0, false, FAKE_SEG, 100, back.as_mut_ptr(), len) }.expect("get");
        assert_eq!(back, src, "{len} B: get through the target");
    }
    // A range the copier refuses (past the segment's end, another segment): an error at the
    // sender, counted at the target, nothing written to the sender's buffer.
    let mut back = [7u8; 16];
    // SAFETY: `back` is writable for 16 bytes.
    let r = unsafe { u.via_target(ch, 0, false, FAKE_SEG, (600 << 10) - 8, back.as_mut_ptr(), 16) };
    assert_eq!(r, Err(OpError::Refused));
    // SAFETY: as above.
    let r = unsafe { u.via_target(ch, 0, true, FAKE_SEG + 1, 0, back.as_mut_ptr(), 16) };
    assert_eq!(r, Err(OpError::Refused));
    assert_eq!(back, [7u8; 16]);
    assert_eq!(u.refused_transfers(), 3);
    u.destroy_channel(created).unwrap();
    u.finalize().unwrap();
}

#[test]
fn waits_spin_by_the_host_s_count_asked_at_each_wait() {
    assert_eq!(Spin::Fixed(7).rounds(), 7);
    assert_eq!(Spin::ByHost(|| false).rounds(), SPIN_ROUNDS);
    assert_eq!(Spin::ByHost(|| true).rounds(), 0);
    // Asked again at every wait: a count that changes after the channel exists is seen.
    static CROWDED: AtomicBool = AtomicBool::new(true);
    let spin = Spin::ByHost(|| CROWDED.load(Ordering::Relaxed));
    assert_eq!(spin.rounds(), 0);
    CROWDED.store(false, Ordering::Relaxed);
    assert_eq!(spin.rounds(), SPIN_ROUNDS);
}

/// Private memory of this process (Private_Dirty + Private_Clean of smaps_rollup), bytes.
fn private_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").expect("smaps_rollup");
    s.lines()
        .filter(|l| l.starts_with("Private_Dirty:") || l.starts_with("Private_Clean:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum::<u64>()
        * 1024
}

/// What a PE's spml state costs per peer never reached (issue 51: at most 64 bytes): a job of
/// 1 024 PEs and one of 65 536, each with batching and answers on and connected as `connect`
/// does (no endpoint made ahead), both in one child process that runs nothing else; the
/// difference of their private memory, over the difference of their sizes. Before the tables
/// were zeroed memory (a channel's endpoint, 16 key slots and error-handler argument per PE,
/// the batches' slots, the address book) this measured 212 bytes per PE; now about 0
/// (2026-11-29).
#[test]
fn a_peer_never_reached_costs_at_most_64_bytes() {
    const CHILD: &str = "RSHMEM_TEST_FOOTPRINT_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let job = |n: usize| {
            let opts = Options {
                progress_thread: false,
                loopback_only: true,
                batch_puts: true,
                ..Options::default()
            };
            let u = Ucx::new(n, &opts).expect("UCX context and worker");
            let book = addrs::AddrBook::new(n, Vec::new(), Box::new(|pe| Err(format!("PE {pe}: none here"))));
            u.connect_book(book, &|_| false).expect("connect");
            u
        };
        // A first job takes UCX's own one-time costs out of the comparison.
        let warm = job(1024);
        let base = private_bytes();
        let small = job(1024);
        let mid = private_bytes();
        let big = job(65536);
        let after = private_bytes();
        let per_pe = (after as f64 - mid as f64 - (mid as f64 - base as f64)) / (65536.0 - 1024.0);
        println!("RESULT per_pe_bytes {per_pe:.1}");
        // What the job's own report (`SHMEM_PEER_MEMORY`) says of the same tables.
        let m = big.peer_memory(0);
        println!("RESULT report {} {} {}", m.table_bytes, m.table_resident, m.peers_local + m.peers_remote);
        drop((warm, small, big));
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "ucx::tests::a_peer_never_reached_costs_at_most_64_bytes", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .expect("run the child");
    let text = String::from_utf8_lossy(&out.stdout);
    let per_pe: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("RESULT per_pe_bytes ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no result:\n{text}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert!(per_pe <= 64.0, "{per_pe} bytes per PE never reached");
    println!("{per_pe:.1} bytes per PE never reached");
    // The report counts every slot (an endpoint, 16 keys, a batch slot and its 4 KiB buffer
    // per PE) and finds as little of them resident as the measurement does.
    let report: Vec<u64> = text
        .lines()
        .find_map(|l| l.strip_prefix("RESULT report ")?.split(' ').map(|w| w.parse().ok()).collect())
        .unwrap_or_else(|| {
            panic!(
                "no report:
{text}"
            )
        });
    let slots = 8 + 8 * MAX_SEGMENTS + std::mem::size_of::<batch::Slot>() + batch::CAP;
    assert_eq!(report[0], 65536 * slots as u64, "{report:?}");
    assert!(report[1] <= 64 * 65536, "{} bytes of the tables resident for 65 536 PEs", report[1]);
    assert_eq!(report[2], 0, "no peer reached");
    println!("report: {} B per PE, {:.1} resident", slots, report[1] as f64 / 65536.0);
}

/// The report's measuring (`footprint`), in a child process (the counters are the process's):
/// armed, a PE's first put to a peer of its host makes one endpoint and unpacks its key, which
/// the report counts as a peer reached on this host; the endpoint to itself is not a peer's.
#[test]
fn the_report_counts_the_peers_reached_and_their_endpoints() {
    const CHILD: &str = "RSHMEM_TEST_REPORT_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "ucx::tests::the_report_counts_the_peers_reached_and_their_endpoints",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .output()
            .expect("run the child");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("REPORT ok"),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let (a, b, target, memh) = two_pes(|| footprint::arm(0, Box::new(|pe| pe == 1)));
    // b, counted as PE 0 by this process's meter, made its endpoints at once: the one to itself
    // is not a peer's, the one to PE 1 (a's own worker) is. a has reached nobody yet.
    let m = a.peer_memory(0);
    assert_eq!((m.peers_local, m.endpoints_local), (0, 1), "before the put: {m:?}");
    put_while_b_progresses(&a, &b, target.as_ptr() as u64, 7);
    assert_eq!(read(&target, 0), 7);
    let m = a.peer_memory(0);
    assert_eq!((m.peers_local, m.peers_remote), (1, 0), "{m:?}");
    // a's endpoint to PE 1 is the second one made to it in this process.
    assert_eq!((m.endpoints_local, m.endpoints_remote), (2, 0), "{m:?}");
    assert!(m.table_bytes > 0 && m.table_resident <= m.table_bytes, "{m:?}");
    // SAFETY: b's registration, unused from now on.
    unsafe { b.mem_unmap(memh) };
    println!("REPORT ok");
    std::process::exit(0);
}
