//! An in-process stand-in for a job, for scoll components' unit tests: N "PEs" are N threads,
//! each with its own symmetric heap (a zeroed buffer of the same size). A symmetric address
//! translates between PEs by its offset in the caller's heap, as the core does, and remote
//! words are accessed atomically, so the algorithms run exactly as they would over shared
//! memory. The PEs may be spread over pretend hosts: `host_of` and `pe_is_local` answer from
//! that layout, and `ptr` reaches only the PEs of the caller's host, as a real core's mapping
//! does across hosts.
//!
//! Each PE's one-sided traffic is counted on its own thread ([`sent`]): how many signals,
//! puts and gets it started, with how many bytes, and how many of them went to another host,
//! so a test can check how an algorithm's messages grow with the team (issue 51's simulation
//! of collectives).

use crate::{CoreServices, TransportHandle, ABI_VERSION, CMP_EQ, CMP_GE, CMP_GT, CMP_LE, CMP_LT, CMP_NE};
use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

pub const HEAP_BYTES: usize = 256 * 1024;
/// A cache line of a simulated heap.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u64; 8]);

/// A wait this long means the algorithm deadlocked: fail loudly rather than hang the test run.
const DEADLOCK: Duration = Duration::from_secs(60);

thread_local! {
    /// The world PE the current thread plays.
    static ME: Cell<c_int> = const { Cell::new(-1) };
}
/// Base address of each PE's heap, by world PE.
static HEAPS: RwLock<Vec<usize>> = RwLock::new(Vec::new());
/// The host of each PE (the lowest PE on it), by world PE.
static HOSTS: RwLock<Vec<c_int>> = RwLock::new(Vec::new());
/// One simulated job at a time (the heaps and the component's core pointer are global).
static ONE_JOB: Mutex<()> = Mutex::new(());
/// The PE whose every wait starts with a nap ([`run_job_lagging`]), or -1.
static LAGGARD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
/// The laggard's nap: long beside a whole collective of the other PEs, so whatever they can
/// do before the laggard reads what it waits for, they do.
const NAP: Duration = Duration::from_millis(2);

/// What one PE has started through the fake's one-sided services since its job began.
/// `put_signal_u64` counts as one signal (with its bytes), as it is one message on a
/// transport; a local copy a component makes through `ptr` is not a message and is not
/// counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// `atomic_add_u64` and `put_signal_u64` calls.
    pub signals: usize,
    /// `putmem` calls.
    pub puts: usize,
    /// `getmem` calls.
    pub gets: usize,
    /// Bytes put or got (a put-with-signal's data included).
    pub bytes: usize,
    /// Of the signals, puts and gets, those whose target is on another host.
    pub off_host: usize,
}

impl Sent {
    /// Every message: signals, puts and gets.
    pub fn messages(&self) -> usize {
        self.signals + self.puts + self.gets
    }

    /// What was sent between `before` (an earlier [`sent`]) and this.
    pub fn since(&self, before: &Sent) -> Sent {
        Sent {
            signals: self.signals - before.signals,
            puts: self.puts - before.puts,
            gets: self.gets - before.gets,
            bytes: self.bytes - before.bytes,
            off_host: self.off_host - before.off_host,
        }
    }
}

thread_local! {
    /// The calling PE's counts (each PE is one thread, and only it counts its own sends).
    static MINE: Cell<Sent> = const { Cell::new(Sent { signals: 0, puts: 0, gets: 0, bytes: 0, off_host: 0 }) };
}

/// What the calling PE has started so far in this job.
pub fn sent() -> Sent {
    MINE.get()
}

/// Count one message of the calling PE to `pe`, with `bytes` of data.
fn count(pe: c_int, bytes: usize, kind: fn(&mut Sent)) {
    let mut s = MINE.get();
    kind(&mut s);
    s.bytes += bytes;
    s.off_host += usize::from(!same_host(pe));
    MINE.set(s);
}

