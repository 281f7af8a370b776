//! The liveness watch of PEs started by a PMIx launcher (`mpirun`, `srun`): `oshrun` watches
//! its own PEs (it is their parent), but those launchers do not report a PE stopped by a signal,
//! and a PE whose launcher died would live on. So each such PE runs one thread that looks,
//! every [`TICK`]:
//!
//! - at the state of each other PE on its host (`/proc/<pid>/stat`): one stopped by a signal
//!   (state `T`: SIGSTOP, SIGTSTP, ...) for `SHMEM_STOP_TIMEOUT` seconds ends the job, naming
//!   it, since the others cannot progress without it. A PE stopped by a debugger (state `t`)
//!   is left alone, as is one that is busy computing (it is running). The time counts only while
//!   this watcher itself runs without gaps: when the whole job is suspended (Ctrl-Z, a batch
//!   system's suspend), the watchers are stopped too, and on resumption each finds a gap
//!   longer than a tick and starts counting again.
//! - at its own parent: when the process that started this PE (the launcher or its daemon) is
//!   gone, the PE is an orphan nobody will stop, so it says so and exits.
//!
//! A peer that has exited (its `/proc` entry is gone, or belongs to a newer process) is no
//! longer watched: the launcher reports exits. The watch ends when this PE's finalize has
//! passed its closing fence (every PE arrived), and starts again with a new initialization.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often the watcher looks.
pub const TICK: Duration = Duration::from_millis(200);

/// The watch generation: a watcher runs while the generation it was started for is current.
/// Odd: a watch is wanted; even: none (before init, after finalize).
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// A peer as the watcher knows it.
struct Peer {
    pe: i32,
    pid: u32,
    /// Its start time (`/proc/<pid>/stat` field 22): a different one means the pid was reused.
    start: u64,
    /// How long it has been seen stopped, counted in this watcher's gapless ticks.
    stopped: Duration,
}

/// The state letter and start time of `pid`, from `/proc/<pid>/stat`.
fn stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// The state (field 3) and start time (field 22) of a `/proc/<pid>/stat` line; the command
/// name (field 2) may hold spaces and parentheses, so fields are counted after its last `)`.
fn parse_stat(text: &str) -> Option<(char, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

/// This host's other PEs as the first watch found them: (PE, pid, start time).
static KNOWN: std::sync::Mutex<Vec<(i32, u32, u64)>> = std::sync::Mutex::new(Vec::new());

/// Starts the watch of this initialization (`stop_timeout` 0: only the parent is watched).
pub fn start(stop_timeout: Duration) {
    let generation = GENERATION.fetch_add(1, Ordering::AcqRel) + 1;
    debug_assert!(generation % 2 == 1);
    let local = crate::symm::runtime::last().map_or(&[][..], |rt| rt.hosts.local_peers());
    let peers: Vec<Peer> = local
        .iter()
        .filter_map(|&(pe, pid)| stat(pid).map(|(_, start)| Peer { pe, pid, start, stopped: Duration::ZERO }))
        .collect();
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if known.is_empty() {
        *known = peers.iter().map(|p| (p.pe, p.pid, p.start)).collect();
    }
    drop(known);
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    let spawned = std::thread::Builder::new()
        .name("rshmem-watch".into())
        .spawn(move || watch(generation, peers, parent, stop_timeout));
    if let Err(e) = spawned {
        crate::log::log(crate::log::WARN, "init", &format!("no liveness watch (thread: {e})"));
    }
}

/// A PE of this host that has exited since the first initialization (its `/proc` entry is
/// gone, a zombie, or belongs to a newer process), as (PE, pid). Under PMIx launchers
/// endpoints to this host's PEs are made on first use, so this is how a PE that left after the
/// last `shmem_finalize` is found while the others initialize again (and wait for it in the
/// bootstrap's fence); peers on other hosts are found by their endpoints.
pub fn departed() -> Option<(i32, u32)> {
    let known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    known.iter().find_map(|&(pe, pid, start)| match stat(pid) {
        Some((state, now)) if now == start && state != 'Z' && state != 'X' => None,
        _ => Some((pe, pid)),
    })
}

/// Ends the watch (finalize, after every PE arrived).
pub fn stop() {
    let _ = GENERATION.fetch_update(Ordering::AcqRel, Ordering::Acquire, |g| (g % 2 == 1).then_some(g + 1));
}

fn watch(generation: u64, mut peers: Vec<Peer>, parent: i32, stop_timeout: Duration) {
    let mut last = Instant::now();
    loop {
        std::thread::sleep(TICK);
        if GENERATION.load(Ordering::Acquire) != generation || crate::error::is_exiting() {
            return;
        }
        let now = Instant::now();
        let gap = now - last;
        last = now;
        // SAFETY: getppid has no preconditions.
        if parent > 1 && unsafe { libc::getppid() } != parent {
            crate::log::line(&format!(
                "{} the process that started this PE (pid {parent}, its launcher) has ended: this PE ends too",
                crate::log::prefix()
            ));
            // The launcher that would be told is gone: nothing to synchronise with.
            // SAFETY: _exit ends the process at once; nothing of ours needs running.
            unsafe { libc::_exit(1) };
        }
        // A gap much longer than a tick: this PE was stopped or starved itself; what it saw
        // of its peers before says nothing about now.
        let gapless = gap < TICK * 5;
        peers.retain_mut(|p| match stat(p.pid) {
            Some((state, start)) if start == p.start => {
                if state == 'T' && gapless {
                    p.stopped += gap;
                } else {
                    p.stopped = Duration::ZERO;
                }
                true
            }
            // Exited (or the pid was reused): the launcher reports exits.
            _ => false,
        });
        if stop_timeout.is_zero() {
            continue;
        }
        if let Some(p) = peers.iter().find(|p| p.stopped >= stop_timeout) {
            crate::error::fatal(
                c"shmem (liveness watch)",
                &format!(
                    "PE {} (pid {}, on this host{}) has been stopped by a signal for {:.1} s (SHMEM_STOP_TIMEOUT): the job cannot progress without it{}",
                    p.pe,
                    p.pid,
                    crate::symm::runtime::boot_if_any()
                        .and_then(|b| b.host_name(p.pe))
                        .map(|n| format!(" {n}"))
                        .unwrap_or_default(),
                    p.stopped.as_secs_f64(),
                    crate::ops::blocked::describe()
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_read_after_the_command_name() {
        let line =
            "1234 (a (weird) name) T 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
        assert_eq!(parse_stat(line), Some(('T', 98765)));
        assert_eq!(parse_stat("1 (x) S 0"), None);
        assert_eq!(parse_stat("garbage"), None);
        // This process, as the kernel writes it: running or sleeping, with a start time.
        let (state, _) = stat(std::process::id()).expect("own /proc entry");
        assert!("RS".contains(state), "{state}");
    }
}
