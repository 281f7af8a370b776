//! `oshrun`: start N PEs of a program on this node, serve their bootstrap, forward their
//! environment (they inherit stdout/stderr, so output goes straight to the terminal), and watch
//! them: the first PE to die abnormally, exit with an error or request an abort ends the job at
//! once, with a message naming it, and its status becomes oshrun's.

use crate::kvserver::Server;
use shmem::bootstrap::wire;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Options {
    pub np: usize,
    /// Pin PE i to the i-th allowed core (when there are at least as many cores as PEs).
    pub bind: Bind,
    pub timeout: Option<Duration>,
    pub env: Vec<(String, String)>,
    pub program: String,
    pub args: Vec<String>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Bind {
    /// One core per PE when the PEs fit on the allowed cores, else no binding (`--bind-to core`).
    Auto,
    None,
}

pub const USAGE: &str =
    "usage: oshrun -np N [--timeout SECONDS] [--bind-to core|none] [-x NAME[=VALUE]]... [--] program [args...]";

pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut np = None;
    let mut timeout = None;
    let mut bind = Bind::None;
    let mut env = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let mut value = |what: &str| -> Result<String, String> {
            i += 1;
            args.get(i).cloned().ok_or_else(|| format!("{a} needs {what}"))
        };
        match a {
            "-np" | "-n" | "--np" | "-c" => {
                let v = value("a number of PEs")?;
                np = Some(
                    v.parse::<usize>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| format!("{a} {v}: not a positive number"))?,
                );
            }
            "--timeout" => {
                let v = value("seconds")?;
                timeout = Some(Duration::from_secs_f64(
                    v.parse().map_err(|_| format!("--timeout {v}: not a number"))?,
                ));
            }
            "--bind-to" => {
                bind = match value("core or none")?.as_str() {
                    "core" => Bind::Auto,
                    "none" => Bind::None,
                    v => return Err(format!("--bind-to {v}: use core or none")),
                };
            }
            "-x" => {
                let v = value("NAME or NAME=VALUE")?;
                match v.split_once('=') {
                    Some((k, val)) => env.push((k.to_string(), val.to_string())),
                    None => env.push((v.clone(), std::env::var(&v).unwrap_or_default())),
                }
            }
            "-h" | "--help" => return Err(USAGE.to_string()),
            "--" => {
                i += 1;
                break;
            }
            s if s.starts_with('-') => return Err(format!("unknown option {s}\n{USAGE}")),
            _ => break,
        }
        i += 1;
    }
    let program = args.get(i).cloned().ok_or_else(|| format!("no program given\n{USAGE}"))?;
    Ok(Options { np: np.unwrap_or(1), bind, timeout, env, program, args: args[i + 1..].to_vec() })
}

fn signal_name(sig: i32) -> String {
    // SAFETY: strsignal returns a static or thread-local string for any number.
    let p = unsafe { libc::strsignal(sig) };
    let name = if p.is_null() {
        String::new()
    } else {
        unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
    };
    format!("signal {sig} ({name})")
}

/// The cores this process may run on.
fn allowed_cores() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|c| libc::CPU_ISSET(*c, &set)).collect()
    }
}

struct Job {
    children: Vec<Option<Child>>,
    pids: Vec<u32>,
}

impl Job {
    fn kill_all(&mut self) {
        for c in self.children.iter_mut().flatten() {
            let _ = c.kill();
        }
        for c in self.children.iter_mut().flatten() {
            let _ = c.wait();
        }
    }
}

/// Run the job; returns oshrun's exit status.
pub fn run(o: &Options) -> i32 {
    let dir = std::env::temp_dir().join(format!(
        "rshmem-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    ));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("oshrun: cannot create {}: {e}", dir.display());
        return 1;
    }
    let sock = dir.join("boot.sock");
    let server = match Server::start(&sock, o.np) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("oshrun: cannot listen on {}: {e}", sock.display());
            return 1;
        }
    };
    let job_id = format!(
        "{:x}{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
    );
    let mut job = Job { children: Vec::new(), pids: Vec::new() };
    // `--bind-to core` pins PEs to cores when they fit. Unpinned, the scheduler may start two PEs
    // on one core and waits then cost context switches until it spreads them (measured: a
    // 6.5 µs ping-pong for the first 20000 rounds, 0.5 µs once spread). Pinned, that never
    // happens, but on the test VM a 2-PE barrier was steadier and slower (0.54 µs median
    // against a bimodal 0.11-0.87 µs unpinned), so pinning is not the default yet.
    let cores = allowed_cores();
    let pin = o.bind == Bind::Auto && !cores.is_empty() && o.np <= cores.len();
    for rank in 0..o.np {
        let mut cmd = Command::new(&o.program);
        cmd.args(&o.args)
            .env(wire::ENV_SOCKET, &sock)
            .env(wire::ENV_RANK, rank.to_string())
            .env(wire::ENV_SIZE, o.np.to_string())
            .env(wire::ENV_JOB, &job_id)
            .envs(o.env.iter().map(|(k, v)| (k, v)));
        if rank != 0 {
            cmd.stdin(Stdio::null());
        }
        // SAFETY: prctl and sched_setaffinity are async-signal-safe system calls. The first
        // makes the PE die with oshrun, so a killed launcher never leaves PEs behind.
        let core = if pin { cores.get(rank).copied() } else { None };
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if let Some(c) = core {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(c, &mut set);
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                }
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(c) => {
                job.pids.push(c.id());
                job.children.push(Some(c));
            }
            Err(e) => {
                eprintln!("oshrun: cannot start {}: {e}", o.program);
                job.kill_all();
                let _ = std::fs::remove_dir_all(&dir);
                remove_job_shm(&job_id);
                return 127;
            }
        }
    }
    let status = watch(o, &server, &mut job);
    let _ = std::fs::remove_dir_all(&dir);
    remove_job_shm(&job_id);
    status
}

