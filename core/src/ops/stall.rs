//! A warning when a collective waits far longer than collectives take: every PE of a team
//! must call the same collectives in the same order, and one that skipped a call (or is stuck
//! elsewhere) leaves the others waiting without a word. Long waits are also legitimate (one PE
//! computes or writes a file while the rest wait in a barrier), so this only warns, after
//! `SHMEM_COLL_STALL_WARN` seconds and again each time the wait has doubled.
//!
//! The cost stays off the fast path: a collective records its routine in a thread-local cell
//! (two stores), and only a wait that has gone round thousands of times reads the clock, or
//! a few dozen times where each round gave the core away (see [`Countdown`]).

use std::cell::Cell;
use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Seconds after which a waiting collective warns; 0: never.
static WARN_AFTER_S: AtomicU64 = AtomicU64::new(0);
/// Seconds after which a point-to-point wait (`shmem_wait_until` and the signal wait) says
/// what it waits for; 0: never (the default: a long wait may be the program's design).
static WAIT_WARN_AFTER_S: AtomicU64 = AtomicU64::new(0);

/// Wait rounds between two looks at the clock (a power of two).
pub const ROUNDS: u32 = 1 << 14;

/// What a round that gave the core away (a yield or a nap, microseconds at the least) counts
/// for: a wait on a loaded machine then looks at the clock every 64 such rounds. Counted as
/// one, 16 384 of them took a second or more before the first look (which starts the clock),
/// so under load a PE left waiting 1.5 s in a barrier never warned (2026-12-01,
/// `a_collective_left_waiting_says_so_and_still_completes` during a stress run).
pub const SLOW_ROUND: u32 = ROUNDS / 64;

/// The rounds left before a wait's next look at the clock.
pub struct Countdown(u32);

impl Countdown {
    pub const fn new() -> Countdown {
        Countdown(ROUNDS)
    }

    /// One round of the wait (`slow`: it gave the core away); true when it is time to look.
    #[inline(always)]
    pub fn tick(&mut self, slow: bool) -> bool {
        let cost = if slow { SLOW_ROUND } else { 1 };
        if self.0 <= cost {
            self.0 = ROUNDS;
            return true;
        }
        self.0 -= cost;
        false
    }
}

impl Default for Countdown {
    fn default() -> Countdown {
        Countdown::new()
    }
}

pub fn configure(seconds: u64) {
    WARN_AFTER_S.store(seconds, Ordering::Relaxed);
}

pub fn configure_waits(seconds: u64) {
    WAIT_WARN_AFTER_S.store(seconds, Ordering::Relaxed);
}

/// The watch of one point-to-point wait: it reads the clock only when its [`Countdown`] says
/// so, and only if `SHMEM_WAIT_STALL_WARN` is set.
pub struct WaitWatch {
    countdown: Countdown,
    since: Option<Instant>,
    next: u64,
    /// The wait told `blocked` what it waits for (at a look at the clock).
    published: bool,
}

impl WaitWatch {
    pub const fn new() -> WaitWatch {
        WaitWatch { countdown: Countdown::new(), since: None, next: 0, published: false }
    }

    /// One round of the wait (`slow`: it gave the core away); `what` describes what it waits
    /// for (only called at a look at the clock).
    #[inline(always)]
    pub fn round(&mut self, slow: bool, routine: &'static CStr, what: impl Fn() -> String) {
        if self.countdown.tick(slow) {
            self.look(routine, what);
        }
    }

    #[cold]
    #[inline(never)]
    fn look(&mut self, routine: &'static CStr, what: impl Fn() -> String) {
        // Each look tells `blocked` again, with the word's value as it is now: a lost peer's
        // message then says what this PE was waiting for.
        self.published = true;
        crate::ops::blocked::publish(format!("{} (waiting for {})", routine.to_string_lossy(), what()));
        let after = WAIT_WARN_AFTER_S.load(Ordering::Relaxed);
        if after == 0 {
            return;
        }
        if let Some((waited, next)) = due(&mut self.since, &mut self.next, after) {
            crate::log::log(
                crate::log::WARN,
                &routine.to_string_lossy(),
                &format!(
                    "this PE has waited {waited} s for {}; another PE must change it (next warning at {next} s; SHMEM_WAIT_STALL_WARN)",
                    what()
                ),
            );
        }
    }
}

