//! How the progress thread treats the application's cores while the application drives the
//! worker itself (see `progress_loop` in `ucx.rs`).
//!
//! In that state the thread only looks, after pauses that grow to [`super::ACTIVE_PAUSE_MAX`],
//! whether the application is still at it. Each look used to cost a PE more than the look
//! itself: the thread's timer fired on its own (an interrupt, and in a virtual machine an
//! exit), and the woken thread preempted the PE on that core, in the middle of whatever it
//! waited for. The 99th percentile of 8-byte gets across two emulated hosts was then 1.7-2
//! times OSHMEM's, with the same median (2026-11-27, docs/performance.md, "The progress thread
//! stands by").
//!
//! So while it stands by, the thread
//! - runs under `SCHED_BATCH`, whose wake-ups never preempt the running task: the look waits
//!   for the PE's next switch (its time slice ending, a yield);
//! - has a timer slack of [`STANDBY_SLACK`], so its timer may fire with others (the tick).
//!
//! When it takes over the worker (the application computes) it goes back to the policy and
//! slack it had, so a request arriving then wakes it and preempts the computing PE at once, as
//! before. On a host with more PEs than CPUs it never stands by: there a PE inside the library
//! is often descheduled, and the thread, answering its peers meanwhile, must notice at once. Both settings are the thread's own and need no privilege (a thread may switch
//! between `SCHED_OTHER` and `SCHED_BATCH` at its nice value); where the system refuses them
//! anyway (a seccomp filter), the thread goes on in the old manner.

use std::time::Duration;

/// The timer slack while standing by: as long as the longest pause, so the looks fire with
/// the tick. Across two emulated hosts (`tests/bench/get_percentiles.c`, 10 alternating rounds,
/// 2026-11-27) the gets' 99th percentile was 21.7 µs with 2 ms and 22.4 with 4 ms, where
/// OSHMEM's was 24.6 and rshmem's 41.6 without standing by, but 36.6 with 500 µs. The price:
/// a PE that begins to compute is served a little later; 100 gets from a PE computing 300 ms
/// took 104 µs each on average against 65 without standing by (`tests/bench/netpath.c`,
/// 8 rounds), where OSHMEM's take 3 ms.
pub(super) const STANDBY_SLACK: Duration = super::ACTIVE_PAUSE_MAX;

/// The calling thread's manner, switched only when it changes.
pub(super) struct Manner {
    standing_by: bool,
    /// The policy the thread had at start, restored when it serves.
    policy: libc::c_int,
    /// Cleared once the system refused a switch: the thread then keeps its start manner.
    allowed: bool,
}

impl Manner {
    /// The calling thread's manner as it is (serving).
    pub(super) fn of_this_thread() -> Manner {
        // SAFETY: no arguments; 0 names the calling thread.
        let policy = unsafe { libc::sched_getscheduler(0) };
        // Another policy (real-time, idle, set by whoever started the job) is left alone.
        let allowed = policy == libc::SCHED_OTHER;
        Manner { standing_by: false, policy, allowed }
    }

    /// Whether the thread stands by now.
    #[cfg(test)]
    pub(super) fn standing_by(&self) -> bool {
        self.standing_by
    }

    /// The application drives the worker: looks must not preempt it.
    pub(super) fn stand_by(&mut self) {
        if self.standing_by || !self.allowed {
            return;
        }
        if set(libc::SCHED_BATCH, STANDBY_SLACK.as_nanos() as libc::c_ulong) {
            self.standing_by = true;
        } else {
            self.allowed = false;
            set(self.policy, 0);
        }
    }

    /// The thread drives the worker: back to the start manner, so it answers at once.
    pub(super) fn serve(&mut self) {
        if self.standing_by {
            self.standing_by = false;
            set(self.policy, 0);
        }
    }
}

/// Set the calling thread's scheduling policy (at priority 0, keeping its nice value) and timer
/// slack (0: the thread's default). False when either was refused.
fn set(policy: libc::c_int, slack_ns: libc::c_ulong) -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: 0 names the calling thread; `param` is a valid sched_param for a fair policy.
    let sched = unsafe { libc::sched_setscheduler(0, policy, &param) } == 0;
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long and changes only the calling thread.
    let slack = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, slack_ns) } == 0;
    sched && slack
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> libc::c_int {
        // SAFETY: the calling thread.
        unsafe { libc::sched_getscheduler(0) }
    }

    fn slack() -> libc::c_int {
        // SAFETY: PR_GET_TIMERSLACK returns the calling thread's slack.
        unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) }
    }

    #[test]
    fn standing_by_batches_and_coalesces_and_serving_restores() {
        std::thread::spawn(|| {
            let start = (policy(), slack());
            assert_eq!(start.0, libc::SCHED_OTHER, "test threads start under SCHED_OTHER");
            let mut m = Manner::of_this_thread();
            m.stand_by();
            assert!(m.standing_by(), "an unprivileged thread may switch to SCHED_BATCH");
            assert_eq!(policy(), libc::SCHED_BATCH);
            assert_eq!(slack() as u128, STANDBY_SLACK.as_nanos());
            m.stand_by();
            assert_eq!(policy(), libc::SCHED_BATCH);
            m.serve();
            assert!(!m.standing_by());
            assert_eq!((policy(), slack()), start);
            // And again: the way back must be allowed too.
            m.stand_by();
            assert_eq!(policy(), libc::SCHED_BATCH);
            m.serve();
            assert_eq!((policy(), slack()), start);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_thread_under_another_policy_is_left_alone() {
        std::thread::spawn(|| {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: the calling thread; SCHED_IDLE takes priority 0.
            assert_eq!(unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) }, 0);
            let mut m = Manner::of_this_thread();
            m.stand_by();
            assert!(!m.standing_by());
            assert_eq!(policy(), libc::SCHED_IDLE);
            m.serve();
            assert_eq!(policy(), libc::SCHED_IDLE);
        })
        .join()
        .unwrap();
    }
}
