//! scoll "basic": barrier and broadcast correct for any team size and shape, built only on the
//! core's one-sided services, so they work over any spml. This is the fallback every team can
//! count on; faster components may take slots over.

mod algo;
mod team;

pub use team::{partner, rounds, SCRATCH_BYTES};

use team::Team;

rshmem_plugin_api::scoll_component! {
    name: "basic",
    description: "dissemination barrier, flag-synchronised linear broadcast, linear collect/alltoall, get-based reductions and scans; any team size",
    priority: 10,
    caps: rshmem_plugin_api::SCOLL_CAP_EPHEMERAL,
    params: &[],
    reason: "portable algorithms over the core's one-sided services",
    scratch: SCRATCH_BYTES,
    team: Team,
    new: |_core, desc| Team::new(desc),
    algo: crate::algo,
}

#[cfg(test)]
mod tests;
