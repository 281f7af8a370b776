//! Phase 5 of `shmem_init`, around the second fence (and a third in a job spanning hosts):
//! which host each PE is on (from the launcher's map, or every PE's record where it gives
//! none), whether every PE of a host maps the others, the heaps' common alignment (from one
//! summary per host) and how many CPUs a host's PEs have between them. Every PE learns the
//! same table; the top of `init` puts it in the `Runtime` (`crate::symm::hosts::Hosts`).

use super::InitError;
use crate::symm::hosts::{self, Record};
use crate::symm::limits;
use rshmem_boot::Bootstrap;

/// What this PE tells the others before the second fence.
pub struct Mine {
    pub record: Record,
    /// The CPUs this PE may use (None: the kernel did not say).
    pub cpus: Option<Vec<u8>>,
    /// This host's peers of which this PE maps some segment's copy not at all.
    pub unmapped: Vec<i32>,
}

/// What this PE knows of its own host after the second fence, from its host's records.
pub struct Local {
    /// Host of each PE, named by its lowest PE.
    pub of: Vec<i32>,
    /// This host's other PEs and their process ids.
    pub peers: Vec<(i32, u32)>,
    /// The host's summary: every PE of it maps the others, and the heaps' common alignment.
    pub summary: Summary,
    /// The CPUs this host's PEs may use between them, when every one of them said.
    pub node_cpus: Option<usize>,
    /// Whether the hosts came from the launcher's map (else from every PE's record).
    pub from_map: bool,
}

/// One host's summary, which its lowest PE publishes for the others after the second fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    pub mapped: bool,
    pub align_log2: u8,
}

impl Summary {
    pub fn of(records: impl Iterator<Item = Record>) -> Summary {
        records.fold(Summary { mapped: true, align_log2: 62 }, |s, r| Summary {
            mapped: s.mapped && r.maps_host,
            align_log2: s.align_log2.min(r.heap_align_log2),
        })
    }

    fn both(self, other: Summary) -> Summary {
        Summary { mapped: self.mapped && other.mapped, align_log2: self.align_log2.min(other.align_log2) }
    }
}

/// Bootstrap key: a host's [`Summary`], `[every PE maps the host (0/1), log2 alignment]`, put
/// by its lowest PE.
pub const SUMMARY_KEY: &str = "rshmem.hostsum";

/// The table every PE learns.
pub struct Layout {
    /// Host of each PE, named by its lowest PE.
    pub of: Vec<i32>,
    /// This host's other PEs and their process ids.
    pub peers: Vec<(i32, u32)>,
    /// Every PE of this host maps the others.
    pub here_mapped: bool,
    /// Every host's PEs map each other.
    pub all_mapped: bool,
    /// The CPUs this host's PEs may use between them, when every one of them said.
    pub node_cpus: Option<usize>,
    /// The largest power of two every PE's heap base is a multiple of: what `shmem_align`
    /// can promise of every PE's copy.
    pub heap_align: usize,
    /// Whether the hosts came from the launcher's map (else from every PE's record).
    pub from_map: bool,
}

/// Whether the job spans hosts, so that [`learn_hosts`] needs the hosts' summaries, which
/// their lowest PEs put in [`learn_local`]: the caller fences between the two. The same on
/// every PE.
pub fn needs_summaries(boot: &dyn Bootstrap) -> bool {
    boot.local_size() < boot.size()
}

/// Publish whether this PE maps every same-host peer, its host (the lowest PE on it), its
/// process id and its heap base's alignment, and the CPUs it may use: a PE bound to a core of its own sees one, which alone
/// would make every host look oversubscribed (and every wait yield at once). The mask is
/// always published (a mask of no CPU when the kernel does not say), so that no PE asks for a
/// key another never put.
pub fn publish(
    boot: &dyn Bootstrap,
    unmapped: Vec<i32>,
    cpus: Option<Vec<u8>>,
    heap_base: u64,
) -> Result<Mine, InitError> {
    let host = boot.host_leader();
    let record = Record {
        maps_host: unmapped.is_empty(),
        host,
        pid: std::process::id(),
        heap_align_log2: hosts::align_log2(heap_base),
    };
    boot.put(hosts::KEY, &hosts::record(record)).map_err(|e| InitError::boot("put", e))?;
    let cpus = cpus.filter(|m| m.iter().any(|&b| b != 0));
    boot.put(limits::CPUS_KEY, cpus.as_deref().unwrap_or(&[0])).map_err(|e| InitError::boot("put", e))?;
    Ok(Mine { record, cpus, unmapped })
}

