//! One process hands many peers' shared-memory objects to every other process of its host,
//! each in one connection (issue 51).
//!
//! With a [`super::Server`] per object, each PE of a host fetches each object of every other
//! PE itself: 2·L·(L−1) connections for L PEs, each waking the owner's serving thread. At 128
//! PEs on 2 cores that was most of `shmem_init`. With a relay, one PE of the host (the core
//! picks the lowest) fetches the others' objects once, 2·(L−1) connections, then hands all of
//! them to each PE that presents the relay's ticket: L−1 more connections, many descriptors
//! per message. The objects are the same ones a `Server` hands out, and who may receive them
//! is checked the same way: same user (`SO_PEERCRED`) and the 16-byte token that only the
//! job's bootstrap carries, from a relay that lives only until every PE has its mappings.
//!
//! Wire: the client sends the token; the relay answers with frames of [`FRAME`] bytes, each a
//! count `n` (u32, little-endian) and `n` pairs (PE, segment id) for the `n` descriptors sent
//! with the frame; a frame with `n` = 0 ends the list. Fixed-size frames let the client read
//! exactly one frame at a time, so one `recvmsg` never takes two frames' descriptors.

use super::{
    admit, connect, listen, my_uid, recv_with_fds, send_with_fds, serve_clients, MAX_FDS_PER_MESSAGE, TOKEN,
};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

const MAGIC: &[u8; 4] = b"RSR1";
const FRAME: usize = 4 + 8 * MAX_FDS_PER_MESSAGE;

/// One object the relay hands out: whose (PE) and which (segment id) it is.
pub struct Entry {
    pub pe: u32,
    pub seg: u32,
    pub fd: OwnedFd,
}

/// The serving side: started before the objects are known (its ticket must travel with the
/// first bootstrap exchange), given them with [`Relay::provide`]. Clients that connect
/// before that wait in the listen queue.
pub struct Relay {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    give: Option<mpsc::Sender<Vec<Entry>>>,
    thread: Option<JoinHandle<()>>,
}

impl Relay {
    /// Listen under a name made from `label`; returns the relay and its ticket (at most
    /// [`super::TICKET_MAX`] bytes).
    pub fn start(label: &str) -> Result<(Relay, Vec<u8>), String> {
        let (listener, addr, token, ticket) = listen(MAGIC, label)?;
        let stopping = Arc::new(AtomicBool::new(false));
        let (give, entries) = mpsc::channel::<Vec<Entry>>();
        let thread = {
            let stopping = stopping.clone();
            std::thread::Builder::new()
                .name("rshmem-relay".into())
                .spawn(move || {
                    // Nothing to hand out until the objects come (or the relay is stopped).
                    if let Ok(entries) = entries.recv() {
                        serve(listener, &entries, token, &stopping)
                    }
                })
                .map_err(|e| format!("starting the relay thread: {e}"))?
        };
        Ok((Relay { addr, stopping, give: Some(give), thread: Some(thread) }, ticket))
    }

    /// Start handing out `entries` to every client with the ticket. Once only.
    pub fn provide(&mut self, entries: Vec<Entry>) {
        if let Some(give) = self.give.take() {
            let _ = give.send(entries);
        }
    }

    /// Stop answering and close every descriptor held. Waits for the thread.
    pub fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        let Some(t) = self.thread.take() else { return };
        self.stopping.store(true, Ordering::Release);
        // Dropping the sender wakes a thread that was never given anything; connecting wakes
        // one in `accept`, which then sees the flag.
        self.give = None;
        let _ = UnixStream::connect_addr(&self.addr);
        let _ = t.join();
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shut();
    }
}

fn serve(listener: UnixListener, entries: &[Entry], token: [u8; TOKEN], stopping: &AtomicBool) {
    let uid = my_uid();
    serve_clients(&listener, stopping, |mut s| {
        let _ = admit(&mut s, uid, &token).and_then(|()| send_all(&s, entries));
    })
}

fn send_all(s: &UnixStream, entries: &[Entry]) -> Result<(), String> {
    for chunk in entries.chunks(MAX_FDS_PER_MESSAGE) {
        let mut frame = [0u8; FRAME];
        frame[..4].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
        for (i, e) in chunk.iter().enumerate() {
            frame[4 + 8 * i..8 + 8 * i].copy_from_slice(&e.pe.to_le_bytes());
            frame[8 + 8 * i..12 + 8 * i].copy_from_slice(&e.seg.to_le_bytes());
        }
        let fds: Vec<RawFd> = chunk.iter().map(|e| e.fd.as_raw_fd()).collect();
        send_with_fds(s, &frame, &fds)?;
    }
    send_with_fds(s, &[0u8; FRAME], &[])
}

