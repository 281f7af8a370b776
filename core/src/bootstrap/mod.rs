//! Bootstrap: the small runtime contract the core needs from whatever started the PEs
//! (rank, size, node-local layout, a key-value exchange, barrier, abort). Implementations:
//! `oshrun`'s key-value server and singleton (a program started without a launcher).
//! PMIx will be a third implementation behind the same trait.

pub mod oshrun;
pub mod singleton;
pub mod wire;

use std::io;

pub trait Bootstrap: Send + Sync {
    fn rank(&self) -> i32;
    fn size(&self) -> i32;
    /// This PE's index among the PEs of its node and the node's PE count.
    fn local_rank(&self) -> i32;
    fn local_size(&self) -> i32;
    fn is_local(&self, pe: i32) -> bool;
    /// A string unique to this job, usable in shared-memory object names.
    fn job_id(&self) -> &str;
    fn put(&self, key: &str, value: &[u8]) -> io::Result<()>;
    /// Collective: every `put` made before it by any PE is visible after it; also a barrier.
    fn fence(&self) -> io::Result<()>;
    fn get(&self, pe: i32, key: &str) -> io::Result<Option<Vec<u8>>>;
    /// Ends the whole job with `code`. Does not return.
    fn abort(&self, code: i32, msg: &str) -> !;
    /// Tell the launcher this PE finalized cleanly.
    fn finalize(&self);
}

/// The bootstrap for this process: `oshrun` when its environment is present, else singleton.
pub fn detect() -> io::Result<Box<dyn Bootstrap>> {
    match std::env::var_os(wire::ENV_SOCKET) {
        Some(_) => Ok(Box::new(oshrun::OshrunBoot::connect()?)),
        None => Ok(Box::new(singleton::Singleton::new())),
    }
}
