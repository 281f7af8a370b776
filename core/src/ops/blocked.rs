//! What this PE's threads are blocked in, for the message that ends the job because a peer was
//! lost: the spml's heartbeats find a silent peer on the progress thread, and the liveness
//! watch finds a stopped one on a thread of its own, while the application's thread waits in
//! a barrier or a `shmem_wait_until`. Without this the message named the peer but not what the
//! program was doing (issue 50: "naming the routine, the peer PE, its host, and the cause").
//!
//! Nothing here is on a fast path. A wait publishes itself only from its slow look (the
//! [`crate::ops::stall::Countdown`] of a collective's or a point-to-point wait, thousands of
//! rounds or dozens of given-away rounds in), and withdraws when it ends only if it had
//! published; a quiet that must flush the spml, and a get or an atomic that must wait for a PE's
//! answer through it, mark themselves with three stores, next to a call that takes
//! microseconds.

use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

/// The waits that have published themselves: (thread, description), one entry per thread.
static WAITS: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());

/// The blocking step inside a component that some thread is in ([`Blocking`] as a number;
/// 0: none), the routine it is part of, and the PE it waits on (-1: none in particular). Three
/// separate words: a reader racing with a new step may pair one step's kind with another's
/// routine, which a message read once at the end of a job can bear; every routine stored is a
/// `'static` name, so whatever pointer is read is valid.
static STEP: AtomicU8 = AtomicU8::new(0);
static STEP_ROUTINE: AtomicPtr<c_char> = AtomicPtr::new(std::ptr::null_mut());
static STEP_PE: AtomicI32 = AtomicI32::new(-1);

/// Blocking steps that wait inside a component rather than in a loop of the core's, marked
/// around the call (three stores, no allocation; only where the call goes through the spml,
/// which takes a network round trip or a flush).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Blocking {
    /// A quiet that flushes the spml: completing puts, atomics and gets to other PEs.
    Quiet = 1,
    /// The launcher's fence of start-up or of the closing finalize.
    Fence = 2,
    /// A blocking get through the spml, waiting for the data from the PE.
    Get = 3,
    /// An atomic through the spml that waits for the PE's answer (fetching, or a lock's).
    Atomic = 4,
}

impl Blocking {
    fn of(v: u8) -> Option<Blocking> {
        match v {
            1 => Some(Blocking::Quiet),
            2 => Some(Blocking::Fence),
            3 => Some(Blocking::Get),
            4 => Some(Blocking::Atomic),
            _ => None,
        }
    }

    fn text(self, pe: c_int) -> String {
        match self {
            Blocking::Quiet => {
                "a quiet, completing this PE's operations on other PEs through the spml".into()
            }
            Blocking::Fence => "waiting in the launcher's fence for every PE to arrive".into(),
            Blocking::Get => format!("waiting for the data of a get from PE {pe} through the spml"),
            Blocking::Atomic => {
                format!("waiting for PE {pe}'s answer to an atomic operation through the spml")
            }
        }
    }
}

/// A number for this thread, unique in the process (for the table's keys).
fn thread_key() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static KEY: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    KEY.with(|k| *k)
}

/// Record that this thread waits in `what` (say `shmem_barrier_all (a barrier)`), replacing
/// what it had published before. Slow paths only: it locks and allocates.
#[cold]
pub fn publish(what: String) {
    let key = thread_key();
    let mut w = WAITS.lock().unwrap_or_else(|e| e.into_inner());
    match w.iter_mut().find(|(k, _)| *k == key) {
        Some(e) => e.1 = what,
        None => w.push((key, what)),
    }
}

/// This thread's wait has ended: withdraw what it published.
#[cold]
pub fn withdraw() {
    let key = thread_key();
    WAITS.lock().unwrap_or_else(|e| e.into_inner()).retain(|(k, _)| *k != key);
}

/// A blocking step, from [`step`] until the guard drops.
pub struct Step(Blocking);