impl Drop for WaitWatch {
    #[inline(always)]
    fn drop(&mut self) {
        if self.published {
            crate::ops::blocked::withdraw();
        }
    }
}

impl Default for WaitWatch {
    fn default() -> WaitWatch {
        WaitWatch::new()
    }
}

/// Runs `fence` (a launcher's fence of the first initialization, which blocks inside the
/// bootstrap) on a thread of its own while this one warns, after `SHMEM_COLL_STALL_WARN`
/// seconds and each time the wait doubles, that the other PEs have not all arrived: a PE that
/// never calls `shmem_init`, or one stopped on another host before it (which no watch sees
/// before the spml's heartbeats start), would leave the job waiting without a word. After
/// `limit` seconds (`SHMEM_INIT_TIMEOUT`; 0: never) the wait ends the job instead.
pub fn fence_warning<E: Send + 'static>(
    routine: &'static CStr,
    limit: u64,
    fence: impl FnOnce() -> Result<(), E> + Send + 'static,
) -> Result<(), E> {
    let after = WARN_AFTER_S.load(Ordering::Relaxed);
    if after == 0 && limit == 0 {
        return fence();
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("rshmem-fence".into()).spawn(move || {
        let _ = tx.send(fence());
    });
    if let Err(e) = spawned {
        crate::error::fatal(routine, &format!("no thread for the launcher's fence: {e}"));
    }
    let start = Instant::now();
    let (mut since, mut next) = (None, 0);
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(250)) {
            Ok(r) => return r,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                crate::error::fail(routine, crate::error::ShmemError::FenceNoAnswer)
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        let name = routine.to_string_lossy();
        if limit > 0 && start.elapsed().as_secs() >= limit {
            crate::error::fail(routine, crate::error::ShmemError::FenceTimeout { limit_s: limit, routine });
        }
        if after == 0 {
            continue;
        }
        if let Some((waited, next_at)) = due(&mut since, &mut next, after) {
            crate::log::log(
                crate::log::WARN,
                &name,
                &format!(
                    "this PE has waited {waited} s in the launcher's fence for the other PEs to arrive: every PE must call {name}; one that has not yet (still starting, busy, or stopped on another host, which only the launcher can tell) holds the others (next warning at {next_at} s; SHMEM_COLL_STALL_WARN)"
                ),
            );
        }
    }
}

/// The doubling schedule both watches share: the first look starts the clock; a warning is due
/// once `after` seconds have passed, then each time the wait has doubled. Returns the seconds
/// waited and when the next warning is due, once one is due now.
fn due(since: &mut Option<Instant>, next: &mut u64, after: u64) -> Option<(u64, u64)> {
    let since = *since.get_or_insert_with(Instant::now);
    if *next == 0 {
        *next = after;
    }
    let waited = since.elapsed().as_secs();
    (waited >= *next).then(|| {
        *next *= 2;
        (waited, *next)
    })
}

/// The C spelling of a comparison (`SHMEM_CMP_*`).
pub fn cmp_name(cmp: std::ffi::c_int) -> &'static str {
    use rshmem_plugin_api::{CMP_EQ, CMP_GE, CMP_GT, CMP_LE, CMP_LT, CMP_NE};
    match cmp {
        CMP_EQ => "==",
        CMP_NE => "!=",
        CMP_GT => ">",
        CMP_GE => ">=",
        CMP_LT => "<",
        CMP_LE => "<=",
        _ => "?",
    }
}

/// How a collective's warning names who it waits for: `describe(team)` (the team's members
/// that have not arrived), computed only when a warning is due.
#[derive(Clone, Copy)]
pub struct Probe {
    pub team: *const std::ffi::c_void,
    pub describe: fn(*const std::ffi::c_void) -> Option<String>,
}

