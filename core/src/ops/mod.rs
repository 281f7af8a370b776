//! Layer 3, the operations: what the C entry points call. They read the runtime state and
//! reach peers through the symmetric-memory table (`crate::symm`), and call the selected
//! components through their ops tables.

pub mod active_sets;
pub mod amo;
pub mod blocked;
pub mod coll;
pub mod completion;
pub mod ctx;
pub mod device;
pub mod ext;
pub mod gpu_aux;
pub mod gpu_share;
pub mod handles;
pub mod heap;
pub mod info;
pub mod legacy;
pub mod lifecycle;
pub mod lock;
pub mod on_stream;
pub mod p2p;
pub mod peer_memory;
pub mod perturb;
pub mod rma;
pub mod services;
pub mod setup;
pub mod shadow_pin;
pub mod signal;
pub mod spaces;
pub mod stall;
pub(crate) mod state;
pub mod team;
pub mod teams;
pub mod wait;
pub mod watch;
pub mod word;

pub const THREAD_SINGLE: i32 = 0;
pub const THREAD_FUNNELED: i32 = 1;
pub const THREAD_SERIALIZED: i32 = 2;
pub const THREAD_MULTIPLE: i32 = 3;
