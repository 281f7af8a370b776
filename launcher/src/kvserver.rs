//! The bootstrap key-value server `oshrun` runs for its PEs: one Unix-socket connection per PE,
//! `Put`/`Get` of published values, `Fence` as a barrier that makes every earlier `Put` visible,
//! and `Abort`/`Finalize` notifications for the job watcher.

use shmem::bootstrap::wire::{self, Msg};
use std::collections::HashMap;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

#[derive(Default)]
pub struct Shared {
    kv: HashMap<(u32, String), Vec<u8>>,
    /// Writers of the PEs waiting in the current fence.
    fence_waiters: Vec<UnixStream>,
    /// First abort request: (rank, code, message).
    pub abort: Option<(u32, i32, String)>,
    pub finalized: Vec<bool>,
    pub connected: Vec<bool>,
}

pub struct Server {
    pub shared: Arc<Mutex<Shared>>,
}

impl Server {
    /// Listen on `path` for `n` PEs (in a background thread).
    pub fn start(path: &Path, n: usize) -> std::io::Result<Server> {
        let listener = UnixListener::bind(path)?;
        let shared = Arc::new(Mutex::new(Shared {
            finalized: vec![false; n],
            connected: vec![false; n],
            ..Default::default()
        }));
        let s = shared.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || serve(conn, s, n));
            }
        });
        Ok(Server { shared })
    }
}

fn lock(s: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

fn serve(mut conn: UnixStream, shared: Arc<Mutex<Shared>>, n: usize) {
    let mut rank = u32::MAX;
    while let Ok(msg) = wire::read_msg(&mut conn) {
        match msg {
            Msg::Hello { rank: r, .. } => {
                rank = r;
                if let Some(c) = lock(&shared).connected.get_mut(r as usize) {
                    *c = true;
                }
            }
            Msg::Put { key, value } => {
                lock(&shared).kv.insert((rank, key), value);
            }
            Msg::Get { rank: r, key } => {
                let v = lock(&shared).kv.get(&(r, key)).cloned();
                if wire::write_msg(&mut conn, &Msg::Value(v)).is_err() {
                    break;
                }
            }
            Msg::Fence => {
                let Ok(w) = conn.try_clone() else { break };
                let mut g = lock(&shared);
                g.fence_waiters.push(w);
                if g.fence_waiters.len() == n {
                    for mut w in g.fence_waiters.drain(..) {
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
            Msg::FenceDone | Msg::Value(_) => break,
        }
    }
}
