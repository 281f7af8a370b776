//! rshmem-boot: the small runtime contract the core needs from whatever started the PEs
//! (rank, size, node-local layout, a key-value exchange, barrier, abort). Implementations:
//! `oshrun`'s key-value server, a PMIx server (Open MPI's `mpirun`, Slurm's
//! `srun --mpi=pmix`), and singleton (a program started without a launcher).

pub mod loopback;
pub mod oshrun;
pub mod pmix;
/// Randomness and secrets, shared with the components (the plugin API crate holds them).
pub use rshmem_plugin_api::secret;
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
    /// The lowest PE on this PE's host (this PE's host, as the core names hosts).
    fn host_leader(&self) -> i32 {
        (0..self.size()).find(|&pe| pe == self.rank() || self.is_local(pe)).unwrap_or(self.rank())
    }
    /// The lowest PE on `pe`'s host, from the launcher's own map of the job (no exchange
    /// between PEs); None when the launcher gives no map or `pe` is out of range. Start-up
    /// then learns the hosts from every PE's record instead: one lookup per PE.
    fn host_of(&self, _pe: i32) -> Option<i32> {
        None
    }
    /// The name of `pe`'s host, for messages (a peer lost on another host is named with its
    /// host): the launcher's name for the node where it has a map of the job, else this
    /// machine's hostname for a PE of this host; None for a PE elsewhere that the launcher
    /// names no host for, or out of range.
    fn host_name(&self, pe: i32) -> Option<String> {
        (pe == self.rank() || self.is_local(pe)).then(this_hostname).flatten()
    }
    /// A string unique to this job, usable in shared-memory object names.
    fn job_id(&self) -> &str;
    fn put(&self, key: &str, value: &[u8]) -> io::Result<()>;
    /// Collective: every `put` made before it by any PE is visible after it; also a barrier.
    fn fence(&self) -> io::Result<()>;
    fn get(&self, pe: i32, key: &str) -> io::Result<Option<Vec<u8>>>;
    /// Ends the whole job with `code`. Does not return.
    fn abort(&self, code: i32, msg: &str) -> !;
    /// Tell the launcher this PE finalized cleanly, and leave it.
    fn finalize(&self);
    /// The library was finalized but stays ready to be initialized again in this process
    /// (OpenSHMEM 1.6 allows it): tell the launcher, where it can be told and still be used
    /// afterwards, that this PE finalized. `finalize` follows when the process exits. PMIx has
    /// no such notice (`PMIx_Finalize` ends the client), so it is told at exit only.
    fn suspend(&self) {}
    /// The library was initialized again after `suspend`: this PE runs again.
    fn resume(&self) {}
}

/// This machine's hostname (`gethostname`), None when it has none.
pub fn this_hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: a writable buffer of the length given; gethostname NUL-terminates within it or
    // fails.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    let end = buf.iter().position(|&b| b == 0)?;
    (rc == 0 && end > 0).then(|| String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// How this process was started, from its environment.
#[derive(Debug, PartialEq, Eq)]
pub enum Origin {
    Oshrun,
    /// A PMIx server's client; the string names the launcher for messages.
    Pmix(String),
    /// A launcher that started several processes but gives them no PMIx server: running
    /// them as singletons would be N silent one-PE jobs, so init refuses with this message.
    Unsupported(String),
    Singleton,
}

/// Launchers that start several processes without PMIx: (variable giving the process count,
/// what to say). Only a count above one is refused: one process is a fine singleton.
const NON_PMIX: &[(&str, &str)] = &[
    ("SLURM_STEP_NUM_TASKS", "Slurm's srun without PMIx: run it as `srun --mpi=pmix ...`"),
    ("PMI_SIZE", "a PMI-1/PMI-2 launcher (MPICH's Hydra, or srun --mpi=pmi2): use oshrun, Open MPI's mpirun or `srun --mpi=pmix`"),
    ("OMPI_COMM_WORLD_SIZE", "Open MPI's launcher without a PMIx server: use its mpirun (PMIx) or oshrun"),
    ("MPI_LOCALNRANKS", "a Hydra-style launcher without PMIx: use oshrun, Open MPI's mpirun or `srun --mpi=pmix`"),
];

/// Classify the environment `var` reads (the process's own, or a test's).
pub fn origin(var: impl Fn(&str) -> Option<String>) -> Origin {
    if var(wire::ENV_SOCKET).is_some() {
        return Origin::Oshrun;
    }
    if var("PMIX_NAMESPACE").is_some() || var("PMIX_RANK").is_some() {
        let launcher = if var("SLURM_STEP_ID").is_some() {
            "Slurm's srun (--mpi=pmix)"
        } else if var("OMPI_COMM_WORLD_SIZE").is_some() {
            "Open MPI's mpirun"
        } else {
            "a PMIx launcher"
        };
        return Origin::Pmix(launcher.to_string());
    }
    for (name, what) in NON_PMIX {
        if let Some(v) = var(name) {
            if v.trim().parse::<u64>().is_ok_and(|n| n > 1) {
                return Origin::Unsupported(format!(
                    "this process was started by {what} ({name}={v}); without a PMIx server or oshrun it would run as one of {v} separate single-PE jobs"
                ));
            }
        }
    }
    Origin::Singleton
}

/// The bootstrap for this process: `oshrun` when its environment is present, PMIx when a
/// PMIx server started it, singleton when no launcher did.
pub fn detect() -> io::Result<Box<dyn Bootstrap>> {
    match origin(|k| std::env::var(k).ok()) {
        Origin::Oshrun => Ok(Box::new(oshrun::OshrunBoot::connect()?)),
        Origin::Pmix(launcher) => Ok(Box::new(pmix::PmixBoot::init(&launcher)?)),
        Origin::Unsupported(msg) => Err(io::Error::new(io::ErrorKind::Unsupported, msg)),
        Origin::Singleton => Ok(Box::new(singleton::Singleton::new())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn origins() {
        assert_eq!(origin(env(&[])), Origin::Singleton);
        assert_eq!(origin(env(&[(wire::ENV_SOCKET, "/x"), ("PMIX_RANK", "0")])), Origin::Oshrun);
        assert!(matches!(
            origin(env(&[("PMIX_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "4")])),
            Origin::Pmix(l) if l.contains("mpirun")
        ));
        assert!(matches!(
            origin(env(&[("PMIX_NAMESPACE", "slurm.pmix.1.0"), ("SLURM_STEP_ID", "0")])),
            Origin::Pmix(l) if l.contains("srun")
        ));
        assert!(matches!(
            origin(env(&[("SLURM_STEP_NUM_TASKS", "4")])),
            Origin::Unsupported(m) if m.contains("--mpi=pmix") && m.contains("SLURM_STEP_NUM_TASKS=4")
        ));
        assert!(
            matches!(origin(env(&[("PMI_SIZE", "2")])), Origin::Unsupported(m) if m.contains("PMI_SIZE=2"))
        );
        // One task of a foreign launcher is an ordinary singleton.
        assert_eq!(origin(env(&[("SLURM_STEP_NUM_TASKS", "1")])), Origin::Singleton);
    }
}
