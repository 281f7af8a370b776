//! `oshrun`: start N PEs of a program on this node, serve their bootstrap, forward their
//! environment (they inherit stdout/stderr, so output goes straight to the terminal, unless
//! `--tag-output` asks for every line to carry its PE: [`crate::output`]), and watch
//! them: the first PE to die abnormally, exit with an error or request an abort ends the job at
//! once, with a message naming it, and its status becomes oshrun's.

use crate::kvserver::Server;
use crate::output::Tagger;
use crate::stacks;
use rshmem_boot::{secret, wire};
use rshmem_topology::{BindTo, Host};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

#[derive(Debug)]
pub struct Options {
    pub np: usize,
    /// What each PE is bound to (`--bind-to`), from the host's topology (hwloc).
    pub bind: BindTo,
    pub timeout: Option<Duration>,
    /// `--get-stack-traces`: at `--timeout`, gdb's stacks of the running PEs too.
    pub stack_traces: bool,
    pub env: Vec<(String, String)>,
    /// `--tag-output`: every line of a PE's output carries its rank ([`crate::output`]).
    pub tag_output: bool,
    pub program: String,
    pub args: Vec<String>,
}

/// What the command line asks for.
pub enum Invocation {
    Run(Options),
    Help,
    Version,
}

pub const USAGE: &str =
    "usage: oshrun -np N [--timeout SECONDS [--get-stack-traces]] [--bind-to core[:overload-allowed]|numa|none] [-x NAME[=VALUE]]... [--mca NAME VALUE]... [--tag-output] [--] program [args...]";

/// `oshrun --help`.
pub const HELP: &str = "usage: oshrun [options] [--] program [args...]
Start an OpenSHMEM program on several PEs of this machine. On a cluster, start it with
Open MPI's mpirun or Slurm's srun --mpi=pmix instead; a program started alone is one PE.

  -np, -n, --np, -c N     the number of PEs (default 1)
  --timeout SECONDS       end the job, with an error (status 124), when it runs longer;
                          first print each running PE's threads: state, what they sleep in
                          and their system call
  --get-stack-traces      at --timeout, print the call stacks of the running PEs' threads
                          too (from gdb, for the first 8 PEs), as Open MPI's mpirun does
  --bind-to core|numa|none
                          give each PE a core of its own, or that core's NUMA node, from the
                          topology hwloc reports (default none)
  --bind-to core:overload-allowed
                          as core, and with more PEs than cores, PE i on core i mod cores
  -x NAME[=VALUE]         set (or pass on) an environment variable for every PE
  --mca NAME VALUE        set the library's setting SHMEM_MCA_NAME to VALUE for every PE
                          (shmem_info lists them), as Open MPI's --mca does
  --tag-output            prefix every line a PE writes with [1,RANK]<stdout>: or
                          [1,RANK]<stderr>:, as Open MPI's mpirun does
  --oversubscribe, --allow-run-as-root
                          accepted for Open MPI's command lines; oshrun always allows more PEs
                          than cores (waits then yield the core) and runs as any user
  -h, --help              this text
  -V, --version           oshrun's version
  --                      the end of oshrun's options

The job ends as soon as one PE dies, exits with an error or calls shmem_global_exit; oshrun
names that PE and returns its status. Long options also take the form --option=VALUE.

Signals: SIGUSR1 and SIGUSR2 sent to oshrun are passed on to every PE. SIGTERM, SIGINT or
SIGHUP end the job: the PEs get SIGTERM, then SIGKILL if they are still running 2 s later
(or at a second signal); oshrun returns 128 + the signal's number.";

/// Open MPI options that place PEs on hosts: oshrun has one host, so it says where to go.
const HOST_OPTIONS: [&str; 13] = [
    "-H",
    "-host",
    "--host",
    "-hostfile",
    "--hostfile",
    "-machinefile",
    "--machinefile",
    "--default-hostfile",
    "-N",
    "-npernode",
    "--npernode",
    "--ppn",
    "--npersocket",
];

/// The argument `--name=value` as (`--name`, `value`); anything else as it is.
fn split_long(a: &str) -> (&str, Option<&str>) {
    match a.strip_prefix("--").and_then(|rest| rest.split_once('=')) {
        Some((name, v)) => (&a[..name.len() + 2], Some(v)),
        None => (a, None),
    }
}

/// A setting name for `--mca NAME VALUE`: letters, digits and `_`, as the library's are.
fn mca_name(n: &str) -> Result<String, String> {
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(format!("--mca {n}: a setting name is letters, digits and '_' (shmem_info lists them)"));
    }
    Ok(format!("SHMEM_MCA_{n}"))
}

