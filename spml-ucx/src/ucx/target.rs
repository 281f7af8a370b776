//! RMA that the target's CPU carries out (`SpmlOps::put_via_target`, `get_via_target`): for
//! memory UCX cannot move here, device memory when UCX was built without CUDA support. The
//! bytes travel as UCX active messages between host buffers, and the target's core copies
//! them into or out of its device memory (the `segment_copy` service, reached through the
//! [`Copier`] that `lib.rs` installs).
//!
//! - **Put.** A `PUT` message carries a [`Header`] (segment, offset, length, token) and the
//!   data; the target copies the data in, then answers with a `REPLY` naming the token and a
//!   status. The sender returns once the reply has come, so the bytes are in place at the
//!   target (remote completion) and no flush is needed for them.
//! - **Get.** A `GET` message carries the header alone; the target copies the bytes out into
//!   a buffer of its own and sends them back in the `REPLY`, whose handler copies them into
//!   the sender's destination.
//!
//! Every message is sent eagerly, at most [`CHUNK`] bytes of data each (a transfer is cut
//! into such pieces), so each one reaches its handler whole and the handler needs no
//! rendezvous receive. Requests reach the default worker of the target, whose progress thread
//! (or any thread in the library) runs the handler; the reply goes back on the endpoint the
//! request came on (`UCP_AM_SEND_FLAG_REPLY`), to whichever worker sent it, so every worker
//! has the reply handler.
//!
//! A reply names its waiter by a token, not an address: the token indexes a table of waiters
//! ([`PENDING`]), with a generation, so a reply that matches no live waiter (a stale one, or
//! one nobody asked for) is dropped instead of writing anywhere. On the target, the core checks
//! every range against its own device segments.

use super::handler::{
    boundary, check_header_room, send_boxed, serve, set_handler, Handler, Message, Outbound, Refusals, Wire,
};
use super::{Channel, Complaint, Health, OpError};
use rshmem_ucx_sys as sys;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Active-message ids (put-with-signal is 1, see `am`).
pub const PUT: u32 = 2;
pub const GET: u32 = 3;
pub const REPLY: u32 = 4;

/// The most data one message carries. The same bound as the eager put-with-signal, for the same
/// reason (over TCP, eager messages up to this size cost less than a rendezvous), and it
/// bounds the buffer a get request makes the target allocate.
pub const CHUNK: usize = 256 * 1024;

/// What travels in front of the data, in either direction.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// The sender's waiter ([`PENDING`]), returned in the reply.
    pub token: u64,
    /// The bytes `off..off + len` of the target's segment `seg`.
    pub off: u64,
    pub len: u64,
    pub seg: u32,
    /// In a reply: 0 when the target copied, else nonzero.
    pub status: i32,
}

// SAFETY: `repr(C)`: three u64s, a u32 and an i32, no padding.
unsafe impl Wire for Header {}

pub const HEADER_BYTES: usize = std::mem::size_of::<Header>();

/// The target's copy between a host buffer and its own segment memory: `(seg, off, buf, len,
/// into_segment)`; an error names why the range was refused.
pub type Copier = fn(u32, u64, *mut u8, usize, bool) -> Result<(), String>;

/// The target side, installed on the default worker: lives as long as the worker (leaked).
pub struct Server {
    copier: OnceLock<Copier>,
    refusals: Refusals,
}

impl Server {
    pub fn new() -> Server {
        Server { copier: OnceLock::new(), refusals: Refusals::default() }
    }

    /// Install the request handlers on `worker`. `self` must stay alive and in place for as
    /// long as the worker exists.
    pub fn install(&'static self, worker: sys::ucp_worker_h) -> Result<(), String> {
        check_header_room(worker, HEADER_BYTES, "a transfer through the target")?;
        for (id, cb) in [(PUT, on_put as Handler), (GET, on_get as Handler)] {
            set_handler(worker, id, cb, self as *const Server as *mut c_void)?;
        }
        install_replies(worker)
    }

