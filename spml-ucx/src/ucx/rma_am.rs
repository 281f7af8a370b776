//! RMA and atomics carried in the spml's own active messages (`rma_in_messages`, on by default
//! where UCX can only use sockets). Over TCP UCX has no RMA or atomics of its own: it emulates
//! them with active messages that the target's CPU applies, and that emulation is what newer
//! UCX versions are dropping (1.22's older protocol layer refuses puts and gets over TCP, its
//! newer layer finds no protocol for a posted atomic; docs/performance.md, "UCX versions").
//! Doing the same job here needs nothing of UCX but active messages, which every version
//! carries over every transport.
//!
//! - **Puts** of at most `batch::PUT_MAX` bytes travel in the peer's batch as before; larger
//!   ones as `LONG_PUT` messages of at most [`CHUNK`] bytes, sent eagerly, each acknowledged
//!   like a batch (`batch::ACK`), so quiet waits for them exactly as for batches.
//! - **Gets** send a `GET` request naming the bytes; the target answers (`ANSWER`) with the
//!   bytes straight out of its memory, and the answer's handler copies them into place.
//! - **Atomics that fetch** send an `AMO` request; the target applies it with a CPU atomic
//!   and answers with the old value. Those that fetch nothing (an add, a set) travel in the
//!   peer's batch, applied with the same CPU atomics (`batch`), and complete at quiet.
//!
//! Everything a channel sends to a peer then travels on one endpoint's active-message lane, in
//! order, and is applied in that order: a fence costs nothing, and the target's CPU performs
//! every remote atomic, as it does the atomics of PEs that map its memory (the atomics rule,
//! docs/architecture.md). The handlers touch only host memory the target registered for
//! remote access (`am::Regions`); a message naming anything else is refused and ends the job.
//!
//! A request names its waiter by a token: an index into the channel's [`Answers`] table and
//! the slot's generation, held in one word with the slot's state, so an answer that matches no
//! live waiter (a stale one, or a forged one) is dropped instead of writing anywhere, and a
//! waiter that gives up (a lost peer) cannot be written after it has gone.

use super::am::Receiver;
use super::batch;
use super::cpu_atomic;
use super::handler::{am_handler, check_header_room, send_boxed, set_handler, Message, Outbound, Wire};
use rshmem_ucx_sys as sys;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Active-message ids (put-with-signal 1, transfers through the target 2-3, batches 5-6).
pub const LONG_PUT: u32 = 7;
pub const GET: u32 = 8;
pub const AMO: u32 = 9;
pub const ANSWER: u32 = 10;

/// The most data one message carries, either way: the eager bound of the other messages (over
/// TCP an eager message up to this size costs less than a rendezvous, see `channel`).
pub const CHUNK: usize = 256 * 1024;

/// A long put's header: where the data goes, and the target's index in the sender's table
/// (returned in the acknowledgement, as for a batch).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PutHeader {
    pub dest: u64,
    pub peer: u32,
    pub pad: u32,
}

/// A get's request: the sender's waiter and the target's bytes `src..src + len`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GetHeader {
    pub token: u64,
    pub src: u64,
    pub len: u64,
}

/// A fetching atomic's request: `op` (`AMO_*`) on the `size`-byte word at `addr`, with its
/// operands, answered to the waiter `token`. (An atomic that fetches nothing travels in the
/// peer's batch instead, see `batch`.)
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AmoHeader {
    pub token: u64,
    pub addr: u64,
    pub value: u64,
    pub cond: u64,
    pub op: u32,
    pub size: u32,
}

/// The most data an answer carries inside its header (an atomic's old value, a small get's
/// bytes): such an answer has no data part, and so takes UCX's copying path
/// (`handler::without_data`).
pub const INLINE: usize = 64;

/// An answer: the waiter it is for, and 0 when the target served the request. The data (a
/// get's bytes, an atomic's old value) follows: inside the header up to [`INLINE`] bytes,
/// else as the message's data.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnswerHeader {
    pub token: u64,
    pub status: i32,
    pub pad: u32,
}

// SAFETY: each is `repr(C)` of u64s followed by u32s/i32s filling whole 8-byte rows: no padding.
unsafe impl Wire for PutHeader {}
// SAFETY: as above.
unsafe impl Wire for GetHeader {}
// SAFETY: as above.
unsafe impl Wire for AmoHeader {}
// SAFETY: as above.
unsafe impl Wire for AnswerHeader {
    const TAIL_MAX: usize = INLINE;
}

