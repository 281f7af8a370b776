//! Test harness: build C programs with our `oshcc`, run them under our `oshrun` with a hard
//! timeout, and look at what they print. The workspace must be built first
//! (`cargo build --workspace`): the tools, `libshmem.so` and the plugins are taken from the
//! same target directory as the test binary.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// target/<profile>, found from the running test binary (target/<profile>/deps/<test>).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir").to_path_buf();
    for tool in ["oshrun", "oshcc", "libshmem.so"] {
        assert!(
            dir.join(tool).exists(),
            "{} is missing: build the workspace first (`cargo build --workspace`)",
            dir.join(tool).display()
        );
    }
    dir
}

pub fn source_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where built test programs go.
fn build_dir() -> PathBuf {
    let d = target_dir().join("rshmem-test-programs");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compile `c/<name>.c` (or any path) with oshcc, once per test process.
pub fn build_c(src: &Path, extra: &[&str]) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<PathBuf, PathBuf>>> = OnceLock::new();
    let mut built =
        BUILT.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = built.get(src) {
        return p.clone();
    }
    let stem = src.file_stem().unwrap().to_string_lossy().into_owned();
    let parent = src
        .parent()
        .and_then(|p| p.file_name())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let out = build_dir().join(format!("{parent}-{stem}"));
    let cxx = src.extension().is_some_and(|e| e == "cpp");
    let (compiler, std) = if cxx { ("oshcxx", "-std=c++17") } else { ("oshcc", "-std=gnu11") };
    let o = Command::new(target_dir().join(compiler))
        .args([std, "-O1", "-g", "-Wall", "-Werror"])
        .arg(format!("-I{}", source_dir().join("c").display()))
        .args(extra)
        .arg(src)
        .arg("-o")
        .arg(&out)
        .output()
        .expect("run oshcc");
    assert!(
        o.status.success(),
        "oshcc {} failed:\n{}{}",
        src.display(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    built.insert(src.to_path_buf(), out.clone());
    out
}

pub fn c_test(name: &str) -> PathBuf {
    let dir = source_dir().join("c");
    let cpp = dir.join(format!("{name}.cpp"));
    build_c(&if cpp.exists() { cpp } else { dir.join(format!("{name}.c")) }, &[])
}

/// One multi-PE job at a time: the machine has two cores and jobs of four PEs already
/// oversubscribe it.
pub fn job_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct Run {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// The harness ended the launcher at its time limit. Such a run never counts as a success,
    /// whatever the launcher's status: srun, ended before its step started, exits 0.
    pub overran: bool,
}

impl Run {
    /// The launcher's exit code; None when a signal ended it or the harness cut it off.
    pub fn code(&self) -> Option<i32> {
        if self.overran {
            return None;
        }
        self.status.code()
    }

    /// The launcher exited with status 0 before its time limit.
    pub fn success(&self) -> bool {
        !self.overran && self.status.success()
    }

    /// Panic with the whole output unless the job succeeded.
    pub fn assert_ok(&self, what: &str) -> &Self {
        assert!(
            self.success(),
            "{what}: job failed ({:?}{})\n--- stdout\n{}--- stderr\n{}",
            self.status,
            if self.overran { ", cut off by the harness at its time limit" } else { "" },
            self.stdout,
            self.stderr
        );
        self
    }

    /// The job ended with status 1 (a PE's fatal error ends it so) and stderr says `needle`.
    pub fn assert_fails_saying(&self, needle: &str) -> &Self {
        assert_eq!(self.code(), Some(1), "expected the job to fail saying `{needle}`:\n{}", self.stderr);
        assert!(self.stderr.contains(needle), "missing `{needle}`\n--- stderr\n{}", self.stderr);
        self
    }

    /// Lines `<name>: PE <i> ok` for every PE.
    pub fn assert_all_pes_ok(&self, name: &str, np: usize) -> &Self {
        self.assert_ok(name);
        for pe in 0..np {
            let line = format!("{name}: PE {pe} ok");
            assert!(
                self.stdout.lines().any(|l| l == line),
                "{name}: missing `{line}`\n--- stdout\n{}--- stderr\n{}",
                self.stdout,
                self.stderr
            );
        }
        self
    }
}

/// Run `prog` on `np` PEs through oshrun with extra environment. oshrun enforces `timeout`
/// itself (printing where each PE is, with gdb's stacks, then killing the job); the harness
/// kills oshrun too if it overruns by 30 s.
pub fn oshrun(np: usize, prog: &Path, env: &[(&str, &str)], timeout: Duration) -> Run {
    oshrun_with(np, &[], prog, env, timeout)
}

/// [`oshrun`] with extra oshrun options (`--bind-to core`, ...).
pub fn oshrun_with(np: usize, opts: &[&str], prog: &Path, env: &[(&str, &str)], timeout: Duration) -> Run {
    let mut cmd = Command::new(target_dir().join("oshrun"));
    cmd.arg("-np")
        .arg(np.to_string())
        .arg("--timeout")
        .arg(timeout.as_secs().to_string())
        .arg("--get-stack-traces")
        .args(opts)
        .arg("--")
        .arg(prog);
    run_launcher(cmd, env, timeout)
}

/// The launchers a job can be started with: our own, and the PMIx launchers sites have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launcher {
    Oshrun,
    /// Open MPI's `mpirun` on this machine.
    Mpirun,
    /// Slurm's `srun --mpi=pmix` (a running Slurm: `scripts/slurm.sh up`).
    Srun,
    /// `mpirun` across `hosts` emulated hosts (network namespaces, `scripts/hosts.sh`), the
    /// PEs filling each host's `np / hosts` (rounded up) slots in turn.
    Hosts(usize),
}

impl Launcher {
    /// From `RSHMEM_TEST_LAUNCHER` (`oshrun`, `mpirun`, `srun`, `hosts2`, `hosts4`, ...):
    /// the launcher the C programs and spec examples run under. Default oshrun.
    pub fn from_env() -> Launcher {
        let v = std::env::var("RSHMEM_TEST_LAUNCHER").unwrap_or_default();
        match v.as_str() {
            "" | "oshrun" => Launcher::Oshrun,
            "mpirun" => Launcher::Mpirun,
            "srun" => Launcher::Srun,
            h if h.starts_with("hosts") => Launcher::Hosts(
                h["hosts".len()..]
                    .parse()
                    .unwrap_or_else(|_| panic!("RSHMEM_TEST_LAUNCHER={v}: hostsN with N a number")),
            ),
            _ => panic!("RSHMEM_TEST_LAUNCHER={v}: expected oshrun, mpirun, srun or hostsN"),
        }
    }
}

/// Open MPI refuses to run as root unless told; CI runs as root.
const MPIRUN_ROOT_ENV: [(&str, &str); 2] =
    [("OMPI_ALLOW_RUN_AS_ROOT", "1"), ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")];

/// Run `prog` on `np` PEs under `launcher`, with extra environment for every PE.
pub fn launch(launcher: Launcher, np: usize, prog: &Path, env: &[(&str, &str)], timeout: Duration) -> Run {
    match launcher {
        Launcher::Oshrun => oshrun(np, prog, env, timeout),
        Launcher::Mpirun => {
            let mut cmd = Command::new("mpirun");
            cmd.envs(MPIRUN_ROOT_ENV)
                .args(["--oversubscribe", "--bind-to", "none", "--tag-output", "--timeout"])
                .arg(backstop(timeout).as_secs().to_string())
                .arg("-np")
                .arg(np.to_string());
            forward_env(&mut cmd, env);
            cmd.arg(prog);
            run_watching(cmd, env, timeout, prog)
        }
        Launcher::Srun => {
            let mut cmd = Command::new("srun");
            // Slurm's own time limit counts whole minutes and is enforced late: the harness's
            // bound is the one that holds.
            cmd.args(["--mpi=pmix", "--kill-on-bad-exit=1", "--overcommit", "--quiet", "-n"])
                .arg(np.to_string())
                .arg(prog);
            run_watching(cmd, env, timeout, prog)
        }
        Launcher::Hosts(hosts) => launch_on_hosts(hosts, np, &[], prog, env, timeout),
    }
}

/// `np` PEs of `prog` on `hosts` emulated hosts (`scripts/hosts.sh`), with more of mpirun's
/// arguments (`--map-by node` deals the PEs out to the hosts in turn).
pub fn launch_on_hosts(
    hosts: usize,
    np: usize,
    mpirun_args: &[&str],
    prog: &Path,
    env: &[(&str, &str)],
    timeout: Duration,
) -> Run {
    let mut cmd = Command::new("bash");
    cmd.arg(source_dir().join("../scripts/hosts.sh"))
        .args([
            "run",
            &hosts.to_string(),
            &np.div_ceil(hosts).to_string(),
            "--",
            "-np",
            &np.to_string(),
            "--tag-output",
        ])
        .args(mpirun_args)
        .arg("--timeout")
        .arg(backstop(timeout).as_secs().to_string());
    forward_env(&mut cmd, env);
    cmd.arg(prog);
    run_watching(cmd, env, timeout, prog)
}

/// mpirun's `-x NAME` for every variable of `env`, so the PEs get it.
fn forward_env(cmd: &mut Command, env: &[(&str, &str)]) {
    for (k, _) in env {
        cmd.arg("-x").arg(k);
    }
}

/// Run `prog` under the launcher `RSHMEM_TEST_LAUNCHER` names (oshrun by default).
pub fn job(np: usize, prog: &Path, env: &[(&str, &str)], timeout: Duration) -> Run {
    launch(Launcher::from_env(), np, prog, env, timeout)
}

/// The names in `/dev/shm` that start with `prefix` (`rshmem-` for ours, `ucx_shm_posix_` for
/// UCX's posix transport).
pub fn shm_names(prefix: &str) -> std::collections::BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Every name created in `/dev/shm` from [`ShmWatch::start`] on (inotify), so that a test can
/// show that a job never names shared memory at all: then no way of killing it, at any moment,
/// can leave a name behind.
pub struct ShmWatch {
    fd: std::os::fd::OwnedFd,
}

impl ShmWatch {
    pub fn start() -> ShmWatch {
        use std::os::fd::FromRawFd;
        // SAFETY: inotify_init1 has no preconditions; the result is checked.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(fd >= 0, "inotify_init1: {}", std::io::Error::last_os_error());
        // SAFETY: a descriptor we just opened and own.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        // SAFETY: a NUL-terminated path and our inotify descriptor.
        let wd = unsafe {
            libc::inotify_add_watch(
                std::os::fd::AsRawFd::as_raw_fd(&fd),
                c"/dev/shm".as_ptr(),
                libc::IN_CREATE | libc::IN_MOVED_TO,
            )
        };
        assert!(wd >= 0, "inotify_add_watch(/dev/shm): {}", std::io::Error::last_os_error());
        ShmWatch { fd }
    }

    /// The names created so far (each once), in order.
    pub fn created(&self) -> Vec<String> {
        let mut names = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: read into our own buffer of the given length.
            let n = unsafe {
                libc::read(std::os::fd::AsRawFd::as_raw_fd(&self.fd), buf.as_mut_ptr().cast(), buf.len())
            };
            if n <= 0 {
                let e = std::io::Error::last_os_error();
                assert!(n == 0 || e.kind() == std::io::ErrorKind::WouldBlock, "inotify read: {e}");
                break;
            }
            let mut at = 0usize;
            let head = std::mem::size_of::<libc::inotify_event>();
            while at + head <= n as usize {
                // SAFETY: the kernel wrote whole events; the header may be unaligned in the buffer.
                let ev: libc::inotify_event = unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let name = &buf[at + head..at + head + ev.len as usize];
                let name = name.split(|&b| b == 0).next().unwrap_or_default();
                if ev.mask & libc::IN_Q_OVERFLOW != 0 {
                    names.push("(inotify queue overflow)".into());
                } else if !name.is_empty() {
                    names.push(String::from_utf8_lossy(name).into_owned());
                }
                at += head + ev.len as usize;
            }
        }
        names
    }
}

/// rshmem's objects in the places a job may leave them: `/dev/shm` names and `/tmp`
/// directories (oshrun's bootstrap socket).
pub fn leftovers() -> std::collections::BTreeSet<String> {
    let mut found = std::collections::BTreeSet::new();
    for dir in ["/dev/shm", "/tmp"] {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("rshmem-") && !name.ends_with(".lock") {
                found.insert(format!("{dir}/{name}"));
            }
        }
    }
    found
}

