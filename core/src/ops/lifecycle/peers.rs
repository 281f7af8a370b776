//! Phase 4 of `shmem_init`, after the first fence: check the settings every PE must agree on,
//! connect the spml, and learn the segments of the peers this PE maps (their keys for the
//! spml and a mapping of their copies, through the host's relay where it can). The other
//! peers' segment records are read on first use (`crate::symm::peers::learn_on_first_use`).

use super::components::Components;
use super::job::Job;
use super::memory::Memory;
use super::InitError;
use crate::symm::peers::{decode_segment, map_peer};
use crate::symm::relay::Mapped;
use crate::symm::segments::{PeerSeg, SEG_DATA};
use rshmem_boot::Bootstrap;
use std::sync::atomic::Ordering;

/// What the peers' records decided.
pub struct Peers {
    /// Some peer's copy of some segment is reached only through the spml, whose progress
    /// the waits then drive.
    pub needs_progress: bool,
    /// The keys of segments this PE maps through the host's relay, not given to the spml
    /// yet: `(pe, seg, base, len, key)`. Only atomics ever take a mapped peer through the
    /// spml, and only when some peer is reached through it (CPU atomics are then off for every
    /// target), so on a host whose PEs all map each other the spml never needs them, and
    /// keeping each one cost about 300 bytes per peer (issue 51).
    deferred: Vec<(i32, u32, u64, usize, Vec<u8>)>,
}

impl Peers {
    /// Once it is known whether some peer is reached through the spml: give it the deferred
    /// keys then, else drop them.
    pub fn settle_keys(&mut self, c: &Components) -> Result<(), InitError> {
        let deferred = std::mem::take(&mut self.deferred);
        if !deferred.is_empty() && crate::log::enabled(crate::log::DEBUG, "init") {
            let fate = if self.needs_progress {
                "given to the spml (some peer is reached through it)"
            } else {
                "not needed (the spml reaches no peer)"
            };
            let msg = format!("keys of {} segment(s) of relay-mapped peers: {fate}", deferred.len());
            crate::log::log(crate::log::DEBUG, "init", &msg);
        }
        if !self.needs_progress {
            return Ok(());
        }
        for (pe, seg, base, len, key) in deferred {
            add_key(c, pe, seg, base, len, &key)?;
        }
        Ok(())
    }
}

/// Give the spml `pe`'s key for segment `seg`.
fn add_key(c: &Components, pe: i32, seg: u32, base: u64, len: usize, key: &[u8]) -> Result<(), InitError> {
    // SAFETY: plugin ABI call with the peer's packed key.
    if unsafe { (c.spml.add_segment)(pe, seg, base, len, key.as_ptr(), key.len()) } != 0 {
        return Err(InitError::Peer {
            pe,
            why: format!("spml {} could not unpack PE {pe}'s key for segment {seg}", c.spml_name),
        });
    }
    Ok(())
}

/// The settings every PE must agree on: each PE compares PE 0's with its own, and one that
/// differs ends the job, naming both (a heap size that differs is named as the variable it
/// is). One lookup per PE, whatever the job's size.
pub fn agree(boot: &dyn Bootstrap, mine: &str) -> Result<(), InitError> {
    if boot.rank() == 0 {
        return Ok(());
    }
    let v = boot.get(0, crate::config::agree::KEY).ok().flatten().ok_or_else(|| InitError::Peer {
        pe: 0,
        why: "PE 0 did not publish the settings every PE must agree on".into(),
    })?;
    let first = String::from_utf8_lossy(&v);
    crate::config::agree::compare_pes(&[(0, &first), (boot.rank() as usize, mine)])
        .map_err(InitError::Setting)
}

/// Wire up every peer (the spml's addresses were published before the fence).
pub fn connect(c: &Components) -> Result<(), InitError> {
    // SAFETY: plugin ABI call; every PE's address was published before the fence.
    if unsafe { (c.spml.connect)() } != 0 {
        return Err(InitError::Component(format!("spml {} could not connect the PEs", c.spml_name)));
    }
    Ok(())
}

/// This host's peers' heaps and global data, through the host's relay where they can come.
pub fn relayed(job: &Job, c: &Components, mem: &mut Memory) -> Mapped {
    if !(job.local_map && job.relay) {
        return Mapped::new();
    }
    let boot = job.boot;
    let lens: Vec<usize> = (0..mem.segs.count() as u32).map(|seg| mem.segs.local(seg).len).collect();
    crate::symm::relay::map_host(boot, job.my_pe, job.n_pes, &lens, mem.relay.as_mut(), |pe, seg| {
        if seg != SEG_DATA && !c.peer_attach {
            return None;
        }
        let v = boot.get(pe, &format!("seg.{seg}")).ok().flatten()?;
        decode_segment(&v).map(|(_, _, blob, _)| blob.to_vec())
    })
}

