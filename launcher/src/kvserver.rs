//! The bootstrap key-value server `oshrun` runs for its PEs: one Unix-socket connection per PE,
//! `Put`/`Get` of published values, `Fence` as a barrier that makes every earlier `Put` visible,
//! and `Abort`/`Finalize`/`Resume` notifications for the job watcher.
//!
//! Only the job's own PEs are served. The socket lives in a private directory, and a
//! connection counts only once its first message is a `Hello` that carries the job's secret,
//! comes from this user, claims a rank no other connection holds, and comes from that rank's
//! process or one of its descendants. Anything else is refused, logged and never acted on.

use rshmem_boot::secret;
use rshmem_boot::wire::{self, Msg};
use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct Shared {
    kv: HashMap<(u32, String), Vec<u8>>,
    /// Writers of the PEs waiting in the current fence, with their ranks.
    fence_waiters: Vec<(u32, UnixStream)>,
    /// First abort request: (rank, code, message).
    pub abort: Option<(u32, i32, String)>,
    pub finalized: Vec<bool>,
    pub connected: Vec<bool>,
    /// The PE's connection has ended (everything it sent has been handled).
    pub closed: Vec<bool>,
    /// The process oshrun started for each rank (0 until spawned).
    pub pids: Vec<u32>,
    /// Connections refused so far (for tests and the final report).
    pub refused: usize,
    /// Of those, connections refused because too many were open.
    pub over_limit: usize,
}

/// The most bootstrap connections open at once for an `n`-PE job: one per PE, and room for
/// PEs that reconnect and for a few strangers being refused.
pub fn max_connections(n: usize) -> usize {
    n + 64
}

pub struct Server {
    pub shared: Arc<Mutex<Shared>>,
}

impl Shared {
    /// The ranks waiting in the current fence, in order.
    pub fn fencing(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.fence_waiters.iter().map(|(r, _)| *r).collect();
        v.sort_unstable();
        v
    }
}

impl Server {
    /// Listen on `path` for `n` PEs that know `key` (in a background thread).
    pub fn start(path: &Path, n: usize, key: Vec<u8>) -> std::io::Result<Server> {
        let listener = UnixListener::bind(path)?;
        let shared = Arc::new(Mutex::new(Shared {
            finalized: vec![false; n],
            connected: vec![false; n],
            closed: vec![false; n],
            pids: vec![0; n],
            ..Default::default()
        }));
        let s = shared.clone();
        let key = Arc::new(key);
        let open = Arc::new(AtomicUsize::new(0));
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                // A thread per connection, but not without bound: a process of this user that
                // opens thousands must not make oshrun start thousands of threads.
                if open.load(Ordering::Acquire) >= max_connections(n) {
                    let mut g = lock(&s);
                    g.refused += 1;
                    g.over_limit += 1;
                    if g.over_limit == 1 {
                        eprintln!(
                            "oshrun: refused a bootstrap connection: {} are open, the most a {n}-PE job gets (more are refused without a word)",
                            max_connections(n)
                        );
                    }
                    continue;
                }
                open.fetch_add(1, Ordering::AcqRel);
                let (s, key, open) = (s.clone(), key.clone(), open.clone());
                std::thread::spawn(move || {
                    serve(conn, s, n, &key);
                    open.fetch_sub(1, Ordering::AcqRel);
                });
            }
        });
        Ok(Server { shared })
    }

    /// Record the process started for `rank`, whose descendants may claim the rank.
    pub fn set_pid(&self, rank: usize, pid: u32) {
        lock(&self.shared).pids[rank] = pid;
    }
}

/// The connecting process as the kernel reports it: (pid, uid).
fn peer(conn: &UnixStream) -> Option<(u32, u32)> {
    // SAFETY: a zeroed ucred is valid; getsockopt writes at most `len` bytes into it.
    unsafe {
        let mut cred: libc::ucred = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        let rc = libc::getsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        );
        (rc == 0).then_some((cred.pid as u32, cred.uid))
    }
}

/// The parent of `pid`, from /proc.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether `pid` is `ancestor` or descends from it.
pub fn descends_from(mut pid: u32, ancestor: u32) -> bool {
    for _ in 0..64 {
        if pid == ancestor {
            return true;
        }
        match parent_of(pid) {
            Some(p) if p > 1 && p != pid => pid = p,
            _ => return false,
        }
    }
    false
}