/// Install the request handlers on the default worker, whose [`Receiver`] knows the memory
/// they may touch. `rx` must outlive the worker.
pub fn install_requests(rx: &'static Receiver, worker: sys::ucp_worker_h) -> Result<(), String> {
    let most = std::mem::size_of::<AmoHeader>().max(std::mem::size_of::<AnswerHeader>() + INLINE);
    check_header_room(worker, most, "RMA in active messages")?;
    let arg = rx as *const Receiver as *mut c_void;
    set_handler(worker, LONG_PUT, on_long_put, arg)?;
    set_handler(worker, GET, on_get, arg)?;
    set_handler(worker, AMO, on_amo, arg)
}

/// Install the answer handler on a channel's worker. `a` must outlive the worker (leaked).
pub fn install_answers(a: &'static Answers, worker: sys::ucp_worker_h) -> Result<(), String> {
    check_header_room(worker, std::mem::size_of::<AnswerHeader>(), "RMA in active messages")?;
    set_handler(worker, ANSWER, on_answer, a as *const Answers as *mut c_void)
}

// ---- the target's side ----

/// An answer on its way back: its bytes inside the header (`inline`, right after it), or for a
/// get of more than [`INLINE`] bytes, the target's own registered memory, read when UCX sends
/// (at once for an eager message that fits the socket): the requester waits for it, so the
/// memory cannot be released in the meantime (releasing is collective).
#[repr(C)]
struct Reply {
    header: AnswerHeader,
    inline: [u8; INLINE],
    /// The address of the `len` bytes sent, or [`INLINED`] when they are in `inline`.
    data: usize,
    len: usize,
}

const INLINED: usize = usize::MAX;

// The header and its inline bytes go out as one header: nothing may come between them.
const _: () = assert!(std::mem::offset_of!(Reply, inline) == std::mem::size_of::<AnswerHeader>());

impl Reply {
    /// An answer carrying `bytes` (at most [`INLINE`]) inside its header.
    fn inline(header: AnswerHeader, bytes: &[u8]) -> Reply {
        let mut r = Reply { header, inline: [0; INLINE], data: INLINED, len: bytes.len() };
        r.inline[..bytes.len()].copy_from_slice(bytes);
        r
    }

    /// An answer carrying the `len` bytes at `addr` as its data.
    fn at(header: AnswerHeader, addr: usize, len: usize) -> Reply {
        Reply { header, inline: [0; INLINE], data: addr, len }
    }
}

impl Outbound for Reply {
    fn parts(&self) -> (*const c_void, usize, *const c_void, usize) {
        let h = (&self.header as *const AnswerHeader).cast();
        let fixed = std::mem::size_of::<AnswerHeader>();
        if self.data == INLINED {
            (h, fixed + self.len, std::ptr::null(), 0)
        } else {
            (h, fixed, self.data as *const c_void, self.len)
        }
    }
}

/// An acknowledgement, as for a batch of one.
fn acknowledge(ep: sys::ucp_ep_h, peer: u32) {
    send_boxed(ep, batch::ACK, batch::Header { peer, count: 1 });
}

am_handler!(on_long_put, |rx: &Receiver, m: Message<PutHeader>| {
    let (h, ep) = match (&m.header, m.rndv, m.reply_ep) {
        (Ok(h), false, Some(ep)) => (*h, ep),
        (Err(why), ..) => return refused(rx, m.rndv, &format!("a long put with {why}")),
        (_, true, _) => return refused(rx, true, "a long put sent by rendezvous (they go eagerly)"),
        (_, _, None) => return refused(rx, false, "a long put without a reply endpoint"),
    };
    if !rx.regions.contains_host(h.dest, m.eager.len()) {
        let why = format!(
            "a put of {} bytes at {:#x}: not registered host memory of this PE",
            m.eager.len(),
            h.dest
        );
        // Acknowledged even so: the refusal ends the job, and the sender must not wait for
        // an answer that would never come until then.
        acknowledge(ep, h.peer);
        return refused(rx, false, &why);
    }
    // SAFETY: registered host memory of this process (checked), which peers' puts may
    // write; the source is the message, valid during the handler.
    unsafe {
        rshmem_plugin_api::deliver::deliver(h.dest as usize as *mut u8, m.eager.as_ptr(), m.eager.len())
    };
    acknowledge(ep, h.peer);
    sys::UCS_OK
});

