//! Client of `oshrun`'s key-value server.

use super::wire::{self, Msg};
use super::Bootstrap;
use std::io;
use std::os::unix::net::UnixStream;
use std::sync::Mutex;

pub struct OshrunBoot {
    rank: i32,
    size: i32,
    job: String,
    /// Closed (None) once the PE has finalized, so no descriptor outlives the library.
    conn: Mutex<Option<UnixStream>>,
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
        Ok(OshrunBoot { rank, size, job, conn: Mutex::new(Some(conn)) })
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
    fn job_id(&self) -> &str {
        &self.job
    }
    fn put(&self, key: &str, value: &[u8]) -> io::Result<()> {
        self.send(&Msg::Put { key: key.to_string(), value: value.to_vec() }, false).map(|_| ())
    }
    fn fence(&self) -> io::Result<()> {
        match self.request(&Msg::Fence)? {
            Msg::FenceDone => Ok(()),
            m => Err(io::Error::new(io::ErrorKind::InvalidData, format!("unexpected reply to fence: {m:?}"))),
        }
    }
    fn get(&self, pe: i32, key: &str) -> io::Result<Option<Vec<u8>>> {
        match self.request(&Msg::Get { rank: pe as u32, key: key.to_string() })? {
            Msg::Value(v) => Ok(v),
            m => Err(io::Error::new(io::ErrorKind::InvalidData, format!("unexpected reply to get: {m:?}"))),
        }
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
        let _ = self.send(&Msg::Resume, false);
    }
}