pub fn parse(args: &[String]) -> Result<Invocation, String> {
    let mut np = None;
    let mut timeout = None;
    let mut bind = BindTo::None;
    let mut env = Vec::new();
    let mut tag_output = false;
    let mut stack_traces = false;
    let mut i = 0;
    while i < args.len() {
        let (a, inline) = split_long(args[i].as_str());
        if inline.is_some()
            && matches!(
                a,
                "--tag-output"
                    | "--get-stack-traces"
                    | "--oversubscribe"
                    | "--allow-run-as-root"
                    | "--help"
                    | "--version"
            )
        {
            return Err(format!("{a} takes no value (given {})", args[i]));
        }
        let mut value = |what: &str| -> Result<String, String> {
            if let Some(v) = inline {
                return Ok(v.to_string());
            }
            i += 1;
            args.get(i).cloned().ok_or_else(|| format!("{a} needs {what}"))
        };
        match a {
            "-np" | "-n" | "--np" | "-c" | "--n" => {
                let v = value("a number of PEs")?;
                np = Some(
                    v.parse::<usize>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| format!("{a} {v}: not a positive number"))?,
                );
                // PE numbers are C ints.
                np = Some(
                    np.filter(|n| *n <= i32::MAX as usize)
                        .ok_or_else(|| format!("{a} {v}: more PEs than a C int can number"))?,
                );
            }
            "--timeout" => {
                let v = value("seconds")?;
                let t: f64 = v.parse().map_err(|_| format!("--timeout {v}: not a number"))?;
                timeout = Some(
                    Duration::try_from_secs_f64(t)
                        .ok()
                        .filter(|d| !d.is_zero())
                        .ok_or_else(|| format!("--timeout {v}: not a positive number of seconds"))?,
                );
            }
            "--bind-to" | "-bind-to" => {
                let v = value("core, core:overload-allowed, numa or none")?;
                bind = BindTo::parse(&v)
                    .ok_or_else(|| format!("--bind-to {v}: use core, core:overload-allowed, numa or none"))?;
            }
            "-x" => {
                let v = value("NAME or NAME=VALUE")?;
                match v.split_once('=') {
                    Some((k, val)) => env.push((k.to_string(), val.to_string())),
                    None => env.push((v.clone(), std::env::var(&v).unwrap_or_default())),
                }
            }
            "--mca" | "-mca" => {
                let n = value("a setting name and a value")?;
                let name = mca_name(&n)?;
                i += 1;
                let v = args.get(i).cloned().ok_or_else(|| format!("{a} {n} needs a value"))?;
                env.push((name, v));
            }
            "--tag-output" | "-tag-output" => tag_output = true,
            "--get-stack-traces" | "-get-stack-traces" => stack_traces = true,
            "--oversubscribe" | "-oversubscribe" | "--allow-run-as-root" => {}
            "-h" | "--help" => return Ok(Invocation::Help),
            "-V" | "--version" => return Ok(Invocation::Version),
            "--map-by" | "-map-by" | "--rank-by" | "-rank-by" => {
                return Err(format!(
                    "{a}: oshrun starts PE ranks in order on this machine; bind them with --bind-to core|numa"
                ))
            }
            h if HOST_OPTIONS.contains(&h) => {
                return Err(format!(
                    "{h}: oshrun starts every PE on this machine; to run on several hosts, start the program with Open MPI's mpirun or Slurm's srun --mpi=pmix (README, \"Under Open MPI's mpirun, Slurm, and across hosts\")"
                ))
            }
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
    Ok(Invocation::Run(Options {
        np: np.unwrap_or(1),
        bind,
        timeout,
        stack_traces,
        env,
        tag_output,
        program,
        args: args[i + 1..].to_vec(),
    }))
}

fn signal_name(sig: i32) -> String {
    // SAFETY: strsignal returns a static or thread-local string for any number.
    let p = unsafe { libc::strsignal(sig) };
    let name = if p.is_null() {
        String::new()
    } else {
        // SAFETY: non-NULL, so a NUL-terminated string from strsignal.
        unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
    };
    format!("signal {sig} ({name})")
}

/// The CPUs each PE is bound to, from the host's topology; `None` when not binding. A binding
/// that cannot be done (more PEs than cores, no readable topology) is reported and the PEs run
/// unbound, as they would without `--bind-to`.
fn bindings(to: BindTo, np: usize) -> Option<Vec<Vec<usize>>> {
    if to == BindTo::None {
        return None;
    }
    let what = match to {
        BindTo::Core => "core",
        BindTo::CoreOverload => "core:overload-allowed",
        _ => "numa",
    };
    match Host::load().and_then(|h| h.binding(to, np)) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("oshrun: --bind-to {what}: {e}; the PEs run unbound");
            None
        }
    }
}

