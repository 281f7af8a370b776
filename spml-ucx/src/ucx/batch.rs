//! Small puts batched per peer: over TCP every UCX message costs a system call, about 6 µs
//! between two emulated hosts, so an 8-byte put cost that much whatever carried it. A channel
//! keeps a buffer per peer; a put of at most [`PUT_MAX`] bytes is appended to it (destination,
//! length, bytes) and returns, since the source may be reused at once. The buffer travels as
//! one active message (`BATCH`) when it is full, when the application waits or progresses
//! inside the library, before any other operation to that peer, at quiet, and, when the
//! application computes, when the progress thread takes over (see `super::progress_loop`).
//! The target's handler copies each put into place, in order, and answers with an `ACK`; quiet
//! waits for every batch it sent to be acknowledged, so the puts are then remotely complete.
//!
//! Ordering (the spec's fence): puts to one peer after a fence travel in the same buffer, or in
//! a later message on the same endpoint, after those before it, so a fence costs nothing for
//! them. An operation that does not travel in the batch (a get, an atomic, a larger put, a
//! put-with-signal message) first sends the peer's buffer. What travels on the endpoint's
//! active-message lane after it is applied after it: other active messages, and atomics where
//! UCX emulates them with active messages (as over TCP, the only place where batching is on by
//! default). Anything else (RMA, which UCX may spread over other lanes and connections, or
//! atomics done by the network) after a fence waits for the acknowledgement of every batch
//! holding puts from before the fence: [`Slot::fence_mark`], kept lazily per peer against the
//! channel's fence generation.
//!
//! The handler writes only host memory this process registered for remote access
//! (`super::am::Regions`); a message naming anything else is refused and ends the job.

use super::am::Receiver;
use super::cpu_atomic;
use super::handler::{am_handler, check_header_room, send_boxed, set_handler, Outbound, Wire};
use rshmem_plugin_api::{AMO_CSWAP, AMO_FETCH, AMO_SWAP};
use rshmem_ucx_sys as sys;
use std::alloc::Layout;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Active-message ids (put-with-signal is 1, transfers through the target 2-4).
pub const BATCH: u32 = 5;
pub const ACK: u32 = 6;

/// Puts of at most this many bytes are batched. Over TCP a message of a few hundred bytes
/// costs what an 8-byte one does, so batching pays for every put that shares a message.
pub const PUT_MAX: usize = 256;

/// Bytes of entries a peer's buffer holds: one page, so a buffer that is never used costs no
/// memory (the buffers are one zeroed allocation, whose untouched pages the kernel does not
/// back), and one eager message carries it whole.
pub const CAP: usize = 4096;

/// An entry: the destination address (8 bytes) and the length (4), then the bytes.
pub const ENTRY_HEADER: usize = 12;

/// A length word with this bit set is an atomic that fetches nothing (with `rma_in_messages`,
/// see `rma_am`): its low byte is the width (4 or 8), the next byte the operation (`AMO_*`),
/// and 8 bytes of operand follow. The target applies it with a CPU atomic, in order with the
/// puts around it.
pub const ATOMIC_ENTRY: u32 = 1 << 31;
pub const ATOMIC_OPERAND: usize = 8;

/// One entry of a batch, as the target reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry<'a> {
    Put { dest: u64, bytes: &'a [u8] },
    Atomic { dest: u64, op: u32, size: u32, value: u64 },
}

/// A batch's header: the target's index in the sender's table (returned in the `ACK`, so the
/// sender knows whose batch was applied) and the number of entries.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub peer: u32,
    pub count: u32,
}

// SAFETY: `repr(C)`, two u32s.
unsafe impl Wire for Header {}

pub const HEADER_BYTES: usize = std::mem::size_of::<Header>();

/// An acknowledgement is the header alone.
impl Outbound for Header {
    fn parts(&self) -> (*const c_void, usize, *const c_void, usize) {
        ((self as *const Header).cast(), HEADER_BYTES, std::ptr::null(), 0)
    }
}

