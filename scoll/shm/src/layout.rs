//! The layout of a member's scratch: per-sender signal words, the member's CPU line, then the
//! staging buffers. The team state (`team`) and the settings bounded by it (`tuning`) both
//! read it.

/// Largest team served: the arrays below have one word per member (a power of two: a wait
/// word holds a sender's index in `log2 MAX_PES` bits, `place::waiting`). 256 covers the
/// nodes of 128-192 cores that jobs run a PE per core on; the scratch stays below `hier`'s, so
/// the core's team slots do not grow.
pub const MAX_PES: usize = 256;
/// Signal arrays (offsets in words): SIG "my data / my arrival for call e", MID "my partial
/// result / my size for call e is ready", ACK "I have finished reading yours for call e".
pub const SIG: usize = 0;
pub const MID: usize = MAX_PES;
pub const ACK: usize = 2 * MAX_PES;
/// collect: each sender's byte count for the current call.
pub const SIZE: usize = 3 * MAX_PES;
/// The CPU this member last waited on and what it waits for (`place::CPU_WORD`,
/// `place::WAIT_WORD`), on a cache line of its own: peers read it while they wait.
pub const CPU: usize = 4 * MAX_PES;
/// Two staging buffers (alternate calls use alternate ones) for small reductions.
pub const STAGE: usize = CPU + 8;
pub const STAGE_BYTES: usize = 1024;
pub const SCRATCH_BYTES: usize = STAGE * 8 + 2 * STAGE_BYTES;