/// The fake's checks run inside extern "C" functions, where a panic cannot unwind.
fn fail(msg: &str) -> ! {
    eprintln!("fake core (PE {}): {msg}", ME.get());
    std::process::abort()
}

/// The address of symmetric `addr` (an address in the caller's heap) in `pe`'s heap, with
/// room for `len` bytes.
fn translate(addr: *const c_void, len: usize, pe: c_int) -> *mut u8 {
    let heaps = HEAPS.read().unwrap_or_else(|e| e.into_inner());
    let mine = heaps.get(ME.get() as usize).copied();
    let theirs = heaps.get(pe as usize).copied();
    let (Some(mine), Some(theirs)) = (mine, theirs) else { fail(&format!("no such PE {pe}")) };
    let off = (addr as usize).wrapping_sub(mine);
    if off.checked_add(len).is_none_or(|end| end > HEAP_BYTES) {
        fail(&format!("{addr:p}+{len} is not in the symmetric heap"));
    }
    (theirs + off) as *mut u8
}

fn word<'a>(p: *mut u8) -> &'a AtomicU64 {
    if !(p as usize).is_multiple_of(8) {
        fail("misaligned 64-bit word");
    }
    // SAFETY: an aligned word inside a live heap; every access to signal words is atomic.
    unsafe { AtomicU64::from_ptr(p as *mut u64) }
}

unsafe extern "C" fn log(_: c_int, component: *const c_char, msg: *const c_char) {
    // SAFETY: the component passes NUL-terminated strings.
    let (c, m) = unsafe { (CStr::from_ptr(component), CStr::from_ptr(msg)) };
    eprintln!("[{}] {}", c.to_string_lossy(), m.to_string_lossy());
}
unsafe extern "C" fn param(_: *const c_char, _: *const c_char, _: *const c_char) -> *const c_char {
    std::ptr::null()
}
unsafe extern "C" fn kv_put(_: *const c_char, _: *const u8, _: usize) -> c_int {
    -1
}
unsafe extern "C" fn kv_get(_: c_int, _: *const c_char, _: *mut u8, _: usize, _: *mut usize) -> c_int {
    -1
}
unsafe extern "C" fn kv_fence() -> c_int {
    0
}
unsafe extern "C" fn abort(_: c_int, msg: *const c_char) {
    // SAFETY: NUL-terminated message from the component.
    fail(&unsafe { CStr::from_ptr(msg) }.to_string_lossy())
}
unsafe extern "C" fn host_of(pe: c_int) -> c_int {
    let hosts = HOSTS.read().unwrap_or_else(|e| e.into_inner());
    usize::try_from(pe).ok().and_then(|p| hosts.get(p).copied()).unwrap_or(-1)
}
fn same_host(pe: c_int) -> bool {
    // SAFETY: the fake's own service.
    unsafe { host_of(pe) == host_of(ME.get()) && host_of(pe) >= 0 }
}
unsafe extern "C" fn pe_is_local(pe: c_int) -> c_int {
    c_int::from(same_host(pe))
}
unsafe extern "C" fn transport() -> TransportHandle {
    TransportHandle::NONE
}
unsafe extern "C" fn ptr(addr: *const c_void, pe: c_int) -> *mut c_void {
    let p = translate(addr, 0, pe);
    if same_host(pe) {
        p.cast()
    } else {
        std::ptr::null_mut()
    }
}
unsafe extern "C" fn putmem(dest: *mut c_void, src: *const c_void, len: usize, pe: c_int) {
    let to = translate(dest, len, pe);
    count(pe, len, |s| s.puts += 1);
    // SAFETY: `to` has room for len bytes (checked); `src` is the caller's readable buffer;
    // different PEs' heaps never overlap.
    unsafe { std::ptr::copy_nonoverlapping(src as *const u8, to, len) };
}
unsafe extern "C" fn getmem(dest: *mut c_void, src: *const c_void, len: usize, pe: c_int) {
    let from = translate(src, len, pe);
    count(pe, len, |s| s.gets += 1);
    // SAFETY: as for putmem, the other way round.
    unsafe { std::ptr::copy_nonoverlapping(from, dest as *mut u8, len) };
}
unsafe extern "C" fn ordering() {
    fence(Ordering::SeqCst);
}
/// How each signal word has been updated in this job (by PE and offset): the ABI forbids
/// updating one word both through `atomic_add_u64` and through `put_signal_u64`.
static SIGNAL_KIND: Mutex<Vec<(c_int, usize, bool)>> = Mutex::new(Vec::new());

