//! Heartbeats between hosts: how a PE learns that a peer on another host is gone when UCX
//! cannot tell it. A cut link leaves a TCP connection open with data unacknowledged for many
//! minutes, and a stopped process's kernel still acknowledges; so without this a job across
//! hosts hung on either (2026-11-27).
//!
//! Each PE sends, every `interval`, a small active message to its [`FANOUT`] targets on other
//! hosts, from the progress thread, whatever the application does; each PE expects them from
//! its sources, the PEs whose targets it is. A PE's targets are consecutive PEs of the list of
//! PEs on other hosts (in world order from the PE on, wrapping), starting at the place of that
//! list proportional to the PE's place among its host's PEs: PE `i` of a host of `L` starts at
//! place `i * M / L` of the `M` PEs elsewhere. So a host's PEs spread their targets over all the
//! other PEs, whatever the hosts' sizes and the placement (blocks, round robin), and a PE has
//! about `FANOUT` sources. Until 2026-12-07 the targets were the first PEs after a PE on other
//! hosts: with PEs in blocks, every PE of a host targeted the next host's first two PEs, each of
//! which took a connection at start-up and heartbeats from every PE of a host (64 at 512 PEs
//! over 8 hosts of 64, 128 on nodes of 128 cores), and the other PEs none. A source silent for
//! `timeout` is recorded as an endpoint failure of that peer, and the usual path ends the job
//! after [`super::PEER_FAILURE_GRACE`], naming it (`message`). Silence counts only across this
//! PE's own gapless ticks: a PE that was itself stopped, or starved of CPU, starts counting
//! again, so a whole job suspended and resumed is no failure. Nothing is watched within a host
//! (the core's liveness watch and the launchers cover that) or while finalizing.
//!
//! Cost: `FANOUT` messages of 8 bytes per interval per PE, whatever the job's size, and as many
//! received with hosts of equal sizes in blocks (a few more otherwise: the unit tests); the
//! plan costs O(N log^2 N) per PE, once.

use super::handler::{am_handler, set_handler, Wire};
use super::Channel;
use rshmem_ucx_sys as sys;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The active-message id of a heartbeat.
pub const HEARTBEAT: u32 = 11;

/// How many PEs on other hosts each PE sends heartbeats to (so each has as many watchers).
pub const FANOUT: usize = 2;

/// What a heartbeat carries: the sender's PE.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Header {
    pub from: u64,
}

// SAFETY: `repr(C)`, one u64.
unsafe impl Wire for Header {}

/// The core's `host_of` service.
pub type HostOf = unsafe extern "C" fn(pe: c_int) -> c_int;

/// Who sends to whom: `targets` get this PE's heartbeats, `sources` send theirs here.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    pub targets: Vec<usize>,
    pub sources: Vec<usize>,
}

/// The plan of PE `me` for hosts `host[pe]`: each PE's [`targets`] from its host's PEs.
/// O(N log^2 N), once.
pub fn plan(me: usize, host: &[c_int]) -> Plan {
    let n = host.len();
    let mut members = std::collections::HashMap::<c_int, Vec<usize>>::new();
    for (pe, &h) in host.iter().enumerate() {
        members.entry(h).or_default().push(pe);
    }
    let targets_of = |p: usize| targets(p, n, &members[&host[p]]);
    let sources = (0..n).filter(|&p| host[p] != host[me] && targets_of(p).contains(&me)).collect();
    Plan { targets: targets_of(me), sources }
}