am_handler!(on_get, |rx: &Receiver, m: Message<GetHeader>| {
    let (h, ep) = match request(rx, &m, "a get request") {
        Ok(r) => r,
        Err(status) => return status,
    };
    let len = usize::try_from(h.len).unwrap_or(usize::MAX);
    let ok = len <= CHUNK && rx.regions.contains_host(h.src, len);
    let header = AnswerHeader { token: h.token, status: i32::from(!ok), pad: 0 };
    let reply = if !ok {
        Reply::inline(header, &[])
    } else if len <= INLINE {
        // SAFETY: registered host memory of this process (checked), which peers may read.
        Reply::inline(header, unsafe { std::slice::from_raw_parts(h.src as usize as *const u8, len) })
    } else {
        Reply::at(header, h.src as usize, len)
    };
    send_boxed(ep, ANSWER, reply);
    if !ok {
        return refused(rx, false, &format!("a get of {} bytes at {:#x}: not registered host memory of this PE (or more than {CHUNK} bytes)", h.len, h.src));
    }
    sys::UCS_OK
});

am_handler!(on_amo, |rx: &Receiver, m: Message<AmoHeader>| {
    let (h, ep) = match request(rx, &m, "an atomic request") {
        Ok(r) => r,
        Err(status) => return status,
    };
    let size = h.size as usize;
    let ok = cpu_atomic::valid(h.addr, h.size, h.op) && rx.regions.contains_host(h.addr, size);
    let old = if ok {
        // SAFETY: an aligned word of registered host memory of this process (checked),
        // which the spml and the core only ever update atomically.
        unsafe { cpu_atomic::apply(h.addr as usize, size, h.op, h.value, h.cond) }
    } else {
        0
    };
    let header = AnswerHeader { token: h.token, status: i32::from(!ok), pad: 0 };
    // The old value's first `size` bytes in memory order are the word's.
    send_boxed(ep, ANSWER, Reply::inline(header, &old.to_ne_bytes()[..if ok { size } else { 0 }]));
    if !ok {
        let why = format!(
            "atomic {} on {} bytes at {:#x}: not an aligned word of registered host memory of this PE",
            h.op, h.size, h.addr
        );
        return refused(rx, false, &why);
    }
    sys::UCS_OK
});

/// Refuse a message (ending the job): a rendezvous sender's operation fails with the status
/// returned; eager data is dropped (UCX accepts no other answer for it).
#[cold]
/// A request's header and the endpoint its answer goes back on, or, refused (a bad header, no
/// reply endpoint, sent by rendezvous), the status the handler returns.
fn request<H: Copy>(
    rx: &Receiver,
    m: &Message<'_, H>,
    what: &str,
) -> Result<(H, sys::ucp_ep_h), sys::ucs_status_t> {
    match (&m.header, m.reply_ep) {
        (Ok(h), Some(ep)) if !m.rndv => Ok((*h, ep)),
        (Err(why), _) => Err(refused(rx, m.rndv, &format!("{what} with {why}"))),
        _ => Err(refused(rx, m.rndv, &format!("{what} without a reply endpoint, or by rendezvous"))),
    }
}

fn refused(rx: &Receiver, rndv: bool, why: &str) -> sys::ucs_status_t {
    rx.refuse_rma(why);
    if rndv {
        sys::UCS_ERR_INVALID_PARAM
    } else {
        sys::UCS_OK
    }
}

// ---- the requester's side ----

/// The states of a waiter slot, in the low half of its word (the generation is the high half).
const FREE: u64 = 0;
const CLAIMED: u64 = 1;
const WAITING: u64 = 2;
const FILLING: u64 = 3;
const DONE: u64 = 4;
const FAILED: u64 = 5;

/// Waiter slots per channel: the gets and fetching atomics that can be outstanding at once
/// (a non-blocking get holds one until its answer came).
pub const SLOTS: usize = 1024;

#[derive(Default)]
struct Slot {
    /// `generation << 32 | state`.
    word: AtomicU64,
    /// Where the answer's data goes, and how many bytes it must bring.
    dst: AtomicUsize,
    cap: AtomicUsize,
    /// A non-blocking get: the answer's handler frees the slot itself.
    detached: AtomicBool,
}

/// A channel's outstanding requests. Leaked by its channel, like its batches: the worker's
/// answer handler refers to it.
pub struct Answers {
    slots: Box<[Slot]>,
    next: AtomicUsize,
    /// Non-blocking gets not answered yet; quiet waits until none is left.
    pub detached: AtomicU64,
    /// Set when a non-blocking get was refused (the job is ending); quiet then fails.
    pub refused: AtomicBool,
}

impl Default for Answers {
    fn default() -> Self {
        Answers::new()
    }
}

/// How a waiter ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Waiting,
    Answered,
    Refused,
}

impl Answers {
    pub fn new() -> Answers {
        Answers {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            next: AtomicUsize::new(0),
            detached: AtomicU64::new(0),
            refused: AtomicBool::new(false),
        }
    }

