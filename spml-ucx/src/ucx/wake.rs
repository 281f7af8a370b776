//! How an application thread that leaves the first bytes in a batch wakes the progress thread
//! when that thread sleeps on the worker's event fd, so that a PE that goes on computing still
//! has its batch sent within the thread's short pause, never after its long one.
//!
//! It is the store-buffering pattern, with a SeqCst fence between each side's store and load:
//! - the application counts the peer's buffer into `waiting` (0 -> 1), fences, then reads
//!   `sleeping`, and signals the worker if it is set;
//! - the thread sets `sleeping`, fences, then looks at `waiting`, and sleeps long only if it
//!   is 0.
//!
//! The two fences are ordered one way or the other: the side whose fence comes second reads
//! what the other stored before its fence. So either the thread sees the waiting buffer, or
//! the application sees the thread asleep and signals it. Without the fences both could read
//! the old values (each core's store still in its store buffer, which SeqCst loads and stores
//! alone also rule out, but which loom models only through fences) and the batch would wait
//! for the long poll: `tests` shows loom finding that. The fence costs the application only
//! when a batch gets its first bytes, not per put.

use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicUsize};

/// The count of peers whose buffer holds bytes.
pub trait Waiting {
    /// Count one more; the count before.
    fn add(&self) -> usize;
    fn get(&self) -> usize;
    /// A SeqCst fence.
    fn fence(&self);
}

/// The progress thread's "asleep on the event fd" mark.
pub trait Sleeping {
    fn set(&self, v: bool);
    fn get(&self) -> bool;
    /// A SeqCst fence.
    fn fence(&self);
}

impl Waiting for AtomicUsize {
    #[inline(always)]
    fn add(&self) -> usize {
        self.fetch_add(1, SeqCst)
    }
    #[inline(always)]
    fn get(&self) -> usize {
        self.load(SeqCst)
    }
    #[inline(always)]
    fn fence(&self) {
        std::sync::atomic::fence(SeqCst)
    }
}

impl Sleeping for AtomicBool {
    #[inline(always)]
    fn set(&self, v: bool) {
        self.store(v, SeqCst)
    }
    #[inline(always)]
    fn get(&self) -> bool {
        self.load(SeqCst)
    }
    #[inline(always)]
    fn fence(&self) {
        std::sync::atomic::fence(SeqCst)
    }
}

/// The application side, for a buffer that was empty: whether this was the first buffer to
/// wait (only then can the thread have gone to sleep without seeing one).
#[inline(always)]
pub fn first_to_wait(waiting: &impl Waiting) -> bool {
    let first = waiting.add() == 0;
    if first {
        waiting.fence();
    }
    first
}

/// The application side, after [`first_to_wait`]: whether to signal the worker.
#[inline(always)]
pub fn must_signal(sleeping: &impl Sleeping) -> bool {
    sleeping.get()
}

/// The thread side, before it sleeps: mark itself asleep, then look (`look`: whether any
/// buffer waits, reading [`Waiting::get`]). True when one waits: sleep only the short pause.
pub fn to_sleep(sleeping: &impl Sleeping, look: impl FnOnce() -> bool) -> bool {
    sleeping.set(true);
    sleeping.fence();
    look()
}

/// The thread side, once it woke.
pub fn woke(sleeping: &impl Sleeping) {
    sleeping.set(false);
}

#[cfg(test)]
mod tests {
    use super::*;
    use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use loom::sync::Arc;

    /// loom's atomics with SeqCst and the fences (as the std ones above) or, to show what loom
    /// finds, without the fences.
    struct Word<A> {
        a: A,
        weak: bool,
    }

    impl Word<AtomicUsize> {
        fn order(&self, strong: Ordering, weak: Ordering) -> Ordering {
            if self.weak {
                weak
            } else {
                strong
            }
        }
    }

    impl Waiting for Word<AtomicUsize> {
        fn add(&self) -> usize {
            self.a.fetch_add(1, self.order(Ordering::SeqCst, Ordering::AcqRel))
        }
        fn get(&self) -> usize {
            self.a.load(self.order(Ordering::SeqCst, Ordering::Acquire))
        }
        fn fence(&self) {
            if !self.weak {
                loom::sync::atomic::fence(Ordering::SeqCst);
            }
        }
    }

    impl Sleeping for Word<AtomicBool> {
        fn set(&self, v: bool) {
            self.a.store(v, if self.weak { Ordering::Release } else { Ordering::SeqCst })
        }
        fn get(&self) -> bool {
            self.a.load(if self.weak { Ordering::Acquire } else { Ordering::SeqCst })
        }
        fn fence(&self) {
            if !self.weak {
                loom::sync::atomic::fence(Ordering::SeqCst);
            }
        }
    }

    /// The thread goes to sleep while the application leaves the first bytes: in every
    /// interleaving the thread sees them or is signalled.
    fn check(weak: bool) {
        loom::model(move || {
            let waiting = Arc::new(Word { a: AtomicUsize::new(0), weak });
            let sleeping = Arc::new(Word { a: AtomicBool::new(false), weak });
            let (w, s) = (waiting.clone(), sleeping.clone());
            let app = loom::thread::spawn(move || first_to_wait(&*w) && must_signal(&*s));
            let saw = to_sleep(&*sleeping, || waiting.get() > 0);
            let signalled = app.join().unwrap();
            assert!(saw || signalled, "the thread slept long with a batch waiting and no signal");
        });
    }

    #[test]
    fn the_thread_sees_the_batch_or_is_signalled() {
        check(false);
    }

    #[test]
    #[should_panic(expected = "the thread slept long")]
    fn without_the_fences_the_wake_up_is_lost() {
        check(true);
    }
}
