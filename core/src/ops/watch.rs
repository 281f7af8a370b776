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
//! - at its launcher (below): when the process that started this PE's job on this host is
//!   gone, the PE is an orphan nobody will stop, so it says so and exits.
//!
//! A peer that has exited (its `/proc` entry is gone, or belongs to a newer process) is no
//! longer watched: the launcher reports exits. The watch ends when this PE's finalize has
//! passed its closing fence (every PE arrived), and starts again with a new initialization.
//!
//! The launcher here is the process that started this PE's job on this host (`mpirun`'s or
//! `srun`'s daemon: `prted`, `orted`, `slurmstepd`): this PE's nearest ancestor whose
//! environment does not name this PE's PMIx namespace. That is the parent, unless a wrapper
//! started the PE (`mpirun sh -c '...'`, `srun bash job.sh`, a tool that forks), whose
//! environment the launcher gave it as it gave the PE's, so the walk passes it.
//!
//! The first initialization is watched too ([`start_initializing`]): before the PEs have told
//! each other their pids, the peers are the launcher's descendants (at most [`DEPTH`] levels
//! down) whose environment names this PE's PMIx namespace, their PE being their `PMIX_RANK`.
//! Peers still starting are found by looking again 1, 3, 7 and 15 s in, then every 8 s (a look
//! reads `/proc`, which a start-up of many PEs on one host should not pay each tick). Of a peer
//! the launcher started itself, an exit during start-up ends the job; one found below a wrapper
//! may be a helper the wrapper runs beside the PE (`sh -c 'hostname; ./prog'`), so only its
//! being stopped counts (the wrapper itself, the launcher's child, is watched for exits).

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
    /// Its exit before the start-up's last fence ends the job: the launcher started it (see
    /// the module's text).
    exit_counts: bool,
}

/// How many levels of wrappers the walk to the launcher, and the look for peers below it,
/// pass at most.
const DEPTH: usize = 8;

/// The process that started this PE's job on this host, as the watch knows it.
#[derive(Clone, Copy)]
struct Launcher {
    pid: i32,
    /// Its start time, so that a reused pid is not taken for it.
    start: u64,
    /// It is this PE's parent (no wrapper between them).
    parent: bool,
}

impl Launcher {
    /// The launcher of a PE in PMIx namespace `ns` (see the module's text); without a
    /// namespace, or where the walk finds nothing better, the parent.
    fn find(ns: Option<&str>) -> Launcher {
        // SAFETY: getppid has no preconditions.
        let parent = unsafe { libc::getppid() };
        let mut pid = parent;
        if let Some(ns) = ns {
            for _ in 0..DEPTH {
                let named =
                    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| names_namespace(&env, ns));
                let up = stat_with_parent(pid as u32).map(|(_, ppid, _)| ppid);
                match up {
                    Some(ppid) if named && ppid > 1 => pid = ppid,
                    _ => break,
                }
            }
        }
        let start = stat(pid as u32).map_or(0, |(_, start)| start);
        Launcher { pid, start, parent: pid == parent }
    }

    /// It has ended: this PE is an orphan (re-parented, or the launcher's pid is gone or now
    /// another process's).
    fn gone(&self) -> bool {
        if self.pid <= 1 {
            return false;
        }
        if self.parent {
            // SAFETY: getppid has no preconditions.
            return unsafe { libc::getppid() } != self.pid;
        }
        !matches!(stat(self.pid as u32), Some((state, start)) if start == self.start && !matches!(state, 'Z' | 'X'))
    }
}

/// The state letter and start time of `pid`, from `/proc/<pid>/stat`.
fn stat(pid: u32) -> Option<(char, u64)> {
    stat_with_parent(pid).map(|(state, _, start)| (state, start))
}

/// The state letter, parent pid and start time of `pid`, from `/proc/<pid>/stat`.
fn stat_with_parent(pid: u32) -> Option<(char, i32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// The state (field 3), parent pid (field 4) and start time (field 22) of a `/proc/<pid>/stat`
/// line; the command name (field 2) may hold spaces and parentheses, so fields are counted
/// after its last `)`.
fn parse_stat(text: &str) -> Option<(char, i32, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let parent = fields.get(1)?.parse().ok()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, parent, start))
}

/// A process's environment (`/proc/<pid>/environ`, NUL-separated) names PMIx namespace `ns`.
fn names_namespace(environ: &[u8], ns: &str) -> bool {
    environ.split(|&b| b == 0).any(|var| var.strip_prefix(b"PMIX_NAMESPACE=") == Some(ns.as_bytes()))
}