/// Panic if a job left anything in `/dev/shm` or `/tmp` that was not there `before` it. A
/// killed oshrun's clean-up keeper may need a moment, so this waits up to 5 s.
pub fn assert_nothing_left(before: &std::collections::BTreeSet<String>, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let new: Vec<String> = leftovers().difference(before).cloned().collect();
        if new.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            panic!("{what} left behind: {new:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Start a launcher command with the PEs' extra environment, bounded by `timeout` + 30 s
/// (oshrun enforces `timeout` itself and says where its PEs are).
/// Every job is followed by the leak check: nothing of ours may remain in `/dev/shm` or `/tmp`.
pub fn run_launcher(cmd: Command, env: &[(&str, &str)], timeout: Duration) -> Run {
    run_bounded(cmd, env, timeout + Duration::from_secs(30), None)
}

/// The launcher's own time limit under a harness that watches it: later than the harness's, so
/// the harness can say where the PEs are first; it holds if the harness itself is killed.
fn backstop(timeout: Duration) -> Duration {
    timeout + Duration::from_secs(60)
}

/// [`run_launcher`] for a launcher that cannot say where its PEs are when they overrun
/// (mpirun's `--get-stack-traces` wants a `gstack` Debian does not ship; srun has nothing):
/// at `timeout` the harness itself prints each process of `prog`'s threads from /proc and the
/// gdb stacks of the first few, into the run's stderr, then ends the launcher.
pub fn run_watching(cmd: Command, env: &[(&str, &str)], timeout: Duration, prog: &Path) -> Run {
    run_bounded(cmd, env, timeout, Some(prog))
}

fn run_bounded(mut cmd: Command, env: &[(&str, &str)], limit: Duration, watched: Option<&Path>) -> Run {
    let _g = job_lock();
    let before = leftovers();
    let start = Instant::now();
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()));
    // Drained while the job runs: a launcher whose output outgrows a pipe's 64 KiB would
    // otherwise block in write and look hung (144 PEs logging at debug level did).
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut all = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut all);
            }
            all
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let mut told = String::new();
    let mut overran = false;
    loop {
        if let Some(_st) = child.try_wait().expect("wait") {
            break;
        }
        if start.elapsed() > limit {
            overran = true;
            if let Some(prog) = watched {
                told = where_they_are(prog, limit);
                // The launcher ends its job on SIGTERM; it has a few seconds to.
                // SAFETY: a plain kill(2) of our own child.
                unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                let asked = Instant::now();
                while child.try_wait().expect("wait").is_none() && asked.elapsed() < Duration::from_secs(10) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = child.wait().expect("wait");
    // A PE that outlived its launcher may hold the pipes open: what it wrote so far is enough.
    let (stdout, stderr) = (joined(out, Duration::from_secs(15)), joined(err, Duration::from_secs(15)));
    if !told.is_empty() {
        // The PEs' processes go with their launcher (its daemons, or the liveness watch).
        wait_for_exit(watched.unwrap(), Duration::from_secs(10));
    }
    assert_nothing_left(
        &before,
        &format!("{:?} {:?}", cmd.get_program(), cmd.get_args().collect::<Vec<_>>()),
    );
    Run {
        status,
        stdout: untag(&String::from_utf8_lossy(&stdout)),
        stderr: untag(&String::from_utf8_lossy(&stderr)) + &told,
        elapsed: start.elapsed(),
        overran,
    }
}

/// What a pipe-draining thread read, once it ends or `within` has passed (then nothing).
fn joined(reader: std::thread::JoinHandle<Vec<u8>>, within: Duration) -> Vec<u8> {
    let start = Instant::now();
    while !reader.is_finished() && start.elapsed() < within {
        std::thread::sleep(Duration::from_millis(10));
    }
    if reader.is_finished() {
        reader.join().unwrap_or_default()
    } else {
        b"(the output pipe stayed open after the launcher exited)".to_vec()
    }
}

/// The processes running `prog`, with their rank when the launcher's environment says it
/// (`PMIX_RANK`), by rank then pid.
pub fn processes_of(prog: &Path) -> Vec<(usize, u32)> {
    let want = prog.canonicalize().unwrap_or_else(|_| prog.to_path_buf());
    let mut found: Vec<(usize, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == want))
        .map(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let rank = environ
                .split(|&b| b == 0)
                .filter_map(|v| std::str::from_utf8(v).ok()?.strip_prefix("PMIX_RANK=")?.parse().ok())
                .next()
                .unwrap_or(usize::MAX);
            (rank, pid)
        })
        .collect();
    found.sort_unstable();
    found
}

