//! Fatal errors: print `rshmem[PE n] routine: message` and end the whole job through the
//! bootstrap (oshrun then stops every PE). OpenSHMEM routines mostly return void, so a clear
//! message and a clean job abort is the only honest answer to bad input.

use std::ffi::CStr;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// What a routine cannot do with the arguments it was given, or what failed under it: one
/// value per cause, naming the argument (`what`) and the values that make it wrong. Checks
/// return it; the routine turns it into the job's end with its own name ([`fail`]) or, where
/// the spec has a status to return, into that. `Copy` and without heap data, so a check on the
/// hot path builds nothing unless it fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShmemError {
    /// A PE number outside the job.
    PeOutOfRange { pe: i32, n_pes: i32 },
    /// A PE number outside the team of the context an operation ran on.
    PeOutsideTeam { pe: i32, size: i32 },
    /// `SHMEM_CTX_INVALID` (a NULL context) where a live context is needed.
    CtxInvalid,
    /// A context that was destroyed.
    CtxDestroyed { addr: usize },
    /// Something that never was a context handle.
    NotACtx { addr: usize },
    /// Something that never was a team handle.
    NotATeam { addr: usize },
    /// A team that was destroyed.
    TeamDestroyed { addr: usize },
    /// A collective's root outside its team.
    RootOutsideTeam { root: i32, size: i32 },
    /// A collective's buffer that is not symmetric memory as a whole.
    NotSymmetricRange { what: &'static str, addr: usize, len: usize },
    /// An address no symmetric segment of this PE holds.
    NotSymmetric { what: &'static str, addr: usize },
    /// A range that starts in a symmetric segment and runs past its end.
    PastEnd { what: &'static str, addr: usize, len: usize, room: usize },
    /// A NULL buffer where bytes are to move.
    NullBuffer { what: &'static str, len: usize },
    /// A NULL list where entries are expected (of variables to wait on, of PEs).
    NullList { what: &'static str, expected: &'static str, count: usize },
    /// A NULL array whose length another argument gives (`target_pes` and `npes`).
    NullArray { what: &'static str, count_arg: &'static str, count: usize },
    /// An element count times the element size that does not fit a `size_t`.
    LengthOverflow,
    /// An address not aligned to the size of the type it holds.
    Misaligned { what: &'static str, addr: usize, align: usize },
    /// An argument outside the values the routine takes (`cmp`, `sig_op`, ...).
    BadValue { what: &'static str, value: i64, expected: &'static str },
    /// The spml failed an operation with a peer.
    Spml { op: &'static str, pe: i32 },
    /// Something that never was a memory space handle.
    NotASpace { addr: usize },
    /// A memory space that `shmem_space_destroy` destroyed.
    SpaceDestroyed { addr: usize },
    /// A NULL pointer where the routine writes its result, or reads a required argument.
    NullArg { what: &'static str },
    /// A predefined object given to a routine that destroys (`SHMEM_CTX_DEFAULT`, ...).
    CannotDestroy { what: &'static str },
    /// A bit mask with bits outside the values the routine knows.
    UnknownBits { what: &'static str, value: u64, known: &'static str },
    /// A NULL pointer that another argument says is to be read.
    NullButSelected { what: &'static str, selected_by: &'static str },
    /// A count that must not be negative.
    Negative { what: &'static str, value: i64 },
    /// Entry `index` of list `what` is not a PE of the job.
    ListPeOutOfRange { what: &'static str, index: usize, pe: i32, n_pes: i32 },
    /// A context that is not among the live ones (destroyed, or never made).
    CtxNotLive { addr: usize },
    /// A private context of a team, still live when the team is destroyed.
    PrivateCtxOutlivesTeam { addr: usize },
    /// A block that is not a live allocation of the memory space it is given back to.
    NotFromSpace { addr: usize },
    /// A block that no symmetric allocation routine returned, or one already freed.
    NotAllocated { what: &'static str, addr: usize },
    /// Strides below `least` (1: they must be positive; else the block size).
    StridesBelow { dst: i64, sst: i64, least: i64 },
    /// Two buffers that overlap without being the same one.
    Overlap { what: &'static str },
    /// An active set (`PE_start`, `logPE_stride`, `PE_size`) that is no set of PEs.
    BadActiveSet { start: i32, log_stride: i32, size: i32 },
    /// An active set whose last PE is beyond the job.
    ActiveSetPastEnd { start: i32, log_stride: i32, size: i32, last: i64, n_pes: i32 },
    /// This PE called a collective on an active set it is not in.
    NotInActiveSet { pe: i32 },
    /// A pSync that is not a symmetric array of the size the routine needs.
    BadPsync,
    /// A root that is not an index of the active set.
    RootOutsideActiveSet { root: i32, size: i32 },
    /// Under `SHMEM_DEBUG`: an address in a symmetric heap that no live allocation holds.
    NotInBlock { what: &'static str, addr: usize },
    /// Under `SHMEM_DEBUG`: a range that runs past the end of the allocation (`size` bytes at
    /// `start`) holding its first byte.
    PastBlock { what: &'static str, addr: usize, len: usize, start: usize, size: usize },
    /// A strided transfer whose extent (the stride times the count) does not fit a `size_t`.
    StrideOverflow { what: &'static str, stride: i64 },
    /// A strided transfer whose blocks, `span` bytes from `addr`, run past its segment's end.
    StridedPastEnd {
        what: &'static str,
        addr: usize,
        stride: i64,
        span: usize,
        nblocks: usize,
        bsize: usize,
        room: usize,
    },
    /// A lock this PE holds already: asking again would wait for itself.
    LockHeld { addr: usize },
    /// A lock this PE does not hold, given to a routine that releases it.
    LockNotHeld { addr: usize },
    /// The spml failed to complete a context's outstanding operations.
    QuietFailed,
    /// The symmetric heap has no room for `what`, which the library itself keeps there.
    NoRoom { what: &'static str },
    /// No scoll component provides `what` for a team.
    NoScoll { what: &'static str },
    /// Every scoll component declined collective `op`.
    AllDeclined { op: &'static str },
    /// A hint with bits (`unknown`) that are no `SHMEM_HINT_*` value.
    UnknownHint { hint: i64, unknown: i64 },
    /// The thread that waits in the launcher's fence ended without an answer.
    FenceNoAnswer,
    /// This PE waited `limit_s` in the launcher's fence of `routine` (`SHMEM_INIT_TIMEOUT`).
    FenceTimeout { limit_s: u64, routine: &'static CStr },
    /// A state the library's own code should never reach (a bug in rshmem, named by `what`).
    Internal { what: &'static str },
    /// A device memheap's operation `what` failed (the memheap logged why).
    DeviceOp { what: &'static str },
    /// Queuing a copy of `len` bytes to or from device memory failed.
    DeviceCopy { len: usize },
    /// The device stopped taking the stream memory operations it took before.
    StreamRefused,
    /// A collective's buffer in device memory that no GPU space holds.
    DeviceOutsideSpace { what: &'static str, addr: usize },
    /// A collective's buffer in a GPU space that has no host shadow for collectives.
    NoDeviceShadow { what: &'static str, addr: usize },
    /// A collective's device buffer that runs past the end of its GPU space.
    PastDeviceSpace { what: &'static str, addr: usize, end: usize },
    /// A GPU-heap routine called where this PE has no GPU heap.
    NoGpuHeap,
    /// An alignment that is not a power of two multiple of `sizeof(void *)`.
    BadAlignment { alignment: usize },
    /// A routine called with no live runtime: before `shmem_init`, or after the last
    /// `shmem_finalize` (`finalized`).
    NotInitialized { finalized: bool },
}

impl fmt::Display for ShmemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ShmemError::PeOutOfRange { pe, n_pes } => {
                write!(f, "pe {pe} is out of range: the job has {n_pes} PEs (0..{})", n_pes - 1)
            }
            ShmemError::PeOutsideTeam { pe, size } => write!(
                f,
                "pe {pe} is not a PE of the context's team, which has {size} PE(s): on a context made by shmem_team_create_ctx, PE numbers are relative to the team"
            ),
            ShmemError::CtxInvalid => {
                write!(f, "ctx is SHMEM_CTX_INVALID (did shmem_ctx_create or shmem_team_create_ctx fail?)")
            }
            ShmemError::CtxDestroyed { addr } => write!(f, "ctx {addr:#x} was destroyed"),
            ShmemError::NotACtx { addr } => write!(
                f,
                "ctx {addr:#x} is not a context handle: never returned by shmem_ctx_create or shmem_team_create_ctx (an uninitialised or overwritten variable?)"
            ),
            ShmemError::NotATeam { addr } => write!(
                f,
                "team {addr:#x} is not a team handle: never returned by a team split (an uninitialised or overwritten variable?)"
            ),
            ShmemError::TeamDestroyed { addr } => write!(f, "team {addr:#x} is not a live team (destroyed already?)"),
            ShmemError::RootOutsideTeam { root, size } => {
                write!(f, "PE_root {root} is not in the team (size {size})")
            }
            ShmemError::NotSymmetricRange { what, addr, len } => {
                write!(f, "{what} {addr:#x}+{len} is not symmetric memory")
            }
            ShmemError::NotSymmetric { what, addr } => write!(
                f,
                "{what} {addr:#x} is not a symmetric address (not in the symmetric heap nor in global or static data)"
            ),
            ShmemError::PastEnd { what, addr, len, room } => write!(
                f,
                "{what} range {addr:#x}+{len} runs past the end of its symmetric segment ({room} bytes left from there)"
            ),
            ShmemError::NullBuffer { what, len } => write!(f, "{what} is NULL but {len} bytes are to be transferred"),
            ShmemError::NullList { what, expected, count } => {
                write!(f, "{what} is NULL ({count} {expected} expected)")
            }
            ShmemError::NullArray { what, count_arg, count } => write!(f, "{what} is NULL but {count_arg} is {count}"),
            ShmemError::LengthOverflow => write!(f, "nelems times the element size overflows size_t"),
            ShmemError::Misaligned { what, addr, align } => {
                write!(f, "{what} {addr:#x} is not aligned to its {align}-byte type")
            }
            ShmemError::BadValue { what, value, expected } => write!(f, "{what}={value} is not {expected}"),
            ShmemError::Spml { op, pe } => write!(f, "{op} PE {pe} failed in the spml"),
            ShmemError::NotASpace { addr } => write!(f, "space {addr:#x} is not a memory space handle"),
            ShmemError::SpaceDestroyed { addr } => {
                write!(f, "space {addr:#x} was destroyed by shmem_space_destroy and cannot be used")
            }
            ShmemError::NullArg { what } => write!(f, "{what} is NULL"),
            ShmemError::CannotDestroy { what } => write!(f, "{what} cannot be destroyed"),
            ShmemError::UnknownBits { what, value, known } => {
                write!(f, "{what} {value:#x} has bits that are not {known} values")
            }
            ShmemError::NullButSelected { what, selected_by } => write!(f, "{what} is NULL but {selected_by}"),
            ShmemError::Negative { what, value } => write!(f, "{what} is {value}; it must not be negative"),
            ShmemError::ListPeOutOfRange { what, index, pe, n_pes } => {
                write!(f, "{what}[{index}] = {pe} is not a PE (the job has {n_pes} PEs)")
            }
            ShmemError::CtxNotLive { addr } => write!(
                f,
                "ctx {addr:#x} is not a live context: destroyed already, or never created by shmem_ctx_create / shmem_team_create_ctx"
            ),
            ShmemError::PrivateCtxOutlivesTeam { addr } => write!(
                f,
                "ctx {addr:#x}, created from this team with SHMEM_CTX_PRIVATE, must be destroyed (shmem_ctx_destroy) before the team"
            ),
            ShmemError::NotFromSpace { addr } => {
                write!(f, "ptr {addr:#x} was not allocated from this space (or was already freed)")
            }
            ShmemError::NotAllocated { what, addr } => write!(
                f,
                "{what} {addr:#x} was not returned by a symmetric allocation routine (or was already freed)"
            ),
            ShmemError::StridesBelow { dst, sst, least: 1 } => {
                write!(f, "the strides must be positive (dst={dst}, sst={sst})")
            }
            ShmemError::StridesBelow { dst, sst, least } => {
                write!(f, "strides must be at least the block size {least} (dst={dst}, sst={sst})")
            }
            ShmemError::Overlap { what } => write!(f, "{what} overlap without being the same array"),
            ShmemError::BadActiveSet { start, log_stride, size } => write!(
                f,
                "invalid active set: PE_start={start}, logPE_stride={log_stride}, PE_size={size}"
            ),
            ShmemError::ActiveSetPastEnd { start, log_stride, size, last, n_pes } => write!(
                f,
                "the active set PE_start={start}, logPE_stride={log_stride}, PE_size={size} reaches PE {last}, beyond the {n_pes} PEs"
            ),
            ShmemError::NotInActiveSet { pe } => write!(f, "PE {pe} is not in the active set it was called with"),
            ShmemError::BadPsync => write!(f, "pSync must be a symmetric array of SHMEM_*_SYNC_SIZE longs"),
            ShmemError::RootOutsideActiveSet { root, size } => {
                write!(f, "PE_root {root} is not an index of the active set (size {size})")
            }
            ShmemError::NotInBlock { what, addr } => write!(
                f,
                "{what} {addr:#x} is in a symmetric heap but in no live allocation (freed, or never allocated; SHMEM_DEBUG checks this)"
            ),
            ShmemError::PastBlock { what, addr, len, start, size } => write!(
                f,
                "{what} {addr:#x}+{len} runs past the end of its allocation, {size} bytes at {start:#x} (SHMEM_DEBUG checks this)"
            ),
            ShmemError::StrideOverflow { what, stride } => {
                write!(f, "{what}'s stride {stride} times the element count overflows")
            }
            ShmemError::StridedPastEnd { what, addr, stride, span, nblocks, bsize, room } => write!(
                f,
                "{what} {addr:#x} with stride {stride} spans {span} bytes over {nblocks} block(s) of {bsize} element(s) but its symmetric segment has {room} bytes left from there"
            ),
            ShmemError::LockHeld { addr } => write!(
                f,
                "this PE already holds lock {addr:#x} (the lock is not reentrant: it would wait for itself)"
            ),
            ShmemError::LockNotHeld { addr } => write!(
                f,
                "lock {addr:#x} is not held by this PE (shmem_set_lock or shmem_test_lock first)"
            ),
            ShmemError::QuietFailed => write!(f, "the spml failed to complete outstanding operations"),
            ShmemError::NoRoom { what } => write!(f, "the symmetric heap has no room for {what}"),
            ShmemError::NoScoll { what } => write!(f, "no scoll component provides {what} for the team"),
            ShmemError::AllDeclined { op } => write!(f, "every scoll component declined {op}"),
            ShmemError::UnknownHint { hint, unknown } => write!(
                f,
                "hint {hint:#x} has bits {unknown:#x} that are no SHMEM_HINT_* value (shmemx.h defines bits 0-4 and 16-18)"
            ),
            ShmemError::FenceNoAnswer => {
                write!(f, "the launcher's fence ended without an answer (its thread is gone)")
            }
            ShmemError::Internal { what } => write!(f, "{what} (internal error)"),
            ShmemError::DeviceOp { what } => write!(f, "{what} failed (the memheap said why above)"),
            ShmemError::DeviceCopy { len } => {
                write!(f, "queuing a copy of {len} bytes to or from device memory failed")
            }
            ShmemError::StreamRefused => write!(f, "the device stopped taking stream memory operations"),
            ShmemError::DeviceOutsideSpace { what, addr } => write!(
                f,
                "{what} {addr:#x} is device memory outside every GPU space: collectives take symmetric buffers"
            ),
            ShmemError::NoDeviceShadow { what, addr } => write!(
                f,
                "{what} {addr:#x} is in a GPU space without SHMEM_SPACE_CAP_COLLECTIVES (made under SHMEM_GPU_COLLECTIVES=0, or its host shadow could not be made): run collectives on host (CPU space) buffers"
            ),
            ShmemError::PastDeviceSpace { what, addr, end } => {
                write!(f, "{what} {addr:#x}+{end} runs past the end of its GPU space")
            }
            ShmemError::NoGpuHeap => write!(
                f,
                "there is no GPU heap: initialize with shmem_init_thread(SHMEM_THREAD_... | SHMEM_DEVICE_HOST_INIT, &provided) and check that provided has SHMEM_DEVICE_HOST_INIT (or set SHMEM_ENABLE_GPU_SPACE=1); init's log says why a GPU heap could not be made"
            ),
            ShmemError::BadAlignment { alignment } => write!(
                f,
                "alignment={alignment} is not a power of two that is a multiple of sizeof(void *)"
            ),
            ShmemError::NotInitialized { finalized } => {
                write!(f, "called {}", if finalized { "after shmem_finalize" } else { "before shmem_init" })
            }
            ShmemError::FenceTimeout { limit_s, routine } => write!(
                f,
                "this PE has waited {limit_s} s in the launcher's fence for the other PEs to arrive (SHMEM_INIT_TIMEOUT): every PE must call {}, and one has not (still starting, busy, or stopped, which only the launcher can tell); the job ends",
                routine.to_string_lossy()
            ),
        }
    }
}

impl std::error::Error for ShmemError {}

/// What a caller that cannot hand an error back (a C routine returns `void`) does with an
/// outcome: the value, or the end of the job for its error, named by `routine`. The
/// operations that return their errors (`ops::rma`, `ops::amo`, `ops::signal`: their `END`
/// instantiations) are ended this way by their C-shaped wrappers and the core services.
pub trait OrEnd<T> {
    fn or_end(self, routine: &'static CStr) -> T;
}

impl<T> OrEnd<T> for Result<T, ShmemError> {
    #[inline(always)]
    fn or_end(self, routine: &'static CStr) -> T {
        match self {
            Ok(v) => v,
            Err(e) => fail(routine, e),
        }
    }
}

/// End the job for `err`, met in `routine`.
#[cold]
#[inline(never)]
pub fn fail(routine: &'static CStr, err: ShmemError) -> ! {
    fatal(routine, &err.to_string())
}

#[cold]
#[inline(never)]
pub fn fatal(routine: &'static CStr, msg: &str) -> ! {
    crate::log::line(&format!("{} {}: {msg}", crate::log::prefix(), routine.to_string_lossy()));
    abort_job(1, msg)
}

/// End the job with `code`: through the hook the runtime installs once it is live (the
/// bootstrap then stops every PE), else by ending this process.
pub fn abort_job(code: i32, msg: &str) -> ! {
    mark_exiting();
    // The launcher may not be reachable any more (a cut link to the host it runs on): the
    // abort must not leave this PE behind waiting for it.
    let _ = std::thread::Builder::new().name("rshmem-abort".into()).spawn(move || {
        std::thread::sleep(ABORT_LIMIT);
        // SAFETY: _exit ends the process at once; nothing of ours needs running.
        unsafe { libc::_exit(code) }
    });
    if let Some(hook) = JOB_ABORT.get() {
        hook(code, msg);
    }
    std::process::exit(code)
}

/// How long ending the job through the launcher may take before this PE exits by itself.
pub const ABORT_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How to end the whole job; returns only when it cannot (no live runtime).
pub type JobAbort = fn(code: i32, msg: &str);

static JOB_ABORT: OnceLock<JobAbort> = OnceLock::new();
static EXITING: AtomicBool = AtomicBool::new(false);

/// Installed by the runtime when it goes live. This module sits below it and cannot call it.
pub fn set_job_abort(hook: JobAbort) {
    let _ = JOB_ABORT.set(hook);
}

/// The job is being ended (global exit or a fatal error): exit handlers must not synchronise.
pub fn mark_exiting() {
    EXITING.store(true, Ordering::Release);
}

pub fn is_exiting() -> bool {
    EXITING.load(Ordering::Acquire)
}

#[cfg(test)]
mod tests {
    use super::ShmemError;

    /// The texts the failure tests (tests/tests/failures.rs) and users' logs know.
    #[test]
    fn each_error_names_its_argument_and_values() {
        let cases = [
            (ShmemError::PeOutOfRange { pe: 7, n_pes: 4 }, "pe 7 is out of range: the job has 4 PEs (0..3)"),
            (
                ShmemError::NotSymmetric { what: "dest", addr: 0x10 },
                "dest 0x10 is not a symmetric address (not in the symmetric heap nor in global or static data)",
            ),
            (
                ShmemError::PastEnd { what: "source", addr: 0x1000, len: 64, room: 8 },
                "source range 0x1000+64 runs past the end of its symmetric segment (8 bytes left from there)",
            ),
            (ShmemError::NullBuffer { what: "dest", len: 8 }, "dest is NULL but 8 bytes are to be transferred"),
            (
                ShmemError::NullList { what: "ivars", expected: "bytes of variables", count: 16 },
                "ivars is NULL (16 bytes of variables expected)",
            ),
            (
                ShmemError::NullArray { what: "target_pes", count_arg: "npes", count: 2 },
                "target_pes is NULL but npes is 2",
            ),
            (ShmemError::LengthOverflow, "nelems times the element size overflows size_t"),
            (
                ShmemError::NotATeam { addr: 0x40 },
                "team 0x40 is not a team handle: never returned by a team split (an uninitialised or overwritten variable?)",
            ),
            (ShmemError::TeamDestroyed { addr: 0x40 }, "team 0x40 is not a live team (destroyed already?)"),
            (ShmemError::RootOutsideTeam { root: 5, size: 4 }, "PE_root 5 is not in the team (size 4)"),
            (
                ShmemError::NotSymmetricRange { what: "dest", addr: 0x10, len: 8 },
                "dest 0x10+8 is not symmetric memory",
            ),
            (
                ShmemError::PeOutsideTeam { pe: 3, size: 2 },
                "pe 3 is not a PE of the context's team, which has 2 PE(s): on a context made by shmem_team_create_ctx, PE numbers are relative to the team",
            ),
            (
                ShmemError::CtxInvalid,
                "ctx is SHMEM_CTX_INVALID (did shmem_ctx_create or shmem_team_create_ctx fail?)",
            ),
            (ShmemError::CtxDestroyed { addr: 0x40 }, "ctx 0x40 was destroyed"),
            (
                ShmemError::NotACtx { addr: 0x40 },
                "ctx 0x40 is not a context handle: never returned by shmem_ctx_create or shmem_team_create_ctx (an uninitialised or overwritten variable?)",
            ),
            (
                ShmemError::Misaligned { what: "dest", addr: 0x1003, align: 8 },
                "dest 0x1003 is not aligned to its 8-byte type",
            ),
            (
                ShmemError::BadValue { what: "cmp", value: 9, expected: "one of the SHMEM_CMP_* constants" },
                "cmp=9 is not one of the SHMEM_CMP_* constants",
            ),
            (ShmemError::Spml { op: "put to", pe: 2 }, "put to PE 2 failed in the spml"),
            (ShmemError::NullArg { what: "new_team" }, "new_team is NULL"),
            (ShmemError::CannotDestroy { what: "SHMEM_CTX_DEFAULT" }, "SHMEM_CTX_DEFAULT cannot be destroyed"),
            (
                ShmemError::UnknownBits { what: "config_mask", value: 0x6, known: "SHMEM_TEAM_*" },
                "config_mask 0x6 has bits that are not SHMEM_TEAM_* values",
            ),
            (
                ShmemError::NullButSelected {
                    what: "config",
                    selected_by: "config_mask selects SHMEM_TEAM_NUM_CONTEXTS",
                },
                "config is NULL but config_mask selects SHMEM_TEAM_NUM_CONTEXTS",
            ),
            (
                ShmemError::Negative { what: "config->num_contexts", value: -1 },
                "config->num_contexts is -1; it must not be negative",
            ),
            (
                ShmemError::ListPeOutOfRange { what: "target_pes", index: 1, pe: 99, n_pes: 2 },
                "target_pes[1] = 99 is not a PE (the job has 2 PEs)",
            ),
            (
                ShmemError::CtxNotLive { addr: 0x40 },
                "ctx 0x40 is not a live context: destroyed already, or never created by shmem_ctx_create / shmem_team_create_ctx",
            ),
            (
                ShmemError::PrivateCtxOutlivesTeam { addr: 0x40 },
                "ctx 0x40, created from this team with SHMEM_CTX_PRIVATE, must be destroyed (shmem_ctx_destroy) before the team",
            ),
            (
                ShmemError::NotFromSpace { addr: 0x40 },
                "ptr 0x40 was not allocated from this space (or was already freed)",
            ),
            (
                ShmemError::NotAllocated { what: "ptr", addr: 0x40 },
                "ptr 0x40 was not returned by a symmetric allocation routine (or was already freed)",
            ),
            (
                ShmemError::StridesBelow { dst: 0, sst: 2, least: 1 },
                "the strides must be positive (dst=0, sst=2)",
            ),
            (
                ShmemError::StridesBelow { dst: 4, sst: 2, least: 3 },
                "strides must be at least the block size 3 (dst=4, sst=2)",
            ),
            (ShmemError::Overlap { what: "dest and source" }, "dest and source overlap without being the same array"),
            (
                ShmemError::BadActiveSet { start: 0, log_stride: 31, size: 2 },
                "invalid active set: PE_start=0, logPE_stride=31, PE_size=2",
            ),
            (
                ShmemError::ActiveSetPastEnd { start: 1, log_stride: 1, size: 3, last: 5, n_pes: 4 },
                "the active set PE_start=1, logPE_stride=1, PE_size=3 reaches PE 5, beyond the 4 PEs",
            ),
            (ShmemError::NotInActiveSet { pe: 1 }, "PE 1 is not in the active set it was called with"),
            (ShmemError::BadPsync, "pSync must be a symmetric array of SHMEM_*_SYNC_SIZE longs"),
            (
                ShmemError::RootOutsideActiveSet { root: 3, size: 2 },
                "PE_root 3 is not an index of the active set (size 2)",
            ),
            (
                ShmemError::StridedPastEnd {
                    what: "dest",
                    addr: 0x1000,
                    stride: 4,
                    span: 96,
                    nblocks: 3,
                    bsize: 2,
                    room: 64,
                },
                "dest 0x1000 with stride 4 spans 96 bytes over 3 block(s) of 2 element(s) but its symmetric segment has 64 bytes left from there",
            ),
            (ShmemError::LockNotHeld { addr: 0x40 }, "lock 0x40 is not held by this PE (shmem_set_lock or shmem_test_lock first)"),
            (ShmemError::QuietFailed, "the spml failed to complete outstanding operations"),
            (ShmemError::NoRoom { what: "team scratch space" }, "the symmetric heap has no room for team scratch space"),
            (
                ShmemError::NoScoll { what: "barrier and broadcast" },
                "no scoll component provides barrier and broadcast for the team",
            ),
            (ShmemError::AllDeclined { op: "reduce" }, "every scoll component declined reduce"),
            (
                ShmemError::FenceTimeout { limit_s: 3, routine: c"shmem_init" },
                "this PE has waited 3 s in the launcher's fence for the other PEs to arrive (SHMEM_INIT_TIMEOUT): every PE must call shmem_init, and one has not (still starting, busy, or stopped, which only the launcher can tell); the job ends",
            ),
            (
                ShmemError::Internal { what: "a device segment without lock words" },
                "a device segment without lock words (internal error)",
            ),
            (
                ShmemError::DeviceOp { what: "waiting for the stream" },
                "waiting for the stream failed (the memheap said why above)",
            ),
            (
                ShmemError::PastDeviceSpace { what: "dest", addr: 0x7000, end: 72 },
                "dest 0x7000+72 runs past the end of its GPU space",
            ),
            (
                ShmemError::BadAlignment { alignment: 12 },
                "alignment=12 is not a power of two that is a multiple of sizeof(void *)",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
    }
}