/// The PE a process's environment (`/proc/<pid>/environ`, NUL-separated) gives it in PMIx
/// namespace `ns`, if it names that namespace.
fn pmix_rank_in(environ: &[u8], ns: &str) -> Option<i32> {
    let (mut in_ns, mut rank) = (false, None);
    for var in environ.split(|&b| b == 0) {
        if let Some(v) = var.strip_prefix(b"PMIX_NAMESPACE=") {
            in_ns = v == ns.as_bytes();
        } else if let Some(v) = var.strip_prefix(b"PMIX_RANK=") {
            rank = std::str::from_utf8(v).ok().and_then(|r| r.parse().ok());
        }
    }
    rank.filter(|_| in_ns)
}

/// The other processes of this PE's job below `launcher` (see the module's text), as peers not
/// yet seen stopped; those in `known` (by pid) are left out.
fn siblings(launcher: i32, ns: &str, known: &[Peer]) -> Vec<Peer> {
    let me = std::process::id() as i32;
    let own: Option<i32> = std::env::var("PMIX_RANK").ok().and_then(|r| r.parse().ok());
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    // Every live process's parent and start time, to walk up from each to the launcher.
    let procs: std::collections::HashMap<i32, (i32, u64)> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let (state, ppid, start) = stat_with_parent(pid as u32)?;
            (!matches!(state, 'Z' | 'X')).then_some((pid, (ppid, start)))
        })
        .collect();
    // The launcher's child on the way up from `pid`, if it is at most DEPTH levels below it
    // and not below this PE (whose own children are its helpers).
    let below = |mut pid: i32| -> Option<i32> {
        for _ in 0..DEPTH {
            let &(ppid, _) = procs.get(&pid)?;
            if ppid == launcher {
                return Some(pid);
            }
            if ppid == me || ppid <= 1 {
                return None;
            }
            pid = ppid;
        }
        None
    };
    procs
        .iter()
        .filter(|&(&pid, _)| pid != me && !known.iter().any(|p| p.pid as i32 == pid))
        .filter_map(|(&pid, &(ppid, start))| {
            below(pid)?;
            let pe = pmix_rank_in(&std::fs::read(format!("/proc/{pid}/environ")).ok()?, ns)?;
            // This PE's own rank: its wrapper or a helper started beside it, not a peer.
            (Some(pe) != own).then_some(Peer {
                pe,
                pid: pid as u32,
                start,
                stopped: Duration::ZERO,
                exit_counts: ppid == launcher,
            })
        })
        .collect()
}

/// This host's other PEs as the first watch found them: (PE, pid, start time).
static KNOWN: std::sync::Mutex<Vec<(i32, u32, u64)>> = std::sync::Mutex::new(Vec::new());

/// Starts the watch of the first initialization, before the PEs know each other's pids; it
/// ends with [`stop`], which the initialization calls before [`start`].
pub fn start_initializing(stop_timeout: Duration) {
    let generation = GENERATION.fetch_add(1, Ordering::AcqRel) + 1;
    debug_assert!(generation % 2 == 1);
    let Ok(ns) = std::env::var("PMIX_NAMESPACE") else { return };
    let launcher = Launcher::find(Some(&ns));
    let spawned = std::thread::Builder::new()
        .name("rshmem-watch".into())
        .spawn(move || watch(generation, siblings(launcher.pid, &ns, &[]), launcher, stop_timeout, Some(ns)));
    if let Err(e) = spawned {
        crate::log::log(
            crate::log::WARN,
            "init",
            &format!("no liveness watch during start-up (thread: {e})"),
        );
    }
}