/// Where the processes of `prog` are, as oshrun says it of its PEs: every thread's state and
/// system call, and gdb's stacks of the first few.
fn where_they_are(prog: &Path, limit: Duration) -> String {
    use rshmem_launcher::stacks;
    let pes = processes_of(prog);
    let mut lines = vec![format!(
        "harness: the job exceeded its {} s; where its {} process(es) of {} are:",
        limit.as_secs(),
        pes.len(),
        prog.display()
    )];
    for &(rank, pid) in &pes {
        lines.extend(stacks::threads(rank, pid));
    }
    lines.extend(stacks::backtraces(&pes[..pes.len().min(stacks::TRACED_PES)]));
    let mut out: String = lines
        .iter()
        .map(|l| format!("{}\n", l.strip_prefix("oshrun: ").map_or(l.clone(), |r| format!("harness: {r}"))))
        .collect();
    out.insert(0, '\n');
    out
}

/// Wait until no process runs `prog`, at most `limit`; those left are killed.
fn wait_for_exit(prog: &Path, limit: Duration) {
    let start = Instant::now();
    while !processes_of(prog).is_empty() && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(50));
    }
    for (_, pid) in processes_of(prog) {
        // SAFETY: a plain kill(2) of a stray test process.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}

/// mpirun forwards each rank's output in the chunks it happens to read, and with `--tag-output`
/// it leads each chunk, and each line inside one, with `[job,rank]<stdout>:` (Open MPI 4;
/// `[job,rank]:` at line starts in some later versions). A chunk can end mid-line (the ranks'
/// stdout is a pty, read in whatever pieces the kernel hands over), so a tag can also stand in
/// the middle of a line, and another rank's chunk can come between a line's two halves. This
/// takes the tags out and puts each rank's lines back together, a line at the place where it was
/// completed; text with no tag (mpirun's own messages) stays where it was.
pub fn untag(out: &str) -> String {
    let mut done = String::new();
    // The unfinished line of each tag (rank and stream), in the order the tags first came.
    let mut open: Vec<(&str, String)> = Vec::new();
    let mut pos = 0;
    let mut tag: Option<&str> = None;
    while pos <= out.len() {
        let (next, len) = next_tag(out, pos).unwrap_or((out.len(), 0));
        let text = &out[pos..next];
        match tag {
            None => done.push_str(text),
            Some(t) => {
                // The rank's text runs to its first newline; past it, a rank's next line would
                // carry its own tag, so what follows untagged is mpirun's.
                let (own, rest) = match text.find('\n') {
                    Some(i) => text.split_at(i + 1),
                    None => (text, ""),
                };
                let i = open.iter().position(|(k, _)| *k == t).unwrap_or_else(|| {
                    open.push((t, String::new()));
                    open.len() - 1
                });
                open[i].1.push_str(own);
                if own.ends_with('\n') {
                    done.push_str(&std::mem::take(&mut open[i].1));
                }
                done.push_str(rest);
            }
        }
        if len == 0 {
            break;
        }
        tag = Some(&out[next..next + len]);
        pos = next + len;
    }
    for (_, line) in open {
        done.push_str(&line);
    }
    done
}

/// The next mpirun tag at or after `from`: its position and length. The `<stdout>`/`<stderr>`
/// form is recognised anywhere, the bare `[job,rank]:` only at the start of a line.
fn next_tag(out: &str, from: usize) -> Option<(usize, usize)> {
    let bytes = out.as_bytes();
    (from..bytes.len()).filter(|&i| bytes[i] == b'[').find_map(|i| {
        let line_start = i == 0 || bytes[i - 1] == b'\n';
        tag_len(&out[i..], line_start).map(|len| (i, len))
    })
}

fn tag_len(s: &str, line_start: bool) -> Option<usize> {
    let (ids, rest) = s.strip_prefix('[')?.split_once(']')?;
    let mut numbers = ids.split(',');
    let is_number =
        |n: Option<&str>| n.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if !is_number(numbers.next()) || !is_number(numbers.next()) || numbers.next().is_some() {
        return None;
    }
    let after = ["<stdout>:", "<stderr>:"]
        .into_iter()
        .find(|t| rest.starts_with(t))
        .or((line_start && rest.starts_with(':')).then_some(":"))?;
    Some(1 + ids.len() + 1 + after.len())
}

/// The sshmem backends every multi-PE test runs with.
pub const SSHMEM_BACKENDS: &[&str] = &["mmap", "ucx"];

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// A scratch directory under the system temp directory, named for this test process and `what`,
/// removed when dropped (also when an assertion fails first), so no test leaves it in /tmp. The
/// name does not start with `rshmem-`, which is what a job's own leftovers look like: a scratch
/// directory of a test running beside a job must not pass for the job's.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(what: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("rshmemtest-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The repository's root.
pub fn repo() -> PathBuf {
    source_dir().parent().unwrap().to_path_buf()
}

/// Compile C plugin `src` into `out_dir/name` against the header the project ships.
pub fn gcc_plugin(src: &Path, out_dir: &Path, name: &str) -> PathBuf {
    std::fs::create_dir_all(out_dir).unwrap();
    let out = out_dir.join(name);
    let o = Command::new("gcc")
        .args(["-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-fvisibility=hidden"])
        .arg(format!("-I{}", repo().join("plugins/include").display()))
        .arg(src)
        .arg("-o")
        .arg(&out)
        .arg("-ldl")
        .output()
        .expect("run gcc");
    assert!(o.status.success(), "gcc failed: {}", String::from_utf8_lossy(&o.stderr));
    out
}

/// The test memheap "fakedev" (tests/plugins/memheap_fakedev.c): GPU-type memory the CPU
/// cannot touch at the addresses the core sees, reachable only through its `copy` slot. Built
/// once per test process: tests run in parallel, and one rewriting the library while
/// another's job loads it made that job find no component "fakedev".
pub fn fakedev() -> &'static str {
    static BUILT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = target_dir().join("rshmem-test-plugins/fakedev");
        gcc_plugin(&repo().join("tests/plugins/memheap_fakedev.c"), &dir, "libmemheap_fakedev.so");
        // The sshmem skeleton, whose segments no peer can map: host memory then goes
        // through the spml while device memory stays mapped (the staged path).
        gcc_plugin(&repo().join("plugins/c-example/sshmem_anon.c"), &dir, "libsshmem_anon.so");
        dir.display().to_string()
    })
}