/// Fetch every object the relay named by `ticket` hands out, waiting at most `timeout` for
/// each frame, and give each to `each` (PE, segment id, descriptor) as it arrives, so that at
/// most one frame's descriptors are open at once. Returns how many came.
pub fn fetch_relayed(
    ticket: &[u8],
    timeout: Duration,
    mut each: impl FnMut(u32, u32, OwnedFd),
) -> Result<usize, String> {
    let (s, shown) = connect(MAGIC, ticket, timeout)?;
    let mut total = 0;
    loop {
        let mut frame = [0u8; FRAME];
        let fds =
            recv_with_fds(&s, &mut frame).map_err(|e| format!("receiving from the relay @{shown}: {e}"))?;
        let n = u32::from_le_bytes(frame[..4].try_into().expect("4 bytes")) as usize;
        if n > MAX_FDS_PER_MESSAGE || fds.len() != n {
            return Err(format!(
                "the relay @{shown} sent a frame of {n} entries with {} descriptors",
                fds.len()
            ));
        }
        if n == 0 {
            return Ok(total);
        }
        for (i, fd) in fds.into_iter().enumerate() {
            let pe = u32::from_le_bytes(frame[4 + 8 * i..8 + 8 * i].try_into().expect("4 bytes"));
            let seg = u32::from_le_bytes(frame[8 + 8 * i..12 + 8 * i].try_into().expect("4 bytes"));
            each(pe, seg, fd);
        }
        total += n;
    }
}

#[cfg(test)]
mod tests {
    use super::super::memfd;
    use super::*;

    const T: Duration = Duration::from_secs(5);

    fn ino(fd: &OwnedFd) -> u64 {
        // SAFETY: fstat into a zeroed stat on a descriptor we hold.
        let mut s: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        assert_eq!(unsafe { libc::fstat(fd.as_raw_fd(), &mut s) }, 0);
        s.st_ino
    }

    #[test]
    fn every_client_gets_every_object_in_frames() {
        // More than two frames' worth, so that frame boundaries are crossed.
        let objects: Vec<OwnedFd> = (0..150).map(|_| memfd("relay-test", 4096).unwrap()).collect();
        let want: Vec<(u32, u32, u64)> =
            objects.iter().enumerate().map(|(i, f)| (i as u32 / 2, i as u32 % 2, ino(f))).collect();
        let (mut relay, ticket) = Relay::start("relay test").unwrap();
        // A client that comes before the objects waits for them.
        let early = {
            let ticket = ticket.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                fetch_relayed(&ticket, T, |pe, seg, fd| got.push((pe, seg, ino(&fd)))).map(|n| (n, got))
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        relay.provide(
            objects
                .iter()
                .enumerate()
                .map(|(i, f)| Entry { pe: i as u32 / 2, seg: i as u32 % 2, fd: f.try_clone().unwrap() })
                .collect(),
        );
        let (n, got) = early.join().unwrap().unwrap();
        assert_eq!((n, &got), (150, &want));
        let mut again = Vec::new();
        assert_eq!(fetch_relayed(&ticket, T, |pe, seg, fd| again.push((pe, seg, ino(&fd)))).unwrap(), 150);
        assert_eq!(again, want);
        relay.stop();
        let e = fetch_relayed(&ticket, T, |_, _, _| {}).unwrap_err();
        assert!(e.contains("connect(@rshmem-relay_test-"), "{e}");
    }

    #[test]
    fn a_wrong_token_gets_nothing_and_a_segment_ticket_is_not_a_relay_ticket() {
        let (mut relay, ticket) = Relay::start("tok").unwrap();
        relay.provide(vec![Entry { pe: 1, seg: 0, fd: memfd("relay-test", 4096).unwrap() }]);
        let mut bad = ticket.clone();
        bad[8] ^= 1;
        let mut got = 0;
        assert!(fetch_relayed(&bad, T, |_, _, _| got += 1).is_err());
        assert_eq!(got, 0);
        let mut segment_ticket = ticket.clone();
        segment_ticket[..4].copy_from_slice(b"RSF1");
        assert!(fetch_relayed(&segment_ticket, T, |_, _, _| {})
            .unwrap_err()
            .contains("not a segment ticket"));
        assert_eq!(fetch_relayed(&ticket, T, |_, _, _| {}).unwrap(), 1, "the relay goes on");
    }

    #[test]
    fn an_empty_relay_says_so_and_a_stopped_unprovided_one_ends() {
        let (mut relay, ticket) = Relay::start("empty").unwrap();
        relay.provide(Vec::new());
        assert_eq!(fetch_relayed(&ticket, T, |_, _, _| {}).unwrap(), 0);
        let (never, _) = Relay::start("never").unwrap();
        never.stop();
    }
}
