//! Sharing a memory object with this host's other PEs without ever giving it a name.
//!
//! An object made with `shm_open` has a name in /dev/shm from its creation until every peer has
//! opened it, and a process killed in that window (SIGKILL runs no handler) leaves the name for
//! good unless someone who knows it removes it; under `mpirun` or `srun` nobody does. Here the
//! object is a `memfd`, which has no name and is freed with its last descriptor and mapping, and
//! peers receive the descriptor itself over a Unix socket (`SCM_RIGHTS`). The socket lives in
//! the abstract namespace, whose names the kernel drops with the socket. So however a process
//! ends, nothing of this outlives it.
//!
//! Who gets the descriptor: the [`Server`] answers only a client that runs as the same user
//! (`SO_PEERCRED`) and sends the 16 random bytes of the [`Server::start`] ticket, which travels
//! only through the job's bootstrap (anyone on the host can read the socket's name in
//! /proc/net/unix, nobody the token). The client, [`fetch`], checks that the process answering
//! is the one the ticket names. Abstract names belong to a network namespace: a peer in another
//! namespace cannot fetch, and callers then reach it through the network as a remote peer.

use crate::secret;
use std::ffi::c_void;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub mod relay;
pub use relay::{fetch_relayed, Relay};

const MAGIC: &[u8; 4] = b"RSF1";
const TOKEN: usize = 16;
/// How long the server gives one client to send its token and take the descriptor: clients
/// send at once, so only a stalled or hostile one waits this long.
const SERVE_TIMEOUT: Duration = Duration::from_secs(2);
/// The most bytes a ticket takes: magic, pid, token and a socket name (at most 107 bytes).
pub const TICKET_MAX: usize = 4 + 4 + TOKEN + 107;

fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// Run a system call again while a signal interrupts it: a program's own handler installed
/// without `SA_RESTART` (a SIGUSR1 that oshrun forwards, say) must not fail the exchange.
fn restarting(mut call: impl FnMut() -> isize) -> isize {
    loop {
        let n = call();
        if n >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return n;
        }
    }
}

/// A new anonymous shared-memory object of `size` bytes (close-on-exec). `tag` names it in
/// /proc/PID/maps only.
pub fn memfd(tag: &str, size: usize) -> Result<OwnedFd, String> {
    let len = libc::off_t::try_from(size).map_err(|_| format!("size {size} too large"))?;
    let cname = std::ffi::CString::new(tag).map_err(|e| e.to_string())?;
    // SAFETY: memfd_create on a NUL-terminated name; the result is checked.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(os_error("memfd_create"));
    }
    // SAFETY: a descriptor we just opened and own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ftruncate on our own descriptor.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len) } != 0 {
        return Err(os_error(&format!("ftruncate(memfd, {size})")));
    }
    Ok(fd)
}

/// The peer's (pid, uid) on a connected Unix socket.
fn peer_cred(s: &UnixStream) -> Result<(i32, u32), String> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: SO_PEERCRED fills a ucred of the length we pass.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast::<c_void>(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(os_error("SO_PEERCRED"));
    }
    Ok((cred.pid, cred.uid))
}

fn my_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Send one byte with `fd` attached.
fn send_fd(s: &UnixStream, fd: RawFd) -> Result<(), String> {
    send_with_fds(s, &[1u8], &[fd])
}

/// Room for the control message of [`MAX_FDS_PER_MESSAGE`] descriptors (u64s keep it aligned).
type Control = [u64; 40];
/// The most descriptors one message carries (the kernel allows 253).
pub(crate) const MAX_FDS_PER_MESSAGE: usize = 64;