/// The private directory that holds the bootstrap socket: made by `mkdtemp` (so it is new,
/// never one someone else prepared), mode 0700, and checked to be ours before use.
fn private_dir() -> Result<PathBuf, String> {
    let template = std::env::temp_dir().join("rshmem-XXXXXX");
    let mut t = template.as_os_str().as_bytes().to_vec();
    t.push(0);
    // SAFETY: `t` is a writable NUL-terminated template ending in XXXXXX.
    let p = unsafe { libc::mkdtemp(t.as_mut_ptr().cast()) };
    if p.is_null() {
        return Err(format!(
            "cannot create a directory like {}: {}",
            template.display(),
            std::io::Error::last_os_error()
        ));
    }
    t.pop();
    let dir = PathBuf::from(std::ffi::OsStr::from_bytes(&t));
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o077 != 0 {
        let _ = std::fs::remove_dir(&dir);
        return Err(format!("{} is not a private directory of uid {me}", dir.display()));
    }
    Ok(dir)
}

/// Signals that end the job (TERM, INT, HUP): the handler only records the signal and counts
/// it (a second one while the PEs are given their grace kills them at once); the watch loop
/// stops the PEs and cleans up.
static SIGNALLED: AtomicI32 = AtomicI32::new(0);
static SIGNAL_COUNT: AtomicU32 = AtomicU32::new(0);

/// Signals passed on to every PE, as Open MPI's mpirun does: a batch system's warning before
/// a time limit (`sbatch --signal=USR1@60`) or a user's `kill -USR1` reaches the program
/// (a checkpoint, a progress report) instead of killing oshrun.
const FORWARDED: [libc::c_int; 2] = [libc::SIGUSR1, libc::SIGUSR2];

/// The forwarded signals received and not yet passed on, one bit per signal number.
static TO_FORWARD: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNALLED.store(sig, Ordering::Relaxed);
    SIGNAL_COUNT.fetch_add(1, Ordering::Relaxed);
}

extern "C" fn on_forwarded(sig: libc::c_int) {
    TO_FORWARD.fetch_or(1 << sig, Ordering::Relaxed);
}

fn catch_signals() {
    let handlers = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP]
        .map(|s| (s, on_signal as extern "C" fn(libc::c_int)))
        .into_iter()
        .chain(FORWARDED.map(|s| (s, on_forwarded as extern "C" fn(libc::c_int))));
    for (sig, f) in handlers {
        // SAFETY: both handlers are async-signal-safe (atomic operations only).
        unsafe { libc::signal(sig, f as libc::sighandler_t) };
    }
}

/// The forwarded signals received since the last call.
fn take_forwarded() -> Vec<libc::c_int> {
    let bits = TO_FORWARD.swap(0, Ordering::Relaxed);
    FORWARDED.into_iter().filter(|&s| bits & (1 << s) != 0).collect()
}

/// What must go when the job is over: the socket directory and UCX's stray `/dev/shm` names.
struct Leftovers {
    dir: PathBuf,
    job_id: String,
    /// When the job started (before its first PE).
    since: SystemTime,
}

impl Leftovers {
    /// Every PE has ended: remove the directory and UCX's shared-memory names
    /// ([`ucx_orphans`]). rshmem's own segments have no name (memfds handed over a socket), so
    /// a PE stopped at any point leaves none of them.
    fn remove(&self) {
        // A second's slack: file times come from a coarser clock than `since`.
        let since = self.since.checked_sub(Duration::from_secs(1)).unwrap_or(self.since);
        for f in ucx_orphans(Path::new("/dev/shm"), since) {
            let _ = std::fs::remove_file(f);
        }
        // The directory last, so that once it is gone the clean-up is over (the keeper runs it
        // after a killed oshrun, while whoever started oshrun may already be looking).
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The shared-memory files of UCX's posix transport in `dir` that are this user's, were made
/// since `since`, and that no process holds open or mapped. UCX names such a file while it
/// creates it and unlinks the name a moment later (peers reach it through /proc/PID/fd); a PE
/// killed in between (oshrun stopped during start-up) leaves the name behind. A file no
/// process holds is of no use to anyone, and one a live process holds (another job's, just
/// being made) is left alone.
pub fn ucx_orphans(dir: &Path, since: SystemTime) -> Vec<PathBuf> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("ucx_shm_posix_"))
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid && m.modified().is_ok_and(|t| t >= since)))
        .map(|e| e.path())
        .collect();
    if !found.is_empty() {
        let held = held_files();
        found.retain(|f| !held.contains(f));
    }
    found
}

/// Every file some process has open or mapped, as far as /proc shows them to this user.
fn held_files() -> std::collections::HashSet<PathBuf> {
    let mut held = std::collections::HashSet::new();
    let Ok(procs) = std::fs::read_dir("/proc") else { return held };
    for p in procs.flatten().filter(|p| p.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit())) {
        if let Ok(fds) = std::fs::read_dir(p.path().join("fd")) {
            held.extend(fds.flatten().filter_map(|fd| std::fs::read_link(fd.path()).ok()));
        }
        if let Ok(maps) = std::fs::read_to_string(p.path().join("maps")) {
            // The path is the sixth field; a deleted file is marked " (deleted)".
            held.extend(maps.lines().filter_map(|l| l.split_whitespace().nth(5)).map(PathBuf::from));
        }
    }
    held
}