    /// Who copies into and out of this PE's segments (once; later calls change nothing).
    pub fn set_copier(&self, f: Copier) {
        let _ = self.copier.set(f);
    }

    /// Who hears of a refused request (`lib.rs` ends the job).
    pub fn on_complaint(&self, f: Complaint) {
        self.refusals.on_complaint(f);
    }

    /// How many requests this PE refused.
    pub fn refused(&self) -> usize {
        self.refusals.count()
    }

    #[cold]
    fn refuse(&self, why: &str) {
        self.refusals.refuse(&format!("spml ucx: refused a transfer to or from device memory: {why}"));
    }

    /// Serve one request: a put's data copied in, or a get's bytes copied out into `reply`.
    fn serve(&self, id: u32, h: &Header, data: &[u8], reply: &mut Vec<u8>) -> Result<(), String> {
        let copier = self.copier.get().ok_or("this PE copies no segment memory for peers")?;
        let len = usize::try_from(h.len)
            .ok()
            .filter(|&l| l <= CHUNK)
            .ok_or_else(|| format!("{} bytes in one message, more than {CHUNK}", h.len))?;
        if id == PUT {
            if data.len() != len {
                return Err(format!("a header for {len} bytes with {} bytes of data", data.len()));
            }
            return copier(h.seg, h.off, data.as_ptr().cast_mut(), len, true);
        }
        reply.resize(len, 0);
        copier(h.seg, h.off, reply.as_mut_ptr(), len, false)
    }
}

impl Default for Server {
    fn default() -> Self {
        Server::new()
    }
}

/// Install the reply handler on `worker` (every worker that sends requests).
pub fn install_replies(worker: sys::ucp_worker_h) -> Result<(), String> {
    check_header_room(worker, HEADER_BYTES, "a transfer through the target")?;
    set_handler(worker, REPLY, on_reply, std::ptr::null_mut())
}

/// A reply on its way back: the header and the data must live until UCX is done with them.
struct Outgoing {
    header: Header,
    data: Vec<u8>,
}

impl Outbound for Outgoing {
    fn parts(&self) -> (*const c_void, usize, *const c_void, usize) {
        ((&self.header as *const Header).cast(), HEADER_BYTES, self.data.as_ptr().cast(), self.data.len())
    }
}

unsafe extern "C" fn on_put(
    arg: *mut c_void,
    header: *const c_void,
    header_length: usize,
    data: *mut c_void,
    length: usize,
    param: *const sys::ucp_am_recv_param_t,
) -> sys::ucs_status_t {
    // SAFETY: UCX's arguments, passed on.
    unsafe { on_request(PUT, arg, header, header_length, data, length, param) }
}

unsafe extern "C" fn on_get(
    arg: *mut c_void,
    header: *const c_void,
    header_length: usize,
    data: *mut c_void,
    length: usize,
    param: *const sys::ucp_am_recv_param_t,
) -> sys::ucs_status_t {
    // SAFETY: UCX's arguments, passed on.
    unsafe { on_request(GET, arg, header, header_length, data, length, param) }
}

/// Serve a `PUT` or `GET` request and answer it.
///
/// # Safety
/// UCX's handler arguments, `arg` being the [`Server`] that installed the handler.
unsafe fn on_request(
    id: u32,
    arg: *mut c_void,
    header: *const c_void,
    header_length: usize,
    data: *mut c_void,
    length: usize,
    param: *const sys::ucp_am_recv_param_t,
) -> sys::ucs_status_t {
    let body = |server: &Server, m: Message<'_, Header>| {
        let h = match m.header {
            Ok(h) => h,
            Err(why) => {
                server.refuse(&why);
                return if m.rndv { sys::UCS_ERR_INVALID_PARAM } else { sys::UCS_OK };
            }
        };
        let mut out = Outgoing { header: h, data: Vec::new() };
        let outcome = if m.rndv {
            Err("a rendezvous message (transfers through the target are sent eagerly)".to_string())
        } else if m.reply_ep.is_none() {
            Err("a request without a reply endpoint".to_string())
        } else {
            server.serve(id, &h, m.eager, &mut out.data)
        };
        out.header.status = i32::from(outcome.is_err());
        if outcome.is_err() {
            out.data.clear();
        }
        if let Some(ep) = m.reply_ep {
            send_boxed(ep, REPLY, out);
        }
        if let Err(why) = outcome {
            server.refuse(&why);
            if m.rndv {
                return sys::UCS_ERR_INVALID_PARAM;
            }
        }
        sys::UCS_OK
    };
    // SAFETY: UCX's arguments, during its call; `arg` is the leaked Server that installed this handler.
    unsafe { serve(arg, header, header_length, data, length, param, body) }
}

