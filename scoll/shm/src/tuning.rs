//! The thresholds at which the algorithms change, declared as component parameters
//! (`SHMEM_MCA_scoll_shm_<name>`, or `[mca.scoll.shm]` in a configuration file) so a site can
//! move them for its machines. The core checks their kinds at init and that every PE has the
//! same values (a member that chose another algorithm would wait forever), and `shmem_info`
//! lists them with their values and origins.

use rshmem_plugin_api::values::parse_size;
use rshmem_plugin_api::{cstr, CoreServices, ParamDecl, LOG_DEBUG, PARAM_INT, PARAM_SIZE};
use std::ffi::c_int;
use std::sync::OnceLock;

use crate::layout::STAGE_BYTES;

/// The declarations, in the descriptor.
pub const PARAMS: &[ParamDecl] = &[
    ParamDecl {
        name: cstr!("barrier_flat_max"),
        kind: PARAM_INT,
        default_value: cstr!("8"),
        doc: cstr!("Barrier: teams of up to this many PEs synchronise in one round, every member signalling every other; larger teams use a dissemination barrier (log2 n rounds)"),
    },
    ParamDecl {
        name: cstr!("bcast_push_max"),
        kind: PARAM_SIZE,
        default_value: cstr!("64K"),
        doc: cstr!("Broadcast: when the bytes to deliver in all ((n - 1) copies) are at most this, the root writes every member's dest and returns at once; above it, members copy from the root in parallel (2-PE teams always push)"),
    },
    ParamDecl {
        name: cstr!("reduce_stage_max"),
        kind: PARAM_SIZE,
        default_value: cstr!("1K"),
        doc: cstr!("Reductions and scans of up to this many bytes stage every source in shared scratch and each member combines them all; larger full reductions use reduce-scatter then allgather. At most 1K, the size of the staging buffers"),
    },
    ParamDecl {
        name: cstr!("reduce_block"),
        kind: PARAM_SIZE,
        default_value: cstr!("16K"),
        doc: cstr!("Large reductions combine their chunk in blocks of this many bytes, sized to stay in the L1/L2 cache"),
    },
    ParamDecl {
        name: cstr!("cross_core_spin_ns"),
        kind: PARAM_INT,
        default_value: cstr!("3000"),
        doc: cstr!("When the node has more PEs than CPUs (in teams holding all of its PEs): a wait for every member first yields to the members last seen on its own CPU, then spins up to this many nanoseconds for each one on another CPU while yielding cannot help (that member is not stuck waiting on this CPU, and every other member on this CPU is waiting too), then yields. 0 yields at once for every member"),
    },
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tuning {
    pub barrier_flat_max: c_int,
    pub bcast_push_max: usize,
    pub reduce_stage_max: usize,
    pub reduce_block: usize,
    pub cross_core_spin_ns: u64,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            barrier_flat_max: 8,
            bcast_push_max: 64 << 10,
            reduce_stage_max: STAGE_BYTES,
            reduce_block: 16 << 10,
            cross_core_spin_ns: 3000,
        }
    }
}

/// The values for this job, read once from the core (which has checked their kinds).
pub fn get(c: &CoreServices) -> Tuning {
    static TUNING: OnceLock<Tuning> = OnceLock::new();
    *TUNING.get_or_init(|| {
        // SAFETY: `c` is the core's table.
        let read = |name: &str| unsafe { rshmem_plugin_api::param(c, "scoll", "shm", name) };
        let t = from(read);
        rshmem_plugin_api::boundary::log(LOG_DEBUG, "scoll shm", &format!("thresholds: {t:?}"));
        t
    })
}

/// The tuning from `read(name)` (None: the default).
fn from(read: impl Fn(&str) -> Option<String>) -> Tuning {
    let d = Tuning::default();
    let size = |name: &str, default: usize| read(name).and_then(|v| parse_size(&v)).unwrap_or(default);
    Tuning {
        barrier_flat_max: read("barrier_flat_max")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(d.barrier_flat_max),
        bcast_push_max: size("bcast_push_max", d.bcast_push_max),
        // The staging buffers hold STAGE_BYTES: a larger value means "all that fits".
        reduce_stage_max: size("reduce_stage_max", d.reduce_stage_max).min(STAGE_BYTES),
        reduce_block: size("reduce_block", d.reduce_block).max(1),
        cross_core_spin_ns: read("cross_core_spin_ns")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(d.cross_core_spin_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_declarations_and_values_are_read_by_kind() {
        assert_eq!(from(|_| None), Tuning::default());
        let t = from(|n| match n {
            "barrier_flat_max" => Some(" 2".into()),
            "bcast_push_max" => Some("1.5k".into()),
            "reduce_stage_max" => Some("1M".into()),
            "reduce_block" => Some("0".into()),
            "cross_core_spin_ns" => Some("0".into()),
            _ => None,
        });
        assert_eq!(
            t,
            Tuning {
                barrier_flat_max: 2,
                bcast_push_max: 1536,
                reduce_stage_max: STAGE_BYTES,
                reduce_block: 1,
                cross_core_spin_ns: 0
            }
        );
    }
}