/// The hidden first argument that makes `oshrun` the clean-up keeper of another `oshrun`.
pub const KEEPER_ARG: &str = "--rshmem-cleanup-keeper";

/// A process of its own session that outlives an `oshrun` killed by SIGKILL (which runs no
/// handler): it learns the PEs' pids on its stdin and, when the pipe closes because `oshrun`
/// is gone, waits for those PEs to die (they get SIGKILL with their parent) and removes what
/// they left. After a normal end there is nothing left and it exits at once.
fn start_keeper(left: &Leftovers) -> Option<std::process::ChildStdin> {
    let exe = std::env::current_exe().ok()?;
    let since = left.since.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut cmd = Command::new(exe);
    cmd.arg(KEEPER_ARG)
        .arg(&left.dir)
        .arg(&left.job_id)
        .arg(since.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe; a new session keeps terminal signals (Ctrl-C) away.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd.spawn().ok()?.stdin.take()
}

/// Whether `pid` still runs (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s.rfind(')').and_then(|i| s[i + 1..].split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

/// The keeper's body (`oshrun --rshmem-cleanup-keeper DIR JOB SINCE`, SINCE in nanoseconds
/// since the epoch).
pub fn keeper(args: &[String]) -> i32 {
    let (Some(dir), Some(job_id)) = (args.first(), args.get(1)) else { return 2 };
    let nanos: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let since = SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos);
    let mut input = String::new();
    let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut input);
    let pids: Vec<u32> = input.lines().filter_map(|l| l.trim().parse().ok()).collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    Leftovers { dir: PathBuf::from(dir), job_id: job_id.clone(), since }.remove();
    0
}

/// One PE process, watched with `waitpid` so that stops are seen as well as exits.
struct Pe {
    pid: u32,
    /// Still to be reaped.
    live: bool,
    /// Since when it has been stopped by a signal (and which), if it is.
    stopped: Option<(Instant, i32)>,
}

struct Job {
    pes: Vec<Pe>,
}

impl Job {
    /// Send `sig` to every PE still running.
    fn signal_all(&self, sig: libc::c_int) {
        for pe in self.pes.iter().filter(|p| p.live) {
            // SAFETY: the pid is our unreaped child, so it cannot have been reused.
            unsafe { libc::kill(pe.pid as libc::pid_t, sig) };
        }
    }

    /// End every PE still running as Open MPI's launchers do: SIGTERM first (and SIGCONT, so
    /// that a stopped PE gets it), so that a program may clean up or write a checkpoint, then
    /// SIGKILL for whatever is still running after [`TERM_GRACE`], or at once when oshrun
    /// gets another terminating signal meanwhile (a second Ctrl-C).
    fn stop_all(&mut self) {
        if !self.pes.iter().any(|p| p.live) {
            return;
        }
        let signals = SIGNAL_COUNT.load(Ordering::Relaxed);
        self.signal_all(libc::SIGTERM);
        self.signal_all(libc::SIGCONT);
        let deadline = Instant::now() + TERM_GRACE;
        loop {
            for pe in self.pes.iter_mut().filter(|p| p.live) {
                if let Some(Event::Exited(_) | Event::Killed(_)) = poll(pe.pid) {
                    pe.live = false;
                }
            }
            let left: Vec<u32> = self.pes.iter().filter(|p| p.live).map(|p| p.pid).collect();
            if left.is_empty() {
                return;
            }
            if SIGNAL_COUNT.load(Ordering::Relaxed) != signals {
                break;
            }
            if Instant::now() >= deadline {
                eprintln!(
                    "oshrun: {} PE(s) (pid {}) still running {} s after SIGTERM; killing them",
                    left.len(),
                    left.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", "),
                    TERM_GRACE.as_secs()
                );
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        self.kill_all();
    }

    fn kill_all(&mut self) {
        self.signal_all(libc::SIGKILL);
        for pe in self.pes.iter_mut().filter(|p| p.live) {
            let mut st = 0;
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(pe.pid as libc::pid_t, &mut st, 0) };
            pe.live = false;
        }
    }
}

/// How long PEs sent SIGTERM at the end of a job have before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// What `waitpid` reported for a PE.
enum Event {
    Exited(i32),
    Killed(i32),
    Stopped(i32),
    Continued,
}

