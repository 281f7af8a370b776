//! Where the PEs of a job that overran `--timeout` are, printed before they are stopped, so
//! that a hang (in a test, in a batch job) says where it hung: each thread's state, kernel
//! wait channel and system call from /proc, and with `--get-stack-traces` (Open MPI's
//! mpirun option of that name) each thread's call stack from gdb.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most PEs whose stacks gdb is asked for (one gdb each, run together): enough to see
/// who waits for whom, few enough to print in the time given.
pub const TRACED_PES: usize = 8;

/// How long each gdb (all run at once) may take before the job is stopped anyway.
const TRACE_TIME: Duration = Duration::from_secs(20);

/// One line per thread of PE `rank` (process `pid`): its name, state, what it sleeps in and
/// its system call, each left out when /proc does not say.
pub fn threads(rank: usize, pid: u32) -> Vec<String> {
    let dir = format!("/proc/{pid}/task");
    let mut tids: Vec<u32> = match std::fs::read_dir(&dir) {
        Ok(d) => d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect(),
        Err(e) => return vec![format!("oshrun: PE {rank} (pid {pid}): {dir}: {e}")],
    };
    tids.sort_unstable();
    tids.iter()
        .map(|tid| {
            let task = Path::new(&dir).join(tid.to_string());
            let read = |f: &str| std::fs::read_to_string(task.join(f)).map(|s| s.trim().to_string()).ok();
            let mut line = format!("oshrun: PE {rank} (pid {pid}) thread {tid}");
            if let Some(comm) = read("comm") {
                line += &format!(" \"{comm}\"");
            }
            if let Some(state) = read("stat").as_deref().and_then(state) {
                line += &format!(": {state}");
            }
            if let Some(w) = read("wchan").filter(|w| !w.is_empty() && w != "0") {
                line += &format!(", in {w}");
            }
            if let Some(s) = read("syscall").as_deref().and_then(syscall) {
                line += &format!(", {s}");
            }
            line
        })
        .collect()
}

/// The state in a /proc stat line, spelled out ("S (sleeping)").
fn state(stat: &str) -> Option<String> {
    // The name in parentheses may hold spaces and parentheses: the state follows the last ')'.
    let code = stat.rsplit_once(')')?.1.split_whitespace().next()?;
    let word = match code {
        "R" => "running",
        "S" => "sleeping",
        "D" => "waiting for a device",
        "T" => "stopped",
        "t" => "stopped by a tracer",
        "Z" => "a zombie",
        _ => return Some(code.to_string()),
    };
    Some(format!("{code} ({word})"))
}

/// A /proc syscall line as "system call N (name)", or None while the thread runs.
fn syscall(line: &str) -> Option<String> {
    let n: i64 = line.split_whitespace().next()?.parse().ok()?;
    if n < 0 {
        return None;
    }
    Some(match syscall_name(n) {
        Some(name) => format!("system call {n} ({name})"),
        None => format!("system call {n}"),
    })
}

/// The names of the system calls a waiting PE is usually in.
fn syscall_name(n: i64) -> Option<&'static str> {
    #[cfg(target_arch = "x86_64")]
    const NAMES: &[(i64, &str)] = &[
        (0, "read"),
        (1, "write"),
        (7, "poll"),
        (23, "select"),
        (24, "sched_yield"),
        (35, "nanosleep"),
        (45, "recvfrom"),
        (47, "recvmsg"),
        (61, "wait4"),
        (202, "futex"),
        (230, "clock_nanosleep"),
        (232, "epoll_wait"),
        (270, "pselect6"),
        (271, "ppoll"),
        (281, "epoll_pwait"),
    ];
    #[cfg(target_arch = "aarch64")]
    const NAMES: &[(i64, &str)] = &[
        (22, "epoll_pwait"),
        (63, "read"),
        (64, "write"),
        (72, "pselect6"),
        (73, "ppoll"),
        (98, "futex"),
        (101, "nanosleep"),
        (115, "clock_nanosleep"),
        (124, "sched_yield"),
        (207, "recvfrom"),
        (212, "recvmsg"),
        (260, "wait4"),
    ];
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    const NAMES: &[(i64, &str)] = &[];
    NAMES.iter().find(|(k, _)| *k == n).map(|(_, name)| *name)
}

