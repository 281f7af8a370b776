//! What this PE's threads are blocked in, for the message that ends the job because a peer was
//! lost: the spml's heartbeats find a silent peer on the progress thread, and the liveness
//! watch finds a stopped one on a thread of its own, while the application's thread waits in
//! a barrier or a `shmem_wait_until`. Without this the message named the peer but not what the
//! program was doing (issue 50: "naming the routine, the peer PE, its host, and the cause").
//!
//! Nothing here is on a fast path. A wait publishes itself only from its slow look (the
//! [`crate::ops::stall::Countdown`] of a collective's or a point-to-point wait, thousands of
//! rounds or dozens of given-away rounds in), and withdraws when it ends only if it had
//! published; a quiet that must flush the spml marks itself with two stores of a number, next
//! to a flush that takes microseconds.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

/// The waits that have published themselves: (thread, description), one entry per thread.
static WAITS: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());

/// The blocking step inside a component that some thread is in ([`Blocking`] as a number;
/// 0: none).
static STEP: AtomicU8 = AtomicU8::new(0);

/// Blocking steps that wait inside a component rather than in a loop of the core's, marked
/// around the call (two stores, no allocation).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Blocking {
    /// A quiet that flushes the spml: completing puts, atomics and gets to other PEs.
    Quiet = 1,
    /// The launcher's fence of start-up or of the closing finalize.
    Fence = 2,
}

impl Blocking {
    fn of(v: u8) -> Option<Blocking> {
        match v {
            1 => Some(Blocking::Quiet),
            2 => Some(Blocking::Fence),
            _ => None,
        }
    }

    fn text(self) -> &'static str {
        match self {
            Blocking::Quiet => "a quiet (completing this PE's operations on other PEs through the spml)",
            Blocking::Fence => "the launcher's fence of shmem_init or shmem_finalize (every PE must arrive)",
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

/// Mark a blocking step until the guard drops.
#[inline(always)]
pub fn step(what: Blocking) -> Step {
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
        parts.push(b.text().to_string());
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

        let a = step(Blocking::Quiet);
        assert!(has(Blocking::Quiet.text()));
        let b = step(Blocking::Fence);
        drop(a); // a step replaced by another thread's leaves it in place
        assert!(has(Blocking::Fence.text()) && !has(Blocking::Quiet.text()));
        drop(b);
        assert!(!has(Blocking::Fence.text()));
    }
}