/// A waiter's state while its reply is outstanding.
const WAITING: i64 = i64::MIN;

/// A waiter: where a get's bytes go (`cap` bytes at `dst`; none for a put) and the word its
/// reply's status is stored in.
struct Waiter {
    dst: usize,
    cap: usize,
    done: *const AtomicI64,
}

#[derive(Default)]
struct Slot {
    generation: u32,
    waiter: Option<Waiter>,
}

// SAFETY: a Waiter's pointers are only used under PENDING's lock, while their owner (blocked
// in `transfer`, which removes the waiter before returning) keeps them alive.
unsafe impl Send for Slot {}

/// The outstanding requests of this process, by token (`index | generation << 32`). A lock,
/// but off every hot path: these transfers each cost a device copy and a round trip.
static PENDING: Mutex<Vec<Slot>> = Mutex::new(Vec::new());

fn register(w: Waiter) -> u64 {
    let mut v = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    let i = match v.iter().position(|s| s.waiter.is_none()) {
        Some(i) => i,
        None => {
            v.push(Slot::default());
            v.len() - 1
        }
    };
    v[i].waiter = Some(w);
    (i as u64) | u64::from(v[i].generation) << 32
}

/// Take the waiter `token` names, if it is still waiting.
fn take(v: &mut [Slot], token: u64) -> Option<Waiter> {
    let s = v.get_mut((token & 0xffff_ffff) as usize)?;
    if u64::from(s.generation) != token >> 32 || s.waiter.is_none() {
        return None;
    }
    s.generation = s.generation.wrapping_add(1);
    s.waiter.take()
}

unsafe extern "C" fn on_reply(
    _arg: *mut c_void,
    header: *const c_void,
    header_length: usize,
    data: *mut c_void,
    length: usize,
    param: *const sys::ucp_am_recv_param_t,
) -> sys::ucs_status_t {
    boundary(|| {
        // SAFETY: UCX's arguments, during its call.
        let m = unsafe { Message::<Header>::read(header, header_length, data, length, param) };
        let Ok(h) = m.header else {
            return if m.rndv { sys::UCS_ERR_INVALID_PARAM } else { sys::UCS_OK };
        };
        if m.rndv {
            // Not a reply this library sent (replies go eagerly): nobody waits for it.
            return sys::UCS_ERR_INVALID_PARAM;
        }
        let mut v = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        let Some(w) = take(&mut v, h.token) else { return sys::UCS_OK };
        let mut status = i64::from(h.status);
        if status == 0 && m.eager.len() != w.cap {
            status = -1; // a get answered with the wrong number of bytes
        }
        if status == 0 && !m.eager.is_empty() {
            // SAFETY: the waiter's destination is writable for `cap == eager.len()` bytes
            // while it waits (it cannot stop waiting without taking PENDING's lock, held here).
            unsafe { std::ptr::copy_nonoverlapping(m.eager.as_ptr(), w.dst as *mut u8, m.eager.len()) };
        }
        // SAFETY: the waiter's word, alive while it waits (as above).
        unsafe { &*w.done }.store(status, Ordering::Release);
        sys::UCS_OK
    })
}

