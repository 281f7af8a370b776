//! RMA that the target's CPU carries out (`SpmlOps::put_via_target`, `get_via_target`): for
//! memory UCX cannot move here, device memory when UCX was built without CUDA support. The
//! bytes travel as UCX active messages between host buffers, and the target's core copies
//! them into or out of its device memory (the `segment_copy` service, reached through the
//! [`Copier`] that `lib.rs` installs).
//!
//! - **Put.** A `PUT` message carries a [`Header`] (segment, offset, length, token) and the
//!   data; the target copies the data in, then answers (`rma_am::ANSWER`) naming the token and
//!   a status. The sender returns once the reply has come, so the bytes are in place at the
//!   target (remote completion) and no flush is needed for them.
//! - **Get.** A `GET` message carries the header alone; the target copies the bytes out into
//!   a buffer of its own and sends them back in the answer, whose handler copies them into
//!   the sender's destination.
//!
//! Every message is sent eagerly, at most [`CHUNK`] bytes of data each (a transfer is cut
//! into such pieces), so each one reaches its handler whole and the handler needs no
//! rendezvous receive. Requests reach the default worker of the target, whose progress thread
//! (or any thread in the library) runs the handler; the reply goes back on the endpoint the
//! request came on (`UCP_AM_SEND_FLAG_REPLY`), to whichever worker sent it, so every worker
//! has the reply handler.
//!
//! Requests and answers are those of `rma_am`: the same answer message and the same table of
//! waiters per channel (`rma_am::Answers`), so a stale or forged answer writes nowhere. On the
//! target, the core checks
//! every range against its own device segments.

use super::handler::{
    am_handler, check_header_room, send_boxed, set_handler, Handler, Message, Outbound, Refusals, Wire,
};
use super::rma_am::{AnswerHeader, ANSWER};
use super::{Channel, Complaint, OpError};
use rshmem_ucx_sys as sys;
use std::ffi::c_void;
use std::sync::OnceLock;

/// Active-message ids (put-with-signal is 1, see `am`; answers are `rma_am`'s).
pub const PUT: u32 = 2;
pub const GET: u32 = 3;

/// The most data one message carries: `rma_am`'s bound, which also bounds the buffer a get
/// request makes the target allocate.
pub const CHUNK: usize = super::rma_am::CHUNK;

/// What travels in front of a request's data.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// The sender's waiter (`rma_am::Answers`), returned in the answer.
    pub token: u64,
    /// The bytes `off..off + len` of the target's segment `seg`.
    pub off: u64,
    pub len: u64,
    pub seg: u32,
    pub pad: u32,
}

// SAFETY: `repr(C)`: three u64s and two u32s, no padding.
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
        Ok(())
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

/// An answer on its way back: the header and the data must live until UCX is done with them.
struct Outgoing {
    header: AnswerHeader,
    data: Vec<u8>,
}

impl Outbound for Outgoing {
    fn parts(&self) -> (*const c_void, usize, *const c_void, usize) {
        let h = (&self.header as *const AnswerHeader).cast();
        (h, std::mem::size_of::<AnswerHeader>(), self.data.as_ptr().cast(), self.data.len())
    }
}

am_handler!(on_put, |server: &Server, m: Message<Header>| { on_request(PUT, server, m) });
am_handler!(on_get, |server: &Server, m: Message<Header>| { on_request(GET, server, m) });

/// Serve a `PUT` or `GET` request and answer it.
fn on_request(id: u32, server: &Server, m: Message<'_, Header>) -> sys::ucs_status_t {
    let h = match m.header {
        Ok(h) => h,
        Err(why) => {
            server.refuse(&why);
            return if m.rndv { sys::UCS_ERR_INVALID_PARAM } else { sys::UCS_OK };
        }
    };
    let mut out = Outgoing { header: AnswerHeader { token: h.token, status: 0, pad: 0 }, data: Vec::new() };
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
        send_boxed(ep, ANSWER, out);
    }
    if let Err(why) = outcome {
        server.refuse(&why);
        if m.rndv {
            return sys::UCS_ERR_INVALID_PARAM;
        }
    }
    sys::UCS_OK
}

/// Move `len` bytes between host buffer `buf` and bytes `off..` of PE `pe`'s segment `seg`
/// (a put when `put`), through the target: message by message, each waited for until its
/// answer came. `ch` sends, and its waits drive the default worker too (which peers' requests
/// reach), so that two PEs transferring to each other at once both answer. A lost `pe` ends the
/// wait with its status.
///
/// # Safety
/// `buf` readable (put) or writable (get) for `len` bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn transfer(
    ch: &Channel,
    pe: usize,
    put: bool,
    seg: u32,
    off: u64,
    buf: *mut u8,
    len: usize,
) -> Result<(), OpError> {
    let ep = ch.ep(pe)?;
    let a = ch.answers().ok_or(OpError::Invalid)?;
    let mut done = 0usize;
    while done < len {
        let n = (len - done).min(CHUNK);
        // SAFETY: `done + n <= len` (caller's buffer).
        let at = unsafe { buf.add(done) };
        // A put's answer brings no bytes; a get's brings `n` into `at`.
        let (dst, cap) = if put { (std::ptr::null_mut(), 0) } else { (at, n) };
        let token = ch.claim(a, pe, dst, cap, false)?;
        let h = Header { token, off: off + done as u64, len: n as u64, seg, pad: 0 };
        let (id, data, dlen) = if put { (PUT, at as *const u8, n) } else { (GET, std::ptr::null(), 0) };
        // SAFETY: a live endpoint; the header and the data stay valid until the send has
        // completed (waited for right here).
        let st = ch.wait_sent(unsafe { ch.send_request(ep, id, &h, data, dlen) });
        if st != sys::UCS_OK {
            a.abandon(token);
            return Err(OpError::Status(st));
        }
        ch.await_answer(a, pe, token)?;
        done += n;
    }
    Ok(())
}
