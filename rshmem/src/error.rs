//! What can go wrong, as values: every fallible routine returns [`Result`], naming the routine
//! and what was wrong with which argument.

use std::fmt;

/// An error of the safe API. `routine` is the method that refused, as `Type::method`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// `Shmem::init` while a runtime is live in this process.
    AlreadyInitialized,
    /// The thread level asked for is more than the library provides.
    ThreadLevel { requested: crate::ThreadLevel, provided: crate::ThreadLevel },
    /// A PE number outside the team or context it is used with.
    BadPe { routine: &'static str, pe: usize, n_pes: usize },
    /// A range of elements past the end of a symmetric array.
    OutOfBounds { routine: &'static str, offset: usize, len: usize, array_len: usize },
    /// Two arguments whose lengths must agree do not.
    Length { routine: &'static str, what: &'static str, got: usize, want: usize },
    /// The symmetric heap has no room for an allocation.
    NoMemory { routine: &'static str, bytes: usize },
    /// The library declined (a context or team it cannot create); `code` is its return value.
    Declined { routine: &'static str, code: i32 },
    /// PEs entered a collective epoch with different arrays (`Symm::exclusive`).
    EpochMismatch { routine: &'static str },
    /// An argument outside its domain (a team shape, a root PE, an element count).
    Invalid { routine: &'static str, what: String },
    /// The library failed the operation, for the reason `cause` says (the core's own value:
    /// a transfer the transport failed, a context destroyed meanwhile, ...).
    Failed { routine: &'static str, cause: shmem::error::ShmemError },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::AlreadyInitialized => {
                write!(f, "Shmem::init: a runtime is already live in this process (finalize it first)")
            }
            Error::ThreadLevel { requested, provided } => {
                write!(
                    f,
                    "Shmem::init_thread: thread level {requested:?} requested, only {provided:?} provided"
                )
            }
            Error::BadPe { routine, pe, n_pes } => {
                write!(f, "{routine}: pe {pe} is not a PE of its team (0..{n_pes})")
            }
            Error::OutOfBounds { routine, offset, len, array_len } => write!(
                f,
                "{routine}: elements {offset}..{} are past the end of a symmetric array of {array_len}",
                offset.saturating_add(*len)
            ),
            Error::Length { routine, what, got, want } => {
                write!(f, "{routine}: {what} is {got}, must be {want}")
            }
            Error::NoMemory { routine, bytes } => {
                write!(
                    f,
                    "{routine}: the symmetric heap has no room for {bytes} bytes (SHMEM_SYMMETRIC_SIZE)"
                )
            }
            Error::Declined { routine, code } => {
                write!(f, "{routine}: the library declined (returned {code})")
            }
            Error::EpochMismatch { routine } => write!(
                f,
                "{routine}: the PEs entered the epoch with different arrays (every PE must name the same one)"
            ),
            Error::Invalid { routine, what } => write!(f, "{routine}: {what}"),
            Error::Failed { routine, cause } => write!(f, "{routine}: {cause}"),
        }
    }
}

impl std::error::Error for Error {}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
