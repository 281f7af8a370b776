//! scoll "hier": collectives for teams whose PEs span several hosts. The team is cut into one
//! group per host; inside a group, data and signals move by load/store on the members' mapped
//! memory (no transport, no atomics); between groups only one leader per host talks, over the
//! spml, in O(log hosts) steps for barrier, broadcast, reductions and scans, and one message per
//! other host (per run of consecutive members) for fcollect, collect and alltoall(s). Teams
//! within one host are left to `shm`, and teams it cannot serve (hosts that do not map their
//! PEs, more than [`MAX_LOCAL`] PEs on a host or [`MAX_HOSTS`] hosts, active-set teams on a
//! pSync) to `basic`, as are scans on teams whose hosts' PEs interleave when their results
//! exceed 16 MiB (`INTERLEAVED_SCAN_BYTES`).

mod algo;
mod team;

pub use team::{MAX_HOSTS, MAX_LOCAL, SCRATCH_BYTES};

use team::Team;

rshmem_plugin_api::scoll_component! {
    name: "hier",
    description: "hierarchical collectives for teams spanning hosts: load/store inside each host, dissemination barrier, binomial broadcast and allreduce between one leader per host",
    priority: 20,
    caps: 0,
    params: &[],
    reason: "hierarchical collectives for teams spanning several hosts (others fall through to the next component)",
    scratch: SCRATCH_BYTES,
    team: Team,
    new: Team::new,
    algo: crate::algo,
}

#[cfg(test)]
mod scale;
#[cfg(test)]
mod tests;
