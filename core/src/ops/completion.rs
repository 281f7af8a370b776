//! When a context's quiet may skip the spml, and when it must flush it: the protocol between
//! the threads that issue operations on one context (the default context is shared by every
//! thread of a `SHMEM_THREAD_MULTIPLE` program) and the threads that quiet it.
//!
//! A context keeps a "dirty" flag (operations went to the spml since the last flush) so that
//! the quiet of a program whose peers are all mapped costs no spml call. The flag alone is not
//! enough once threads share the context: thread B's quiet may take the flag that thread A's
//! operation set, and A's own quiet, finding the flag clear, would then return while B's flush
//! is still under way, before A's operation is complete. That happened: a collective's token
//! taken back through the spml was still in flight when the same word was waited on again, and
//! `shmem_long_sum_to_all` returned a partial result (tests/c/active_set_threads.c, 4 PEs over
//! UCX, about 1 run in 40 under mpirun, 2026-11-27).
//!
//! The rule, which `tests` checks with loom against every interleaving:
//! - An operation marks the flag *after* the spml took it, with Release ([`issued`]): a quiet
//!   that takes the flag then flushes after the operation was issued.
//! - A quiet counts itself in `quieting` *before* it takes the flag, and out after its flush.
//! - A quiet that finds the flag clear and nobody quieting may return: whoever cleared the flag
//!   after our operation has finished its flush. A quiet that finds someone quieting flushes
//!   too (the one under way may have taken our flag), rather than waiting for it (a stream of
//!   other threads' quiets could keep it waiting).
//! - A fence skips the spml only on the same condition ([`fence_needed`]).
//!
//! Every access on the decision path is SeqCst, so that "the flag was cleared by a quiet that
//! had counted itself first" implies "our look at the count comes after that quiet's count".

use std::sync::atomic::Ordering::{Release, SeqCst};

/// The atomic operations the protocol uses, so that the same code runs on the context's std
/// atomics and, in the tests, on loom's.
pub trait Flag {
    fn load(&self) -> bool;
    fn set(&self);
    /// Clear, returning the old value.
    fn take(&self) -> bool;
}

pub trait Count {
    fn load(&self) -> u32;
    fn enter(&self);
    fn leave(&self);
}

impl Flag for std::sync::atomic::AtomicBool {
    #[inline(always)]
    fn load(&self) -> bool {
        self.load(SeqCst)
    }
    #[inline(always)]
    fn set(&self) {
        self.store(true, Release)
    }
    #[inline(always)]
    fn take(&self) -> bool {
        self.swap(false, SeqCst)
    }
}

impl Count for std::sync::atomic::AtomicU32 {
    #[inline(always)]
    fn load(&self) -> u32 {
        self.load(SeqCst)
    }
    #[inline(always)]
    fn enter(&self) {
        self.fetch_add(1, SeqCst);
    }
    #[inline(always)]
    fn leave(&self) {
        self.fetch_sub(1, SeqCst);
    }
}

/// After an operation was handed to the spml: the next quiet must complete it.
#[inline(always)]
pub fn issued(dirty: &impl Flag) {
    dirty.set();
}

/// Quiet: run `flush` (the spml's quiet) unless nothing issued before this call can still be
/// outstanding. `extra` is a second flag this quiet also answers for (the collectives' signals,
/// for the core service quiet), set by the same rule as `dirty`. Returns what `flush` returned,
/// or `ok` when it was not needed.
#[inline(always)]
pub fn quiet<R>(
    dirty: &impl Flag,
    quieting: &impl Count,
    extra: Option<&dyn Flag>,
    ok: R,
    flush: impl FnOnce() -> R,
) -> R {
    let extra_set = extra.is_some_and(|f| f.load());
    if !extra_set && !dirty.load() && quieting.load() == 0 {
        return ok;
    }
    quieting.enter();
    if let Some(f) = extra {
        f.take();
    }
    dirty.take();
    let r = flush();
    quieting.leave();
    r
}