/// Send `data` (whole) with `fds` attached to it, in one `sendmsg`.
pub(crate) fn send_with_fds(s: &UnixStream, data: &[u8], fds: &[RawFd]) -> Result<(), String> {
    assert!(fds.len() <= MAX_FDS_PER_MESSAGE && !data.is_empty());
    let mut iov = libc::iovec { iov_base: data.as_ptr() as *mut c_void, iov_len: data.len() };
    let mut ctl: Control = [0; 40];
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of_val(fds) as u32) } as usize;
    debug_assert!(space <= std::mem::size_of_val(&ctl));
    // SAFETY: an all-zero msghdr is valid; the fields that matter are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = ctl.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: msg_control points at `space` zeroed, aligned bytes, so the first header is
        // inside it; its data has room for `fds.len()` descriptors.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(fds) as u32) as _;
            let at = libc::CMSG_DATA(c).cast::<RawFd>();
            for (i, fd) in fds.iter().enumerate() {
                std::ptr::write_unaligned(at.add(i), *fd);
            }
        }
    }
    let mut sent = 0usize;
    while sent < data.len() {
        if sent > 0 {
            // The descriptors went with the first part; the rest is plain data.
            msg.msg_control = std::ptr::null_mut();
            msg.msg_controllen = 0;
            iov = libc::iovec { iov_base: data[sent..].as_ptr() as *mut c_void, iov_len: data.len() - sent };
            msg.msg_iov = &mut iov;
        }
        // SAFETY: sendmsg reads only what msg describes (above).
        let rc = restarting(|| unsafe { libc::sendmsg(s.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) });
        if rc <= 0 {
            return Err(os_error("sendmsg"));
        }
        sent += rc as usize;
    }
    Ok(())
}

/// Receive exactly `buf.len()` bytes that one [`send_with_fds`] sent, and the descriptors that
/// came with them (close-on-exec). Reading never goes past `buf.len()`, so the descriptors
/// of a later message are never taken with this one.
pub(crate) fn recv_with_fds(s: &UnixStream, buf: &mut [u8]) -> Result<Vec<OwnedFd>, String> {
    let mut fds = Vec::new();
    let mut got = 0usize;
    while got < buf.len() {
        let mut iov = libc::iovec { iov_base: buf[got..].as_mut_ptr().cast(), iov_len: buf.len() - got };
        // Room for more descriptors than a sender may attach, so that one sending more cannot
        // make us lose track of (and leak) the extra ones: the kernel would close what does
        // not fit, and MSG_CTRUNC says so.
        let mut ctl: Control = [0; 40];
        // SAFETY: an all-zero msghdr is valid; the fields that matter are set below.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = ctl.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&ctl) as _;
        // SAFETY: recvmsg writes at most what msg describes: the rest of `buf` and `ctl`.
        let n = restarting(|| unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) });
        if n < 0 {
            return Err(os_error("recvmsg"));
        }
        if n == 0 {
            return Err(format!("the peer closed the connection after {got} of {} bytes", buf.len()));
        }
        // SAFETY: walking the control messages the kernel wrote into `ctl`, with the libc
        // macros that stay inside msg_controllen; each SCM_RIGHTS payload is a whole number
        // of descriptors.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let bytes = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                    let data = libc::CMSG_DATA(c).cast::<RawFd>();
                    for i in 0..bytes / std::mem::size_of::<RawFd>() {
                        fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err("the peer sent more descriptors than fit".into());
        }
        got += n as usize;
    }
    Ok(fds)
}

/// Receive the one byte `send_fd` sends and the descriptor with it (close-on-exec).
fn recv_fd(s: &UnixStream) -> Result<OwnedFd, String> {
    let mut byte = [0u8];
    let mut fds = recv_with_fds(s, &mut byte)?;
    if fds.len() != 1 {
        return Err(format!("the peer sent 1 byte and {} descriptor(s), not 1 and 1", fds.len()));
    }
    Ok(fds.pop().expect("one descriptor"))
}