/// Why a `Hello` must be refused, if it must.
fn check_hello(
    conn: &UnixStream,
    shared: &Mutex<Shared>,
    n: usize,
    key: &[u8],
    rank: u32,
    given: &[u8],
) -> Result<(), String> {
    let (pid, uid) = peer(conn).ok_or("its credentials cannot be read")?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if uid != me {
        return Err(format!("pid {pid} runs as uid {uid}, the job as uid {me}"));
    }
    if !secret::same(given, key) {
        return Err(format!("pid {pid} did not present the job's secret"));
    }
    if rank as usize >= n {
        return Err(format!("pid {pid} claims rank {rank} of a {n}-PE job"));
    }
    // The spawning thread records the pid just after the child starts: wait for it briefly.
    let deadline = Instant::now() + Duration::from_secs(2);
    let owner = loop {
        let p = lock(shared).pids[rank as usize];
        if p != 0 || Instant::now() > deadline {
            break p;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    if owner == 0 || !descends_from(pid, owner) {
        return Err(format!(
            "pid {pid} is not the process oshrun started as PE {rank} nor one of its children"
        ));
    }
    let mut g = lock(shared);
    if std::mem::replace(&mut g.connected[rank as usize], true) {
        return Err(format!("pid {pid} claims rank {rank}, which is already connected"));
    }
    Ok(())
}

fn refuse(shared: &Mutex<Shared>, why: &str) {
    lock(shared).refused += 1;
    eprintln!("oshrun: refused a bootstrap connection: {why}");
}

fn lock(s: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

fn serve(mut conn: UnixStream, shared: Arc<Mutex<Shared>>, n: usize, key: &[u8]) {
    // A stranger must not hold a thread forever by sending nothing.
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let rank = match wire::read_msg(&mut conn) {
        Ok(Msg::Hello { rank, secret, .. }) => match check_hello(&conn, &shared, n, key, rank, &secret) {
            Ok(()) => rank,
            Err(why) => return refuse(&shared, &why),
        },
        Ok(m) => {
            let who =
                peer(&conn).map(|(p, u)| format!("pid {p} (uid {u})")).unwrap_or_else(|| "a process".into());
            return refuse(&shared, &format!("{who} sent {} before introducing itself", m.name()));
        }
        Err(e) => return refuse(&shared, &format!("unreadable first message: {e}")),
    };
    // A PE may compute for hours between bootstrap calls.
    let _ = conn.set_read_timeout(None);
    while let Ok(msg) = wire::read_msg(&mut conn) {
        match msg {
            Msg::Hello { .. } => break,
            Msg::Put { key, value } => {
                lock(&shared).kv.insert((rank, key), value);
            }
            Msg::Get { rank: r, key } => {
                let v = lock(&shared).kv.get(&(r, key)).cloned();
                if wire::write_msg(&mut conn, &Msg::Value(v)).is_err() {
                    break;
                }
            }
            Msg::GetAll { key } => {
                let vs = {
                    let g = lock(&shared);
                    (0..n as u32).map(|r| g.kv.get(&(r, key.clone())).cloned()).collect()
                };
                if wire::write_msg(&mut conn, &Msg::Values(vs)).is_err() {
                    break;
                }
            }
            Msg::Fence => {
                let Ok(w) = conn.try_clone() else { break };
                let mut g = lock(&shared);
                g.fence_waiters.push((rank, w));
                if g.fence_waiters.len() == n {
                    for (_, mut w) in g.fence_waiters.drain(..) {
                        let _ = wire::write_msg(&mut w, &Msg::FenceDone);
                    }
                }
            }
            Msg::Abort { code, msg } => {
                let mut g = lock(&shared);
                if g.abort.is_none() {
                    g.abort = Some((rank, code, msg));
                }
            }
            Msg::Finalize => {
                if let Some(f) = lock(&shared).finalized.get_mut(rank as usize) {
                    *f = true;
                }
            }
            Msg::Resume => {
                if let Some(f) = lock(&shared).finalized.get_mut(rank as usize) {
                    *f = false;
                }
            }
            Msg::FenceDone | Msg::Value(_) | Msg::Values(_) => break,
        }
    }
    lock(&shared).closed[rank as usize] = true;
}