    /// Claim a free slot for an answer of `cap` bytes into `dst`, returning its token; None
    /// when every slot is in use (the caller drives progress and tries again).
    pub fn claim(&self, dst: *mut u8, cap: usize, detached: bool) -> Option<u64> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for k in 0..SLOTS {
            let i = (start + k) % SLOTS;
            let s = &self.slots[i];
            let w = s.word.load(Ordering::Relaxed);
            if w & 0xffff_ffff != FREE {
                continue;
            }
            let gen = w >> 32;
            if s.word.compare_exchange(w, gen << 32 | CLAIMED, Ordering::Acquire, Ordering::Relaxed).is_err()
            {
                continue;
            }
            s.dst.store(dst as usize, Ordering::Relaxed);
            s.cap.store(cap, Ordering::Relaxed);
            s.detached.store(detached, Ordering::Relaxed);
            if detached {
                self.detached.fetch_add(1, Ordering::AcqRel);
            }
            s.word.store(gen << 32 | WAITING, Ordering::Release);
            // Indexes count from 1 in a token: token 0 means "no answer" (see `AmoHeader`).
            return Some(gen << 32 | (i as u64 + 1));
        }
        None
    }

    fn slot(&self, token: u64) -> Option<(&Slot, u64)> {
        let i = (token & 0xffff_ffff).checked_sub(1)?;
        let s = self.slots.get(i as usize)?;
        Some((s, token >> 32))
    }

    /// How the waiter `token` stands; once answered or refused, its slot is free again.
    pub fn poll(&self, token: u64) -> Outcome {
        let Some((s, gen)) = self.slot(token) else { return Outcome::Refused };
        let w = s.word.load(Ordering::Acquire);
        let outcome = match w {
            w if w == gen << 32 | DONE => Outcome::Answered,
            w if w == gen << 32 | FAILED => Outcome::Refused,
            _ => return Outcome::Waiting,
        };
        s.word.store((gen + 1) << 32 | FREE, Ordering::Release);
        outcome
    }

    /// Give up on the waiter `token` (its peer is lost): its slot is freed, and an answer
    /// that comes later finds no waiter. If the answer is being written right now, wait for
    /// it to finish, so nothing writes to the destination after this returns.
    pub fn abandon(&self, token: u64) {
        let Some((s, gen)) = self.slot(token) else { return };
        loop {
            let w = s.word.load(Ordering::Acquire);
            if w >> 32 != gen {
                return; // already freed
            }
            let next = match w & 0xffff_ffff {
                WAITING | DONE | FAILED => (gen + 1) << 32 | FREE,
                _ => {
                    std::hint::spin_loop();
                    continue;
                }
            };
            if s.word.compare_exchange(w, next, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                if s.detached.load(Ordering::Relaxed) && w & 0xffff_ffff == WAITING {
                    self.detached.fetch_sub(1, Ordering::AcqRel);
                }
                return;
            }
        }
    }

    /// An answer arrived: fill its waiter, if it is still waiting for it.
    fn answer(&self, h: &AnswerHeader, data: &[u8]) {
        let Some((s, gen)) = self.slot(h.token) else { return };
        let waiting = gen << 32 | WAITING;
        if s.word
            .compare_exchange(waiting, gen << 32 | FILLING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return; // nobody waits for this one
        }
        let ok = h.status == 0 && data.len() == s.cap.load(Ordering::Relaxed);
        if ok && !data.is_empty() {
            // SAFETY: the waiter's destination, writable for `cap == data.len()` bytes until
            // its slot leaves FILLING (it cannot be abandoned meanwhile).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    data.as_ptr(),
                    s.dst.load(Ordering::Relaxed) as *mut u8,
                    data.len(),
                )
            };
        }
        if s.detached.load(Ordering::Relaxed) {
            if !ok {
                self.refused.store(true, Ordering::Release);
            }
            s.word.store((gen + 1) << 32 | FREE, Ordering::Release);
            self.detached.fetch_sub(1, Ordering::AcqRel);
        } else {
            s.word.store(gen << 32 | if ok { DONE } else { FAILED }, Ordering::Release);
        }
    }
}

