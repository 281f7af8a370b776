//! Layer 2, symmetric memory: the segments of every PE and how each peer's copy is reached
//! (`segments`, `peers`), the hosts the PEs run on (`hosts`), the runtime state the operations read
//! (`runtime`), the team scratch pool (`scratch`), what the machine can hold (`limits`), and the modules that map memory (`static_data`, `placement`, `relay`). It calls the
//! components' ops tables but no operation: `crate::ops` builds on it.

pub mod hosts;
pub mod limits;
pub mod peers;
pub mod placement;
pub(crate) mod relay;
pub mod runtime;
pub mod scratch;
pub mod segments;
pub(crate) mod static_data;