/// How many times the job's PEs called `atomic_add_u64` and `put_signal_u64` (what
/// [`run_job_on_hosts`] returns).
static SENT: [std::sync::atomic::AtomicUsize; 2] =
    [std::sync::atomic::AtomicUsize::new(0), std::sync::atomic::AtomicUsize::new(0)];

fn note_signal(dest: *const c_void, pe: c_int, through_put_signal: bool) {
    let base = HEAPS.read().unwrap_or_else(|e| e.into_inner())[ME.get() as usize];
    let off = (dest as usize).wrapping_sub(base);
    SENT[usize::from(through_put_signal)].fetch_add(1, Ordering::AcqRel);
    let mut kinds = SIGNAL_KIND.lock().unwrap_or_else(|e| e.into_inner());
    match kinds.iter().find(|(p, o, _)| (*p, *o) == (pe, off)) {
        Some((_, _, k)) if *k != through_put_signal => fail(&format!(
            "the word at heap offset {off} of PE {pe} is updated through both atomic_add_u64 and put_signal_u64"
        )),
        Some(_) => {}
        None => kinds.push((pe, off, through_put_signal)),
    }
}

unsafe extern "C" fn atomic_add_u64(dest: *mut u64, value: u64, pe: c_int) {
    note_signal(dest.cast(), pe, false);
    count(pe, 0, |s| s.signals += 1);
    word(translate(dest.cast(), 8, pe)).fetch_add(value, Ordering::SeqCst);
}
unsafe extern "C" fn put_signal_u64(
    dest: *mut c_void,
    src: *const c_void,
    len: usize,
    sig: *mut u64,
    value: u64,
    pe: c_int,
) {
    note_signal(sig.cast(), pe, true);
    count(pe, len, |s| s.signals += 1);
    if len > 0 {
        let to = translate(dest, len, pe);
        // SAFETY: as for putmem (not through it: this is one message, counted once).
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, to, len) };
    }
    word(translate(sig.cast(), 8, pe)).fetch_add(value, Ordering::SeqCst);
}
unsafe extern "C" fn wait_until_u64(ivar: *const u64, cmp: c_int, value: u64) {
    let w = word(translate(ivar.cast(), 8, ME.get()));
    if LAGGARD.load(Ordering::Relaxed) == ME.get() {
        std::thread::sleep(NAP);
    }
    let deadline = Instant::now() + DEADLOCK;
    loop {
        let v = w.load(Ordering::SeqCst);
        let done = match cmp {
            CMP_EQ => v == value,
            CMP_NE => v != value,
            CMP_GT => v > value,
            CMP_LE => v <= value,
            CMP_LT => v < value,
            CMP_GE => v >= value,
            _ => fail(&format!("bad comparison {cmp}")),
        };
        if done {
            return;
        }
        if Instant::now() > deadline {
            fail(&format!("waited {DEADLOCK:?} for {v} to reach {value} (cmp {cmp}): deadlock"));
        }
        std::thread::yield_now();
    }
}