#[derive(Clone, Copy)]
struct Current {
    routine: *const c_char,
    op: &'static str,
    probe: Option<Probe>,
    /// When a wait of this collective first looked at the clock.
    since: Option<Instant>,
    /// Seconds of waiting at which the next warning is due.
    next: u64,
    /// This collective told `blocked` it waits (at its first look at the clock).
    published: bool,
}

const NONE: Current =
    Current { routine: std::ptr::null(), op: "", probe: None, since: None, next: 0, published: false };

thread_local! {
    static CURRENT: Cell<Current> = const { Cell::new(NONE) };
}

/// The collective running on this thread until the guard drops (collectives may nest: the
/// outer one is restored).
pub struct Guard(Current);

impl Drop for Guard {
    fn drop(&mut self) {
        if CURRENT.with(|c| c.replace(self.0)).published {
            crate::ops::blocked::withdraw();
        }
    }
}

pub fn enter(routine: &'static CStr, op: &'static str, probe: Option<Probe>) -> Guard {
    let now = Current { routine: routine.as_ptr(), op, probe, since: None, next: 0, published: false };
    Guard(CURRENT.with(|c| c.replace(now)))
}

/// Called by a collective's wait when its [`Countdown`] says so.
#[cold]
#[inline(never)]
pub fn check() {
    CURRENT.with(|c| {
        let mut cur = c.get();
        if cur.routine.is_null() {
            return;
        }
        if !cur.published {
            // A wait this long is worth naming if a lost peer ends the job (`blocked`).
            cur.published = true;
            c.set(cur);
            // SAFETY: the routine name `enter` was given lives as long as the collective.
            let routine = unsafe { CStr::from_ptr(cur.routine) }.to_string_lossy();
            crate::ops::blocked::publish(format!("{routine} (waiting for the other PEs of the team in a {})", cur.op));
        }
        let after = WARN_AFTER_S.load(Ordering::Relaxed);
        if after == 0 {
            return;
        }
        if let Some((waited, next)) = due(&mut cur.since, &mut cur.next, after) {
            // SAFETY: the routine name `enter` was given lives as long as the collective.
            let routine = unsafe { CStr::from_ptr(cur.routine) }.to_string_lossy();
            // Who has not arrived, read from the other members (without this thread's
            // collective cell: the reads are operations of their own).
            c.set(NONE);
            let who = cur.probe.and_then(|p| (p.describe)(p.team)).map(|w| format!(" {w}.")).unwrap_or_default();
            crate::log::log(
                crate::log::WARN,
                &routine,
                &format!(
                    "this PE has waited {waited} s in a {} for other PEs of the team.{who} Every PE of a team must call the same collectives in the same order: a PE that skipped this one, or is stuck or still busy elsewhere, keeps the others here (next warning at {next} s; SHMEM_COLL_STALL_WARN)",
                    cur.op
                ),
            );
        }
        c.set(cur);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spinning rounds look at the clock every ROUNDS rounds; rounds that gave the core away
    /// every 64, and a mix in proportion.
    #[test]
    fn a_wait_that_gives_the_core_away_looks_at_the_clock_sooner() {
        let looks = |slow: &dyn Fn(u32) -> bool, rounds: u32| {
            let mut c = Countdown::new();
            (0..rounds).filter(|&r| c.tick(slow(r))).count()
        };
        assert_eq!(looks(&|_| false, ROUNDS * 3), 3);
        assert_eq!(looks(&|_| false, ROUNDS - 1), 0);
        assert_eq!(looks(&|_| true, 64 * 5), 5);
        assert_eq!(looks(&|_| true, 63), 0);
        // Half the rounds slow: about 128 rounds a look.
        let mixed = looks(&|r| r % 2 == 0, 128 * 10);
        assert!((9..=10).contains(&mixed), "{mixed} looks");
    }
}
