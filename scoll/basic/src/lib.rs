//! scoll "basic": every collective, for teams of any shape and up to 2^26 members, built only
//! on the core's one-sided services, so they work over any spml. This is the fallback every
//! team can count on; faster components may take slots over. The algorithm of each operation
//! is a parameter (`tuning`).

mod algo;
mod team;
mod tuning;

pub use team::{partner, rounds, SCRATCH_BYTES};

use team::Team;

rshmem_plugin_api::scoll_component! {
    name: "basic",
    description: "dissemination barrier, binomial or linear broadcast, Bruck or linear fcollect, linear collect, pairwise alltoall, tree, split (reduce-scatter + allgather) or get-based reductions, get-based scans; teams of up to 2^26 PEs",
    priority: 10,
    caps: rshmem_plugin_api::SCOLL_CAP_EPHEMERAL,
    params: tuning::PARAMS,
    reason: "portable algorithms over the core's one-sided services",
    scratch: SCRATCH_BYTES,
    team: Team,
    new: Team::new,
    algo: crate::algo,
}

#[cfg(test)]
mod scale;
#[cfg(test)]
mod tests;
