//! Phase 5 of `shmem_init`, around the second fence: which host each PE is on, whether every
//! PE of a host maps the others, and how many CPUs a host's PEs have between them. Every PE
//! learns the same table; the top of `init` records it (`crate::symm::hosts`,
//! `crate::symm::limits`).

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

/// The table every PE learns after the second fence.
pub struct Layout {
    pub hosts: Vec<Record>,
    /// The CPUs this host's PEs may use between them, when every one of them said.
    pub node_cpus: Option<usize>,
    /// The largest power of two every PE's heap base is a multiple of: what `shmem_align`
    /// can promise of every PE's copy.
    pub heap_align: usize,
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

/// After the second fence: every PE's record (checked against the launcher's account of
/// which PEs share this host), and the union of this host's PEs' CPUs.
pub fn learn(boot: &dyn Bootstrap, mine: &Mine) -> Result<Layout, InitError> {
    let (my_pe, n_pes) = (boot.rank(), boot.size());
    let hosts = (0..n_pes)
        .map(|pe| {
            if pe == my_pe {
                return Ok(mine.record);
            }
            let v = boot.get(pe, hosts::KEY).ok().flatten();
            v.as_deref()
                .and_then(hosts::parse)
                .ok_or_else(|| InitError::Peer { pe, why: format!("PE {pe} published no valid host record") })
        })
        .collect::<Result<Vec<Record>, InitError>>()?;
    let my_host = mine.record.host;
    if let Some(pe) = (0..n_pes).find(|&pe| boot.is_local(pe) != (hosts[pe as usize].host == my_host)) {
        return Err(InitError::Layout(format!(
            "the launcher's host layout is inconsistent: PE {pe} is on host {} and local to this PE: {}",
            hosts[pe as usize].host,
            boot.is_local(pe)
        )));
    }
    let masks: Option<Vec<Vec<u8>>> = (0..n_pes)
        .filter(|&pe| pe == my_pe || boot.is_local(pe))
        .map(|pe| {
            let m =
                if pe == my_pe { mine.cpus.clone() } else { boot.get(pe, limits::CPUS_KEY).ok().flatten() };
            m.filter(|m| m.iter().any(|&b| b != 0))
        })
        .collect();
    let node_cpus = masks.map(|m| limits::union_count(m.iter().map(Vec::as_slice)));
    let heap_align = hosts.iter().map(|r| 1usize << r.heap_align_log2).min().unwrap_or(1);
    Ok(Layout { hosts, node_cpus, heap_align })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rshmem_boot::loopback::Loopback;

    /// Runs `publish`, the fence and `learn` on every PE of a loopback job, each PE with the
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
                        let mine = publish(b, unmapped, cpus, base)?;
                        b.fence().unwrap();
                        learn(b, &mine)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn every_pe_learns_the_same_hosts_and_its_hosts_cpus() {
        // Two hosts of 3 PEs, interleaved; each PE may use one CPU, two PEs share CPU 1.
        let job = Loopback::job(&[0, 1, 0, 1, 0, 1]);
        let out = run(&job, |pe| (vec![], Some(vec![1u8 << (pe as u32 % 2 + u32::from(pe >= 4))])));
        for (pe, r) in out.iter().enumerate() {
            let l = r.as_ref().unwrap();
            let of: Vec<i32> = l.hosts.iter().map(|r| r.host).collect();
            assert_eq!(of, [0, 1, 0, 1, 0, 1], "PE {pe}");
            assert!(l.hosts.iter().all(|r| r.maps_host));
            // Host 0: PEs 0, 2 on CPU 0, PE 4 on CPU 1; host 1: PEs 1, 3 on CPU 1, PE 5 on CPU 2.
            assert_eq!(l.node_cpus, Some(2), "PE {pe}");
            // PE 1's heap is at an offset of 2 MiB from the others'.
            assert_eq!(l.heap_align, 1 << 21, "PE {pe}");
        }
        // One record per other PE, and one mask per other PE of the host.
        for b in &job {
            assert_eq!(b.counts().gets, 5 + 2, "PE {}", b.rank());
        }
    }

    #[test]
    fn a_pe_that_does_not_map_its_host_is_in_everyones_table_and_a_silent_mask_counts_nothing() {
        let job = Loopback::job(&[0, 0, 0]);
        let out = run(&job, |pe| if pe == 1 { (vec![2], None) } else { (vec![], Some(vec![0b11])) });
        for r in &out {
            let l = r.as_ref().unwrap();
            assert_eq!(l.hosts.iter().map(|r| r.maps_host).collect::<Vec<_>>(), [true, false, true]);
            assert_eq!(l.node_cpus, None);
        }
    }

    #[test]
    fn a_record_that_contradicts_the_launcher_is_an_error_naming_the_pe() {
        let job = Loopback::job(&[0, 0, 1]);
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
                            Mine { record, cpus: None, unmapped: vec![] }
                        } else {
                            publish(b, vec![], None, 1 << 30)?
                        };
                        b.fence().unwrap();
                        learn(b, &mine)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
        });
        let e = out[0].as_ref().err().expect("PE 0 sees PE 2 on its host");
        assert!(matches!(e, InitError::Layout(_)));
        assert!(e.to_string().contains("PE 2 is on host 0 and local to this PE: false"), "{e}");
    }
}
