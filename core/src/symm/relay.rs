//! Mapping this host's peers' segments through one relay at start-up (issue 51).
//!
//! Each PE's heap and global data are shared-memory objects that the PE hands out itself
//! (`rshmem_plugin_api::share`). Fetched by every PE from every same-host peer, that is
//! 2·L·(L−1) connections for L PEs on a host, each waking the owner's thread: at 128 PEs on
//! 2 cores, about 0.9 s of every PE's `shmem_init`. Instead the host's lowest PE (the leader)
//! fetches each peer's objects once and hands all of them to each PE of the host in one
//! connection (`share::Relay`): about 3·(L−1) connections in all. Only segments whose attach
//! blob is a `share` ticket go this way; a vendor sshmem's blob still goes to its `attach`,
//! and whatever the relay did not bring (a peer the leader could not reach, the relay off or
//! failed) is mapped by the direct path as before, whose failures fall back to the spml.
//!
//! Lifetime: the leader starts the relay before the first fence (its ticket travels with that
//! exchange), provides the objects after it, and stops it after the second fence, when every
//! PE of the host has mapped what it needs; nothing of it outlives start-up.

use rshmem_boot::Bootstrap;
use rshmem_plugin_api::share::{self, Relay};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::time::Duration;

/// The bootstrap key of the leader's relay ticket (empty: no relay).
pub const KEY: &str = "relay";
/// How long the leader waits for a peer's thread to hand over a segment (it answers at once
/// unless that PE is stopped).
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a PE waits for the relay's next frame: the first comes once the leader has
/// fetched every peer's segments.
const RELAY_TIMEOUT: Duration = Duration::from_secs(60);

/// Where same-host peers' segments are mapped here, by (PE, segment id).
pub type Mapped = HashMap<(i32, u32), *mut u8>;

/// The host's leader: its lowest PE.
pub fn leader(boot: &dyn Bootstrap, my_pe: i32, n_pes: i32) -> i32 {
    debug_assert_eq!((boot.rank(), boot.size()), (my_pe, n_pes));
    boot.host_leader()
}

/// Before the first fence. The leader publishes its relay's ticket, or an empty one when it
/// does not relay (disabled, alone on its host, or short of descriptors); other PEs publish
/// nothing.
pub fn start(boot: &dyn Bootstrap, my_pe: i32, n_pes: i32, enabled: bool, job: &str) -> Option<Relay> {
    if leader(boot, my_pe, n_pes) != my_pe {
        return None;
    }
    let peers = boot.local_size().max(1) as u64 - 1;
    let relay = if enabled && peers > 0 && room_for_descriptors(2 * peers) {
        match Relay::start(&format!("{job}-{my_pe}-relay")) {
            Ok(r) => Some(r),
            Err(e) => {
                crate::log::log(crate::log::DEBUG, "init", &format!("no relay of this host's segments: {e}"));
                None
            }
        }
    } else {
        None
    };
    let ticket = relay.as_ref().map(|(_, t)| t.as_slice()).unwrap_or(&[]);
    if let Err(e) = boot.put(KEY, ticket) {
        crate::log::log(crate::log::DEBUG, "init", &format!("bootstrap put of the relay ticket: {e}"));
    }
    relay.map(|(r, _)| r)
}

/// Whether this process may hold `more` descriptors besides what it has (the leader holds two
/// per peer until the relay stops), raising the soft limit toward the hard one if needed.
fn room_for_descriptors(more: u64) -> bool {
    // Start-up's own descriptors (sockets, the plugins, UCX's) fit well in this.
    let need = more + 512;
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return false;
    }
    if lim.rlim_cur >= need {
        return true;
    }
    if lim.rlim_max < need {
        return false;
    }
    let raised = libc::rlimit { rlim_cur: need, rlim_max: lim.rlim_max };
    // SAFETY: setrlimit reads the struct we pass; raising the soft limit within the hard one.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 }
}

/// After the first fence: map every same-host peer's segment that `ticket_of(pe, seg)` says is
/// handed out as a `share` ticket, `lens[seg]` bytes each, through the host's relay. The
/// leader fetches them from the peers and provides them to its relay. What is missing from
/// the result is left to the direct path.
pub fn map_host(
    boot: &dyn Bootstrap,
    my_pe: i32,
    n_pes: i32,
    lens: &[usize],
    relay: Option<&mut Relay>,
    ticket_of: impl Fn(i32, u32) -> Option<Vec<u8>>,
) -> Mapped {
    let mut mapped = Mapped::new();
    let nseg = lens.len() as u32;
    let wanted = |pe: i32, seg: u32| pe != my_pe && boot.is_local(pe) && seg < nseg;
    let lead = leader(boot, my_pe, n_pes);
    if let Some(relay) = relay {
        let mut entries = Vec::new();
        // The leader's own segments too (from its own servers): the others need them as well.
        for pe in (0..n_pes).filter(|&pe| pe == my_pe || wanted(pe, 0)) {
            for seg in 0..nseg {
                let Some(ticket) = ticket_of(pe, seg).filter(|t| share::is_ticket(t)) else { continue };
                let fd = match share::fetch(&ticket, FETCH_TIMEOUT) {
                    Ok(fd) => fd,
                    Err(e) => {
                        // The direct path tries again and says what failed.
                        crate::log::log(
                            crate::log::DEBUG,
                            "init",
                            &format!("relay: PE {pe} segment {seg}: {e}"),
                        );
                        continue;
                    }
                };
                if pe != my_pe {
                    if let Some(p) = map_one(&fd, lens[seg as usize], pe, seg) {
                        mapped.insert((pe, seg), p);
                    }
                }
                entries.push(share::relay::Entry { pe: pe as u32, seg, fd });
            }
        }
        crate::log::log(
            crate::log::DEBUG,
            "init",
            &format!("relay: handing out {} segment(s) of this host's PEs", entries.len()),
        );
        relay.provide(entries);
        return mapped;
    }
    if lead == my_pe {
        return mapped;
    }
    let ticket = match boot.get(lead, KEY) {
        Ok(Some(t)) if !t.is_empty() => t,
        _ => return mapped,
    };
    let got = share::fetch_relayed(&ticket, RELAY_TIMEOUT, |pe, seg, fd: OwnedFd| {
        let pe = pe as i32;
        // Only what this PE would map itself, once; anything else is dropped (closed).
        let expected = (0..n_pes).contains(&pe)
            && wanted(pe, seg)
            && !mapped.contains_key(&(pe, seg))
            && ticket_of(pe, seg).is_some_and(|t| share::is_ticket(&t));
        if expected {
            if let Some(p) = map_one(&fd, lens[seg as usize], pe, seg) {
                mapped.insert((pe, seg), p);
            }
        }
    });
    crate::log::log(
        crate::log::DEBUG,
        "init",
        &format!("relay: {} segment(s) of this host's peers mapped through PE {lead}'s relay", mapped.len()),
    );
    if let Err(e) = got {
        crate::log::log(
            crate::log::DEBUG,
            "init",
            &format!("the relay of PE {lead} failed after {} segment(s) ({e}); the rest are fetched from each peer", mapped.len()),
        );
    }
    mapped
}

fn map_one(fd: &OwnedFd, len: usize, pe: i32, seg: u32) -> Option<*mut u8> {
    match share::map_object(fd, len) {
        Ok(p) => Some(p),
        Err(e) => {
            crate::log::log(
                crate::log::DEBUG,
                "init",
                &format!("relay: mapping PE {pe}'s segment {seg}: {e}"),
            );
            None
        }
    }
}