/// After the second fence: each PE's host, from the launcher's map when it gives one (no
/// lookup) or else from every PE's record (one lookup per PE); this host's PEs' records (the
/// launcher must agree with them), the union of their CPUs, and the host's summary, which the
/// host's lowest PE puts for the others when the job spans hosts.
pub fn learn_local(boot: &dyn Bootstrap, mine: &Mine) -> Result<Local, InitError> {
    let (my_pe, n_pes) = (boot.rank(), boot.size());
    let record_of = |pe: i32| -> Result<Record, InitError> {
        if pe == my_pe {
            return Ok(mine.record);
        }
        let v = boot.get(pe, hosts::KEY).ok().flatten();
        v.as_deref()
            .and_then(hosts::parse)
            .ok_or_else(|| InitError::Peer { pe, why: format!("PE {pe} published no valid host record") })
    };
    let map: Option<Vec<i32>> = (0..n_pes).map(|pe| boot.host_of(pe)).collect();
    let from_map = map.is_some();
    // Without the launcher's map, every PE's record (read once).
    let (of, every) = match map {
        Some(of) => (of, None),
        None => {
            let all: Vec<Record> = (0..n_pes).map(record_of).collect::<Result<_, _>>()?;
            (all.iter().map(|r| r.host).collect(), Some(all))
        }
    };
    let my_host = mine.record.host;
    let inconsistent = |pe: i32, host: i32| {
        InitError::Layout(format!(
            "the launcher's host layout is inconsistent: PE {pe} is on host {host} and local to this PE: {}",
            boot.is_local(pe)
        ))
    };
    if of[my_pe as usize] != my_host {
        return Err(InitError::Layout(format!(
            "the launcher's host layout is inconsistent: its map puts this PE ({my_pe}) on host {}, its list of this node's PEs on host {my_host}",
            of[my_pe as usize]
        )));
    }
    if let Some(pe) = (0..n_pes).find(|&pe| boot.is_local(pe) != (of[pe as usize] == my_host)) {
        return Err(inconsistent(pe, of[pe as usize]));
    }
    let host: Vec<i32> = (0..n_pes).filter(|&pe| pe == my_pe || boot.is_local(pe)).collect();
    let mut records = Vec::with_capacity(host.len());
    for &pe in &host {
        let r = match &every {
            Some(all) => all[pe as usize],
            None => record_of(pe)?,
        };
        if r.host != my_host {
            return Err(inconsistent(pe, r.host));
        }
        records.push(r);
    }
    let summary = Summary::of(records.iter().copied());
    if needs_summaries(boot) && my_pe == my_host {
        put_summary(boot, summary)?;
    }
    let peers =
        host.iter().zip(&records).filter(|(pe, _)| **pe != my_pe).map(|(pe, r)| (*pe, r.pid)).collect();
    let masks: Option<Vec<Vec<u8>>> = host
        .iter()
        .map(|&pe| {
            let m =
                if pe == my_pe { mine.cpus.clone() } else { boot.get(pe, limits::CPUS_KEY).ok().flatten() };
            m.filter(|m| m.iter().any(|&b| b != 0))
        })
        .collect();
    let node_cpus = masks.map(|m| limits::union_count(m.iter().map(Vec::as_slice)));
    Ok(Local { of, peers, summary, node_cpus, from_map })
}

/// Put this host's summary (on its lowest PE).
pub fn put_summary(boot: &dyn Bootstrap, s: Summary) -> Result<(), InitError> {
    boot.put(SUMMARY_KEY, &[u8::from(s.mapped), s.align_log2]).map_err(|e| InitError::boot("put", e))
}