fn poll(pid: u32) -> Option<Event> {
    let mut st = 0;
    // SAFETY: waiting for our own child without blocking.
    let r = unsafe {
        libc::waitpid(pid as libc::pid_t, &mut st, libc::WNOHANG | libc::WUNTRACED | libc::WCONTINUED)
    };
    if r != pid as libc::pid_t {
        return None;
    }
    Some(if libc::WIFEXITED(st) {
        Event::Exited(libc::WEXITSTATUS(st))
    } else if libc::WIFSIGNALED(st) {
        Event::Killed(libc::WTERMSIG(st))
    } else if libc::WIFSTOPPED(st) {
        Event::Stopped(libc::WSTOPSIG(st))
    } else {
        Event::Continued
    })
}

/// Run the job; returns oshrun's exit status.
pub fn run(o: &Options) -> i32 {
    catch_signals();
    if let Err(e) = crate::limits::check(o.np, o.tag_output) {
        eprintln!("oshrun: {e}");
        return 1;
    }
    let dir = match private_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("oshrun: {e}");
            return 1;
        }
    };
    let key = match secret::random_bytes(32) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("oshrun: no random numbers for the job's secret: {e}");
            let _ = std::fs::remove_dir(&dir);
            return 1;
        }
    };
    // Random, so that nobody can prepare the job's shared-memory names in advance.
    let left = Leftovers {
        dir: dir.clone(),
        job_id: format!("o{}", secret::random_hex(8)),
        since: SystemTime::now(),
    };
    let sock = dir.join("boot.sock");
    let server = match Server::start(&sock, o.np, key.clone()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("oshrun: cannot listen on {}: {e}", sock.display());
            left.remove();
            return 1;
        }
    };
    let mut keeper = start_keeper(&left);
    let mut job = Job { pes: Vec::new() };
    let mut tagger = Tagger::default();
    // `--bind-to core|numa` binds from the topology hwloc reports. Unbound, the scheduler may
    // start two PEs on one core and waits then cost context switches until it spreads them
    // (measured: a 6.5 µs ping-pong for the first 20000 rounds, 0.5 µs once spread). Bound,
    // that never happens, and since PEs count the CPUs they share (docs/performance.md, "Waits
    // of PEs bound to cores of their own") bound runs are no slower. Binding is still not the
    // default: two jobs started on one machine would both be bound to its first cores.
    let binding = bindings(o.bind, o.np);
    let key_hex = secret::hex(&key);
    for rank in 0..o.np {
        // A terminating signal during start-up stops it here: starting thousands of PEs
        // first would keep oshrun deaf to it for as long as that takes.
        if SIGNALLED.load(Ordering::Relaxed) != 0 {
            break;
        }
        let mut cmd = Command::new(&o.program);
        cmd.args(&o.args)
            .env(wire::ENV_SOCKET, &sock)
            .env(wire::ENV_RANK, rank.to_string())
            .env(wire::ENV_SIZE, o.np.to_string())
            .env(wire::ENV_JOB, &left.job_id)
            .env(wire::ENV_SECRET, &key_hex)
            .envs(o.env.iter().map(|(k, v)| (k, v)));
        if rank != 0 {
            cmd.stdin(Stdio::null());
        }
        // --tag-output: a pseudo-terminal for stdout where one can be had, else a pipe.
        let mut pty_out = None;
        if o.tag_output {
            match crate::output::stdout_pty() {
                Some((ours, theirs)) => {
                    cmd.stdout(Stdio::from(theirs));
                    pty_out = Some(ours);
                }
                None => {
                    cmd.stdout(Stdio::piped());
                }
            }
            cmd.stderr(Stdio::piped());
        }
        // The CPU set is built here: between fork and exec only system calls are safe.
        let cpus: Option<libc::cpu_set_t> = binding.as_ref().map(|b| {
            // SAFETY: a zeroed cpu_set_t is a valid empty set, and CPU_SET writes inside it for
            // numbers below CPU_SETSIZE.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                for &c in b[rank].iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
                    libc::CPU_SET(c, &mut set);
                }
                set
            }
        });
        let launcher = std::process::id() as libc::pid_t;
        // SAFETY: prctl, getppid, signal and sched_setaffinity are async-signal-safe system
        // calls. The first makes the PE die with oshrun, so a killed launcher never leaves PEs
        // behind; if oshrun died before it took effect, the PE has been handed to another
        // parent already and goes now. The PE gets the default handlers oshrun replaced.
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != launcher {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
                    libc::signal(sig, libc::SIG_DFL);
                }
                if let Some(set) = &cpus {
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set);
                }
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(mut c) => {
                // The pid is managed with waitpid from here on; dropping `Child` neither kills
                // nor reaps it.
                // (The PE's side of the terminal closes here with `cmd`, at the end of this
                // turn, so that reading ends when the PE's copies close.)
                let out: Option<Box<dyn std::io::Read + Send>> = match pty_out {
                    Some(t) => Some(Box::new(t)),
                    None => c.stdout.take().map(|p| Box::new(p) as _),
                };
                tagger.forward(rank, out, c.stderr.take().map(|p| Box::new(p) as _));
                server.set_pid(rank, c.id());
                if let Some(k) = keeper.as_mut() {
                    let _ = writeln!(k, "{}", c.id());
                }
                job.pes.push(Pe { pid: c.id(), live: true, stopped: None });
            }
            Err(e) => {
                eprintln!("oshrun: cannot start {}: {e}", o.program);
                job.stop_all();
                tagger.finish(OUTPUT_GRACE);
                left.remove();
                return 127;
            }
        }
    }
    let status = watch(o, &server, &mut job);
    tagger.finish(OUTPUT_GRACE);
    left.remove();
    drop(keeper);
    status
}