/// Every PE has ended (`watch` reaps them all): remove the shared-memory names of this job
/// that a PE stopped during `shmem_init` had no time to unlink (PEs unlink theirs at the end
/// of init, so a job that started normally has none left).
fn remove_job_shm(job_id: &str) {
    let prefix = format!("rshmem-{job_id}-");
    let Ok(dir) = std::fs::read_dir("/dev/shm") else { return };
    for e in dir.flatten() {
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

fn watch(o: &Options, server: &Server, job: &mut Job) -> i32 {
    let start = Instant::now();
    let mut running = o.np;
    let mut deferred: Option<(usize, i32)> = None;
    loop {
        let abort = server.shared.lock().unwrap_or_else(|e| e.into_inner()).abort.clone();
        if let Some((rank, code, msg)) = abort {
            if !msg.contains("shmem_global_exit") {
                eprintln!("oshrun: PE {rank} aborted the job: {msg}");
            }
            job.kill_all();
            return code;
        }
        for rank in 0..o.np {
            let Some(child) = job.children[rank].as_mut() else { continue };
            let Ok(Some(st)) = child.try_wait() else { continue };
            job.children[rank] = None;
            running -= 1;
            if st.success() {
                continue;
            }
            // An abort message may still be in flight from this PE: it explains the exit.
            std::thread::sleep(Duration::from_millis(20));
            if let Some((r, code, msg)) =
                server.shared.lock().unwrap_or_else(|e| e.into_inner()).abort.clone()
            {
                if !msg.contains("shmem_global_exit") {
                    eprintln!("oshrun: PE {r} aborted the job: {msg}");
                }
                job.kill_all();
                return code;
            }
            // A PE that finalized explicitly passed the finalize barrier with everyone: nobody
            // waits for it any more, so its status is reported at the end without killing
            // the others.
            let finalized = server.shared.lock().unwrap_or_else(|e| e.into_inner()).finalized[rank];
            if finalized {
                if let (None, Some(c)) = (deferred, st.code()) {
                    deferred = Some((rank, c));
                }
                continue;
            }
            let pid = job.pids[rank];
            let (how, code) = match (st.signal(), st.code()) {
                (Some(sig), _) => (format!("was killed by {}", signal_name(sig)), 128 + sig),
                (None, Some(c)) => (format!("exited with status {c}"), c),
                _ => ("ended abnormally".to_string(), 1),
            };
            let others = running;
            eprintln!(
                "oshrun: PE {rank} (pid {pid}) {how}; {}",
                if others > 0 {
                    format!("stopping the other {others} PE(s)")
                } else {
                    "job over".to_string()
                }
            );
            job.kill_all();
            return code;
        }
        if running == 0 {
            return match deferred {
                Some((rank, code)) => {
                    eprintln!("oshrun: PE {rank} exited with status {code} after shmem_finalize");
                    code
                }
                None => 0,
            };
        }
        if let Some(t) = o.timeout {
            if start.elapsed() > t {
                eprintln!(
                    "oshrun: the job exceeded --timeout {:.0} s; stopping all {running} running PE(s)",
                    t.as_secs_f64()
                );
                job.kill_all();
                return 124;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn parses_np_env_and_program_arguments() {
        let o = parse(&s(&["-np", "4", "-x", "A=1", "--", "./prog", "-np", "x"])).unwrap();
        assert_eq!(o.np, 4);
        assert_eq!(o.env, vec![("A".to_string(), "1".to_string())]);
        assert_eq!(o.program, "./prog");
        assert_eq!(o.args, s(&["-np", "x"]));
    }

    #[test]
    fn binding_is_automatic_unless_disabled() {
        assert_eq!(parse(&s(&["-np", "2", "p"])).unwrap().bind, Bind::None);
        assert_eq!(parse(&s(&["--bind-to", "core", "-np", "2", "p"])).unwrap().bind, Bind::Auto);
        assert_eq!(parse(&s(&["--bind-to", "none", "-np", "2", "p"])).unwrap().bind, Bind::None);
        assert!(parse(&s(&["--bind-to", "socket", "p"])).is_err());
        assert!(!allowed_cores().is_empty());
    }

    #[test]
    fn rejects_bad_counts_and_missing_program() {
        assert!(parse(&s(&["-np", "0", "p"])).is_err());
        assert!(parse(&s(&["-np", "two", "p"])).is_err());
        assert!(parse(&s(&["-np", "2"])).is_err());
        assert!(parse(&s(&["--bogus", "p"])).is_err());
    }
}