/// The records of every segment of this PE and of the peers it maps: each one's key to the
/// spml, and a mapping of the peer's copy (the relay's, else one made here; null when neither
/// could be made). The other peers are reached through the spml, their records read when an
/// operation first needs one: start-up reads one record per mapped PE and segment, not one
/// per PE of the job.
pub fn learn(job: &Job, c: &Components, mem: &Memory, mut relayed: Mapped) -> Result<Peers, InitError> {
    let (boot, my_pe, n_pes) = (job.boot, job.my_pe, job.n_pes);
    let nseg = mem.segs.count() as u32;
    let mut peers = Peers { needs_progress: false, deferred: Vec::new() };
    // Starting with the next PE, not with PE 0: each same-host peer's thread hands its
    // segments to every other PE, and all PEs beginning at PE 0 queue on one thread at a time.
    for pe in (my_pe + 1..n_pes).chain(0..=my_pe) {
        if !read_at_start(boot, job.local_map, pe) {
            // Reached through the spml, learnt on first use.
            peers.needs_progress = true;
            continue;
        }
        for seg in 0..nseg {
            let v = boot.get(pe, &format!("seg.{seg}")).ok().flatten().ok_or_else(|| InitError::Peer {
                pe,
                why: format!("PE {pe} did not publish symmetric segment {seg}"),
            })?;
            let (base, len, blob, rkey) = decode_segment(&v)
                .ok_or_else(|| InitError::Peer { pe, why: format!("PE {pe}: malformed segment record") })?;
            check_length(pe, seg, len, mem.segs.local(seg).len)?;
            let local_peer = pe != my_pe && job.local_map && boot.is_local(pe);
            let from_relay = if local_peer { relayed.remove(&(pe, seg)) } else { None };
            if from_relay.is_some() {
                peers.deferred.push((pe, seg, base, len as usize, rkey.to_vec()));
            } else {
                // Before the mapping: a transport's mapping (sshmem "ucx") goes through the key.
                add_key(c, pe, seg, base, len as usize, rkey)?;
            }
            let mapped: *mut u8 = if pe == my_pe {
                mem.segs.local(seg).base as *mut u8
            } else if let Some(p) = from_relay {
                p
            } else if local_peer {
                let blob = if c.peer_attach || seg == SEG_DATA { blob } else { &[] };
                map_peer(c.sshmem, c.spml, pe, seg, base, len as usize, blob)
            } else {
                std::ptr::null_mut()
            };
            peers.needs_progress |= mapped.is_null();
            mem.segs.set_peer(pe as usize, seg, PeerSeg { remote_base: base, mapped });
        }
    }
    crate::ops::handles::rshmem_ctx_default.spml.store(c.spml.default_ctx, Ordering::Release);
    Ok(peers)
}

/// Whether start-up reads `pe`'s segment records: this PE's own, and those of the peers it
/// maps (its host's, with mapping on).
pub fn read_at_start(boot: &dyn Bootstrap, local_map: bool, pe: i32) -> bool {
    pe == boot.rank() || (local_map && boot.is_local(pe))
}

/// Every PE's copy of a segment is as long as this PE's (`crate::symm::peers::check_length`).
fn check_length(pe: i32, seg: u32, len: u64, mine: usize) -> Result<(), InitError> {
    crate::symm::peers::check_length(pe, seg, len, mine).map_err(|why| InitError::Peer { pe, why })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rshmem_boot::loopback::Loopback;

    #[test]
    fn a_peer_segment_of_another_length_is_named_with_the_setting() {
        assert!(check_length(3, 0, 4096, 4096).is_ok());
        let e = check_length(3, 1, 8192, 4096).unwrap_err();
        assert!(matches!(e, InitError::Peer { pe: 3, .. }));
        assert_eq!(
            e.to_string(),
            "symmetric segment 1 is 8192 bytes on PE 3 but 4096 bytes here: every PE must run the same program with the same SHMEM_SYMMETRIC_SIZE"
        );
    }

    /// Each PE reads PE 0's settings only, once; a PE whose settings differ fails naming the
    /// variable, and the others pass.
    #[test]
    fn the_settings_are_compared_with_pe_0s_in_one_lookup_per_pe() {
        let job = Loopback::job(&[0, 0, 1, 1]);
        let results: Vec<Result<(), InitError>> = std::thread::scope(|s| {
            let hs: Vec<_> = job
                .iter()
                .map(|b| {
                    s.spawn(move || {
                        let size = if b.rank() == 2 { "64M" } else { "32M" };
                        let mine = format!("SHMEM_SYMMETRIC_SIZE={size}\n");
                        b.put(crate::config::agree::KEY, mine.as_bytes()).unwrap();
                        b.fence().unwrap();
                        agree(b, &mine)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(results[0].is_ok() && results[1].is_ok() && results[3].is_ok(), "{results:?}");
        let e = results[2].as_ref().unwrap_err();
        assert!(matches!(e, InitError::Setting(_)), "{e:?}");
        assert!(e.to_string().contains("SHMEM_SYMMETRIC_SIZE"), "{e}");
        for b in &job {
            let n = b.counts();
            assert_eq!(n.gets, u64::from(b.rank() != 0), "PE {}: {n:?}", b.rank());
        }
    }

    #[test]
    fn a_pe_0_that_published_no_settings_is_named() {
        let job = Loopback::job(&[0, 0]);
        std::thread::scope(|s| {
            let hs: Vec<_> =
                job.iter().map(|b| s.spawn(move || (b.fence().unwrap(), agree(b, "x")).1)).collect();
            let r: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            assert!(r[0].is_ok());
            assert_eq!(
                r[1],
                Err(InitError::Peer {
                    pe: 0,
                    why: "PE 0 did not publish the settings every PE must agree on".into()
                })
            );
        });
    }
}
