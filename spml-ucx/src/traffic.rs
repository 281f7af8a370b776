//! The count of operations this PE hands to UCX, by kind and by where the target is
//! (`SHMEM_MCA_spml_ucx_traffic`): what a collective costs between hosts in a real job, to
//! compare with the schedules the scoll tests count by simulation (issue 51), and to see that
//! a job's inter-host traffic is what its algorithms promise.
//!
//! The counts are of the operations the core hands to this component (a put, a get, an atomic,
//! a put-with-signal), each one whatever UCX makes of it on the wire: small puts share a
//! batch message, and the transport adds its acknowledgements. Heartbeats and the component's
//! own replies are not counted. Off by default: then each operation pays one relaxed load and
//! a branch; on, also a core call and two relaxed adds.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// What an operation was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Put = 0,
    Get = 1,
    Atomic = 2,
    PutSignal = 3,
}

const KINDS: usize = 4;
const NAMES: [&str; KINDS] = ["put", "get", "atomic", "put_signal"];

/// Whether a PE is on this host (the core's `pe_is_local`).
pub type IsLocal = unsafe extern "C" fn(pe: c_int) -> c_int;

/// Counts by place (0: other hosts, 1: this host) and kind, then bytes by place.
pub struct Counts {
    ops: [[AtomicU64; KINDS]; 2],
    bytes: [AtomicU64; 2],
}

impl Counts {
    pub const fn new() -> Counts {
        Counts {
            ops: [const { [const { AtomicU64::new(0) }; KINDS] }; 2],
            bytes: [const { AtomicU64::new(0) }; 2],
        }
    }

    pub fn add(&self, local: bool, kind: Kind, len: usize) {
        let at = usize::from(local);
        self.ops[at][kind as usize].fetch_add(1, Ordering::Relaxed);
        self.bytes[at].fetch_add(len as u64, Ordering::Relaxed);
    }

    /// One place's counts, as `put=1 get=0 atomic=2 put_signal=0 bytes=8`.
    fn line(&self, local: bool) -> String {
        let at = usize::from(local);
        let mut s = String::new();
        for (k, name) in NAMES.iter().enumerate() {
            s.push_str(&format!("{name}={} ", self.ops[at][k].load(Ordering::Relaxed)));
        }
        s + &format!("bytes={}", self.bytes[at].load(Ordering::Relaxed))
    }

    /// The report: both places.
    pub fn report(&self) -> String {
        format!("to other hosts: {}; to this host: {}", self.line(false), self.line(true))
    }
}

impl Default for Counts {
    fn default() -> Self {
        Counts::new()
    }
}

static ON: AtomicBool = AtomicBool::new(false);
static IS_LOCAL: OnceLock<IsLocal> = OnceLock::new();
static COUNTS: Counts = Counts::new();

/// Start counting (at `open`, when the parameter asks for it).
pub fn arm(is_local: IsLocal) {
    let _ = IS_LOCAL.set(is_local);
    ON.store(true, Ordering::Release);
}

/// Count one operation to `pe` of `len` bytes.
#[inline(always)]
pub fn count(pe: c_int, kind: Kind, len: usize) {
    if ON.load(Ordering::Relaxed) {
        count_slow(pe, kind, len);
    }
}

#[cold]
#[inline(never)]
fn count_slow(pe: c_int, kind: Kind, len: usize) {
    let Some(is_local) = IS_LOCAL.get() else { return };
    // SAFETY: a core service, valid while the plugin is loaded.
    let local = unsafe { is_local(pe) } != 0;
    COUNTS.add(local, kind, len);
}

/// The report for `shmem_finalize`, when counting.
pub fn report() -> Option<String> {
    ON.load(Ordering::Acquire).then(|| COUNTS.report())
}

#[cfg(test)]
mod tests {
    use super::{Counts, Kind};

    #[test]
    fn counts_are_kept_by_place_and_kind_and_reported_as_key_values() {
        let c = Counts::new();
        c.add(false, Kind::PutSignal, 16);
        c.add(false, Kind::PutSignal, 0);
        c.add(false, Kind::Atomic, 8);
        c.add(true, Kind::Get, 100);
        assert_eq!(
            c.report(),
            "to other hosts: put=0 get=0 atomic=1 put_signal=2 bytes=24; to this host: put=0 get=1 atomic=0 put_signal=0 bytes=100"
        );
    }
}
