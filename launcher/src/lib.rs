//! The rshmem command-line tools: `oshrun` (start a job, serve its bootstrap, watch its PEs),
//! the compiler wrappers and `shmem_info`.

pub mod kvserver;
pub mod limits;
pub mod output;
pub mod run;
pub mod stacks;
pub mod wrapper;
