//! Which host each PE runs on, and which hosts map their PEs' memory for load/store: learnt
//! once at init, from the launcher's map of the job (or every PE's record where it gives
//! none) and the hosts' summaries, so every PE holds the same table, in its `Runtime`. Teams take their
//! `TEAM_MAPPED` / `TEAM_HOSTS_MAPPED` flags from it, and components read hosts through the
//! `host_of` core service.

use std::ffi::c_int;

/// Bootstrap key: a PE's record, `[maps its host (0/1), its host (lowest PE on it, u32 LE),
/// its process id (u32 LE), log2 of its heap base's alignment]`.
pub const KEY: &str = "rshmem.host";

/// The job's hosts as this PE learnt them at init: part of the `Runtime`.
pub struct Hosts {
    /// Host of each PE, named by the lowest PE on it.
    of: Vec<c_int>,
    /// Every PE of this PE's host maps every other's segments.
    here_mapped: bool,
    /// The same holds on every host.
    all_mapped: bool,
    /// This host's other PEs with their process ids (what `ops::watch` looks at): the pids of
    /// other hosts' PEs mean nothing here, and were 4 bytes per PE.
    local: Vec<(c_int, u32)>,
}

/// One PE's record: whether it maps its host's PEs, its host, its process id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub maps_host: bool,
    pub host: c_int,
    pub pid: u32,
    /// The largest power of two this PE's heap base is a multiple of, as its log2: what
    /// `shmem_align` can promise of every heap comes from these, through the hosts' summaries.
    pub heap_align_log2: u8,
}

/// This PE's record for [`KEY`].
pub fn record(r: Record) -> [u8; 10] {
    let h = (r.host as u32).to_le_bytes();
    let p = r.pid.to_le_bytes();
    [u8::from(r.maps_host), h[0], h[1], h[2], h[3], p[0], p[1], p[2], p[3], r.heap_align_log2]
}

/// A record read back, or None when malformed.
pub fn parse(v: &[u8]) -> Option<Record> {
    let [m, a, b, c, d, p0, p1, p2, p3, align] = *v else { return None };
    let host = c_int::try_from(u32::from_le_bytes([a, b, c, d])).ok()?;
    (m <= 1 && align < 63).then_some(Record {
        maps_host: m == 1,
        host,
        pid: u32::from_le_bytes([p0, p1, p2, p3]),
        heap_align_log2: align,
    })
}

/// The log2 of the largest power of two `base` is a multiple of (62 at most, and for 0).
pub fn align_log2(base: u64) -> u8 {
    base.trailing_zeros().min(62) as u8
}

impl Hosts {
    /// The table: each PE's host, whether this host and every host map their PEs, and this
    /// host's other PEs with their process ids. 4 bytes per PE, and a pid per PE of this host.
    pub fn new(of: Vec<c_int>, here_mapped: bool, all_mapped: bool, local: Vec<(c_int, u32)>) -> Hosts {
        Hosts { of, here_mapped, all_mapped, local }
    }

    /// `(bytes, resident bytes)` of the table with an entry per PE (the host of each).
    pub fn tables(&self) -> (u64, u64) {
        (std::mem::size_of_val(&*self.of) as u64, rshmem_plugin_api::footprint::resident_bytes(&self.of))
    }

    /// The other PEs on this PE's host, with their process ids.
    pub fn local_peers(&self) -> &[(c_int, u32)] {
        &self.local
    }

    /// The host of `pe` (its lowest PE), or -1 out of range.
    pub fn host_of(&self, pe: c_int) -> c_int {
        usize::try_from(pe).ok().and_then(|p| self.of.get(p).copied()).unwrap_or(-1)
    }

    /// Every PE of this host maps every other's memory.
    pub fn here_mapped(&self) -> bool {
        self.here_mapped
    }

    /// Every host maps its own PEs' memory.
    pub fn all_mapped(&self) -> bool {
        self.all_mapped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The core's tables of every PE (the hosts, and the segment table with each peer's
    /// access) cost at most 64 bytes per peer never reached (issue 51): built for 1 024 and for
    /// 65 536 PEs (2 hosts, 2 segments, a peer of this host and one of the other reached) in a
    /// child process that runs nothing else, the difference of its private memory over the
    /// difference of the sizes. The table of every PE's pid (4 bytes per PE) was dropped for
    /// one of this host's PEs' alone.
    #[test]
    fn the_tables_of_every_pe_cost_at_most_64_bytes_per_peer_never_reached() {
        const CHILD: &str = "RSHMEM_TEST_FOOTPRINT_CHILD";
        if std::env::var_os(CHILD).is_some() {
            let private = || -> f64 {
                let s = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap();
                s.lines()
                    .filter(|l| l.starts_with("Private_Dirty:") || l.starts_with("Private_Clean:"))
                    .filter_map(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
                    .sum::<f64>()
                    * 1024.0
            };
            let tables = |n: usize| {
                let of: Vec<c_int> = (0..n).map(|pe| if pe < n / 2 { 0 } else { (n / 2) as c_int }).collect();
                let local = (1..n / 2).map(|pe| (pe as c_int, pe as u32)).collect();
                let hosts = Hosts { of, here_mapped: true, all_mapped: true, local };
                let segs = crate::symm::segments::SegmentTable::new(n);
                segs.add_local(0x7f00_0000_0000, 1 << 20);
                segs.add_local(0x5500_0000_0000, 1 << 12);
                for (pe, seg) in [(1, 0), (n - 1, 0), (n - 1, 1)] {
                    segs.set_peer(
                        pe,
                        seg,
                        crate::symm::segments::PeerSeg {
                            remote_base: 0x7f00_0000_0000,
                            mapped: std::ptr::null_mut(),
                        },
                    );
                }
                (hosts, segs)
            };
            // A first build takes the one-time costs (the allocator's arena) out of the comparison.
            let warm = tables(1024);
            let base = private();
            let small = tables(1024);
            let mid = private();
            let big = tables(65536);
            let after = private();
            println!("RESULT per_pe_bytes {:.1}", (after - mid - (mid - base)) / (65536.0 - 1024.0));
            drop((warm, small, big));
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "symm::hosts::tests::the_tables_of_every_pe_cost_at_most_64_bytes_per_peer_never_reached",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let per_pe: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("RESULT per_pe_bytes ")?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no result:\n{text}\n{}", String::from_utf8_lossy(&out.stderr)));
        println!("{per_pe:.1} bytes per PE never reached");
        assert!(per_pe <= 64.0, "{per_pe} bytes per PE never reached");
    }

    #[test]
    fn records_round_trip_and_malformed_ones_are_refused() {
        let r = Record { maps_host: true, host: 5, pid: 4_000_000, heap_align_log2: 21 };
        assert_eq!(parse(&record(r)), Some(r));
        let r = Record { maps_host: false, host: 0, pid: 1, heap_align_log2: 0 };
        assert_eq!(parse(&record(r)), Some(r));
        assert_eq!(parse(&[1]), None);
        assert_eq!(parse(&[1, 0, 0, 0, 0]), None);
        assert_eq!(parse(&[1, 0, 0, 0, 0, 0, 0, 0, 0]), None);
        assert_eq!(parse(&[2, 0, 0, 0, 0, 0, 0, 0, 0, 0]), None);
        assert_eq!(parse(&[1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0]), None);
        assert_eq!(parse(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 63]), None);
        assert_eq!((align_log2(0x7f00_0020_0000), align_log2(0)), (21, 62));
    }
}