/// A listening socket under a fresh abstract name made from `label` (portable file-name
/// characters are kept), its random token, and the ticket that names both: `magic`, this
/// process's pid, the token and the name.
fn listen(magic: &[u8; 4], label: &str) -> Result<(UnixListener, SocketAddr, [u8; TOKEN], Vec<u8>), String> {
    let bytes = secret::random_bytes(TOKEN + 6).map_err(|e| format!("getrandom: {e}"))?;
    let (token, suffix) = bytes.split_at(TOKEN);
    let label: String =
        label.chars().take(40).map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let hex = secret::hex(suffix);
    let pid = std::process::id();
    let name = format!("rshmem-{label}-{pid}-{hex}");
    let addr =
        SocketAddr::from_abstract_name(name.as_bytes()).map_err(|e| format!("socket name {name}: {e}"))?;
    let listener = UnixListener::bind_addr(&addr).map_err(|e| format!("bind(@{name}): {e}"))?;
    let token: [u8; TOKEN] = token.try_into().expect("16 bytes");
    let mut ticket = Vec::with_capacity(TICKET_MAX);
    ticket.extend_from_slice(magic);
    ticket.extend_from_slice(&pid.to_le_bytes());
    ticket.extend_from_slice(&token);
    ticket.extend_from_slice(name.as_bytes());
    Ok((listener, addr, token, ticket))
}

/// Connect to the socket a `magic` ticket names, check that its owner answers (the pid the
/// ticket names, this user) and send the token. Returns the stream and the name for messages.
fn connect(magic: &[u8; 4], ticket: &[u8], timeout: Duration) -> Result<(UnixStream, String), String> {
    if ticket.len() <= 8 + TOKEN || ticket.len() > TICKET_MAX || &ticket[..4] != magic {
        return Err(format!("not a segment ticket ({} bytes)", ticket.len()));
    }
    let pid = u32::from_le_bytes(ticket[4..8].try_into().expect("4 bytes"));
    let token = &ticket[8..8 + TOKEN];
    let name = &ticket[8 + TOKEN..];
    let shown = String::from_utf8_lossy(name).into_owned();
    let addr = SocketAddr::from_abstract_name(name).map_err(|e| format!("socket name {shown}: {e}"))?;
    let s = UnixStream::connect_addr(&addr).map_err(|e| format!("connect(@{shown}): {e}"))?;
    s.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    let (their_pid, their_uid) = peer_cred(&s)?;
    if their_pid as u32 != pid || their_uid != my_uid() {
        return Err(format!(
            "@{shown} is served by pid {their_pid} (uid {their_uid}), not by the segment's owner, pid {pid}"
        ));
    }
    send_token(&s, token).map_err(|e| format!("sending the token to @{shown}: {e}"))?;
    Ok((s, shown))
}

/// Check a client as every server here does: same user, then the right token.
fn admit(s: &mut UnixStream, uid: u32, token: &[u8; TOKEN]) -> Result<(), String> {
    s.set_read_timeout(Some(SERVE_TIMEOUT)).map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(SERVE_TIMEOUT)).map_err(|e| e.to_string())?;
    let (_, their_uid) = peer_cred(s)?;
    if their_uid != uid {
        return Err("another user".into());
    }
    let mut got = [0u8; TOKEN];
    s.read_exact(&mut got).map_err(|e| e.to_string())?;
    // Every byte compared, so the time taken says nothing about a near miss.
    if !secret::same(&got, token) {
        return Err("wrong token".into());
    }
    Ok(())
}

/// Whether `blob` is a ticket of [`Server::start`]: then it names a shared-memory object that
/// [`fetch`] returns and that is mapped whole, shared, at offset 0.
pub fn is_ticket(blob: &[u8]) -> bool {
    blob.len() > 8 + TOKEN && blob.len() <= TICKET_MAX && &blob[..4] == MAGIC
}

