//! What the `ops` layer keeps per initialization, held by the `Runtime`.
//!
//! The runtime belongs to layer `symm`, below `ops`, so it cannot name these types. It holds
//! this value as `Box<dyn Any>` (`Runtime::above`). Start-up makes the value with the runtime,
//! and [`of`] is the one place that knows its type. None of it is on a hot path: active-set
//! collectives (the legacy pSync routines) look up their team here once per call, the others
//! serve device memory only.

use crate::ops::{active_sets, device, on_stream, shadow_pin};
use crate::symm::runtime::Runtime;
use std::sync::Mutex;

pub(crate) struct OpsState {
    /// The active-set teams cached and the agreements under way (`active_sets`).
    pub(crate) active_sets: active_sets::Agreements,
    /// The state of `shmemx_barrier_all_on_stream`, made by the first one (`on_stream`).
    pub(crate) stream_barrier: Mutex<Option<on_stream::Barrier>>,
    /// The staging buffers not in use (`device`).
    pub(crate) stages: device::Stages,
    /// The host shadows of device segments page-locked chunk by chunk (`shadow_pin`).
    pub(crate) pins: shadow_pin::Pinned,
}

impl OpsState {
    pub(crate) fn new() -> OpsState {
        OpsState {
            active_sets: active_sets::Agreements::default(),
            stream_barrier: Mutex::new(None),
            stages: device::Stages::default(),
            pins: shadow_pin::Pinned::new(),
        }
    }
}

/// The ops layer's state of runtime `rt`.
#[inline]
pub(crate) fn of(rt: &Runtime) -> &OpsState {
    rt.above.downcast_ref().expect("start-up gives every runtime an OpsState")
}