am_handler!(on_answer, |a: &Answers, m: Message<AnswerHeader>| {
    match m.header {
        // The bytes came inside the header, or as the data; never both.
        Ok(h) if !m.rndv && (m.tail.is_empty() || m.eager.is_empty()) => {
            a.answer(&h, if m.tail.is_empty() { m.eager } else { m.tail })
        }
        // Not an answer this library sent (answers go eagerly): nobody waits for it.
        _ => return if m.rndv { sys::UCS_ERR_INVALID_PARAM } else { sys::UCS_OK },
    }
    sys::UCS_OK
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_fills_only_its_own_live_waiter() {
        let a = Answers::new();
        let mut dst = [0u8; 4];
        let t = a.claim(dst.as_mut_ptr(), 4, false).expect("a free slot");
        assert_ne!(t, 0, "token 0 means no answer");
        assert_eq!(a.poll(t), Outcome::Waiting);
        // Another generation of the same slot, and a token past the table, find nobody.
        a.answer(&AnswerHeader { token: t + (1 << 32), status: 0, pad: 0 }, &[9; 4]);
        a.answer(&AnswerHeader { token: SLOTS as u64 + 1, status: 0, pad: 0 }, &[9; 4]);
        a.answer(&AnswerHeader { token: 0, status: 0, pad: 0 }, &[9; 4]);
        assert_eq!(dst, [0; 4]);
        a.answer(&AnswerHeader { token: t, status: 0, pad: 0 }, &[1, 2, 3, 4]);
        assert_eq!(a.poll(t), Outcome::Answered);
        assert_eq!(dst, [1, 2, 3, 4]);
        // The slot is free again, and a repeated answer writes nothing.
        a.answer(&AnswerHeader { token: t, status: 0, pad: 0 }, &[7; 4]);
        assert_eq!(dst, [1, 2, 3, 4]);
        assert_eq!(a.poll(t), Outcome::Waiting, "a stale token is never answered");
    }

    #[test]
    fn a_wrong_size_or_a_refusal_fails_the_waiter_and_writes_nothing() {
        let a = Answers::new();
        let mut dst = [0u8; 8];
        let t = a.claim(dst.as_mut_ptr(), 8, false).unwrap();
        a.answer(&AnswerHeader { token: t, status: 0, pad: 0 }, &[1; 4]);
        assert_eq!((a.poll(t), dst), (Outcome::Refused, [0; 8]));
        let t = a.claim(dst.as_mut_ptr(), 8, false).unwrap();
        a.answer(&AnswerHeader { token: t, status: 1, pad: 0 }, &[]);
        assert_eq!(a.poll(t), Outcome::Refused);
    }

    #[test]
    fn an_abandoned_waiter_is_never_written_and_detached_gets_free_themselves() {
        let a = Answers::new();
        let mut dst = [0u8; 2];
        let t = a.claim(dst.as_mut_ptr(), 2, false).unwrap();
        a.abandon(t);
        a.answer(&AnswerHeader { token: t, status: 0, pad: 0 }, &[5, 5]);
        assert_eq!(dst, [0, 0]);
        let t = a.claim(dst.as_mut_ptr(), 2, true).unwrap();
        assert_eq!(a.detached.load(Ordering::Acquire), 1);
        a.answer(&AnswerHeader { token: t, status: 0, pad: 0 }, &[6, 7]);
        assert_eq!((a.detached.load(Ordering::Acquire), dst), (0, [6, 7]));
        assert!(!a.refused.load(Ordering::Acquire));
        // Every slot can be claimed, then none.
        let mut held = Vec::new();
        while let Some(t) = a.claim(dst.as_mut_ptr(), 2, false) {
            held.push(t);
        }
        assert_eq!(held.len(), SLOTS);
        a.abandon(held[3]);
        assert!(a.claim(dst.as_mut_ptr(), 2, false).is_some(), "an abandoned slot is free again");
    }

    #[test]
    fn a_small_answer_travels_inside_its_header_and_a_large_one_as_data() {
        let header = AnswerHeader { token: 5, status: 0, pad: 0 };
        let fixed = std::mem::size_of::<AnswerHeader>();
        let r = Reply::inline(header, &[1, 2, 3]);
        let (h, hlen, d, dlen) = r.parts();
        assert_eq!((hlen, d, dlen), (fixed + 3, std::ptr::null(), 0));
        // SAFETY: `parts` hands out `hlen` readable bytes of `r`.
        let bytes = unsafe { std::slice::from_raw_parts(h as *const u8, hlen) };
        assert_eq!(&bytes[fixed..], &[1, 2, 3]);
        let full = Reply::inline(header, &[9; INLINE]);
        assert_eq!(full.parts().1, fixed + INLINE);
        let src = [0u8; INLINE + 1];
        let r = Reply::at(header, src.as_ptr() as usize, src.len());
        let (_, hlen, d, dlen) = r.parts();
        assert_eq!((hlen, d, dlen), (fixed, src.as_ptr() as *const c_void, INLINE + 1));
    }
}