/// The heartbeat targets of PE `me` of `n`, whose host's PEs are `mine` (in world order, `me`
/// among them): [`FANOUT`] consecutive PEs of the list of PEs on other hosts in world order
/// from `me` on, wrapping, from the place proportional to `me`'s among `mine`. Known before the
/// host table is (from the bootstrap's "local" alone), so `connect` makes their endpoints at
/// start-up. O(log^2 N) per target.
pub fn targets(me: usize, n: usize, mine: &[usize]) -> Vec<usize> {
    let Ok(i) = mine.binary_search(&me) else { return Vec::new() };
    let here = mine.len();
    let elsewhere = n - here;
    // PEs elsewhere among 0..x.
    let before = |x: usize| x - mine.partition_point(|&p| p < x);
    // The r-th PE elsewhere in world order (0-based): the x with `before(x) == r` that is not
    // of this host, i.e. the least x with `before(x + 1) > r`.
    let nth = |r: usize| {
        let (mut lo, mut hi) = (0, n - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if before(mid + 1) > r {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    };
    // The list starts after `me`: its place `j` is overall place `(before(me + 1) + j) % elsewhere`.
    let first = before(me + 1);
    let start = (i as u128 * elsewhere as u128 / here as u128) as usize;
    (0..FANOUT.min(elsewhere)).map(|k| nth((first + start + k) % elsewhere)).collect()
}

/// The peer the heartbeats found silent, and for how long (ms), for the message.
static SILENT: AtomicUsize = AtomicUsize::new(usize::MAX);
static SILENT_MS: AtomicU64 = AtomicU64::new(0);

/// The message for `pe` if the heartbeats found it silent; `where_` says where it is
/// ([`where_is`]).
pub fn message(pe: usize, where_: &str) -> Option<String> {
    (SILENT.load(Ordering::Acquire) == pe).then(|| {
        format!(
            "spml ucx: PE {pe}{where_} has not been heard from for {:.1} s (heartbeats; SHMEM_MCA_spml_ucx_peer_timeout): the link to its host is down, or it is stopped or lost",
            SILENT_MS.load(Ordering::Relaxed) as f64 / 1000.0
        )
    })
}

/// Where `pe` is, for messages: `", on host NAME,"` when `hb` knows `pe` is on another host
/// and the core knows that host's name (the launcher's name for the node), `", on another
/// host,"` when it knows no name, else empty.
pub fn where_is(hb: Option<&Heartbeat>, pe: usize) -> String {
    match hb {
        Some(hb) if hb.on_other_host(pe) => on_host(host_name(pe)),
        _ => String::new(),
    }
}

/// The phrase for a PE on another host whose host is called `name` (None: not known).
pub fn on_host(name: Option<String>) -> String {
    match name {
        Some(n) => format!(", on host {n},"),
        None => ", on another host,".into(),
    }
}

/// The core's name for `pe`'s host (`CoreServices::host_name`).
fn host_name(pe: usize) -> Option<String> {
    rshmem_plugin_api::boundary::core().and_then(|c| c.host_name(c_int::try_from(pe).ok()?))
}

/// One PE's heartbeats: what it sends and what it has heard, shared by the handler and the
/// progress thread.
pub struct Heartbeat {
    me: usize,
    n_pes: usize,
    host_of: HostOf,
    pub timeout: Duration,
    pub interval: Duration,
    start: Instant,
    /// When each PE was last heard from (ms since `start`, + 1; 0: never).
    heard: Box<[AtomicU64]>,
    /// The header sent: it must stay valid until UCX is done with a send.
    header: Header,
    plan: OnceLock<Plan>,
    /// The targets `connect` found (from the bootstrap's "local", the plan's own), sent to
    /// until the plan is made.
    early: OnceLock<Vec<usize>>,
}

impl Heartbeat {
    pub fn new(me: usize, n_pes: usize, host_of: HostOf, timeout: Duration) -> Heartbeat {
        Heartbeat {
            me,
            n_pes,
            host_of,
            timeout,
            interval: (timeout / 10).max(Duration::from_millis(100)),
            start: Instant::now(),
            // Zeroed memory: only the sources' words are ever written.
            // SAFETY: all-zero bytes are a valid `AtomicU64` (0).
            heard: unsafe { Box::<[AtomicU64]>::new_zeroed_slice(n_pes).assume_init() },
            header: Header { from: me as u64 },
            plan: OnceLock::new(),
            early: OnceLock::new(),
        }
    }

    /// `(bytes, resident bytes)` of the table with a word per PE.
    pub fn tables(&self) -> (u64, u64) {
        (
            std::mem::size_of_val(&*self.heard) as u64,
            rshmem_plugin_api::footprint::resident_bytes(&self.heard),
        )
    }

    /// Install the handler on `worker` (this value outlives it).
    pub fn listen(&'static self, worker: sys::ucp_worker_h) -> Result<(), String> {
        set_handler(worker, HEARTBEAT, on_heartbeat, self as *const Heartbeat as *mut c_void)
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64 + 1
    }

    /// Send to `targets` (this PE's [`targets`], which `connect` made endpoints to) from now
    /// until the plan is made. A PE counts its sources' silence from its first look, once its
    /// own init has published the host table; on a crowded host a source can be many seconds
    /// behind, still in init, and it must be heard meanwhile (every PE has passed `connect`
    /// before any PE's init ends).
    pub fn send_early(&self, targets: Vec<usize>) {
        let _ = self.early.set(targets);
    }

    /// Whether `pe` is on another host than this PE (false while the hosts are not known yet).
    pub fn on_other_host(&self, pe: usize) -> bool {
        // SAFETY: the core's service takes any PE number.
        let (mine, theirs) = unsafe { ((self.host_of)(self.me as c_int), (self.host_of)(pe as c_int)) };
        mine >= 0 && theirs >= 0 && mine != theirs
    }

    /// The plan, once the core knows every PE's host (after its init); None before.
    fn plan(&self) -> Option<&Plan> {
        if let Some(p) = self.plan.get() {
            return Some(p);
        }
        // SAFETY: the core's service takes any PE number.
        let host: Vec<c_int> = (0..self.n_pes).map(|pe| unsafe { (self.host_of)(pe as c_int) }).collect();
        if host.iter().any(|&h| h < 0) {
            return None;
        }
        Some(self.plan.get_or_init(|| plan(self.me, &host)))
    }
}

/// The progress thread's side: when it last ticked, and what it saw of each source.
pub struct Ticker {
    next: Instant,
    last: Instant,
    /// Per source: the `heard` value seen last, and the silence counted since.
    seen: Vec<(u64, Duration)>,
}

impl Default for Ticker {
    fn default() -> Ticker {
        let now = Instant::now();
        Ticker { next: now, last: now, seen: Vec::new() }
    }
}

impl Heartbeat {
    /// Called on every round of the progress thread: at most once per `interval` it sends this
    /// PE's heartbeats and looks at its sources. Returns a silent source (to be recorded as a
    /// failed peer) once one has been silent for `timeout`.
    pub fn tick(&self, t: &mut Ticker, chan: &Channel, finalizing: bool) -> Option<usize> {
        let now = Instant::now();
        if now < t.next {
            return None;
        }
        t.next = now + self.interval;
        let gap = now - t.last;
        t.last = now;
        if finalizing {
            t.seen.clear();
            return None;
        }
        let Some(plan) = self.plan() else {
            for &pe in self.early.get().into_iter().flatten() {
                self.send(chan, pe);
            }
            return None;
        };
        for &pe in &plan.targets {
            self.send(chan, pe);
        }
        if t.seen.len() != plan.sources.len() {
            t.seen = plan
                .sources
                .iter()
                .map(|&s| (self.heard[s].load(Ordering::Acquire), Duration::ZERO))
                .collect();
            return None;
        }
        // A gap much longer than the interval: this PE was stopped or starved itself.
        let gapless = gap < self.interval * 5;
        for (i, &s) in plan.sources.iter().enumerate() {
            let heard = self.heard[s].load(Ordering::Acquire);
            let (last, silent) = &mut t.seen[i];
            if heard != *last || !gapless {
                *last = heard;
                *silent = Duration::ZERO;
            } else {
                *silent += gap;
                if *silent >= self.timeout {
                    SILENT_MS.store(silent.as_millis() as u64, Ordering::Relaxed);
                    SILENT.store(s, Ordering::Release);
                    return Some(s);
                }
            }
        }
        None
    }

    /// One heartbeat to `pe`, fire and forget (an 8-byte header, eager; the header lives in
    /// `self`).
    fn send(&self, chan: &Channel, pe: usize) {
        let Ok(ep) = chan.ep(pe) else { return };
        let param = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_FLAGS,
            flags: sys::UCP_AM_SEND_FLAG_EAGER,
            ..Default::default()
        };
        // SAFETY: a live endpoint of the default worker (this is its progress thread, in the
        // worker's multi-thread mode); the header lives as long as the process; no data.
        let r = unsafe {
            sys::ucp_am_send_nbx(
                ep,
                HEARTBEAT,
                (&self.header as *const Header).cast(),
                std::mem::size_of::<Header>(),
                std::ptr::null(),
                0,
                &param,
            )
        };
        if sys::ptr_is_request(r) {
            // SAFETY: a request UCX returned; freeing it lets UCX release it once complete.
            unsafe { sys::ucp_request_free(r) };
        }
    }
}

am_handler!(on_heartbeat, |hb: &Heartbeat, m: Message<Header>| {
    if let Ok(h) = m.header {
        if let Some(slot) = hb.heard.get(h.from as usize) {
            slot.store(hb.now_ms(), Ordering::Release);
        }
    }
    sys::UCS_OK
});

#[cfg(test)]
mod tests {
    use super::*;

    /// How many sources each PE of `hosts` has (how many PEs connect to it at start-up and
    /// send it heartbeats), checking on the way that every PE has FANOUT targets (watchers)
    /// elsewhere, or every PE elsewhere when there are fewer.
    fn source_counts(hosts: &[c_int]) -> Vec<usize> {
        let plans: Vec<Plan> = (0..hosts.len()).map(|me| plan(me, hosts)).collect();
        for (me, p) in plans.iter().enumerate() {
            let elsewhere = hosts.iter().filter(|&&h| h != hosts[me]).count();
            assert_eq!(p.targets.len(), FANOUT.min(elsewhere), "PE {me}: {p:?}");
            for &q in &p.targets {
                assert_ne!(hosts[q], hosts[me], "PE {me}'s target {q} is on its host");
                assert!(plans[q].sources.contains(&me), "PE {q} does not expect PE {me}");
            }
        }
        plans.iter().map(|p| p.sources.len()).collect()
    }

    #[test]
    fn every_pe_has_watchers_on_other_hosts() {
        // Two hosts of two PEs each, in blocks.
        let hosts = [0, 0, 2, 2];
        assert_eq!(plan(0, &hosts), Plan { targets: vec![2, 3], sources: vec![2, 3] });
        assert_eq!(plan(3, &hosts), Plan { targets: vec![1, 0], sources: vec![0, 1] });
        // Four hosts, PEs dealt round robin, and a host of one PE.
        source_counts(&[0, 1, 2, 3, 0, 1, 2, 3, 8]);
        // One host: nothing to watch.
        assert_eq!(plan(1, &[0, 0, 0]), Plan { targets: vec![], sources: vec![] });
    }

    /// Hosts of 64 PEs in blocks: every PE has FANOUT sources; 8 hosts dealt round robin: at
    /// most 2 * FANOUT. Targets taken from the next PE on gave each host's first two PEs the 64
    /// PEs of the host before as sources (and the other PEs none).
    #[test]
    fn heartbeats_spread_evenly_over_hosts_in_blocks_and_round_robin() {
        let blocks: Vec<c_int> = (0..8 * 64).map(|pe| (pe / 64 * 64) as c_int).collect();
        let counts = source_counts(&blocks);
        assert!(counts.iter().all(|&k| k == FANOUT), "{counts:?}");
        // PE 5 of host 1 starts at place 5 * 448 / 64 = 35 of the PEs elsewhere after it.
        assert_eq!(targets(64 + 5, 512, &(64..128).collect::<Vec<_>>()), vec![128 + 35, 128 + 36]);
        let dealt: Vec<c_int> = (0..8 * 64).map(|pe| (pe % 8) as c_int).collect();
        let counts = source_counts(&dealt);
        assert!(counts.iter().all(|&k| k <= 2 * FANOUT), "{counts:?}");
        let counts = source_counts(&[0, 0, 0, 3, 3, 3]);
        assert!(counts.iter().all(|&k| k == FANOUT), "{counts:?}");
    }

    /// Hosts of uneven sizes (issue 51's awkward sizes among them): no PE has more sources than
    /// a few times what the smallest hosts' share makes unavoidable.
    #[test]
    fn uneven_hosts_spread_their_heartbeats_too() {
        let layouts: Vec<Vec<usize>> =
            vec![vec![5, 1, 7], vec![1, 1], vec![3, 14, 127, 2], vec![128, 1, 129], vec![166, 5, 1, 255, 3]];
        for sizes in layouts {
            let mut hosts = Vec::new();
            for (h, &k) in sizes.iter().enumerate() {
                hosts.extend(std::iter::repeat_n(h as c_int, k));
            }
            let counts = source_counts(&hosts);
            // A host of L PEs sends FANOUT * L heartbeats to the n - L PEs elsewhere: that many
            // sources per PE is unavoidable, a few times it is the bound (targets from the next
            // PE on gave one PE of the host of 2 in [3, 14, 127, 2] 127 sources; this gives 15).
            let need = sizes.iter().map(|&l| (FANOUT * l).div_ceil(hosts.len() - l)).max().unwrap();
            let most = *counts.iter().max().unwrap();
            assert!(most <= 2 * need, "{sizes:?}: a PE has {most} sources");
        }
    }
}