/// Map `size` bytes of a shared-memory object received from a peer, shared and read-write,
/// anywhere: what a [`Server`]'s object is for. The mapping outlives the descriptor.
pub fn map_object(fd: &OwnedFd, size: usize) -> Result<*mut u8, String> {
    // SAFETY: fstat into a zeroed stat on a descriptor we hold.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(os_error("fstat(a peer's segment)"));
    }
    // Pages past the object's end would raise SIGBUS at the first access, far from here.
    if (st.st_size as u64) < size as u64 {
        return Err(format!("a peer's segment is {} bytes, not {size}", st.st_size));
    }
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let flags = libc::MAP_SHARED | libc::MAP_NORESERVE;
    // SAFETY: mapping a descriptor we hold, at an address of the kernel's choosing.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), size, prot, flags, fd.as_raw_fd(), 0) };
    if p == libc::MAP_FAILED {
        return Err(os_error(&format!("mmap(a peer's segment, {size} bytes)")));
    }
    Ok(p.cast())
}

/// Hands one descriptor to the clients that present its ticket, from a thread of its own,
/// until stopped (or dropped).
pub struct Server {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serve a duplicate of `fd` under an abstract socket name made from `label` (portable
    /// file-name characters are kept), and return the server and its ticket (at most
    /// [`TICKET_MAX`] bytes) for the peers.
    pub fn start(fd: &OwnedFd, label: &str) -> Result<(Server, Vec<u8>), String> {
        let (listener, addr, token, ticket) = listen(MAGIC, label)?;
        let object = fd.try_clone().map_err(|e| format!("dup: {e}"))?;
        let stopping = Arc::new(AtomicBool::new(false));
        let thread = {
            let stopping = stopping.clone();
            std::thread::Builder::new()
                .name("rshmem-share".into())
                .spawn(move || serve(listener, object, token, &stopping))
                .map_err(|e| format!("starting the segment server thread: {e}"))?
        };
        Ok((Server { addr, stopping, thread: Some(thread) }, ticket))
    }

    /// Stop answering; clients that connect later are refused. Waits for the thread.
    pub fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        let Some(t) = self.thread.take() else { return };
        self.stopping.store(true, Ordering::Release);
        // Wake the thread out of `accept` by connecting; it sees the flag and returns.
        let _ = UnixStream::connect_addr(&self.addr);
        let _ = t.join();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shut();
    }
}

fn serve(listener: UnixListener, object: OwnedFd, token: [u8; TOKEN], stopping: &AtomicBool) {
    let uid = my_uid();
    serve_clients(&listener, stopping, |mut s| {
        let _ = answer(&mut s, uid, &token, object.as_raw_fd());
    })
}