/// Starts the watch of this initialization (`stop_timeout` 0: only the parent is watched).
pub fn start(stop_timeout: Duration) {
    let generation = GENERATION.fetch_add(1, Ordering::AcqRel) + 1;
    debug_assert!(generation % 2 == 1);
    let local = crate::symm::runtime::last().map_or(&[][..], |rt| rt.hosts.local_peers());
    let peers: Vec<Peer> = local
        .iter()
        .filter_map(|&(pe, pid)| {
            stat(pid).map(|(_, start)| Peer { pe, pid, start, stopped: Duration::ZERO, exit_counts: false })
        })
        .collect();
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if known.is_empty() {
        *known = peers.iter().map(|p| (p.pe, p.pid, p.start)).collect();
    }
    drop(known);
    let launcher = Launcher::find(std::env::var("PMIX_NAMESPACE").ok().as_deref());
    let spawned = std::thread::Builder::new()
        .name("rshmem-watch".into())
        .spawn(move || watch(generation, peers, launcher, stop_timeout, None));
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

/// The watcher's loop; `starting`: the PMIx namespace of a first initialization, whose peers
/// are looked for again now and then.
fn watch(
    generation: u64,
    mut peers: Vec<Peer>,
    launcher: Launcher,
    stop_timeout: Duration,
    starting: Option<String>,
) {
    let mut last = Instant::now();
    let (mut ticks, mut next_look, mut look_every) = (0u32, 5u32, 5u32);
    loop {
        std::thread::sleep(TICK);
        if GENERATION.load(Ordering::Acquire) != generation || crate::error::is_exiting() {
            return;
        }
        ticks += 1;
        if let Some(ns) = starting.as_deref().filter(|_| ticks == next_look) {
            let found = siblings(launcher.pid, ns, &peers);
            peers.extend(found);
            next_look += look_every;
            look_every = (look_every * 2).min(40);
        }
        let now = Instant::now();
        let gap = now - last;
        last = now;
        if launcher.gone() {
            crate::log::line(&format!(
                "{} the process that started this PE (pid {}, its launcher) has ended: this PE ends too",
                crate::log::prefix(),
                launcher.pid
            ));
            // The launcher that would be told is gone: nothing to synchronise with.
            // SAFETY: _exit ends the process at once; nothing of ours needs running.
            unsafe { libc::_exit(1) };
        }
        // A gap much longer than a tick: this PE was stopped or starved itself; what it saw
        // of its peers before says nothing about now.
        let gapless = gap < TICK * 5;
        let mut left = Vec::new();
        peers.retain_mut(|p| match stat(p.pid) {
            Some((state, start))
                if start == p.start && (starting.is_none() || !matches!(state, 'Z' | 'X')) =>
            {
                if state == 'T' && gapless {
                    p.stopped += gap;
                } else {
                    p.stopped = Duration::ZERO;
                }
                true
            }
            // Exited (or the pid was reused): the launcher reports exits, except before
            // the start-up's last fence, which no PE passes without the others.
            _ => {
                if p.exit_counts {
                    left.push(format!("PE {} (pid {}, on this host{})", p.pe, p.pid, host_name(p.pe)));
                }
                false
            }
        });
        if starting.is_some() && !left.is_empty() {
            // All of them: one that ended the job for this reason is gone too by now.
            crate::error::fatal(
                c"shmem (liveness watch)",
                &format!(
                    "{} exited during the job's start-up, before every PE had finished shmem_init: the others would wait for ever{}",
                    left.join(" and "),
                    crate::ops::blocked::describe()
                ),
            );
        }
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
                    host_name(p.pe),
                    p.stopped.as_secs_f64(),
                    crate::ops::blocked::describe()
                ),
            );
        }
    }
}

/// ` NAME`: the name of `pe`'s host where the bootstrap knows it, else empty.
fn host_name(pe: i32) -> String {
    crate::symm::runtime::boot_if_any()
        .and_then(|b| b.host_name(pe))
        .map(|n| format!(" {n}"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_read_after_the_command_name() {
        let line =
            "1234 (a (weird) name) T 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
        assert_eq!(parse_stat(line), Some(('T', 1, 98765)));
        assert_eq!(parse_stat("1 (x) S 0"), None);
        assert_eq!(parse_stat("garbage"), None);
        // This process, as the kernel writes it: running or sleeping, with a start time.
        let (state, _) = stat(std::process::id()).expect("own /proc entry");
        assert!("RS".contains(state), "{state}");
    }

    #[test]
    fn a_peer_is_known_by_its_namespace_and_rank() {
        let env = b"PATH=/bin\0PMIX_RANK=3\0PMIX_NAMESPACE=prterun-vm-1@1\0";
        assert_eq!(pmix_rank_in(env, "prterun-vm-1@1"), Some(3));
        assert_eq!(pmix_rank_in(env, "prterun-vm-1@2"), None, "another job's process");
        assert_eq!(pmix_rank_in(b"PMIX_NAMESPACE=a\0PMIX_RANK=x\0", "a"), None);
        assert_eq!(pmix_rank_in(b"PATH=/bin\0", "a"), None, "not a PE");
        // A child of this test's parent with its namespace: none (nothing here has one).
        // SAFETY: getppid has no preconditions.
        assert!(siblings(unsafe { libc::getppid() }, "rshmem-no-such-namespace", &[]).is_empty());
    }

    #[test]
    fn the_launcher_is_the_nearest_ancestor_outside_the_namespace() {
        assert!(names_namespace(b"A=1\0PMIX_NAMESPACE=job@1\0", "job@1"));
        assert!(!names_namespace(b"PMIX_NAMESPACE=job@12\0", "job@1"), "another job");
        assert!(!names_namespace(b"XPMIX_NAMESPACE=job@1\0", "job@1"));
        // This test's parent names no namespace of ours: it is the launcher, and alive.
        // SAFETY: getppid has no preconditions.
        let parent = unsafe { libc::getppid() };
        for ns in [None, Some("rshmem-no-such-namespace")] {
            let l = Launcher::find(ns);
            assert!(l.pid == parent && l.parent && l.start > 0 && !l.gone());
        }
        // One further up whose /proc entry is gone (no pid reaches i32::MAX) is gone.
        assert!(Launcher { pid: i32::MAX, start: 1, parent: false }.gone());
    }
}
