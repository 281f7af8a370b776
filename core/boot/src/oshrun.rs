//! Client of `oshrun`'s key-value server.

use super::wire::{self, Msg};
use super::Bootstrap;
use std::collections::HashMap;
use std::io;
use std::os::unix::net::UnixStream;
use std::sync::Mutex;

pub struct OshrunBoot {
    rank: i32,
    size: i32,
    job: String,
    /// Closed (None) once the PE has finalized, so no descriptor outlives the library.
    conn: Mutex<Option<UnixStream>>,
    /// Every PE's value of each key read since the last fence: start-up reads its keys for
    /// every peer in turn, and one `GetAll` per key replaces a round trip per peer. A value
    /// published before a fence does not change until the next one (the bootstrap's contract,
    /// PMIx's too), so the cache is dropped at each fence, at a put of the key, and at resume.
    cache: Mutex<HashMap<String, Vec<Option<Vec<u8>>>>>,
}

fn env_int(name: &str) -> io::Result<i32> {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{name} is missing or not a number"))
    })
}

impl OshrunBoot {
    pub fn connect() -> io::Result<OshrunBoot> {
        let path = std::env::var(wire::ENV_SOCKET).unwrap_or_default();
        let rank = env_int(wire::ENV_RANK)?;
        let size = env_int(wire::ENV_SIZE)?;
        let job = std::env::var(wire::ENV_JOB).unwrap_or_else(|_| format!("j{}", std::process::id()));
        let secret =
            std::env::var(wire::ENV_SECRET).ok().and_then(|s| super::secret::unhex(&s)).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is missing or malformed", wire::ENV_SECRET),
                )
            })?;
        let mut conn = UnixStream::connect(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot reach oshrun at {path}: {e}")))?;
        wire::write_msg(&mut conn, &Msg::Hello { rank: rank as u32, pid: std::process::id(), secret })?;
        Ok(OshrunBoot { rank, size, job, conn: Mutex::new(Some(conn)), cache: Mutex::new(HashMap::new()) })
    }

    fn send(&self, msg: &Msg, reply: bool) -> io::Result<Option<Msg>> {
        let mut g = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let c = g.as_mut().ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotConnected, "bootstrap closed by shmem_finalize")
        })?;
        wire::write_msg(c, msg)?;
        if reply {
            wire::read_msg(c).map(Some)
        } else {
            Ok(None)
        }
    }

    fn request(&self, msg: &Msg) -> io::Result<Msg> {
        Ok(self.send(msg, true)?.expect("a reply was asked for"))
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Option<Vec<u8>>>>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Bootstrap for OshrunBoot {
    fn rank(&self) -> i32 {
        self.rank
    }
    fn size(&self) -> i32 {
        self.size
    }
    // oshrun starts every PE on its own node.
    fn local_rank(&self) -> i32 {
        self.rank
    }
    fn local_size(&self) -> i32 {
        self.size
    }
    fn is_local(&self, pe: i32) -> bool {
        (0..self.size).contains(&pe)
    }
    fn host_of(&self, pe: i32) -> Option<i32> {
        self.is_local(pe).then_some(0)
    }
    fn job_id(&self) -> &str {
        &self.job
    }
    fn put(&self, key: &str, value: &[u8]) -> io::Result<()> {
        self.cache().remove(key);
        self.send(&Msg::Put { key: key.to_string(), value: value.to_vec() }, false).map(|_| ())
    }
    fn fence(&self) -> io::Result<()> {
        let r = self.request(&Msg::Fence);
        self.cache().clear();
        match r? {
            Msg::FenceDone => Ok(()),
            m => Err(io::Error::new(io::ErrorKind::InvalidData, format!("unexpected reply to fence: {m:?}"))),
        }
    }
    fn get(&self, pe: i32, key: &str) -> io::Result<Option<Vec<u8>>> {
        if !(0..self.size).contains(&pe) {
            return Ok(None);
        }
        if let Some(vs) = self.cache().get(key) {
            return Ok(vs[pe as usize].clone());
        }
        let vs = match self.request(&Msg::GetAll { key: key.to_string() })? {
            Msg::Values(vs) if vs.len() == self.size as usize => vs,
            m => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("unexpected reply to a get of every PE's {key}: {}", m.name()),
                ))
            }
        };
        let v = vs[pe as usize].clone();
        self.cache().insert(key.to_string(), vs);
        Ok(v)
    }
    fn abort(&self, code: i32, msg: &str) -> ! {
        if let Ok(mut g) = self.conn.try_lock() {
            if let Some(c) = g.as_mut() {
                let _ = wire::write_msg(c, &Msg::Abort { code, msg: msg.to_string() });
            }
        }
        // oshrun now kills every PE; leave at once in case it is gone.
        std::process::exit(code)
    }
    fn finalize(&self) {
        let mut g = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mut c) = g.take() {
            let _ = wire::write_msg(&mut c, &Msg::Finalize);
        }
    }
    fn suspend(&self) {
        let _ = self.send(&Msg::Finalize, false);
    }
    fn resume(&self) {
        self.cache().clear();
        let _ = self.send(&Msg::Resume, false);
    }
}
