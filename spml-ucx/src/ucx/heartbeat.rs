//! Heartbeats between hosts: how a PE learns that a peer on another host is gone when UCX
//! cannot tell it. A cut link leaves a TCP connection open with data unacknowledged for many
//! minutes, and a stopped process's kernel still acknowledges; so without this a job across
//! hosts hung on either (2026-11-27).
//!
//! Each PE sends, every `interval`, a small active message to the first [`FANOUT`] PEs after it
//! (in world order, wrapping) that are on other hosts, from the progress thread, whatever the
//! application does; each PE expects them from the PEs whose targets it is. A source silent for
//! `timeout` is recorded as an endpoint failure of that peer, and the usual path ends the job
//! after [`super::PEER_FAILURE_GRACE`], naming it (`message`). Silence counts only across this
//! PE's own gapless ticks: a PE that was itself stopped, or starved of CPU, starts counting
//! again, so a whole job suspended and resumed is no failure. Nothing is watched within a host
//! (the core's liveness watch and the launchers cover that) or while finalizing.
//!
//! Cost: `FANOUT` messages of 8 bytes per interval per PE, whatever the job's size.

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

/// The plan of PE `me` for hosts `host[pe]`: each PE's targets are the first [`FANOUT`] PEs
/// after it on other hosts.
pub fn plan(me: usize, host: &[c_int]) -> Plan {
    let n = host.len();
    let targets_of = |p: usize| targets(p, n, |q| host[q] != host[p]);
    let targets = targets_of(me);
    let sources = (0..n).filter(|&p| p != me && targets_of(p).contains(&me)).collect();
    Plan { targets, sources }
}

/// The PEs `me` sends heartbeats to: the first [`FANOUT`] after it in world order, wrapping,
/// that are on another host (`elsewhere`). Known before the host table is (from the bootstrap's
/// "local" alone), so `connect` makes their endpoints at start-up.
pub fn targets(me: usize, n: usize, elsewhere: impl Fn(usize) -> bool) -> Vec<usize> {
    (1..n).map(|k| (me + k) % n).filter(|&q| elsewhere(q)).take(FANOUT).collect()
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
        let plan = self.plan()?;
        if finalizing {
            t.seen.clear();
            return None;
        }
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

    #[test]
    fn every_pe_has_watchers_on_other_hosts() {
        // Two hosts of two PEs each, in blocks.
        let hosts = [0, 0, 2, 2];
        assert_eq!(plan(0, &hosts), Plan { targets: vec![2, 3], sources: vec![2, 3] });
        assert_eq!(plan(3, &hosts), Plan { targets: vec![0, 1], sources: vec![0, 1] });
        // Four hosts, PEs dealt round robin, and a host of one PE.
        let hosts = [0, 1, 2, 3, 0, 1, 2, 3, 8];
        for me in 0..hosts.len() {
            let p = plan(me, &hosts);
            assert_eq!(p.targets.len(), FANOUT, "{me}");
            assert!(p.targets.iter().chain(&p.sources).all(|&q| hosts[q] != hosts[me]), "{me}: {p:?}");
            assert!(!p.sources.is_empty(), "PE {me} has no watcher");
        }
        // One host: nothing to watch.
        assert_eq!(plan(1, &[0, 0, 0]), Plan { targets: vec![], sources: vec![] });
    }
}