/// After the fence that follows [`learn_local`] (when [`needs_summaries`]): the other hosts'
/// summaries, one lookup per other host, make the table.
pub fn learn_hosts(boot: &dyn Bootstrap, local: Local) -> Result<Layout, InitError> {
    let mut all = local.summary;
    if needs_summaries(boot) {
        // Each other host's lowest PE: the PE whose host is itself.
        let my_host = local.of[boot.rank() as usize];
        let leaders = (0..local.of.len() as i32).filter(|&pe| local.of[pe as usize] == pe && pe != my_host);
        for h in leaders {
            let s = match boot.get(h, SUMMARY_KEY).ok().flatten().as_deref() {
                Some(&[m, a]) if m <= 1 && a < 63 => Summary { mapped: m == 1, align_log2: a },
                _ => {
                    return Err(InitError::Peer {
                        pe: h,
                        why: format!("PE {h} published no valid host summary"),
                    })
                }
            };
            all = all.both(s);
        }
    }
    Ok(Layout {
        of: local.of,
        peers: local.peers,
        here_mapped: local.summary.mapped,
        all_mapped: all.mapped,
        node_cpus: local.node_cpus,
        heap_align: 1usize << all.align_log2,
        from_map: local.from_map,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rshmem_boot::loopback::Loopback;

    /// What each PE does between the second fence and the table: `learn_local`, the fence of
    /// the summaries when the job spans hosts (taken even by a PE that failed, so that a test
    /// does not hang where a real job would end), `learn_hosts`.
    fn learn(b: &Loopback, mine: Result<Mine, InitError>) -> Result<Layout, InitError> {
        let local = mine.and_then(|m| learn_local(b, &m));
        if needs_summaries(b) {
            b.fence().unwrap();
        }
        learn_hosts(b, local?)
    }

    /// Runs `publish`, the fence and [`learn`] on every PE of a loopback job, each PE with the
    /// CPU mask and unmapped peers `given` returns for it.
    fn run(
        job: &[Loopback],
        given: impl Fn(i32) -> (Vec<i32>, Option<Vec<u8>>) + Sync,
    ) -> Vec<Result<Layout, InitError>> {
        std::thread::scope(|s| {
            let hs: Vec<_> = job
                .iter()
                .map(|b| {
                    let given = &given;
                    s.spawn(move || {
                        let (unmapped, cpus) = given(b.rank());
                        let base = 0x7f00_0000_0000u64 + (u64::from(b.rank() as u32 == 1) << 21);
                        let mine = publish(b, unmapped, cpus, base);
                        b.fence().unwrap();
                        learn(b, mine)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn every_pe_learns_the_same_hosts_and_its_hosts_cpus_with_a_map_or_without() {
        // Two hosts of 3 PEs, interleaved; each PE may use one CPU, two PEs share CPU 1.
        let layout = [0, 1, 0, 1, 0, 1];
        for (job, map) in [(Loopback::job(&layout), true), (Loopback::job_without_map(&layout), false)] {
            let out = run(&job, |pe| (vec![], Some(vec![1u8 << (pe as u32 % 2 + u32::from(pe >= 4))])));
            for (pe, r) in out.iter().enumerate() {
                let l = r.as_ref().unwrap();
                assert_eq!(l.of, [0, 1, 0, 1, 0, 1], "PE {pe}");
                assert!(l.here_mapped && l.all_mapped);
                assert_eq!(l.from_map, map);
                let peers: Vec<i32> = l.peers.iter().map(|p| p.0).collect();
                assert_eq!(
                    peers,
                    (0..6).filter(|&q| q % 2 == pe as i32 % 2 && q != pe as i32).collect::<Vec<_>>()
                );
                // Host 0: PEs 0, 2 on CPU 0, PE 4 on CPU 1; host 1: PEs 1, 3 on CPU 1, PE 5 on CPU 2.
                assert_eq!(l.node_cpus, Some(2), "PE {pe}");
                // PE 1's heap is at an offset of 2 MiB from the others'.
                assert_eq!(l.heap_align, 1 << 21, "PE {pe}");
            }
            for b in &job {
                // With the launcher's map: a record and a mask per other PE of the host, and
                // the other host's summary. Without: a record per other PE, and the masks and
                // the summary.
                let records = if map { 2 } else { 5 };
                assert_eq!(b.counts().gets, records + 2 + 1, "PE {}", b.rank());
                assert_eq!(b.counts().fences, 2);
            }
        }
    }

    #[test]
    fn a_host_that_does_not_map_its_pes_is_known_to_every_host_and_a_silent_mask_counts_nothing() {
        let job = Loopback::job(&[0, 0, 0, 3]);
        let out = run(&job, |pe| if pe == 1 { (vec![2], None) } else { (vec![], Some(vec![0b11])) });
        for (pe, r) in out.iter().enumerate() {
            let l = r.as_ref().unwrap();
            assert_eq!((l.here_mapped, l.all_mapped), (pe == 3, false), "PE {pe}");
            assert_eq!(l.node_cpus, if pe == 3 { Some(2) } else { None });
        }
        // One host: no summaries, no third fence.
        let job = Loopback::job(&[0, 0]);
        let out = run(&job, |pe| (if pe == 0 { vec![1] } else { vec![] }, None));
        assert!(out.iter().all(|r| r.as_ref().is_ok_and(|l| !l.here_mapped && !l.all_mapped)));
        assert_eq!(job[1].counts().fences, 1);
    }

    #[test]
    fn a_record_that_contradicts_the_launcher_is_an_error_naming_the_pe() {
        for (job, map) in [(Loopback::job(&[0, 0, 1]), true), (Loopback::job_without_map(&[0, 0, 1]), false)]
        {
            let out = std::thread::scope(|s| {
                let hs: Vec<_> = job
                    .iter()
                    .map(|b| {
                        s.spawn(move || {
                            let mine = if b.rank() == 2 {
                                // PE 2 claims PE 0's host.
                                let record = Record { maps_host: true, host: 0, pid: 1, heap_align_log2: 12 };
                                b.put(hosts::KEY, &hosts::record(record)).unwrap();
                                b.put(limits::CPUS_KEY, &[1]).unwrap();
                                Ok(Mine { record, cpus: None, unmapped: vec![] })
                            } else {
                                publish(b, vec![], None, 1 << 30)
                            };
                            b.fence().unwrap();
                            learn(b, mine)
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
            });
            // With the map, PE 2 finds its own record at odds with it; without, PE 0 finds
            // PE 2's record at odds with the launcher's list of its node's PEs.
            let (pe, says) = if map {
                (2, "its map puts this PE (2) on host 2, its list of this node's PEs on host 0")
            } else {
                (0, "PE 2 is on host 0 and local to this PE: false")
            };
            let e = out[pe].as_ref().err().expect("the contradiction is found");
            assert!(matches!(e, InitError::Layout(_)));
            assert!(e.to_string().contains(says), "{e}");
        }
    }
}