impl Drop for Step {
    #[inline(always)]
    fn drop(&mut self) {
        // Another thread's step may have replaced ours meanwhile: theirs stays.
        let _ = STEP.compare_exchange(self.0 as u8, 0, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// Mark a blocking step of `routine` (waiting on `pe`, or -1) until the guard drops.
#[inline(always)]
pub fn step(routine: &'static CStr, what: Blocking, pe: c_int) -> Step {
    STEP_ROUTINE.store(routine.as_ptr().cast_mut(), Ordering::Relaxed);
    STEP_PE.store(pe, Ordering::Relaxed);
    STEP.store(what as u8, Ordering::Relaxed);
    Step(what)
}

/// What this PE is blocked in, as a phrase to end a message with (`"; this PE was in ..."`),
/// or empty when nothing published itself. It never waits for the table: a thread holding it
/// while the job ends is left out.
pub fn describe() -> String {
    let mut parts: Vec<String> = match WAITS.try_lock() {
        Ok(w) => w.iter().map(|(_, s)| s.clone()).collect(),
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner().iter().map(|(_, s)| s.clone()).collect(),
        Err(std::sync::TryLockError::WouldBlock) => Vec::new(),
    };
    if let Some(b) = Blocking::of(STEP.load(Ordering::Relaxed)) {
        let routine = STEP_ROUTINE.load(Ordering::Relaxed);
        let text = b.text(STEP_PE.load(Ordering::Relaxed));
        parts.push(if routine.is_null() {
            text
        } else {
            // SAFETY: only `'static` NUL-terminated names are stored (see `step`).
            format!("{} ({text})", unsafe { CStr::from_ptr(routine) }.to_string_lossy())
        });
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("; this PE was in {}", parts.join(", and in "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test, since the table is the process's (other tests may publish meanwhile, so only
    /// this test's own entries are looked for): publishing, replacing, withdrawing, steps that
    /// overlap between threads, and the phrase.
    #[test]
    fn waits_publish_themselves_per_thread_and_withdraw() {
        let has = |what: &str| describe().contains(what);
        assert!(!has("shmem_barrier_all (test)"));
        publish("shmem_barrier_all (test)".into());
        assert!(describe().starts_with("; this PE was in "), "{}", describe());
        assert!(has("shmem_barrier_all (test)"));
        publish("shmem_wait_until (test)".into());
        assert!(has("shmem_wait_until (test)") && !has("shmem_barrier_all (test)"), "replaced");
        std::thread::spawn(|| publish("shmem_team_sync (test)".into())).join().unwrap();
        assert!(has("shmem_wait_until (test)") && has(", and in "), "{}", describe());
        assert!(has("shmem_team_sync (test)"));
        withdraw();
        assert!(!has("shmem_wait_until (test)") && has("shmem_team_sync (test)"));
        WAITS.lock().unwrap().retain(|(_, s)| !s.ends_with("(test)"));
        assert!(!has("(test)"));

        let a = step(c"shmem_quiet", Blocking::Quiet, -1);
        assert!(has(&format!("shmem_quiet ({})", Blocking::Quiet.text(-1))), "{}", describe());
        let b = step(c"shmem_init", Blocking::Fence, -1);
        drop(a); // a step replaced by another thread's leaves it in place
        assert!(has(&Blocking::Fence.text(-1)) && !has(&Blocking::Quiet.text(-1)));
        drop(b);
        assert!(!has(&Blocking::Fence.text(-1)));
        let g = step(c"shmem_long_g", Blocking::Get, 3);
        assert!(
            has("shmem_long_g (waiting for the data of a get from PE 3 through the spml)"),
            "{}",
            describe()
        );
        drop(g);
        let f = step(c"shmem_int_atomic_fetch_inc", Blocking::Atomic, 2);
        assert!(has("shmem_int_atomic_fetch_inc (waiting for PE 2's answer to an atomic"), "{}", describe());
        drop(f);
        assert!(!has("waiting for PE 2"));
    }
}