/// How long `--tag-output` waits, once every PE has ended, for the rest of their output (a
/// process a PE left running in the background may keep its pipe open).
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// How long a PE may stay stopped (SIGSTOP, SIGTSTP...) before the job is ended: the others
/// cannot progress without it, and waiting for `--timeout` would only hide the cause.
const STOPPED_GRACE: Duration = Duration::from_secs(1);

/// If a PE asked to end the job (a global exit or a fatal error), end it with its code,
/// saying why unless it was a global exit (the program's own choice).
fn ended_by_abort(server: &Server, job: &mut Job) -> Option<i32> {
    let (rank, code, msg) = server.shared.lock().unwrap_or_else(|e| e.into_inner()).abort.clone()?;
    if !msg.contains("shmem_global_exit") {
        eprintln!("oshrun: PE {rank} aborted the job: {msg}");
    }
    job.stop_all();
    Some(code)
}

fn watch(o: &Options, server: &Server, job: &mut Job) -> i32 {
    let start = Instant::now();
    // Fewer than `o.np` when a signal stopped the start-up.
    let mut running = job.pes.len();
    let mut deferred: Option<(usize, i32)> = None;
    // A PE that ended with status 0 without ever calling shmem_init.
    let mut left_before_init: Option<usize> = None;
    let mut last_turn = Instant::now();
    let stop_job = |job: &mut Job, msg: String, code: i32| {
        eprintln!("{msg}");
        job.stop_all();
        code
    };
    loop {
        let sig = SIGNALLED.load(Ordering::Relaxed);
        if sig != 0 {
            let live = job.pes.iter().filter(|p| p.live).count();
            return stop_job(
                job,
                format!("oshrun: got {}; stopping {live} running PE(s)", signal_name(sig)),
                128 + sig,
            );
        }
        for sig in take_forwarded() {
            job.signal_all(sig);
        }
        if let Some(code) = ended_by_abort(server, job) {
            return code;
        }
        // When oshrun itself was stopped (Ctrl-Z stops the whole process group), its PEs were
        // too: their stop times restart from now.
        let now = Instant::now();
        if now.duration_since(last_turn) > Duration::from_millis(500) {
            for pe in job.pes.iter_mut() {
                if let Some((_, s)) = pe.stopped {
                    pe.stopped = Some((now, s));
                }
            }
        }
        last_turn = now;
        for rank in 0..job.pes.len() {
            if !job.pes[rank].live {
                continue;
            }
            let pid = job.pes[rank].pid;
            let (how, code) = match poll(pid) {
                None => continue,
                Some(Event::Stopped(s)) => {
                    job.pes[rank].stopped = Some((Instant::now(), s));
                    continue;
                }
                Some(Event::Continued) => {
                    job.pes[rank].stopped = None;
                    continue;
                }
                Some(Event::Exited(c)) => (format!("exited with status {c}"), c),
                Some(Event::Killed(s)) => (format!("was killed by {}", signal_name(s)), 128 + s),
            };
            job.pes[rank].live = false;
            running -= 1;
            // Its last messages (a finalize, an abort) may still be on their way: they have all
            // been handled once its connection is seen closed, which its exit guarantees.
            // (A loaded machine can delay that thread: the bound is generous.)
            let deadline = Instant::now() + Duration::from_secs(5);
            let (connected, finalized) = loop {
                let g = server.shared.lock().unwrap_or_else(|e| e.into_inner());
                if !g.connected[rank] || g.closed[rank] || Instant::now() > deadline {
                    if !g.closed[rank] && g.connected[rank] {
                        eprintln!("oshrun: PE {rank}'s bootstrap connection is still open after it exited");
                    }
                    break (g.connected[rank], g.finalized[rank]);
                }
                drop(g);
                std::thread::sleep(Duration::from_millis(1));
            };
            if code == 0 && (finalized || !connected) {
                // A normal end, or a process that never used the library (checked below).
                if !connected && left_before_init.is_none() {
                    left_before_init = Some(rank);
                }
                continue;
            }
            // An abort this PE sent before exiting (handled by now: its connection is closed)
            // explains the exit.
            if let Some(code) = ended_by_abort(server, job) {
                return code;
            }
            // A PE that finalized explicitly passed the finalize fence with everyone: nobody
            // waits for it any more, so its status is reported at the end without killing
            // the others.
            if finalized {
                if deferred.is_none() {
                    deferred = Some((rank, code));
                }
                continue;
            }
            let (how, code) = if code == 0 {
                // The PE left while the others may still need it: a hang in the making.
                ("exited with status 0 without calling shmem_finalize".to_string(), 1)
            } else {
                (how, code)
            };
            let others = running;
            let rest = if others > 0 {
                format!("stopping the other {others} PE(s)")
            } else {
                "job over".to_string()
            };
            return stop_job(job, format!("oshrun: PE {rank} (pid {pid}) {how}; {rest}"), code);
        }
        // A PE that ended before shmem_init while the others initialized leaves them waiting
        // for it at their first collective.
        if let Some(r) = left_before_init {
            let g = server.shared.lock().unwrap_or_else(|e| e.into_inner());
            let waiting = g.connected.iter().enumerate().any(|(i, c)| *c && !g.finalized[i]);
            drop(g);
            if waiting && running > 0 {
                let pid = job.pes[r].pid;
                return stop_job(
                    job,
                    format!("oshrun: PE {r} (pid {pid}) exited with status 0 without calling shmem_init, which the other PEs called; stopping the other {running} PE(s)"),
                    1,
                );
            }
        }
        // PEs that initialized the library again after a finalize (OpenSHMEM 1.6 allows it; it
        // is collective) while a PE that finalized has left: they would wait for it forever.
        if running > 0 {
            if let Some(gone) = job.pes.iter().position(|p| !p.live) {
                let fencing = server.shared.lock().unwrap_or_else(|e| e.into_inner()).fencing();
                if !fencing.is_empty() {
                    let pid = job.pes[gone].pid;
                    return stop_job(
                        job,
                        format!("oshrun: PE {gone} (pid {pid}) has exited, but PE(s) {fencing:?} wait for it in shmem_init (called again after shmem_finalize: every PE must call it) or another collective start-up step; stopping the other {running} PE(s)"),
                        1,
                    );
                }
            }
        }
        if let Some((rank, (since, s))) =
            job.pes.iter().enumerate().find_map(|(i, p)| p.stopped.filter(|_| p.live).map(|x| (i, x)))
        {
            if since.elapsed() > STOPPED_GRACE {
                let pid = job.pes[rank].pid;
                return stop_job(
                    job,
                    format!(
                        "oshrun: PE {rank} (pid {pid}) was stopped by {} and did not continue within {} s; the other PEs cannot progress without it: stopping all {running} PE(s)",
                        signal_name(s),
                        STOPPED_GRACE.as_secs()
                    ),
                    128 + s,
                );
            }
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
                    "oshrun: the job exceeded --timeout {:.0} s; where its {running} running PE(s) are:",
                    t.as_secs_f64()
                );
                where_they_are(job, o.stack_traces);
                return stop_job(
                    job,
                    format!(
                        "oshrun: the job exceeded --timeout {:.0} s; stopping all {running} running PE(s)",
                        t.as_secs_f64()
                    ),
                    124,
                );
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Print each running PE's threads, and with `traces` the stacks of the first
/// [`stacks::TRACED_PES`].
fn where_they_are(job: &Job, traces: bool) {
    let running: Vec<(usize, u32)> =
        job.pes.iter().enumerate().filter(|(_, p)| p.live).map(|(rank, p)| (rank, p.pid)).collect();
    for &(rank, pid) in &running {
        for line in stacks::threads(rank, pid) {
            eprintln!("{line}");
        }
    }
    if traces {
        if running.len() > stacks::TRACED_PES {
            eprintln!(
                "oshrun: the stacks of the first {} of them (of {}):",
                stacks::TRACED_PES,
                running.len()
            );
        }
        for line in stacks::backtraces(&running[..running.len().min(stacks::TRACED_PES)]) {
            eprintln!("{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// The options of a command line that runs a program.
    fn opts(v: &[&str]) -> Result<Options, String> {
        match parse(&s(v))? {
            Invocation::Run(o) => Ok(o),
            Invocation::Help => Err("help".into()),
            Invocation::Version => Err("version".into()),
        }
    }

    #[test]
    fn parses_np_env_and_program_arguments() {
        let o = opts(&["-np", "4", "-x", "A=1", "--", "./prog", "-np", "x"]).unwrap();
        assert_eq!(o.np, 4);
        assert_eq!(o.env, vec![("A".to_string(), "1".to_string())]);
        assert_eq!(o.program, "./prog");
        assert_eq!(o.args, s(&["-np", "x"]));
    }

    #[test]
    fn bind_to_takes_core_numa_or_none_and_defaults_to_none() {
        assert_eq!(opts(&["-np", "2", "p"]).unwrap().bind, BindTo::None);
        assert_eq!(opts(&["--bind-to", "core", "-np", "2", "p"]).unwrap().bind, BindTo::Core);
        assert_eq!(opts(&["--bind-to", "numa", "-np", "2", "p"]).unwrap().bind, BindTo::Numa);
        assert_eq!(opts(&["--bind-to", "none", "-np", "2", "p"]).unwrap().bind, BindTo::None);
        assert_eq!(
            opts(&["--bind-to", "core:overload-allowed", "-np", "2", "p"]).unwrap().bind,
            BindTo::CoreOverload
        );
        assert!(opts(&["--bind-to", "socket", "-np", "2", "p"]).is_err());
        assert!(opts(&["--bind-to", "socket", "p"]).is_err());
    }

    #[test]
    fn ucx_files_no_process_holds_are_orphans_and_others_are_not() {
        let dir = std::env::temp_dir().join(format!("launcher-orphans-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let since = SystemTime::now() - Duration::from_secs(1);
        let make = |name: &str| {
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(dir.join(name))
                .unwrap();
            f.set_len(4096).unwrap();
            f
        };
        let open = make("ucx_shm_posix_open");
        let mapped = make("ucx_shm_posix_mapped");
        // SAFETY: a fresh shared mapping of a 4096-byte file we own; unmapped below.
        let map = unsafe {
            use std::os::fd::AsRawFd;
            libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ, libc::MAP_SHARED, mapped.as_raw_fd(), 0)
        };
        assert_ne!(map, libc::MAP_FAILED);
        drop(mapped); // held by the mapping alone
        drop(make("ucx_shm_posix_orphan"));
        drop(make("someone_elses"));
        assert_eq!(ucx_orphans(&dir, since), vec![dir.join("ucx_shm_posix_orphan")]);
        // Files from before the job are not its business.
        assert!(ucx_orphans(&dir, SystemTime::now() + Duration::from_secs(60)).is_empty());
        drop(open);
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(map, 4096) };
        let mut all = ucx_orphans(&dir, since);
        all.sort();
        let want: Vec<PathBuf> = ["ucx_shm_posix_mapped", "ucx_shm_posix_open", "ucx_shm_posix_orphan"]
            .iter()
            .map(|n| dir.join(n))
            .collect();
        assert_eq!(all, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rejects_bad_counts_and_missing_program() {
        assert!(opts(&["-np", "0", "p"]).is_err());
        assert!(opts(&["-np", "two", "p"]).is_err());
        assert!(opts(&["-np", "4294967296", "p"]).is_err());
        assert!(opts(&["-np", "2"]).is_err());
        assert!(opts(&["--bogus", "p"]).is_err());
    }

    #[test]
    fn open_mpi_command_lines_run_here() {
        let o = opts(&["--oversubscribe", "--allow-run-as-root", "--np=3", "--tag-output", "p"]).unwrap();
        assert_eq!((o.np, o.tag_output), (3, true));
        assert!(!opts(&["-np", "2", "p"]).unwrap().tag_output);
        let o = opts(&["--mca", "spml", "ucx", "-mca", "scoll_basic_priority", "7", "--bind-to=core", "p"])
            .unwrap();
        let want = [("SHMEM_MCA_spml", "ucx"), ("SHMEM_MCA_scoll_basic_priority", "7")];
        assert_eq!(o.env, want.map(|(k, v)| (k.to_string(), v.to_string())));
        assert_eq!(o.bind, BindTo::Core);
        assert_eq!(opts(&["--timeout=2.5", "p"]).unwrap().timeout, Some(Duration::from_millis(2500)));
        assert_eq!(opts(&["--help", "p"]).unwrap_err(), "help");
        assert_eq!(opts(&["-V"]).unwrap_err(), "version");
    }

    #[test]
    fn options_it_cannot_honour_are_refused_with_the_reason() {
        for h in ["-H", "--host", "--hostfile", "-N", "--npernode"] {
            let e = opts(&[h, "a,b", "p"]).unwrap_err();
            assert!(e.contains("mpirun") && e.contains("srun --mpi=pmix"), "{h}: {e}");
        }
        assert!(opts(&["--map-by", "core", "p"]).unwrap_err().contains("--bind-to"));
        assert!(opts(&["--tag-output=no", "p"]).unwrap_err().contains("takes no value"));
        assert!(opts(&["--mca", "spml"]).unwrap_err().contains("needs a value"));
        assert!(opts(&["--mca", "a-b", "1", "p"]).unwrap_err().contains("setting name"));
        for t in ["-1", "0", "nan", "inf"] {
            assert!(opts(&["--timeout", t, "p"]).is_err(), "--timeout {t}");
        }
    }
}
