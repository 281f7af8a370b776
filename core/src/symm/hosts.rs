//! Which host each PE runs on, and which hosts map their PEs' memory for load/store: learnt
//! once at init through the bootstrap, so every PE holds the same table. Teams take their
//! `TEAM_MAPPED` / `TEAM_HOSTS_MAPPED` flags from it, and components read hosts through the
//! `host_of` core service.

use std::ffi::c_int;
use std::sync::OnceLock;

/// Bootstrap key: a PE's record, `[maps its host (0/1), its host (lowest PE on it, u32 LE)]`.
pub const KEY: &str = "rshmem.host";

pub struct Hosts {
    /// Host of each PE, named by the lowest PE on it.
    of: Vec<c_int>,
    /// Every PE of this PE's host maps every other's segments.
    here_mapped: bool,
    /// The same holds on every host.
    all_mapped: bool,
}

static HOSTS: OnceLock<Hosts> = OnceLock::new();

/// This PE's record for [`KEY`].
pub fn record(maps_host: bool, host: c_int) -> [u8; 5] {
    let h = (host as u32).to_le_bytes();
    [u8::from(maps_host), h[0], h[1], h[2], h[3]]
}

/// A record read back: (maps its host, host), or None when malformed.
pub fn parse(v: &[u8]) -> Option<(bool, c_int)> {
    let [m, a, b, c, d] = *v else { return None };
    let host = c_int::try_from(u32::from_le_bytes([a, b, c, d])).ok()?;
    (m <= 1).then_some((m == 1, host))
}

/// Record the table: each PE's (maps its host, host), and this PE's number.
pub fn set(records: &[(bool, c_int)], my_pe: c_int) {
    let of: Vec<c_int> = records.iter().map(|r| r.1).collect();
    let mine = of.get(my_pe as usize).copied().unwrap_or(-1);
    let here_mapped = records.iter().filter(|r| r.1 == mine).all(|r| r.0);
    let all_mapped = records.iter().all(|r| r.0);
    let _ = HOSTS.set(Hosts { of, here_mapped, all_mapped });
}

/// The host of `pe` (its lowest PE), or -1 out of range or before init.
pub fn host_of(pe: c_int) -> c_int {
    HOSTS.get().and_then(|h| usize::try_from(pe).ok().and_then(|p| h.of.get(p).copied())).unwrap_or(-1)
}

/// Every PE of this host maps every other's memory.
pub fn here_mapped() -> bool {
    HOSTS.get().is_some_and(|h| h.here_mapped)
}

/// Every host maps its own PEs' memory.
pub fn all_mapped() -> bool {
    HOSTS.get().is_some_and(|h| h.all_mapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_malformed_ones_are_refused() {
        assert_eq!(parse(&record(true, 5)), Some((true, 5)));
        assert_eq!(parse(&record(false, 0)), Some((false, 0)));
        assert_eq!(parse(&[1]), None);
        assert_eq!(parse(&[2, 0, 0, 0, 0]), None);
        assert_eq!(parse(&[1, 0xff, 0xff, 0xff, 0xff]), None);
    }
}