/// One peer's buffer state. `len` and `count` change only under `lock`; `len` is also read
/// without it, as a hint that there is something to send.
pub struct Slot {
    lock: AtomicBool,
    pub len: AtomicUsize,
    pub count: AtomicU32,
    /// Batches sent to this peer, and acknowledged by it (both only grow).
    pub sent: AtomicU64,
    pub acked: AtomicU64,
    /// `acked` must reach this before an operation outside the batch goes to the peer: the
    /// batches that hold puts issued before the last fence.
    pub fence_mark: AtomicU64,
    /// The channel's fence generation `fence_mark` was computed for.
    pub fence_gen: AtomicU64,
}

impl Slot {
    /// Whether nothing of this peer's is waiting or unacknowledged.
    #[inline(always)]
    pub fn settled(&self) -> bool {
        self.len.load(Ordering::Relaxed) == 0
            && self.acked.load(Ordering::Acquire) >= self.sent.load(Ordering::Relaxed)
    }

    /// Take the lock, spinning (the holder appends a few bytes or sends one message).
    #[inline(always)]
    pub fn lock(&self) -> SlotGuard<'_> {
        while self.lock.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            std::hint::spin_loop();
            if self.lock.load(Ordering::Relaxed) {
                std::thread::yield_now();
            }
        }
        SlotGuard(self)
    }

    pub fn try_lock(&self) -> Option<SlotGuard<'_>> {
        // Not `then_some`: a guard built for nothing would release the holder's lock when dropped.
        match self.lock.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => Some(SlotGuard(self)),
            Err(_) => None,
        }
    }
}

/// Holds a [`Slot`]'s lock until dropped.
pub struct SlotGuard<'a>(&'a Slot);

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        self.0.lock.store(false, Ordering::Release);
    }
}

/// How a put that leaves the first bytes waiting wakes the progress thread when it sleeps on
/// the default worker's event fd, so that a PE that goes on computing still delivers them
/// within the thread's pause.
pub struct Wake {
    pub worker: usize,
    pub sleeping: AtomicBool,
}

/// A channel's buffers, one [`Slot`] and [`CAP`] bytes per peer. Leaked by its channel: the
/// acknowledgement handler of the worker refers to it, and a worker may be left to the process
/// exit (see `Channel::close`).
pub struct Batches {
    pub slots: Box<[Slot]>,
    buf: *mut u8,
    len: usize,
    /// Batches sent and not yet acknowledged, all peers together.
    pub unacked: AtomicU64,
    /// Peers whose buffer holds bytes.
    pub waiting: AtomicUsize,
    /// Fences issued while something was outstanding.
    pub fence_gen: AtomicU64,
    pub wake: OnceLock<&'static Wake>,
    /// The owner's activity counter as the progress thread last saw it.
    pub thread_seen: AtomicU64,
    /// Whether UCX carries atomics on the active-message lane (software atomics, as over
    /// TCP): they then follow the batches sent before them, in order.
    pub amos_on_am_lane: bool,
}

// SAFETY: a peer's bytes in `buf` are only touched under its slot's lock; the rest is atomics.
unsafe impl Send for Batches {}
// SAFETY: as above.
unsafe impl Sync for Batches {}

