//! A job of N PEs inside one process (threads, or one thread stepping them in turn), for unit
//! tests of start-up's phases and for simulating the control plane at sizes no machine here
//! can run. Puts become visible to the others at the next fence, as with a real launcher, so
//! a phase that reads a key before the fence that publishes it fails here too. Every PE's
//! puts, gets, fences and bytes are counted: what start-up costs per PE as the job grows.

use super::Bootstrap;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};

/// One PE's traffic so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub puts: u64,
    pub gets: u64,
    pub fences: u64,
    /// Bytes of the values put and of the values got.
    pub bytes_put: u64,
    pub bytes_got: u64,
}

#[derive(Default)]
struct Counters {
    puts: AtomicU64,
    gets: AtomicU64,
    fences: AtomicU64,
    bytes_put: AtomicU64,
    bytes_got: AtomicU64,
}

/// Puts made since the last fence: (key, value).
type Pending = Mutex<Vec<(String, Vec<u8>)>>;

struct Shared {
    /// Host of each PE (any number naming it).
    hosts: Vec<i32>,
    /// The lowest PE of each PE's host.
    leaders: Vec<i32>,
    /// What the fences published, by (PE, key).
    store: Mutex<HashMap<(i32, String), Vec<u8>>>,
    /// Each PE's puts since its last fence.
    pending: Vec<Pending>,
    /// Whether `host_of` answers (a launcher with a map of the job) or not.
    map: bool,
    /// None: stepped (one thread plays every PE; see [`Loopback::stepped`]).
    fence: Option<Barrier>,
    counters: Vec<Counters>,
    job: String,
}

/// One PE of a loopback job.
pub struct Loopback {
    rank: i32,
    shared: Arc<Shared>,
}

impl Loopback {
    /// A job with one PE per entry of `hosts`, PEs with equal entries sharing a host. Its
    /// fence is a barrier of every PE: each must run on a thread of its own.
    pub fn job(hosts: &[i32]) -> Vec<Loopback> {
        Loopback::make(hosts, true, true)
    }

    /// As [`Loopback::job`], for a launcher that gives no map of its hosts (`host_of` is
    /// None): start-up's fallback.
    pub fn job_without_map(hosts: &[i32]) -> Vec<Loopback> {
        Loopback::make(hosts, true, false)
    }

    /// A job one thread plays, PE after PE: a PE's fence publishes its puts and waits for
    /// nobody, so the driver calls every PE's fence before any PE reads what the fence
    /// published (how a simulation of many thousand PEs runs start-up's exchanges).
    pub fn stepped(hosts: &[i32]) -> Vec<Loopback> {
        Loopback::make(hosts, false, true)
    }

    /// As [`Loopback::stepped`], without a map of the hosts.
    pub fn stepped_without_map(hosts: &[i32]) -> Vec<Loopback> {
        Loopback::make(hosts, false, false)
    }

    fn make(hosts: &[i32], threads: bool, map: bool) -> Vec<Loopback> {
        let n = hosts.len();
        let mut first = HashMap::new();
        for (pe, h) in hosts.iter().enumerate() {
            first.entry(*h).or_insert(pe as i32);
        }
        let shared = Arc::new(Shared {
            hosts: hosts.to_vec(),
            leaders: hosts.iter().map(|h| first[h]).collect(),
            store: Mutex::new(HashMap::new()),
            pending: (0..n).map(|_| Mutex::new(Vec::new())).collect(),
            map,
            fence: threads.then(|| Barrier::new(n)),
            counters: (0..n).map(|_| Counters::default()).collect(),
            job: format!("loop{}", std::process::id()),
        });
        (0..n as i32).map(|rank| Loopback { rank, shared: shared.clone() }).collect()
    }

    /// This PE's traffic so far.
    pub fn counts(&self) -> Counts {
        let c = &self.shared.counters[self.rank as usize];
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Counts {
            puts: l(&c.puts),
            gets: l(&c.gets),
            fences: l(&c.fences),
            bytes_put: l(&c.bytes_put),
            bytes_got: l(&c.bytes_got),
        }
    }

    fn counters(&self) -> &Counters {
        &self.shared.counters[self.rank as usize]
    }

    fn host(&self) -> i32 {
        self.shared.hosts[self.rank as usize]
    }
}