/// Move `len` bytes between host buffer `buf` and bytes `off..` of PE `pe`'s segment `seg`
/// (a put when `put`), through the target: message by message, each waited for until its
/// reply came. `ch` sends and receives the replies; `default`, the worker peers' requests
/// reach, is driven too while waiting, so that two PEs transferring to each other at once both
/// answer. A peer lost for longer than the grace ends the wait with its status.
///
/// # Safety
/// `buf` readable (put) or writable (get) for `len` bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn transfer(
    ch: &Channel,
    default: &Channel,
    health: &Health,
    pe: usize,
    put: bool,
    seg: u32,
    off: u64,
    buf: *mut u8,
    len: usize,
) -> Result<(), OpError> {
    let ep = ch.ep(pe)?;
    let mut done = 0usize;
    while done < len {
        let n = (len - done).min(CHUNK);
        let state = AtomicI64::new(WAITING);
        // SAFETY: `done + n <= len` (caller's buffer).
        let at = unsafe { buf.add(done) };
        let waiter = if put {
            Waiter { dst: 0, cap: 0, done: &state }
        } else {
            Waiter { dst: at as usize, cap: n, done: &state }
        };
        let token = register(waiter);
        let h = Header { token, off: off + done as u64, len: n as u64, seg, status: 0 };
        let p = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_FLAGS,
            flags: sys::UCP_AM_SEND_FLAG_EAGER | sys::UCP_AM_SEND_FLAG_REPLY,
            ..Default::default()
        };
        let (id, data, dlen) = if put { (PUT, at as *const c_void, n) } else { (GET, std::ptr::null(), 0) };
        // SAFETY: a live endpoint; the header and the data stay valid until the send has
        // completed (waited for right below).
        let r = unsafe {
            sys::ucp_am_send_nbx(ep, id, (&h as *const Header).cast(), HEADER_BYTES, data, dlen, &p)
        };
        let st = finish_send(ch, default, r);
        let outcome = if st != sys::UCS_OK {
            Err(OpError::Status(st))
        } else {
            await_reply(ch, default, health, &state)
        };
        // A waiter still registered (the send failed, or the peer was lost) is removed before
        // `state` and the destination go out of scope.
        take(&mut PENDING.lock().unwrap_or_else(|e| e.into_inner()), token);
        outcome?;
        done += n;
    }
    Ok(())
}

/// Drive `ch` and, when it is another, `default` once, yielding the core when neither had
/// anything to do (oversubscribed nodes, as in `Channel::wait`).
fn drive(ch: &Channel, default: &Channel) {
    let mut busy = ch.progress();
    if !std::ptr::eq(ch, default) {
        busy |= default.progress();
    }
    if !busy {
        std::thread::yield_now();
    }
}

/// Wait until the send `r` has completed: the header and data it refers to are then free.
/// Not bounded by the peer's health: a send to a lost peer completes with an error status.
fn finish_send(ch: &Channel, default: &Channel, r: sys::ucs_status_ptr_t) -> sys::ucs_status_t {
    if !sys::ptr_is_request(r) {
        return sys::ptr_status(r);
    }
    loop {
        // SAFETY: a live request of `ch`'s worker, freed once below.
        let st = unsafe { sys::ucp_request_check_status(r) };
        if st != sys::UCS_INPROGRESS {
            // SAFETY: completed; freed exactly once.
            unsafe { sys::ucp_request_free(r) };
            return st;
        }
        // A large message over TCP completes only as the receiver reads it, and the receiver
        // may be this process's own default worker.
        drive(ch, default);
    }
}

fn await_reply(ch: &Channel, default: &Channel, health: &Health, state: &AtomicI64) -> Result<(), OpError> {
    loop {
        match state.load(Ordering::Acquire) {
            WAITING => {}
            0 => return Ok(()),
            _ => return Err(OpError::Refused),
        }
        if let Some((_, st)) = health.overdue() {
            return Err(OpError::Status(st));
        }
        drive(ch, default);
    }
}