/// Accept clients until `stopping` is set (a connection wakes the loop to see it), handing each
/// to `answer`; a refused or failed client gets nothing and is dropped, the others go on.
fn serve_clients(listener: &UnixListener, stopping: &AtomicBool, mut answer: impl FnMut(UnixStream)) {
    for conn in listener.incoming() {
        if stopping.load(Ordering::Acquire) {
            return;
        }
        let Ok(s) = conn else {
            // Out of descriptors, say: do not spin on it.
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        answer(s);
    }
}

/// Serve one client: same user, right token, then the descriptor.
fn answer(s: &mut UnixStream, uid: u32, token: &[u8; TOKEN], object: RawFd) -> Result<(), String> {
    admit(s, uid, token)?;
    send_fd(s, object)
}

/// Send the token with `MSG_NOSIGNAL`: a server that has gone must give an error, not a
/// SIGPIPE that would end a C program.
fn send_token(s: &UnixStream, token: &[u8]) -> Result<(), String> {
    // SAFETY: send reads `token.len()` bytes of our slice.
    let n = restarting(|| unsafe {
        libc::send(s.as_raw_fd(), token.as_ptr().cast(), token.len(), libc::MSG_NOSIGNAL)
    });
    if n != token.len() as isize {
        return Err(if n < 0 { os_error("send") } else { format!("sent {n} of {} bytes", token.len()) });
    }
    Ok(())
}

/// Fetch the descriptor a peer's [`Server`] serves under `ticket`, waiting at most `timeout`
/// for it to answer.
pub fn fetch(ticket: &[u8], timeout: Duration) -> Result<OwnedFd, String> {
    let (s, shown) = connect(MAGIC, ticket, timeout)?;
    recv_fd(&s).map_err(|e| format!("receiving the segment from @{shown}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(5);

    fn same_object(a: &OwnedFd, b: &OwnedFd) -> bool {
        let st = |fd: &OwnedFd| {
            // SAFETY: fstat into a zeroed stat on a descriptor we hold.
            let mut s: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: as above.
            assert_eq!(unsafe { libc::fstat(fd.as_raw_fd(), &mut s) }, 0);
            (s.st_dev, s.st_ino, s.st_size)
        };
        st(a) == st(b)
    }

    #[test]
    fn a_client_with_the_ticket_gets_the_same_object() {
        let fd = memfd("test", 8192).unwrap();
        let (server, ticket) = Server::start(&fd, "test/a b").unwrap();
        assert!(ticket.len() <= TICKET_MAX);
        let name = String::from_utf8_lossy(&ticket[8 + TOKEN..]).into_owned();
        assert!(name.starts_with("rshmem-test_a_b-"), "{name}");
        for _ in 0..3 {
            let got = fetch(&ticket, T).unwrap();
            assert!(same_object(&fd, &got));
            // SAFETY: F_GETFD on a descriptor we hold.
            let flags = unsafe { libc::fcntl(got.as_raw_fd(), libc::F_GETFD) };
            assert_ne!(flags & libc::FD_CLOEXEC, 0, "received descriptors are close-on-exec");
        }
        server.stop();
        let e = fetch(&ticket, T).unwrap_err();
        assert!(e.contains("connect(@rshmem-test_a_b-"), "{e}");
    }

    #[test]
    fn a_wrong_token_gets_nothing_and_the_server_goes_on() {
        let fd = memfd("test", 4096).unwrap();
        let (_server, ticket) = Server::start(&fd, "tok").unwrap();
        let mut bad = ticket.clone();
        bad[8] ^= 1;
        let e = fetch(&bad, T).unwrap_err();
        assert!(e.contains("receiving the segment"), "{e}");
        assert!(fetch(&ticket, T).is_ok());
    }

    #[test]
    fn a_ticket_naming_another_process_is_refused() {
        let fd = memfd("test", 4096).unwrap();
        let (_server, ticket) = Server::start(&fd, "pid").unwrap();
        let mut forged = ticket.clone();
        forged[4..8].copy_from_slice(&1u32.to_le_bytes());
        let e = fetch(&forged, T).unwrap_err();
        assert!(e.contains("not by the segment's owner, pid 1"), "{e}");
    }

    #[test]
    fn garbage_is_not_a_ticket() {
        assert!(fetch(b"", T).unwrap_err().contains("not a segment ticket"));
        assert!(fetch(b"/rshmem-job-0-1", T).unwrap_err().contains("not a segment ticket"));
        let mut long = MAGIC.to_vec();
        long.resize(TICKET_MAX + 1, b'x');
        assert!(fetch(&long, T).unwrap_err().contains("not a segment ticket"));
    }

    #[test]
    fn a_silent_client_holds_the_others_up_only_briefly() {
        let fd = memfd("test", 4096).unwrap();
        let (_server, ticket) = Server::start(&fd, "slow").unwrap();
        let name = &ticket[8 + TOKEN..];
        let addr = SocketAddr::from_abstract_name(name).unwrap();
        let _silent = UnixStream::connect_addr(&addr).unwrap();
        let t = std::time::Instant::now();
        assert!(fetch(&ticket, T).is_ok());
        assert!(t.elapsed() < SERVE_TIMEOUT + Duration::from_secs(2), "{:?}", t.elapsed());
    }
}