impl Bootstrap for Loopback {
    fn rank(&self) -> i32 {
        self.rank
    }
    fn size(&self) -> i32 {
        self.shared.hosts.len() as i32
    }
    fn local_rank(&self) -> i32 {
        self.shared.hosts[..self.rank as usize].iter().filter(|&&h| h == self.host()).count() as i32
    }
    fn local_size(&self) -> i32 {
        self.shared.hosts.iter().filter(|&&h| h == self.host()).count() as i32
    }
    fn is_local(&self, pe: i32) -> bool {
        self.shared.hosts.get(pe as usize).is_some_and(|&h| h == self.host())
    }
    fn host_leader(&self) -> i32 {
        self.shared.leaders[self.rank as usize]
    }
    fn host_of(&self, pe: i32) -> Option<i32> {
        self.shared
            .map
            .then(|| usize::try_from(pe).ok().and_then(|p| self.shared.leaders.get(p).copied()))
            .flatten()
    }
    /// Every simulated host has a name of its own (`loopback-hN`, N its lowest PE), so the
    /// messages that name a peer's host can be checked without hosts.
    fn host_name(&self, pe: i32) -> Option<String> {
        let leader = usize::try_from(pe).ok().and_then(|p| self.shared.leaders.get(p).copied())?;
        Some(format!("loopback-h{leader}"))
    }
    fn job_id(&self) -> &str {
        &self.shared.job
    }
    fn put(&self, key: &str, value: &[u8]) -> io::Result<()> {
        let c = self.counters();
        c.puts.fetch_add(1, Ordering::Relaxed);
        c.bytes_put.fetch_add(value.len() as u64, Ordering::Relaxed);
        self.shared.pending[self.rank as usize].lock().unwrap().push((key.to_string(), value.to_vec()));
        Ok(())
    }
    fn fence(&self) -> io::Result<()> {
        self.counters().fences.fetch_add(1, Ordering::Relaxed);
        // Everyone's puts land between two barriers: none is read early, none is missed.
        let mine: Vec<_> = std::mem::take(&mut *self.shared.pending[self.rank as usize].lock().unwrap());
        if let Some(b) = &self.shared.fence {
            b.wait();
        }
        {
            let mut store = self.shared.store.lock().unwrap();
            for (k, v) in mine {
                store.insert((self.rank, k), v);
            }
        }
        if let Some(b) = &self.shared.fence {
            b.wait();
        }
        Ok(())
    }
    fn get(&self, pe: i32, key: &str) -> io::Result<Option<Vec<u8>>> {
        let v = self.shared.store.lock().unwrap().get(&(pe, key.to_string())).cloned();
        let c = self.counters();
        c.gets.fetch_add(1, Ordering::Relaxed);
        c.bytes_got.fetch_add(v.as_ref().map_or(0, Vec::len) as u64, Ordering::Relaxed);
        Ok(v)
    }
    fn abort(&self, code: i32, msg: &str) -> ! {
        panic!("loopback PE {} aborted the job with {code}: {msg}", self.rank)
    }
    fn finalize(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_put_is_seen_by_the_others_after_the_next_fence_and_not_before() {
        let job = Loopback::job(&[7, 7, 9]);
        std::thread::scope(|s| {
            for b in &job {
                s.spawn(move || {
                    b.put("k", &[b.rank() as u8]).unwrap();
                    b.fence().unwrap();
                    // After the fence every PE's value is there; the next put is not, until
                    // the fence after it.
                    let next = (b.rank() + 1) % 3;
                    assert_eq!(b.get(next, "k").unwrap(), Some(vec![next as u8]));
                    b.fence().unwrap();
                    b.put("late", &[1]).unwrap();
                    assert_eq!(b.get(b.rank(), "late").unwrap(), None);
                    b.fence().unwrap();
                    assert_eq!(b.get(next, "late").unwrap(), Some(vec![1]));
                });
            }
        });
        assert_eq!(job[0].counts(), Counts { puts: 2, gets: 3, fences: 3, bytes_put: 2, bytes_got: 2 });
        assert_eq!((job[0].local_size(), job[1].local_rank(), job[2].local_rank()), (2, 1, 0));
        assert!(job[0].is_local(1) && !job[0].is_local(2) && !job[0].is_local(3));
        assert_eq!(job.iter().map(|b| b.host_leader()).collect::<Vec<_>>(), [0, 0, 2]);
        assert_eq!(
            (0..4).map(|pe| job[1].host_of(pe)).collect::<Vec<_>>(),
            [Some(0), Some(0), Some(2), None]
        );
        assert_eq!(Loopback::job_without_map(&[7, 7])[0].host_of(1), None);
    }
}
