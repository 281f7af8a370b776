//! Phase 1 of `shmem_init`: the job as the bootstrap describes it, and the settings start-up
//! needs, read and checked once.

use super::InitError;
use crate::ops::services;
use crate::symm::limits::check_heap_fits;
use rshmem_boot::{self as bootstrap, Bootstrap};
use rshmem_plugin_api::CoreServices;

/// Who this PE is in which job, and how its start-up is to go.
pub struct Job {
    pub boot: &'static dyn Bootstrap,
    pub my_pe: i32,
    pub n_pes: i32,
    /// The CPU space's heap as the program asked for it (without the core's own share).
    pub heap_size: usize,
    pub debug: bool,
    pub local_map: bool,
    pub active_set_teams: bool,
    /// Same-host segments come through the host's relay (`crate::symm::relay`).
    pub relay: bool,
    /// Shared-memory names carry the job id (so a launcher can find a dead job's leftovers) and
    /// a random tag of this PE (so nobody can create them first and make the job fail, or hand
    /// it memory they control: names are also created exclusively).
    pub name_tag: String,
    /// The services table the components call back into.
    pub core: *const CoreServices,
    /// `SHMEM_PEER_MEMORY`: who prints the report (`crate::ops::peer_memory`).
    pub peer_memory: usize,
    /// `SHMEM_INIT_TIMEOUT`: seconds of waiting in one of start-up's fences that end the job
    /// (0: none).
    pub init_timeout: u64,
}

impl Job {
    pub fn new(boot: &'static dyn Bootstrap) -> Result<Job, InitError> {
        let (my_pe, n_pes) = (boot.rank(), boot.size());
        crate::log::set_pe(my_pe);
        let setting = |r: Result<bool, String>| r.map_err(InitError::Setting);
        crate::config::check().map_err(InitError::Setting)?;
        crate::ops::spaces::check_config().map_err(InitError::Setting)?;
        let heap_size = heap_size()?;
        check_heap_fits(
            heap_size,
            "a symmetric heap (SHMEM_SYMMETRIC_SIZE)",
            boot.local_size(),
            boot.local_rank() == 0,
        )
        .map_err(InitError::Memory)?;
        let debug = setting(crate::config::get_bool("SHMEM_DEBUG"))?;
        let int = |name: &str| crate::config::get_int(name).map_err(InitError::Setting);
        crate::ops::stall::configure(int("SHMEM_COLL_STALL_WARN")?.max(0) as u64);
        crate::ops::stall::configure_waits(int("SHMEM_WAIT_STALL_WARN")?.max(0) as u64);
        crate::ops::perturb::configure(int("SHMEM_PERTURB")?.clamp(0, u32::MAX as i64) as u32);
        let peer_memory =
            crate::ops::peer_memory::who(int("SHMEM_PEER_MEMORY")?).map_err(InitError::Setting)?;
        let init_timeout = int("SHMEM_INIT_TIMEOUT")?.max(0) as u64;
        let local_map = setting(crate::config::get_bool("SHMEM_LOCAL_MAP"))?;
        let active_set_teams = setting(crate::config::get_bool("SHMEM_ACTIVE_SET_TEAMS"))?;
        let relay = setting(crate::config::get_bool("SHMEM_LOCAL_MAP_RELAY"))?;
        let name_tag = format!("{}-{}", boot.job_id(), bootstrap::secret::random_hex(6));
        let core = services::table(my_pe, n_pes, boot.local_rank(), boot.local_size(), &name_tag);
        Ok(Job {
            boot,
            my_pe,
            n_pes,
            heap_size,
            debug,
            local_map,
            active_set_teams,
            relay,
            name_tag,
            core,
            peer_memory,
            init_timeout,
        })
    }

    /// The PEs of this host other than this one.
    pub fn host_peers(&self) -> impl Iterator<Item = i32> + '_ {
        (0..self.n_pes).filter(move |&pe| pe != self.my_pe && self.boot.is_local(pe))
    }
}

/// The init heap is the CPU space's, whose own size variable takes precedence; the default
/// space's variable (SHMEM_SYMMETRIC_SIZE) sizes it when it is the default.
fn heap_size() -> Result<usize, InitError> {
    if !crate::config::raw("SHMEM_CPU_SYMMETRIC_SIZE").is_empty() {
        crate::config::get_size("SHMEM_CPU_SYMMETRIC_SIZE")
    } else if crate::ops::spaces::gpu_is_default() {
        let d = crate::config::lookup("SHMEM_SYMMETRIC_SIZE").default;
        crate::config::parse_size(d).ok_or_else(|| format!("bad default size {d}"))
    } else {
        crate::config::get_size("SHMEM_SYMMETRIC_SIZE")
    }
    .map_err(InitError::Setting)
}