/// The fake core's table (one for the test binary; the component keeps the pointer).
pub fn core() -> *const CoreServices {
    static CORE: OnceLock<usize> = OnceLock::new();
    *CORE.get_or_init(|| {
        let c = CoreServices {
            struct_size: std::mem::size_of::<CoreServices>(),
            abi_version: ABI_VERSION,
            my_pe: 0,
            n_pes: 0,
            local_rank: 0,
            local_size: 0,
            job_id: crate::cstr!("fake"),
            log,
            param,
            kv_put,
            kv_get,
            kv_fence,
            abort,
            pe_is_local,
            transport,
            ptr,
            putmem,
            getmem,
            quiet: ordering,
            fence: ordering,
            atomic_add_u64,
            wait_until_u64,
            host_of: Some(host_of),
            put_signal_u64: Some(put_signal_u64),
            segment_copy: None,
            node_cpus: None,
            selection: None,
            maps_host_peers: None,
            host_name: None,
        };
        Box::leak(Box::new(c)) as *const CoreServices as usize
    }) as *const CoreServices
}

/// Run `pe_main(pe, heap_base)` on `n` threads, each playing one PE with a fresh zeroed heap,
/// all on one host.
pub fn run_job<F: Fn(c_int, *mut u8) + Sync>(n: usize, pe_main: F) {
    run_job_on_hosts(&vec![0; n], pe_main);
}

/// As [`run_job`], with PE `i` on the host `hosts[i]` names (PEs with equal entries share a
/// host); `hosts.len()` PEs. Returns how many signals the PEs sent through `atomic_add_u64`
/// and through `put_signal_u64`.
pub fn run_job_on_hosts<F: Fn(c_int, *mut u8) + Sync>(hosts: &[c_int], pe_main: F) -> (usize, usize) {
    run_job_lagging(hosts, -1, pe_main)
}

/// As [`run_job_on_hosts`], with PE `laggard` (if any) napping at the start of every wait it
/// makes: a PE descheduled between its own send and reading what its partner sent, which is
/// when a partner running ahead into the next call could overwrite what it has not read.
pub fn run_job_lagging<F: Fn(c_int, *mut u8) + Sync>(
    hosts: &[c_int],
    laggard: c_int,
    pe_main: F,
) -> (usize, usize) {
    let n = hosts.len();
    let _job = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    LAGGARD.store(laggard, Ordering::Relaxed);
    // Name each host by its lowest PE, as the core does.
    let named: Vec<c_int> =
        hosts.iter().map(|h| hosts.iter().position(|x| x == h).unwrap_or(0) as c_int).collect();
    *HOSTS.write().unwrap_or_else(|e| e.into_inner()) = named;
    // Cache-line aligned, as the core's heaps are: a component may require it of its scratch.
    let heaps: Vec<*mut [Line]> =
        (0..n).map(|_| Box::into_raw(vec![Line([0; 8]); HEAP_BYTES / 64].into_boxed_slice())).collect();
    let bases: Vec<usize> = heaps.iter().map(|h| h.cast::<Line>() as usize).collect();
    *HEAPS.write().unwrap_or_else(|e| e.into_inner()) = bases.clone();
    SIGNAL_KIND.lock().unwrap_or_else(|e| e.into_inner()).clear();
    for c in &SENT {
        c.store(0, Ordering::Release);
    }
    // Small stacks, so that thousands of PEs fit (the algorithms keep their buffers on the
    // heap; alltoall's 4 KiB packing buffer is the largest thing on a PE's stack).
    let stack = if n > 256 { 256 << 10 } else { 2 << 20 };
    std::thread::scope(|s| {
        for (pe, base) in bases.into_iter().enumerate() {
            let pe_main = &pe_main;
            std::thread::Builder::new()
                .stack_size(stack)
                .spawn_scoped(s, move || {
                    ME.set(pe as c_int);
                    MINE.set(Sent::default());
                    pe_main(pe as c_int, base as *mut u8);
                })
                .expect("a thread for a simulated PE");
        }
    });
    HEAPS.write().unwrap_or_else(|e| e.into_inner()).clear();
    HOSTS.write().unwrap_or_else(|e| e.into_inner()).clear();
    LAGGARD.store(-1, Ordering::Relaxed);
    let sent = (SENT[0].load(Ordering::Acquire), SENT[1].load(Ordering::Acquire));
    for h in heaps {
        // SAFETY: leaked above; every thread that used it has been joined.
        drop(unsafe { Box::from_raw(h) });
    }
    sent
}