/// Every thread's call stack of each PE in `pes` (rank, pid), from gdb attached to each at
/// once, as lines to print; what kept gdb from giving them is said instead.
pub fn backtraces(pes: &[(usize, u32)]) -> Vec<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    for (k, &(_, pid)) in pes.iter().enumerate() {
        // coreutils' timeout bounds each gdb (it kills gdb, which lets the PE go on).
        let child = Command::new("timeout")
            .args(["-s", "KILL", &TRACE_TIME.as_secs().to_string(), "gdb"])
            .args(["-batch", "-nx", "-q", "-p", &pid.to_string()])
            .args([
                "-ex",
                "set pagination off",
                "-ex",
                "set print frame-arguments presence",
                "-ex",
                "thread apply all bt 40",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        match child {
            Ok(child) => {
                let tx = tx.clone();
                // Read its output as it comes (a full pipe would stop gdb) on a thread of its
                // own, so that one slow gdb does not hold up the others' deadline.
                std::thread::spawn(move || {
                    let _ = tx.send((k, child.wait_with_output()));
                });
            }
            Err(e) => {
                let _ = tx.send((k, Err(e)));
            }
        }
    }
    drop(tx);
    let mut results: Vec<Option<std::io::Result<std::process::Output>>> =
        (0..pes.len()).map(|_| None).collect();
    let deadline = Instant::now() + TRACE_TIME + Duration::from_secs(5);
    while results.iter().any(Option::is_none) {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok((k, r)) => results[k] = Some(r),
            Err(_) => break,
        }
    }
    let mut out = Vec::new();
    for (k, &(rank, pid)) in pes.iter().enumerate() {
        let output = match results[k].take() {
            Some(Ok(o)) => o,
            Some(Err(e)) => {
                out.push(format!("oshrun: PE {rank} (pid {pid}): gdb did not run: {e}"));
                continue;
            }
            None => {
                out.push(format!(
                    "oshrun: PE {rank} (pid {pid}): gdb gave no stacks within {} s",
                    TRACE_TIME.as_secs()
                ));
                continue;
            }
        };
        if output.status.code() == Some(127) {
            out.push(
                "oshrun: --get-stack-traces needs gdb, which is not installed (apt-get install gdb)".into(),
            );
            break;
        }
        if output.status.code() == Some(137) {
            out.push(format!(
                "oshrun: PE {rank} (pid {pid}): gdb gave no stacks within {} s",
                TRACE_TIME.as_secs()
            ));
            continue;
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let frames: Vec<&str> =
            stdout.lines().filter(|l| l.starts_with('#') || l.starts_with("Thread ")).collect();
        if frames.is_empty() {
            let why = stderr.lines().chain(stdout.lines()).rfind(|l| !l.trim().is_empty()).unwrap_or("");
            out.push(format!("oshrun: PE {rank} (pid {pid}): gdb gave no stacks: {why}"));
            continue;
        }
        out.push(format!("oshrun: PE {rank} (pid {pid}) stacks:"));
        out.extend(frames.iter().map(|l| format!("  {l}")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_follows_the_last_parenthesis_of_the_name() {
        assert_eq!(state("42 (a) b) (c) S 1 2 3").as_deref(), Some("S (sleeping)"));
        assert_eq!(state("42 (x) R 1").as_deref(), Some("R (running)"));
        assert_eq!(state("garbage"), None);
    }

    #[test]
    fn a_running_thread_has_no_system_call() {
        assert_eq!(syscall("running"), None);
        assert_eq!(syscall("-1 0x7ffd 0x1"), None);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(syscall("202 0x1 0x2").as_deref(), Some("system call 202 (futex)"));
        assert_eq!(syscall("9999 0x1").as_deref(), Some("system call 9999"));
    }

    #[test]
    fn this_process_s_threads_are_described() {
        let lines = threads(3, std::process::id());
        assert!(!lines.is_empty());
        assert!(
            lines[0].starts_with(&format!("oshrun: PE 3 (pid {}) thread ", std::process::id())),
            "{lines:?}"
        );
        // This thread is running while it reads its own stat.
        assert!(lines.iter().any(|l| l.contains(": R (running)")), "{lines:?}");
    }
}