/// Fence: whether the spml must order what was issued before against what comes after (else
/// everything issued before is complete already, or nothing went through the spml).
#[inline(always)]
pub fn fence_needed(dirty: &impl Flag, quieting: &impl Count) -> bool {
    dirty.load() || quieting.load() > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use loom::sync::atomic::{AtomicBool, AtomicU32};
    use loom::sync::{Arc, Mutex};

    impl Flag for AtomicBool {
        fn load(&self) -> bool {
            self.load(SeqCst)
        }
        fn set(&self) {
            self.store(true, Release)
        }
        fn take(&self) -> bool {
            self.swap(false, SeqCst)
        }
    }

    impl Count for AtomicU32 {
        fn load(&self) -> u32 {
            self.load(SeqCst)
        }
        fn enter(&self) {
            self.fetch_add(1, SeqCst);
        }
        fn leave(&self) {
            self.fetch_sub(1, SeqCst);
        }
    }

    /// A model spml: operations (bits) wait as pending until a flush completes all of them.
    #[derive(Default)]
    struct Spml {
        /// (pending, done)
        ops: Mutex<(u32, u32)>,
    }

    impl Spml {
        fn issue(&self, op: u32) {
            self.ops.lock().unwrap().0 |= op;
        }
        fn flush(&self) {
            let mut g = self.ops.lock().unwrap();
            g.1 |= g.0;
            g.0 = 0;
        }
        fn complete(&self, op: u32) -> bool {
            self.ops.lock().unwrap().1 & op != 0
        }
    }

    /// Every interleaving with up to 3 preemptions (the failures here need 1 or 2), so that the
    /// signals test takes seconds rather than a minute.
    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(f);
    }

    #[derive(Default)]
    struct Ctx {
        dirty: AtomicBool,
        quieting: AtomicU32,
        signals: AtomicBool,
        spml: Spml,
    }

    /// `other` runs in a second thread with operation 2, `main` in this one with operation 1,
    /// over every interleaving; each checks what it must see.
    fn pair(main: fn(&Ctx, u32), other: fn(&Ctx, u32)) {
        model(move || {
            let c = Arc::new(Ctx::default());
            let t = {
                let c = c.clone();
                loom::thread::spawn(move || other(&c, 2))
            };
            main(&c, 1);
            t.join().unwrap();
        });
    }

    /// Issue `op`, quiet by the current rule, and find it complete.
    fn put_and_quiet(c: &Ctx, op: u32) {
        c.spml.issue(op);
        issued(&c.dirty);
        quiet(&c.dirty, &c.quieting, None, (), || c.spml.flush());
        assert!(c.spml.complete(op), "thread {op}'s quiet returned before its operation completed");
    }

    #[test]
    fn a_quiet_completes_its_own_thread_s_operation_whoever_took_the_flag() {
        pair(put_and_quiet, put_and_quiet);
    }

    /// The rule before 2026-11-27: take the flag, flush only if it was set. Loom finds the
    /// interleaving where one thread's quiet returns during the other's flush.
    #[test]
    #[should_panic(expected = "returned before its operation completed")]
    fn the_old_rule_loses_a_completion() {
        fn old_rule(c: &Ctx, op: u32) {
            c.spml.issue(op);
            issued(&c.dirty);
            if c.dirty.take() {
                c.spml.flush();
            }
            assert!(c.spml.complete(op), "thread {op}'s quiet returned before its operation completed");
        }
        pair(old_rule, old_rule);
    }

    /// The collectives' signals: one thread's signal is answered for by a quiet that includes
    /// them, even when another thread's such quiet took the flag.
    #[test]
    fn signals_are_completed_by_a_quiet_that_includes_them() {
        fn signal_and_quiet(c: &Ctx, op: u32) {
            c.spml.issue(op);
            c.signals.set();
            quiet(&c.dirty, &c.quieting, Some(&c.signals), (), || c.spml.flush());
            assert!(c.spml.complete(op));
        }
        pair(signal_and_quiet, signal_and_quiet);
    }

    /// A fence that skips the spml does so only when its thread's operation is complete.
    #[test]
    fn a_skipped_fence_finds_its_operation_complete() {
        fn put_and_fence(c: &Ctx, op: u32) {
            c.spml.issue(op);
            issued(&c.dirty);
            if !fence_needed(&c.dirty, &c.quieting) {
                assert!(c.spml.complete(op), "a fence was skipped with its operation outstanding");
            }
        }
        pair(put_and_fence, put_and_quiet);
    }
}