impl Batches {
    pub fn new(n_pes: usize, amos_on_am_lane: bool) -> Batches {
        let len = n_pes.max(1) * CAP;
        // Mapped, not allocated: anonymous pages are zero and cost nothing until a peer's
        // buffer is first written. (`alloc_zeroed` at page alignment zeroes with a memset,
        // which made every PE hold 4 KiB of dirty memory per peer, contacted or not: measured
        // with tests/bench/footprint.c, 2026-11-28.)
        // SAFETY: a fresh private anonymous mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            std::alloc::handle_alloc_error(Layout::from_size_align(len, 4096).expect("a valid layout"));
        }
        Batches {
            // Zeroed memory: a peer never sent to costs no resident byte (issue 51).
            // SAFETY: every field of a `Slot` is an atomic integer or flag, for which all-zero
            // bytes are a valid value (0, false): an idle, unlocked slot.
            slots: unsafe { Box::<[Slot]>::new_zeroed_slice(n_pes).assume_init() },
            buf: p.cast(),
            len,
            unacked: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
            fence_gen: AtomicU64::new(0),
            wake: OnceLock::new(),
            thread_seen: AtomicU64::new(0),
            amos_on_am_lane,
        }
    }

    /// `(bytes, resident bytes)` of the slots and buffers, one of each per PE.
    pub fn tables(&self) -> (u64, u64) {
        use rshmem_plugin_api::footprint::resident_bytes;
        // SAFETY: `buf` is this value's mapping of `len` bytes, alive as long as it is; only
        // its addresses are read (mincore), not its bytes.
        let buf = unsafe { std::slice::from_raw_parts(self.buf as *const u8, self.len) };
        let bytes = std::mem::size_of_val(&*self.slots) + self.len;
        (bytes as u64, resident_bytes(&self.slots) + resident_bytes(buf))
    }

    /// Count a message to the slot's peer that will be acknowledged, before it leaves: the
    /// acknowledgement may come during the send's own progress.
    #[inline(always)]
    pub fn count_sent(&self, s: &Slot) {
        s.sent.fetch_add(1, Ordering::AcqRel);
        self.unacked.fetch_add(1, Ordering::AcqRel);
    }

    /// Take back [`Batches::count_sent`] for a send that failed: no acknowledgement will come.
    #[inline(always)]
    pub fn uncount_sent(&self, s: &Slot) {
        s.sent.fetch_sub(1, Ordering::AcqRel);
        self.unacked.fetch_sub(1, Ordering::AcqRel);
    }

    /// Peer `pe`'s buffer; only to be used under its slot's lock.
    ///
    /// # Safety
    /// `pe` is in range and the caller holds the slot's lock.
    #[inline(always)]
    pub unsafe fn buffer(&self, pe: usize) -> *mut u8 {
        // SAFETY: in range (caller): the allocation holds `n_pes * CAP` bytes.
        unsafe { self.buf.add(pe * CAP) }
    }

    /// Bring the slot's fence mark up to the channel's latest fence, before anything is
    /// appended to it: everything it holds now predates that fence.
    #[inline(always)]
    pub fn catch_up(&self, s: &Slot, _held: &SlotGuard<'_>) {
        let g = self.fence_gen.load(Ordering::Acquire);
        if s.fence_gen.load(Ordering::Relaxed) != g {
            s.fence_gen.store(g, Ordering::Relaxed);
            let pending = u64::from(s.len.load(Ordering::Relaxed) > 0);
            s.fence_mark.store(s.sent.load(Ordering::Relaxed) + pending, Ordering::Relaxed);
        }
    }

    /// Append one atomic that fetches nothing to the slot's buffer, which has room for it
    /// ([`ENTRY_HEADER`] + [`ATOMIC_OPERAND`] bytes).
    ///
    /// # Safety
    /// The caller holds the slot's lock; the entry fits.
    #[inline(always)]
    pub unsafe fn append_atomic(&self, pe: usize, dest: u64, op: u32, size: u32, value: u64) {
        let s = &self.slots[pe];
        let at = s.len.load(Ordering::Relaxed);
        debug_assert!(at + ENTRY_HEADER + ATOMIC_OPERAND <= CAP);
        // SAFETY: inside this peer's CAP bytes (caller), which only the lock holder touches.
        unsafe {
            let p = self.buffer(pe).add(at);
            std::ptr::write_unaligned(p as *mut u64, dest);
            std::ptr::write_unaligned(p.add(8) as *mut u32, ATOMIC_ENTRY | (op & 0xff) << 8 | (size & 0xff));
            std::ptr::write_unaligned(p.add(ENTRY_HEADER) as *mut u64, value);
        }
        s.len.store(at + ENTRY_HEADER + ATOMIC_OPERAND, Ordering::Relaxed);
        s.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Append one put to the slot's buffer, which has room for it.
    ///
    /// # Safety
    /// The caller holds the slot's lock; `src` is readable for `len` bytes; the entry fits.
    #[inline(always)]
    pub unsafe fn append(&self, pe: usize, dest: u64, src: *const u8, len: usize) {
        let s = &self.slots[pe];
        let at = s.len.load(Ordering::Relaxed);
        debug_assert!(at + ENTRY_HEADER + len <= CAP);
        // SAFETY: inside this peer's CAP bytes (caller), which only the lock holder touches.
        unsafe {
            let p = self.buffer(pe).add(at);
            std::ptr::write_unaligned(p as *mut u64, dest);
            std::ptr::write_unaligned(p.add(8) as *mut u32, len as u32);
            std::ptr::copy_nonoverlapping(src, p.add(ENTRY_HEADER), len);
        }
        s.len.store(at + ENTRY_HEADER + len, Ordering::Relaxed);
        s.count.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Batches {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this length, unmapped once.
        unsafe { libc::munmap(self.buf.cast(), self.len) };
    }
}

/// Install the batch handler on the default worker, whose [`Receiver`] knows the memory it may
/// write. `rx` must outlive the worker.
pub fn install_receiver(rx: &'static Receiver, worker: sys::ucp_worker_h) -> Result<(), String> {
    check_header_room(worker, HEADER_BYTES, "batched puts")?;
    set_handler(worker, BATCH, on_batch, rx as *const Receiver as *mut c_void)
}

/// Install the acknowledgement handler on a channel's worker (every worker that sends batches).
pub fn install_acks(b: &'static Batches, worker: sys::ucp_worker_h) -> Result<(), String> {
    check_header_room(worker, HEADER_BYTES, "batched puts")?;
    set_handler(worker, ACK, on_ack, b as *const Batches as *mut c_void)
}

/// Walk a batch's entries in order, calling `f` with each; stops at the first error, `f`'s or
/// why the message is malformed.
pub fn walk(
    data: &[u8],
    count: u32,
    mut f: impl FnMut(Entry<'_>) -> Result<(), String>,
) -> Result<(), String> {
    let mut at = 0usize;
    for i in 0..count {
        let head = data
            .get(at..at + ENTRY_HEADER)
            .ok_or_else(|| format!("entry {i} of {count} starts past the {} bytes sent", data.len()))?;
        let dest = u64::from_ne_bytes(head[..8].try_into().expect("8 bytes"));
        let word = u32::from_ne_bytes(head[8..].try_into().expect("4 bytes"));
        let len = if word & ATOMIC_ENTRY != 0 { ATOMIC_OPERAND } else { word as usize };
        let body = data
            .get(at + ENTRY_HEADER..at + ENTRY_HEADER + len)
            .ok_or_else(|| format!("entry {i} of {count} ({len} bytes) runs past the message"))?;
        f(if word & ATOMIC_ENTRY != 0 {
            let value = u64::from_ne_bytes(body.try_into().expect("8 bytes"));
            Entry::Atomic { dest, op: word >> 8 & 0xff, size: word & 0xff, value }
        } else {
            Entry::Put { dest, bytes: body }
        })?;
        at += ENTRY_HEADER + len;
    }
    if at != data.len() {
        return Err(format!("{} bytes after the last of {count} entries", data.len() - at));
    }
    Ok(())
}

/// Apply a batch: check every entry against the registered host memory first, then apply each
/// in order (a later put to the same bytes wins, as it would have arrived later).
fn apply(rx: &Receiver, data: &[u8], count: u32) -> Result<(), String> {
    walk(data, count, |e| {
        match e {
        Entry::Put { dest, bytes } if !rx.regions.contains_host(dest, bytes.len()) => {
            Err(format!("{} bytes at {dest:#x} are not registered host memory of this PE", bytes.len()))
        }
        Entry::Atomic { dest, op, size, .. }
            if !(cpu_atomic::valid(dest, size, op)
                && !matches!(op, AMO_FETCH | AMO_SWAP | AMO_CSWAP)
                && rx.regions.contains_host(dest, size as usize)) =>
        {
            Err(format!(
                "atomic {op} on {size} bytes at {dest:#x}: not an atomic that fetches nothing on an aligned word of registered host memory of this PE"
            ))
        }
        _ => Ok(()),
    }
    })?;
    walk(data, count, |e| {
        match e {
            // SAFETY: registered host memory of this process (checked above), which the
            // sender's puts may write; the source is the message, valid during the handler.
            Entry::Put { dest, bytes } => unsafe {
                rshmem_plugin_api::deliver::deliver(dest as usize as *mut u8, bytes.as_ptr(), bytes.len())
            },
            // SAFETY: an aligned word of registered host memory (checked above), which the
            // spml and the core only ever update atomically.
            Entry::Atomic { dest, op, size, value } => unsafe {
                cpu_atomic::apply(dest as usize, size as usize, op, value, 0);
            },
        }
        Ok(())
    })
}

am_handler!(on_batch, |rx: &Receiver, m: Message<Header>| {
    if m.rndv {
        rx.refuse_batch("a rendezvous message (batches are sent eagerly)");
        return sys::UCS_ERR_INVALID_PARAM;
    }
    let h = match m.header {
        Ok(h) => h,
        Err(why) => {
            rx.refuse_batch(&why);
            return sys::UCS_OK;
        }
    };
    if let Err(why) = apply(rx, m.eager, h.count) {
        rx.refuse_batch(&why);
    }
    // Acknowledged even when refused: the refusal ends the job, and the sender must not
    // wait for an answer that would never come until then.
    match m.reply_ep {
        // From inside the handler nothing may wait: the header is boxed until it is sent.
        Some(ep) => send_boxed(ep, ACK, Header { peer: h.peer, count: h.count }),
        None => rx.refuse_batch("a batch without a reply endpoint"),
    }
    sys::UCS_OK
});

am_handler!(on_ack, |b: &Batches, m: Message<Header>| {
    let Ok(h) = m.header else {
        return sys::UCS_OK; // not an acknowledgement this library sent
    };
    let Some(s) = b.slots.get(h.peer as usize) else { return sys::UCS_OK };
    // Only what was sent can be acknowledged: a stray answer must not release a quiet.
    let acked = s.acked.load(Ordering::Acquire);
    if acked < s.sent.load(Ordering::Acquire) {
        s.acked.store(acked + 1, Ordering::Release);
        b.unacked.fetch_sub(1, Ordering::AcqRel);
    }
    sys::UCS_OK
});

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(puts: &[(u64, &[u8])]) -> Vec<u8> {
        let mut v = Vec::new();
        for (d, b) in puts {
            v.extend_from_slice(&d.to_ne_bytes());
            v.extend_from_slice(&(b.len() as u32).to_ne_bytes());
            v.extend_from_slice(b);
        }
        v
    }

    fn entries(data: &[u8], count: u32) -> Result<Vec<(u64, Vec<u8>)>, String> {
        let mut v = Vec::new();
        walk(data, count, |e| match e {
            Entry::Put { dest, bytes } => {
                v.push((dest, bytes.to_vec()));
                Ok(())
            }
            Entry::Atomic { .. } => Err("an atomic".into()),
        })?;
        Ok(v)
    }

    #[test]
    fn atomics_travel_between_puts_and_decode_to_what_was_appended() {
        let b = Batches::new(1, true);
        let s = &b.slots[0];
        let _g = s.lock();
        let data = [1u8, 2, 3];
        // SAFETY: the lock is held and the entries fit.
        unsafe {
            b.append(0, 0x10, data.as_ptr(), 3);
            b.append_atomic(0, 0x18, rshmem_plugin_api::AMO_ADD, 8, u64::MAX);
            b.append_atomic(0, 0x24, rshmem_plugin_api::AMO_SET, 4, 7);
            b.append(0, 0x30, data.as_ptr(), 1);
        }
        let len = s.len.load(Ordering::Relaxed);
        assert_eq!(len, 4 * ENTRY_HEADER + 3 + 2 * ATOMIC_OPERAND + 1);
        // SAFETY: peer 0 is in range and its lock is held.
        let bytes = unsafe { std::slice::from_raw_parts(b.buffer(0), len) };
        let mut seen = Vec::new();
        walk(bytes, 4, |e| {
            seen.push(format!("{e:?}"));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            seen,
            [
                format!("{:?}", Entry::Put { dest: 0x10, bytes: &data }),
                format!(
                    "{:?}",
                    Entry::Atomic { dest: 0x18, op: rshmem_plugin_api::AMO_ADD, size: 8, value: u64::MAX }
                ),
                format!(
                    "{:?}",
                    Entry::Atomic { dest: 0x24, op: rshmem_plugin_api::AMO_SET, size: 4, value: 7 }
                ),
                format!("{:?}", Entry::Put { dest: 0x30, bytes: &data[..1] }),
            ]
        );
        // Cut inside the second atomic's operand.
        let cut = (ENTRY_HEADER + 3) + (ENTRY_HEADER + ATOMIC_OPERAND) + ENTRY_HEADER + 4;
        assert!(walk(&bytes[..cut], 3, |_| Ok(())).unwrap_err().contains("runs past"));
    }

    #[test]
    fn entries_round_trip_and_malformed_batches_are_named() {
        let msg = encode(&[(0x1000, b"abc"), (0x2000, b""), (0x3000, &[7u8; 256])]);
        let e = entries(&msg, 3).expect("well formed");
        assert_eq!(e.len(), 3);
        assert_eq!(e[0], (0x1000, b"abc".to_vec()));
        assert_eq!(e[1], (0x2000, vec![]));
        assert_eq!(e[2].1.len(), 256);
        assert!(entries(&msg, 4).unwrap_err().contains("starts past"));
        assert!(entries(&msg, 2).unwrap_err().contains("after the last"));
        assert!(entries(&msg[..msg.len() - 1], 3).unwrap_err().contains("runs past"));
    }

    #[test]
    fn appended_puts_are_what_a_batch_decodes_to() {
        let b = Batches::new(3, true);
        let s = &b.slots[2];
        let g = s.lock();
        assert!(s.try_lock().is_none(), "the lock excludes a second holder");
        assert!(s.try_lock().is_none(), "and a failed try leaves it held");
        let data = [1u8, 2, 3, 4, 5];
        // SAFETY: the lock is held and both entries fit.
        unsafe {
            b.append(2, 0xabc, data.as_ptr(), 5);
            b.append(2, 0xdef, data.as_ptr(), 2);
        }
        let len = s.len.load(Ordering::Relaxed);
        assert_eq!(len, 2 * ENTRY_HEADER + 7);
        // SAFETY: peer 2 is in range and its lock is held.
        let bytes = unsafe { std::slice::from_raw_parts(b.buffer(2), len) };
        let e = entries(bytes, s.count.load(Ordering::Relaxed)).expect("decodes");
        assert_eq!(e, vec![(0xabc, data.to_vec()), (0xdef, data[..2].to_vec())]);
        drop(g);
        assert!(s.try_lock().is_some());
        // Untouched peers' buffers stay empty.
        assert!(b.slots[0].settled() && b.slots[1].settled() && !s.settled());
    }

    #[test]
    fn a_fence_marks_what_was_there_before_it() {
        let b = Batches::new(1, true);
        let s = &b.slots[0];
        let one = [9u8];
        {
            let g = s.lock();
            b.catch_up(s, &g);
            // SAFETY: held lock; fits.
            unsafe { b.append(0, 8, one.as_ptr(), 1) };
        }
        s.sent.store(3, Ordering::Relaxed); // three batches went before
        b.fence_gen.fetch_add(1, Ordering::AcqRel);
        let g = s.lock();
        b.catch_up(s, &g);
        // The three sent and the one still waiting predate the fence.
        assert_eq!(s.fence_mark.load(Ordering::Relaxed), 4);
        // Nothing changes until the next fence.
        s.sent.store(9, Ordering::Relaxed);
        b.catch_up(s, &g);
        assert_eq!(s.fence_mark.load(Ordering::Relaxed), 4);
    }
}
