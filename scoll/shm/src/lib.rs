//! scoll "shm": every collective by plain loads and stores on the peers' mapped memory, for
//! teams whose PEs all share this host (and whose memory the core maps: SHMEM_LOCAL_MAP). No
//! transport, no atomics and no allocation on the path (a reduction's private buffer grows
//! once per team). Teams it cannot serve (members on other hosts, more than [`MAX_PES`] (256) PEs, the
//! per-call teams of active-set calls that run on the user's pSync) are declined at
//! `enable`, and calls on buffers it cannot reach are declined, the same way on every member,
//! so the next component ("basic") serves them.

mod algo;
mod layout;
mod place;
mod protocol;
mod team;
mod tuning;

#[cfg(test)]
mod tests;

pub use layout::{MAX_PES, SCRATCH_BYTES, STAGE_BYTES};
pub use tuning::Tuning;

use team::Team;

rshmem_plugin_api::scoll_component! {
    name: "shm",
    description: "load/store collectives on mapped peer memory for teams within one host: flat or dissemination barrier, push broadcast/collect/alltoall, staged and reduce-scatter+allgather reductions",
    priority: 30,
    caps: 0,
    params: tuning::PARAMS,
    reason: "load/store collectives for teams within one host (others fall through to the next component)",
    scratch: SCRATCH_BYTES,
    team: Team,
    new: Team::new,
    algo: crate::algo,
}