/// The test CUDA driver "fakecuda" (tests/plugins/fake_libcuda.c), built once per test
/// process as `libcuda.so.1` with the `libcuda.so` link beside it: the directory to put first
/// in `LD_LIBRARY_PATH`, where memheap cuda (through cudarc) and test programs find it.
pub fn fakecuda() -> &'static str {
    static BUILT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = target_dir().join("rshmem-test-plugins/fakecuda");
        gcc_plugin(&repo().join("tests/plugins/fake_libcuda.c"), &dir, "libcuda.so.1");
        let link = dir.join("libcuda.so");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("libcuda.so.1", &link).unwrap();
        dir.display().to_string()
    })
}

/// The environment that selects fakedev as the GPU memheap, then `more`.
pub fn on_fakedev(more: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    [&[("SHMEM_MCA_plugin_path", fakedev()), ("SHMEM_MCA_memheap", "fakedev,cpu")], more].concat()
}

#[cfg(test)]
mod tests {
    use super::untag;

    #[test]
    fn untag_removes_mpiruns_line_tags_only() {
        let tagged = "[1,0]<stdout>:PE 0 of 2\n[1,1]<stderr>:PE 1: [x] done\n[1,1]:bare\nmpirun: plain\n[a,1]<stdout>:kept\n";
        assert_eq!(untag(tagged), "PE 0 of 2\nPE 1: [x] done\nbare\nmpirun: plain\n[a,1]<stdout>:kept\n");
        assert_eq!(untag("no newline at the end"), "no newline at the end");
    }

    #[test]
    fn untag_joins_a_line_mpirun_split_into_chunks() {
        // Rank 2's line came in two chunks, rank 3's whole line between them, and mpirun's own
        // message after it.
        let tagged = "[1,2]<stdout>:dest 0 1 [1,3]<stdout>:dest 0 1 2\n[1,2]<stdout>:2\nmpirun: note\n";
        assert_eq!(untag(tagged), "dest 0 1 2\ndest 0 1 2\nmpirun: note\n");
        // The case CI met: the second chunk of one rank's line straight after the first.
        let tagged = "[1,2]<stdout>:is \t10 \t[1,2]<stdout>:11 \t12\n[1,1]<stdout>:x\n";
        assert_eq!(untag(tagged), "is \t10 \t11 \t12\nx\n");
        // A bare tag counts only at a line start; a line left unfinished comes out at the end.
        assert_eq!(untag("[1,0]:a [1,1]: b\n[1,1]:c"), "a [1,1]: b\nc");
    }
}
