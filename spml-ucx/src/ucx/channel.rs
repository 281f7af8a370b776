//! A channel: one UCX worker with an endpoint to every PE and the peers' remote keys unpacked
//! for those endpoints. The default OpenSHMEM context uses the [`Ucx`](super::Ucx)'s own channel
//! (whose worker the progress thread also drives); each context the application creates gets a
//! channel of its own, so that its `quiet` flushes only its own worker and contexts complete
//! independently, as the spec intends (9.4) and as OSHMEM's spml ucx does.
//!
//! Hot paths ([`Channel::put`], [`Channel::get`], [`Channel::atomic_add_u64`],
//! [`Channel::atomic`]) neither allocate nor log, and lock only what UCX locks itself (its
//! worker, in multi-thread mode) plus, for a batched put, the peer's batch: an uncontended
//! atomic exchange where the message it replaces cost a system call (see `batch`). They report
//! failures as a `Copy` [`OpError`].

use super::batch::{self, Batches, Slot, SlotGuard};
use super::rma_am::{self, Answers, Outcome};
use super::{check, status, EpArg, Health, OpError, MAX_SEGMENTS};
use rshmem_plugin_api::{AMO_ADD, AMO_AND, AMO_CSWAP, AMO_FETCH, AMO_OR, AMO_SET, AMO_SWAP, AMO_XOR};
use rshmem_ucx_sys as sys;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Put-with-signal messages up to this size go eagerly (UCX reassembles them for the handler,
/// which copies them into place) rather than by rendezvous, whose extra round trips cost more
/// than the copy here: across two emulated hosts over TCP, a hier reduction of 32 KiB took
/// 22-25 µs eager against 38 by rendezvous, 128 KiB 56-58 against 71-72, 256 KiB 97-100
/// against 110, while 1 MiB was level (387 either way; docs/performance.md, 2026-11-24).
/// Measured over TCP only: on RDMA transports a zero-copy rendezvous may win earlier.
pub const PUT_SIGNAL_EAGER_MAX: usize = 256 * 1024;

/// How an operation that does not travel in a batch reaches the peer, which decides whether,
/// after a fence, it must wait for the batches before it to be acknowledged (see `batch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Path {
    /// An active message: on the endpoint's active-message lane, like the batches, so sent
    /// after them it is applied after them.
    Am,
    /// An atomic: on the active-message lane too where UCX emulates atomics in software, as
    /// over TCP ([`Batches::amos_on_am_lane`]); else on a lane of its own.
    Amo,
    /// RMA, which UCX may spread over other lanes (and connections).
    Rma,
}

/// The idle rounds of a wait: the first `spin` rounds that found nothing to do spin, each one
/// after them yields the core (the PE that has to answer may be waiting for it).
struct Backoff {
    idle: u32,
    spin: u32,
}

impl Backoff {
    #[inline(always)]
    fn new(spin: u32) -> Backoff {
        Backoff { idle: 0, spin }
    }

    /// After a round of progress; `busy`: it found something to do.
    #[inline(always)]
    fn round(&mut self, busy: bool) {
        if busy {
            self.idle = 0;
        } else if self.idle < self.spin {
            self.idle += 1;
        } else {
            std::thread::yield_now();
        }
    }
}

/// The created channels (whose workers the default channel's waits drive, and whose batches
/// the progress thread sends while their contexts are idle).
pub type ChannelList = Arc<Mutex<Vec<Arc<Channel>>>>;

/// Every channel's worker is multi-threaded, whatever its context promises (PRIVATE,
/// SERIALIZED): other threads drive it too (a peer's flush can depend on its answers), and a
/// pooled channel may serve another thread's context later.
pub struct Channel {
    worker: sys::ucp_worker_h,
    /// Made on first use of a peer, except those `connect` makes at once (see [`Lazy`]).
    /// Zeroed memory, like `rkeys`: a peer never reached costs no resident byte (issue 51).
    eps: Box<[AtomicPtr<sys::ucp_ep>]>,
    /// `rkeys[seg * n_pes + pe]`, unpacked for `eps[pe]` (on first use, like it): segment-major,
    /// so the pages of segment ids never used are never touched.
    rkeys: Box<[AtomicPtr<sys::ucp_rkey>]>,
    /// What endpoints and keys are made from when first needed.
    lazy: Mutex<Lazy>,
    /// Endpoint failures of every channel of a `Ucx` go to the same record.
    health: Arc<Health>,
    /// Other workers this channel's waits drive now and then (the default channel drives the
    /// created ones: a peer's flush may wait for one of them to answer while its own context
    /// is idle, and two PEs flushing at once must not wait for each other forever).
    companions: Option<ChannelList>,
    /// The default worker of this process, for a created channel: waits for acknowledgements
    /// drive it too, since a batch this PE sends itself is applied there.
    home: usize,
    /// Small puts batched per peer (see `batch`), when enabled.
    batches: Option<&'static Batches>,
    /// The waiters for answers to this channel's requests (`rma_am`, `target`), once enabled.
    answers: Option<&'static Answers>,
    /// Larger puts, gets and atomics carried in the spml's own active messages (`rma_am`)
    /// (only with batches, whose acknowledgements they share, and answers).
    rma: bool,
    /// Changes whenever an application thread drives this worker or issues an operation on it;
    /// the progress thread leaves the worker alone while it keeps changing (see
    /// `super::progress_loop`).
    activity: Arc<AtomicU64>,
    closed: AtomicBool,
    /// Idle rounds [`Channel::wait`] spins before yielding.
    spin: super::Spin,
}

/// Endpoints and keys made on first use. Start-up used to create an endpoint to every PE and
/// unpack every PE's keys: O(N) per PE, over TCP connections (UCX's peer failure detection
/// keeps it off shared memory), while on one host with mapped peers none of them is ever used.
/// At 128 PEs on 2 cores that was 3.5 s of `spml connect` and 3 s of unpacking per PE
/// (2026-11-27). An endpoint now costs one branch on first use (`ep`, `target`: the slot is
/// null), then the making under `Lazy`'s lock.
struct Lazy {
    /// Every PE's worker address (looked up on first use), once connected.
    addrs: Option<Arc<super::addrs::AddrBook>>,
    /// Packed keys announced for peers whose endpoint did not exist yet: `(pe, seg)`.
    packed: std::collections::HashMap<(usize, usize), Vec<u8>>,
    /// The error handlers' arguments of the endpoints made, one per peer reached (boxed: UCX
    /// keeps the address until the endpoint is closed).
    #[allow(clippy::vec_box)] // each must stay where it is while the Vec grows
    args: Vec<Box<EpArg>>,
    /// What each `EpArg` points at (the channel's `health`).
    health: *const Health,
}

impl Default for Lazy {
    fn default() -> Lazy {
        Lazy { addrs: None, packed: Default::default(), args: Vec::new(), health: std::ptr::null() }
    }
}

/// `len` null pointers in zeroed memory: for a table of many PEs, fresh pages the kernel backs
/// only where a peer's slot is first written.
fn null_pointers<T>(len: usize) -> Box<[AtomicPtr<T>]> {
    // SAFETY: all-zero bytes are a valid `AtomicPtr` (null).
    unsafe { Box::<[AtomicPtr<T>]>::new_zeroed_slice(len).assume_init() }
}

// SAFETY: a Multi channel's worker serialises concurrent calls itself; Serialized and Private
// channels are used by one thread at a time by the OpenSHMEM contract of their context. The
// endpoint and key tables are atomics, and `EpArg`'s raw pointer refers to the `Health` this
// channel keeps alive.
unsafe impl Send for Channel {}
// SAFETY: as above.
unsafe impl Sync for Channel {}

impl Channel {
    /// A worker of `context` for `n_pes` peers (no endpoints yet).
    pub(super) fn new(
        context: sys::ucp_context_h,
        n_pes: usize,
        health: Arc<Health>,
        spin: super::Spin,
    ) -> Result<Channel, String> {
        let wparams = sys::ucp_worker_params_t {
            field_mask: sys::UCP_WORKER_PARAM_FIELD_THREAD_MODE as u64,
            thread_mode: sys::UCS_THREAD_MODE_MULTI,
            ..Default::default()
        };
        let mut worker: sys::ucp_worker_h = std::ptr::null_mut();
        // SAFETY: a live context (caller), valid parameters and out-pointer.
        check("ucp_worker_create", unsafe { sys::ucp_worker_create(context, &wparams, &mut worker) })?;
        {
            let mut attr = sys::ucp_worker_attr_t {
                field_mask: sys::UCP_WORKER_ATTR_FIELD_THREAD_MODE as u64,
                ..Default::default()
            };
            // SAFETY: our live worker; valid out-pointer.
            let ok = unsafe { sys::ucp_worker_query(worker, &mut attr) } == sys::UCS_OK
                && attr.thread_mode == sys::UCS_THREAD_MODE_MULTI;
            if !ok {
                // SAFETY: nothing else uses the worker yet.
                unsafe { sys::ucp_worker_destroy(worker) };
                return Err("UCX cannot provide a multi-thread worker (UCS_THREAD_MODE_MULTI)".into());
            }
        }
        let hp = Arc::as_ptr(&health);
        Ok(Channel {
            worker,
            eps: null_pointers(n_pes),
            rkeys: null_pointers(n_pes * MAX_SEGMENTS),
            lazy: Mutex::new(Lazy { health: hp, ..Lazy::default() }),
            health,
            companions: None,
            home: 0,
            batches: None,
            answers: None,
            rma: false,
            activity: Arc::new(AtomicU64::new(0)),
            closed: AtomicBool::new(false),
            spin,
        })
    }

    pub(super) fn with_companions(mut self, c: ChannelList) -> Channel {
        self.companions = Some(c);
        self
    }

    /// A created channel drives `home`, the default worker, while waiting for acknowledgements.
    pub(super) fn with_home(mut self, home: sys::ucp_worker_h) -> Channel {
        self.home = home as usize;
        self
    }

    /// Batch small puts from now on, acknowledged on this channel's worker; `wake` is how a
    /// first waiting put wakes the progress thread. With `rma_in_messages`, carry every other
    /// put, get and atomic in the spml's own messages too (`rma_am`). Before any operation.
    pub(super) fn enable_batching(
        &mut self,
        n_pes: usize,
        amos_on_am_lane: bool,
        rma_in_messages: bool,
        wake: Option<&'static batch::Wake>,
    ) -> Result<(), String> {
        let b: &'static Batches =
            Box::leak(Box::new(Batches::new(n_pes, amos_on_am_lane || rma_in_messages)));
        if let Some(w) = wake {
            let _ = b.wake.set(w);
        }
        batch::install_acks(b, self.worker)?;
        self.batches = Some(b);
        self.rma = rma_in_messages && self.answers.is_some();
        Ok(())
    }

    /// Take answers to requests on this worker from now on (`rma_am`, `target`). Before any
    /// operation, and before [`Channel::enable_batching`] for RMA in messages.
    pub(super) fn enable_answers(&mut self) -> Result<(), String> {
        let a: &'static Answers = Box::leak(Box::new(Answers::new()));
        rma_am::install_answers(a, self.worker)?;
        self.answers = Some(a);
        Ok(())
    }

    /// The answers table, when RMA travels in the spml's own messages.
    #[inline(always)]
    fn rma_answers(&self) -> Option<&'static Answers> {
        if self.rma {
            self.answers
        } else {
            None
        }
    }

    /// The answers table (see [`Channel::enable_answers`]).
    pub(super) fn answers(&self) -> Option<&'static Answers> {
        self.answers
    }

    /// Whether puts, gets and atomics travel in the spml's own messages (`rma_am`).
    pub fn rma_in_messages(&self) -> bool {
        self.rma
    }

    /// Whether small puts are batched.
    pub fn batching(&self) -> bool {
        self.batches.is_some()
    }

    /// Drive the companion workers once.
    #[cold]
    fn progress_companions(&self) {
        if let Some(c) = &self.companions {
            for ch in c.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                // SAFETY: live multi-thread-mode workers (removed from the list before closing).
                unsafe { sys::ucp_worker_progress(ch.worker) };
            }
        }
    }

    /// How a wait spins before yielding (created channels take the default one's).
    pub(super) fn spin(&self) -> super::Spin {
        self.spin
    }

    pub fn worker(&self) -> sys::ucp_worker_h {
        self.worker
    }

    /// The activity counter the progress thread watches.
    pub(super) fn activity(&self) -> Arc<AtomicU64> {
        self.activity.clone()
    }

    /// Note that an application thread is using the worker. A plain load and store, not an
    /// atomic add: the counter only has to change, and racing writers still change it.
    #[inline(always)]
    fn touch(&self) {
        let a = &self.activity;
        a.store(a.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    /// This worker's address, which peers need to create their endpoints to it.
    pub(super) fn address(&self) -> Result<Vec<u8>, String> {
        let mut addr: *mut sys::ucp_address_t = std::ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: our live worker; valid out-pointers.
        check("ucp_worker_get_address", unsafe {
            sys::ucp_worker_get_address(self.worker, &mut addr, &mut len)
        })?;
        // SAFETY: UCX returned `len` readable bytes at `addr`; released right after the copy.
        let v = unsafe { std::slice::from_raw_parts(addr as *const u8, len) }.to_vec();
        // SAFETY: the address came from this worker.
        unsafe { sys::ucp_worker_release_address(self.worker, addr) };
        Ok(v)
    }

    /// Learn every PE's address (`addrs[pe]` is the worker address of its default channel) and
    /// create the endpoints to the PEs `eager` names now, the others at their first use (see
    /// [`Lazy`]). Endpoints have peer failure detection, the one to this process's own worker
    /// included. Asking for detection keeps UCX off its `self` and shared-memory transports,
    /// which cannot detect failures, and that is wanted: in UCX 1.13.1 their fetching AND, OR
    /// and XOR are wrong (fetch-and and fetch-or leave the word unchanged, fetch-xor zeroes
    /// it; `every_atomic_operation_in_both_widths` fails when the endpoint to self uses
    /// `self`). A PE's operations on itself then cost a TCP loopback round trip when mapping
    /// is off; with mapping on they never reach the spml.
    pub(super) fn connect(
        &self,
        addrs: Arc<super::addrs::AddrBook>,
        eager: &dyn Fn(usize) -> bool,
    ) -> Result<(), String> {
        if addrs.pes() != self.eps.len() {
            return Err(format!("{} worker addresses for {} PEs", addrs.pes(), self.eps.len()));
        }
        let mut lazy = self.lazy();
        lazy.addrs = Some(addrs.clone());
        for pe in (0..addrs.pes()).filter(|&pe| eager(pe)) {
            self.make_ep(&mut lazy, pe)?;
        }
        Ok(())
    }

    fn lazy(&self) -> std::sync::MutexGuard<'_, Lazy> {
        self.lazy.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The endpoint to `pe`, made now if it does not exist yet (under `lazy`'s lock, so once).
    fn make_ep(&self, lazy: &mut Lazy, pe: usize) -> Result<sys::ucp_ep_h, String> {
        let slot = self.eps.get(pe).ok_or_else(|| format!("PE {pe} is beyond the {} PEs", self.eps.len()))?;
        let old = slot.load(Ordering::Acquire);
        if !old.is_null() {
            return Ok(old);
        }
        if self.closed.load(Ordering::Acquire) {
            return Err("the channel is closed".into());
        }
        let a = lazy.addrs.as_ref().ok_or("not connected")?.get(pe)?;
        let arg = Box::new(EpArg { pe, health: lazy.health });
        let params = sys::ucp_ep_params_t {
            field_mask: (sys::UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
                | sys::UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
                | sys::UCP_EP_PARAM_FIELD_ERR_HANDLER) as u64,
            address: a.as_ptr() as *const sys::ucp_address_t,
            err_mode: sys::UCP_ERR_HANDLING_MODE_PEER,
            err_handler: sys::ucp_err_handler_t {
                cb: Some(super::ep_error),
                arg: &*arg as *const EpArg as *mut c_void,
            },
            ..Default::default()
        };
        let mut ep: sys::ucp_ep_h = std::ptr::null_mut();
        super::footprint::making(pe, true, || {
            // SAFETY: our worker; the address bytes outlive the call; the error handler's
            // argument lives as long as `self`, which closes the endpoint before it is dropped.
            check(&format!("ucp_ep_create to PE {pe}"), unsafe {
                sys::ucp_ep_create(self.worker, &params, &mut ep)
            })
        })?;
        lazy.args.push(arg);
        slot.store(ep, Ordering::Release);
        Ok(ep)
    }

    /// Unpack `packed` for `pe`'s segment `seg` on endpoint `ep` into its slot, destroying a
    /// key it replaces.
    fn unpack(
        &self,
        ep: sys::ucp_ep_h,
        pe: usize,
        seg: usize,
        packed: &[u8],
    ) -> Result<sys::ucp_rkey_h, String> {
        let mut rkey: sys::ucp_rkey_h = std::ptr::null_mut();
        super::footprint::making(pe, false, || {
            // SAFETY: a live endpoint; the packed key outlives the call; valid out-pointer.
            check(&format!("ucp_ep_rkey_unpack for PE {pe} segment {seg}"), unsafe {
                sys::ucp_ep_rkey_unpack(ep, packed.as_ptr() as *const c_void, &mut rkey)
            })
        })?;
        let old = self.rkeys[seg * self.eps.len() + pe].swap(rkey, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: the key we replaced; segments are (re)announced before they are used.
            unsafe { sys::ucp_rkey_destroy(old) };
        }
        Ok(rkey)
    }

    /// PE `pe`'s packed key for its segment `seg` (replacing an earlier one): unpacked now when
    /// the endpoint exists, else kept for the first use.
    pub(super) fn add_rkey(&self, pe: usize, seg: usize, packed: &[u8]) -> Result<(), String> {
        if seg >= MAX_SEGMENTS {
            return Err(format!("segment {seg} is beyond the {MAX_SEGMENTS} this spml supports"));
        }
        let mut lazy = self.lazy();
        let ep = self
            .eps
            .get(pe)
            .map(|e| e.load(Ordering::Acquire))
            .ok_or_else(|| format!("PE {pe}: {}", OpError::NotConnected))?;
        if ep.is_null() {
            let old = self.rkeys[seg * self.eps.len() + pe].swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !old.is_null() {
                // SAFETY: a key we unpacked, replaced by the one announced now.
                unsafe { sys::ucp_rkey_destroy(old) };
            }
            lazy.packed.insert((pe, seg), packed.to_vec());
            return Ok(());
        }
        lazy.packed.remove(&(pe, seg));
        self.unpack(ep, pe, seg, packed).map(|_| ())
    }

    #[inline(always)]
    pub(super) fn ep(&self, pe: usize) -> Result<sys::ucp_ep_h, OpError> {
        match self.eps.get(pe).map(|e| e.load(Ordering::Acquire)) {
            Some(ep) if !ep.is_null() => Ok(ep),
            Some(_) => self.first_use(pe),
            None => Err(OpError::NotConnected),
        }
    }

    /// Whether this channel has an endpoint to `pe`.
    pub(super) fn reaches(&self, pe: usize) -> bool {
        self.eps.get(pe).is_some_and(|e| !e.load(Ordering::Acquire).is_null())
    }

    /// `(bytes, resident bytes)` of this channel's tables sized by the number of PEs: the
    /// endpoint and key slots, and the batches' slots and buffers.
    pub(super) fn tables(&self) -> (u64, u64) {
        use rshmem_plugin_api::footprint::resident_bytes;
        let mut bytes = std::mem::size_of_val(&*self.eps) as u64 + std::mem::size_of_val(&*self.rkeys) as u64;
        let mut resident = resident_bytes(&self.eps) + resident_bytes(&self.rkeys);
        if let Some(b) = self.batches {
            let (b_bytes, b_resident) = b.tables();
            bytes += b_bytes;
            resident += b_resident;
        }
        (bytes, resident)
    }

    /// The PEs this channel has an endpoint to.
    #[cfg(test)]
    pub(super) fn endpoints_made(&self) -> Vec<usize> {
        (0..self.eps.len()).filter(|&pe| !self.eps[pe].load(Ordering::Acquire).is_null()).collect()
    }

    /// The first operation to `pe` on this channel: make its endpoint.
    #[cold]
    #[inline(never)]
    fn first_use(&self, pe: usize) -> Result<sys::ucp_ep_h, OpError> {
        let mut lazy = self.lazy();
        self.make_ep(&mut lazy, pe).map_err(|_| OpError::NotConnected)
    }

    /// The first operation to `pe`'s segment `seg`: unpack its key (and make the endpoint).
    #[cold]
    #[inline(never)]
    fn first_key(&self, pe: usize, seg: usize) -> Result<sys::ucp_rkey_h, OpError> {
        let mut lazy = self.lazy();
        let rkey = self.rkeys[seg * self.eps.len() + pe].load(Ordering::Acquire);
        if !rkey.is_null() {
            return Ok(rkey);
        }
        let Some(packed) = lazy.packed.remove(&(pe, seg)) else { return Err(OpError::NoKey) };
        let ep = self.make_ep(&mut lazy, pe).map_err(|_| OpError::NotConnected)?;
        self.unpack(ep, pe, seg, &packed).map_err(|_| OpError::NoKey)
    }

    #[inline(always)]
    fn target(&self, pe: usize, seg: usize) -> Result<(sys::ucp_ep_h, sys::ucp_rkey_h), OpError> {
        let ep = self.ep(pe)?;
        if seg >= MAX_SEGMENTS {
            return Err(OpError::NoKey);
        }
        let rkey = self.rkeys[seg * self.eps.len() + pe].load(Ordering::Acquire);
        if rkey.is_null() {
            return Ok((ep, self.first_key(pe, seg)?));
        }
        Ok((ep, rkey))
    }

    /// Wait for what a `*_nbx` call returned: progress until the request completes, then free it.
    /// After [`Channel::spin`] rounds that found nothing to do, each such round yields
    /// the core: the peer that has to answer (or its progress thread) may be waiting for this
    /// very core. With more PEs than cores that is from the first idle round: 4 PEs on 2 cores
    /// did about 250 blocking operations per second and PE while every waiter spun
    /// (tests/c/soak.c over loopback TCP), 30000-31000 when yielding after 32 idle rounds and
    /// 32000-34000 when yielding at once (2026-11-23).
    #[inline(always)]
    fn wait(&self, r: sys::ucs_status_ptr_t) -> sys::ucs_status_t {
        if !sys::ptr_is_request(r) {
            return sys::ptr_status(r);
        }
        self.touch();
        let mut spins = 0u32;
        let mut idle = Backoff::new(self.spin.rounds());
        loop {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) {
                self.progress_companions();
                self.touch();
            }
            // SAFETY: a live request of our worker (freed only below).
            let st = unsafe { sys::ucp_request_check_status(r) };
            if st != sys::UCS_INPROGRESS {
                // SAFETY: completed, freed exactly once.
                unsafe { sys::ucp_request_free(r) };
                return st;
            }
            // SAFETY: our own worker, used under its sharing contract.
            idle.round(unsafe { sys::ucp_worker_progress(self.worker) } != 0);
        }
    }

    /// [`Channel::wait`] with a deadline (teardown only): the request back when still running.
    pub(super) fn wait_until(
        &self,
        r: sys::ucs_status_ptr_t,
        deadline: Instant,
    ) -> Result<sys::ucs_status_t, sys::ucs_status_ptr_t> {
        if !sys::ptr_is_request(r) {
            return Ok(sys::ptr_status(r));
        }
        loop {
            // SAFETY: a live request of our worker (freed only below).
            let st = unsafe { sys::ucp_request_check_status(r) };
            if st != sys::UCS_INPROGRESS {
                // SAFETY: completed, freed exactly once.
                unsafe { sys::ucp_request_free(r) };
                return Ok(st);
            }
            if Instant::now() >= deadline {
                return Err(r);
            }
            // SAFETY: our own worker.
            unsafe { sys::ucp_worker_progress(self.worker) };
        }
    }

    /// Non-blocking: hand the request back to UCX at once; completion is observed by a flush.
    #[inline(always)]
    fn release(r: sys::ucs_status_ptr_t) -> sys::ucs_status_t {
        if sys::ptr_is_request(r) {
            // SAFETY: a live request; UCX completes and recycles it by itself after this.
            unsafe { sys::ucp_request_free(r) };
            sys::UCS_OK
        } else {
            sys::ptr_status(r)
        }
    }

    /// Put `len` bytes from `src` to `raddr` in PE `pe`'s segment `seg`. Blocking: returns when
    /// `src` may be reused; else completes at the next [`Channel::flush`].
    ///
    /// # Safety
    /// `src` must be readable for `len` bytes (until the next flush when not blocking).
    #[inline(always)]
    pub unsafe fn put(
        &self,
        pe: usize,
        seg: usize,
        raddr: u64,
        src: *const c_void,
        len: usize,
        blocking: bool,
    ) -> Result<(), OpError> {
        let (ep, rkey) = self.target(pe, seg)?;
        self.touch();
        if let Some(b) = self.batches {
            if len <= batch::PUT_MAX {
                // SAFETY: `src` readable for `len` (caller).
                return unsafe { self.batch_put(b, pe, raddr, src as *const u8, len) };
            }
            if self.rma {
                // SAFETY: as above.
                return unsafe { self.long_put(b, pe, raddr, src as *const u8, len) };
            }
            self.settle(b, pe, Path::Rma)?;
        }
        let param = sys::ucp_request_param_t::default();
        // SAFETY: live endpoint and key; `src` readable for `len` (caller).
        let r = unsafe { sys::ucp_put_nbx(ep, src, len, raddr, rkey, &param) };
        status(if blocking { self.wait(r) } else { Self::release(r) })
    }

    /// Get `len` bytes at `raddr` of PE `pe`'s segment `seg` into `dst`. Blocking: returns when
    /// `dst` holds the data; else `dst` is valid after the next [`Channel::flush`].
    ///
    /// # Safety
    /// `dst` must be writable for `len` bytes (until the next flush when not blocking).
    #[inline(always)]
    pub unsafe fn get(
        &self,
        pe: usize,
        seg: usize,
        raddr: u64,
        dst: *mut c_void,
        len: usize,
        blocking: bool,
    ) -> Result<(), OpError> {
        let (ep, rkey) = self.target(pe, seg)?;
        self.touch();
        if let Some(b) = self.batches {
            if let Some(a) = self.rma_answers() {
                self.settle(b, pe, Path::Am)?;
                // SAFETY: `dst` writable for `len` (caller).
                return unsafe { self.message_get(a, pe, raddr, dst as *mut u8, len, blocking) };
            }
            self.settle(b, pe, Path::Rma)?;
        }
        let param = sys::ucp_request_param_t::default();
        // SAFETY: live endpoint and key; `dst` writable for `len` (caller).
        let r = unsafe { sys::ucp_get_nbx(ep, dst, len, raddr, rkey, &param) };
        status(if blocking { self.wait(r) } else { Self::release(r) })
    }

    /// Put `len` bytes from `src` to `dest` of PE `pe`, then add `value` to its word at `sig`,
    /// as one active message the target applies (see `am`), sent eagerly up to
    /// [`PUT_SIGNAL_EAGER_MAX`]. Returns when `src` may be reused.
    ///
    /// # Safety
    /// `src` must be readable for `len` bytes (it may be NULL when `len` is 0).
    pub unsafe fn put_signal(
        &self,
        pe: usize,
        dest: u64,
        src: *const c_void,
        len: usize,
        sig: u64,
        value: u64,
    ) -> Result<(), OpError> {
        let ep = self.ep(pe)?;
        self.touch();
        if let Some(b) = self.batches {
            self.settle(b, pe, Path::Am)?;
        }
        let h = super::AmHeader { dest, sig, value };
        let mut param = sys::ucp_request_param_t::default();
        if len <= PUT_SIGNAL_EAGER_MAX {
            param.op_attr_mask = sys::UCP_OP_ATTR_FIELD_FLAGS;
            param.flags = sys::UCP_AM_SEND_FLAG_EAGER;
        }
        // SAFETY: a live endpoint; the header and `src` stay valid until the request is
        // complete (waited for below).
        let r = unsafe {
            sys::ucp_am_send_nbx(
                ep,
                super::am::PUT_SIGNAL,
                &h as *const super::AmHeader as *const c_void,
                std::mem::size_of::<super::AmHeader>(),
                src,
                len,
                &param,
            )
        };
        status(self.wait(r))
    }

    /// Atomically add `value` to the 64-bit word at `raddr` (no fetch). Returns at once; the
    /// update is remotely complete at the next flush.
    #[inline(always)]
    pub fn atomic_add_u64(&self, pe: usize, seg: usize, raddr: u64, value: u64) -> Result<(), OpError> {
        self.post(pe, seg, raddr, sys::UCP_ATOMIC_POST_OP_ADD, 8, value)
    }

    /// A non-fetching ADD, AND, OR or XOR of `size` bytes, handed to UCX without waiting: it
    /// needs no reply, and `ucp_atomic_post` takes the operand by value, so nothing of ours
    /// has to outlive the call (`ucp_atomic_op_nbx` would want its operand buffer kept until
    /// the request completes, and waiting for that cost a round trip over TCP: 10.7-12.8 µs
    /// per add across two emulated hosts where OSHMEM's post took 6.5, 2026-11-24). The update
    /// completes remotely at the next flush.
    #[inline(always)]
    fn post(
        &self,
        pe: usize,
        seg: usize,
        raddr: u64,
        op: sys::ucp_atomic_post_op_t,
        size: usize,
        value: u64,
    ) -> Result<(), OpError> {
        let (ep, rkey) = self.target(pe, seg)?;
        self.touch();
        if let Some(b) = self.batches {
            if self.rma {
                let op = match op {
                    sys::UCP_ATOMIC_POST_OP_ADD => AMO_ADD,
                    sys::UCP_ATOMIC_POST_OP_AND => AMO_AND,
                    sys::UCP_ATOMIC_POST_OP_OR => AMO_OR,
                    _ => AMO_XOR,
                };
                return self.batch_atomic(b, pe, raddr, op, size as u32, value);
            }
            self.settle(b, pe, Path::Amo)?;
        }
        // SAFETY: live endpoint and key; the operand is passed by value.
        status(unsafe { sys::ucp_atomic_post(ep, op, value, size, raddr, rkey) })
    }

    /// A 4- or 8-byte atomic `op` (`AMO_*` of the plugin ABI) at `raddr`. Returns the previous
    /// value (fetched when `fetch` is set or the operation needs it, else 0) once complete.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn atomic(
        &self,
        pe: usize,
        seg: usize,
        raddr: u64,
        op: u32,
        size: u32,
        value: u64,
        cond: u64,
        fetch: bool,
    ) -> Result<u64, OpError> {
        match size {
            4 => self.amo::<u32>(pe, seg, raddr, op, value as u32, cond as u32, fetch).map(u64::from),
            8 => self.amo::<u64>(pe, seg, raddr, op, value, cond, fetch),
            _ => Err(OpError::Invalid),
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn amo<T: Copy + Default + Into<u64>>(
        &self,
        pe: usize,
        seg: usize,
        raddr: u64,
        op: u32,
        value: T,
        cond: T,
        fetch: bool,
    ) -> Result<T, OpError> {
        let zero = T::default();
        if let (Some(b), true) = (self.batches, self.rma) {
            if op > AMO_XOR {
                return Err(OpError::Invalid);
            }
            self.target(pe, seg)?;
            self.touch();
            let size = std::mem::size_of::<T>() as u32;
            if !fetch && !matches!(op, AMO_FETCH | AMO_SWAP | AMO_CSWAP) {
                // Nothing to wait for: it travels in the batch and completes at quiet (a SET
                // included, which through UCX costs a round trip).
                self.batch_atomic(b, pe, raddr, op, size, value.into())?;
                return Ok(zero);
            }
            let mut old = 0u64;
            self.message_amo(b, pe, raddr, op, size, value.into(), cond.into(), &mut old)?;
            // The old value is in the low bytes of the word, as the target's handler sent it.
            // SAFETY: T is u32 or u64, read from the start of an initialised u64.
            return Ok(unsafe { std::ptr::read_unaligned(&old as *const u64 as *const T) });
        }
        // UCX's table: ADD/AND/OR/XOR: Y op= X (reply optional); SWAP: Result=Y, Y=X (reply
        // required); CSWAP: Result=Y, if X==Y then Y=Z with X in `buffer` and Z passed in the reply
        // buffer, which then receives the result.
        if !fetch {
            let post = match op {
                AMO_ADD => Some(sys::UCP_ATOMIC_POST_OP_ADD),
                AMO_AND => Some(sys::UCP_ATOMIC_POST_OP_AND),
                AMO_OR => Some(sys::UCP_ATOMIC_POST_OP_OR),
                AMO_XOR => Some(sys::UCP_ATOMIC_POST_OP_XOR),
                _ => None,
            };
            if let Some(post) = post {
                self.post(pe, seg, raddr, post, std::mem::size_of::<T>(), value.into())?;
                return Ok(zero);
            }
        }
        let (uop, operand, reply_in, fetch) = match op {
            AMO_FETCH => (sys::UCP_ATOMIC_OP_ADD, zero, zero, true),
            AMO_SET | AMO_SWAP => (sys::UCP_ATOMIC_OP_SWAP, value, zero, true),
            AMO_CSWAP => (sys::UCP_ATOMIC_OP_CSWAP, cond, value, true),
            AMO_ADD => (sys::UCP_ATOMIC_OP_ADD, value, zero, fetch),
            AMO_AND => (sys::UCP_ATOMIC_OP_AND, value, zero, fetch),
            AMO_OR => (sys::UCP_ATOMIC_OP_OR, value, zero, fetch),
            AMO_XOR => (sys::UCP_ATOMIC_OP_XOR, value, zero, fetch),
            _ => return Err(OpError::Invalid),
        };
        let (ep, rkey) = self.target(pe, seg)?;
        if let Some(b) = self.batches {
            self.settle(b, pe, Path::Amo)?;
        }
        let mut reply = reply_in;
        let mut param = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_DATATYPE,
            datatype: sys::ucp_dt_make_contig(std::mem::size_of::<T>()),
            ..Default::default()
        };
        if fetch {
            param.op_attr_mask |= sys::UCP_OP_ATTR_FIELD_REPLY_BUFFER;
            param.reply_buffer = &mut reply as *mut T as *mut c_void;
        }
        // SAFETY: live endpoint and key; `operand` and `reply` outlive the request (waited for).
        let r = unsafe {
            sys::ucp_atomic_op_nbx(ep, uop, &operand as *const T as *const c_void, 1, raddr, rkey, &param)
        };
        status(self.wait(r))?;
        Ok(if fetch { reply } else { zero })
    }

    /// Complete every operation issued on this channel (remote completion included): send
    /// every waiting batch, flush the worker, then wait until every batch was acknowledged.
    pub fn flush(&self) -> Result<(), OpError> {
        if let Some(b) = self.batches {
            self.send_waiting(b, false)?;
        }
        let param = sys::ucp_request_param_t::default();
        // SAFETY: our own worker.
        let r = unsafe { sys::ucp_worker_flush_nbx(self.worker, &param) };
        status(self.wait(r))?;
        if let Some(b) = self.batches {
            self.await_acks(b, None, || b.unacked.load(Ordering::Acquire) == 0)?;
        }
        if let Some(a) = self.rma_answers() {
            self.await_answers(a, None)?;
        }
        Ok(())
    }

    /// Order operations issued before against those issued after, per target. Batched puts
    /// need nothing now (see `batch`): the next operation outside the batch to a peer waits
    /// for the batches from before this fence.
    pub fn fence(&self) -> Result<(), OpError> {
        if let Some(b) = self.batches {
            if b.unacked.load(Ordering::Acquire) > 0 || b.waiting.load(Ordering::Acquire) > 0 {
                b.fence_gen.fetch_add(1, Ordering::AcqRel);
            }
        }
        // SAFETY: our own worker.
        status(unsafe { sys::ucp_worker_fence(self.worker) })
    }

    /// Drive communication once (sending waiting batches first); true when something happened.
    #[inline(always)]
    pub fn progress(&self) -> bool {
        self.touch();
        let mut sent = false;
        if let Some(b) = self.batches {
            if b.waiting.load(Ordering::Relaxed) > 0 {
                sent = self.send_waiting(b, true).unwrap_or(false);
            }
        }
        // SAFETY: our own worker.
        unsafe { sys::ucp_worker_progress(self.worker) != 0 || sent }
    }

    /// A put larger than a batch entry, in the spml's own messages (`rma_am`): the peer's
    /// batch goes first, then the data in eager messages of at most [`rma_am::CHUNK`] bytes,
    /// each acknowledged like a batch (so quiet waits for them). Returns when `src` may be
    /// reused.
    ///
    /// # Safety
    /// `src` readable for `len` bytes.
    unsafe fn long_put(
        &self,
        b: &Batches,
        pe: usize,
        dest: u64,
        src: *const u8,
        len: usize,
    ) -> Result<(), OpError> {
        let ep = self.ep(pe)?;
        let s = &b.slots[pe];
        let mut done = 0usize;
        while done < len {
            let n = (len - done).min(rma_am::CHUNK);
            {
                let g = s.lock();
                self.send_slot(b, pe, &g)?;
                // Counted before it leaves: the acknowledgement may come during the send.
                b.count_sent(s);
            }
            let h = rma_am::PutHeader { dest: dest + done as u64, peer: pe as u32, pad: 0 };
            // SAFETY: `done + n <= len` (caller's buffer).
            let at = unsafe { src.add(done) };
            // SAFETY: a live endpoint; the header and the data stay valid until the send has
            // completed (waited for right below).
            let st = self.wait_sent(unsafe { self.send_request(ep, rma_am::LONG_PUT, &h, at, n) });
            if st != sys::UCS_OK {
                // Never acknowledged: the caller ends the job over the lost peer.
                b.uncount_sent(s);
                return Err(OpError::Status(st));
            }
            done += n;
        }
        Ok(())
    }

    /// Send a message eagerly (a batch, or one of `rma_am`'s requests), asking for the answer
    /// on this worker.
    ///
    /// # Safety
    /// A live endpoint; `h` and `len` bytes at `data` valid until the send completes.
    #[inline(always)]
    pub(super) unsafe fn send_request<H>(
        &self,
        ep: sys::ucp_ep_h,
        id: u32,
        h: &H,
        data: *const u8,
        len: usize,
    ) -> sys::ucs_status_ptr_t {
        let mut param = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_FLAGS,
            flags: sys::UCP_AM_SEND_FLAG_EAGER | sys::UCP_AM_SEND_FLAG_REPLY,
            ..Default::default()
        };
        let data: *const c_void =
            if len == 0 { super::handler::without_data(&mut param) } else { data.cast() };
        // SAFETY: caller.
        unsafe {
            sys::ucp_am_send_nbx(ep, id, (h as *const H).cast(), std::mem::size_of::<H>(), data, len, &param)
        }
    }

    /// Claim a waiter slot, driving progress while every slot is taken (answers free them).
    pub(super) fn claim(
        &self,
        a: &Answers,
        pe: usize,
        dst: *mut u8,
        cap: usize,
        detached: bool,
    ) -> Result<u64, OpError> {
        let mut token = None;
        self.drive_until(
            || {
                token = a.claim(dst, cap, detached);
                token.is_some()
            },
            |lost| lost == pe,
        )?;
        token.ok_or(OpError::Invalid)
    }

    /// A get in the spml's own messages (`rma_am`): a request per [`rma_am::CHUNK`] bytes,
    /// answered with the bytes. Blocking: returns when `dst` holds them; else they are in
    /// place at the next flush.
    ///
    /// # Safety
    /// `dst` writable for `len` bytes (until the next flush when not blocking).
    unsafe fn message_get(
        &self,
        a: &Answers,
        pe: usize,
        src: u64,
        dst: *mut u8,
        len: usize,
        blocking: bool,
    ) -> Result<(), OpError> {
        let ep = self.ep(pe)?;
        if len == 0 {
            return Ok(());
        }
        // One chunk waited for by itself; several all sent before any is waited for.
        let single = blocking && len <= rma_am::CHUNK;
        let mut done = 0usize;
        while done < len {
            let n = (len - done).min(rma_am::CHUNK);
            // SAFETY: `done + n <= len` (caller's buffer).
            let at = unsafe { dst.add(done) };
            let token = self.claim(a, pe, at, n, !single)?;
            let h = rma_am::GetHeader { token, src: src + done as u64, len: n as u64 };
            // SAFETY: a live endpoint; the header lives until the send completed (below).
            let st = self.wait_sent(unsafe { self.send_request(ep, rma_am::GET, &h, std::ptr::null(), 0) });
            if st != sys::UCS_OK {
                a.abandon(token);
                return Err(OpError::Status(st));
            }
            if single {
                return self.await_answer(a, pe, token);
            }
            done += n;
        }
        if blocking {
            self.await_answers(a, Some(pe))?;
        }
        Ok(())
    }

    /// A fetching atomic in the spml's own messages (`rma_am`), after the peer's batch: waits
    /// for the answer and stores the word's old value at `old`.
    #[allow(clippy::too_many_arguments)]
    fn message_amo(
        &self,
        b: &Batches,
        pe: usize,
        addr: u64,
        op: u32,
        size: u32,
        value: u64,
        cond: u64,
        old: *mut u64,
    ) -> Result<(), OpError> {
        let ep = self.ep(pe)?;
        let a = self.rma_answers().ok_or(OpError::Invalid)?;
        self.settle(b, pe, Path::Am)?;
        let token = self.claim(a, pe, old.cast(), size as usize, false)?;
        let h = rma_am::AmoHeader { token, addr, value, cond, op, size };
        // SAFETY: a live endpoint; the header lives until the send completed (below).
        let st = self.wait_sent(unsafe { self.send_request(ep, rma_am::AMO, &h, std::ptr::null(), 0) });
        if st != sys::UCS_OK {
            a.abandon(token);
            return Err(OpError::Status(st));
        }
        self.await_answer(a, pe, token)
    }

    /// Wait for the answer to `token`, driving this worker (and the default one); a lost `pe`
    /// ends the wait with UCX's status, and nothing is written for `token` after that.
    pub(super) fn await_answer(&self, a: &Answers, pe: usize, token: u64) -> Result<(), OpError> {
        let mut outcome = Outcome::Waiting;
        let waited = self.drive_until(
            || {
                outcome = a.poll(token);
                outcome != Outcome::Waiting
            },
            |lost| lost == pe,
        );
        if waited.is_err() {
            a.abandon(token);
        }
        waited?;
        match outcome {
            Outcome::Refused => Err(OpError::Refused),
            _ => Ok(()),
        }
    }

    /// Wait until every non-blocking get of this channel was answered; a lost peer (`pe`, or
    /// any) ends the wait with UCX's status, a refused get with [`OpError::Refused`].
    fn await_answers(&self, a: &Answers, pe: Option<usize>) -> Result<(), OpError> {
        self.drive_until(|| a.detached.load(Ordering::Acquire) == 0, |lost| pe.is_none_or(|p| p == lost))?;
        if a.refused.swap(false, Ordering::AcqRel) {
            return Err(OpError::Refused);
        }
        Ok(())
    }

    /// Append a put of at most [`batch::PUT_MAX`] bytes to the peer's batch, sending the batch
    /// first when the put does not fit.
    ///
    /// # Safety
    /// `src` readable for `len` bytes; `pe` has an endpoint.
    #[inline(always)]
    unsafe fn batch_put(
        &self,
        b: &Batches,
        pe: usize,
        dest: u64,
        src: *const u8,
        len: usize,
    ) -> Result<(), OpError> {
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the lock is held and the entry fits (`batch_entry`); `src` (caller).
        self.batch_entry(b, pe, len, || unsafe { b.append(pe, dest, src, len) })
    }

    /// Append an atomic that fetches nothing to the peer's batch (`rma_in_messages`), sending
    /// the batch first when it does not fit. It completes at quiet, as a put does.
    #[inline(always)]
    fn batch_atomic(
        &self,
        b: &Batches,
        pe: usize,
        dest: u64,
        op: u32,
        size: u32,
        value: u64,
    ) -> Result<(), OpError> {
        self.ep(pe)?;
        // SAFETY: the lock is held and the entry fits (`batch_entry`).
        self.batch_entry(b, pe, batch::ATOMIC_OPERAND, || unsafe {
            b.append_atomic(pe, dest, op, size, value)
        })
    }

    /// Make room for an entry of `len` bytes after its header in the peer's batch (sending the
    /// batch when it does not fit), then let `append` write it under the peer's lock.
    #[inline(always)]
    fn batch_entry(&self, b: &Batches, pe: usize, len: usize, append: impl FnOnce()) -> Result<(), OpError> {
        let s = &b.slots[pe];
        let g = s.lock();
        b.catch_up(s, &g);
        let mut at = s.len.load(Ordering::Relaxed);
        if at + batch::ENTRY_HEADER + len > batch::CAP {
            self.send_slot(b, pe, &g)?;
            at = 0;
        }
        // Against the progress thread, which marks itself sleeping and then looks for waiting
        // batches: one of the two sees the other (`wake`).
        if at == 0 && super::wake::first_to_wait(&b.waiting) {
            if let Some(w) = b.wake.get() {
                if super::wake::must_signal(&w.sleeping) {
                    // SAFETY: the default worker, which outlives every channel's use.
                    unsafe { sys::ucp_worker_signal(w.worker as sys::ucp_worker_h) };
                }
            }
        }
        append();
        Ok(())
    }

    /// Send the peer's batch, if it holds anything, and wait until UCX no longer needs its
    /// bytes (at once, normally: the transport copies an eager message).
    fn send_slot(&self, b: &Batches, pe: usize, _held: &SlotGuard<'_>) -> Result<(), OpError> {
        let s: &Slot = &b.slots[pe];
        let len = s.len.load(Ordering::Relaxed);
        if len == 0 {
            return Ok(());
        }
        let ep = self.ep(pe)?;
        let h = batch::Header { peer: pe as u32, count: s.count.load(Ordering::Relaxed) };
        // Counted before it leaves: the acknowledgement may come during the send's own progress.
        b.count_sent(s);
        // SAFETY: a live endpoint; the header and the peer's bytes (ours under the lock) stay
        // valid until the send has completed (waited for right below).
        let st = self.wait_sent(unsafe { self.send_request(ep, batch::BATCH, &h, b.buffer(pe), len) });
        if st != sys::UCS_OK {
            // Never acknowledged: the caller ends the job over the lost peer.
            b.uncount_sent(s);
            return Err(OpError::Status(st));
        }
        s.len.store(0, Ordering::Relaxed);
        s.count.store(0, Ordering::Relaxed);
        b.waiting.fetch_sub(1, Ordering::AcqRel);
        Ok(())
    }

    /// Wait until a batch's send completed. Over TCP a send that did not fit the socket
    /// completes only as the receiver reads, and the receiver may be this process's default
    /// worker (a batch to itself) or need this process's default worker to answer its own
    /// sends first: so a created channel drives the default worker too, and whoever waits here
    /// keeps the worker that receives moving (threads blocked on a lock this one holds do not).
    pub(super) fn wait_sent(&self, r: sys::ucs_status_ptr_t) -> sys::ucs_status_t {
        if self.home == 0 || !sys::ptr_is_request(r) {
            return self.wait(r);
        }
        let mut idle = Backoff::new(self.spin.rounds());
        loop {
            // SAFETY: a live request of our worker (freed only below).
            let st = unsafe { sys::ucp_request_check_status(r) };
            if st != sys::UCS_INPROGRESS {
                // SAFETY: completed, freed exactly once.
                unsafe { sys::ucp_request_free(r) };
                return st;
            }
            idle.round(self.progress_with_home());
        }
    }

    /// Drive this worker once, and the default one too for a created channel; true when
    /// something happened.
    fn progress_with_home(&self) -> bool {
        // SAFETY: our own worker (multi-thread mode).
        let mut busy = unsafe { sys::ucp_worker_progress(self.worker) } != 0;
        if self.home != 0 {
            // SAFETY: the process's default worker, in multi-thread mode, alive for as long as
            // any channel is.
            busy |= unsafe { sys::ucp_worker_progress(self.home as sys::ucp_worker_h) } != 0;
        }
        busy
    }

    /// Send every peer's waiting batch; with `try_only`, skip peers whose lock another thread
    /// holds (it sends). True when something was sent.
    pub(super) fn send_waiting(&self, b: &Batches, try_only: bool) -> Result<bool, OpError> {
        let mut sent = false;
        for (pe, s) in b.slots.iter().enumerate() {
            if b.waiting.load(Ordering::Acquire) == 0 {
                break;
            }
            if s.len.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let g = if try_only {
                match s.try_lock() {
                    Some(g) => g,
                    None => continue,
                }
            } else {
                s.lock()
            };
            if s.len.load(Ordering::Relaxed) > 0 {
                self.send_slot(b, pe, &g)?;
                sent = true;
            }
        }
        Ok(sent)
    }

    /// Before an operation to `pe` that does not travel in its batch: send the batch, so that
    /// the operation follows it on the endpoint. If a fence came after puts still
    /// unacknowledged, an operation that may take another path than the batch (see [`Path`])
    /// also waits for their acknowledgement.
    #[inline(always)]
    pub(super) fn settle(&self, b: &Batches, pe: usize, path: Path) -> Result<(), OpError> {
        match b.slots.get(pe) {
            Some(s) if !s.settled() => self.settle_slow(b, pe, s, path),
            _ => Ok(()),
        }
    }

    #[cold]
    fn settle_slow(&self, b: &Batches, pe: usize, s: &Slot, path: Path) -> Result<(), OpError> {
        let mark = {
            let g = s.lock();
            b.catch_up(s, &g);
            self.send_slot(b, pe, &g)?;
            s.fence_mark.load(Ordering::Relaxed)
        };
        let behind = match path {
            Path::Am => false,
            Path::Amo => !b.amos_on_am_lane,
            Path::Rma => true,
        };
        if behind && s.acked.load(Ordering::Acquire) < mark {
            self.await_acks(b, Some(pe), || s.acked.load(Ordering::Acquire) >= mark)?;
        }
        Ok(())
    }

    /// Wait until every batch holding puts (and acknowledged messages) was acknowledged by
    /// its peer (`pe`, or all); a lost peer that owes one ends the wait with UCX's status.
    fn await_acks(&self, b: &Batches, pe: Option<usize>, done: impl Fn() -> bool) -> Result<(), OpError> {
        let owes = |p: usize| {
            b.slots.get(p).is_some_and(|s| s.acked.load(Ordering::Acquire) < s.sent.load(Ordering::Acquire))
        };
        self.drive_until(done, |lost| pe.map_or(owes(lost), |p| p == lost && owes(p)))
    }

    /// Drive this worker (and the default one, for a created channel; the companions now and
    /// then) until `done`, yielding in idle rounds as [`Channel::wait`] does. A lost peer the
    /// wait depends on (`waits_on`) ends it with UCX's status.
    fn drive_until(
        &self,
        mut done: impl FnMut() -> bool,
        waits_on: impl Fn(usize) -> bool,
    ) -> Result<(), OpError> {
        let mut spins = 0u32;
        let mut idle = Backoff::new(self.spin.rounds());
        while !done() {
            if let Some((lost, st, _)) = self.health.failure() {
                if waits_on(lost) {
                    return Err(OpError::Status(st));
                }
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) {
                self.progress_companions();
            }
            self.touch();
            idle.round(self.progress_with_home());
        }
        Ok(())
    }

    /// For the progress thread: send the waiting batches of this channel if its application
    /// threads have left it alone (`idle`: the caller knows; else since the thread last
    /// looked, its activity counter stood still). True when something is still waiting.
    pub(super) fn drain_if_idle(&self, idle: bool) -> bool {
        let Some(b) = self.batches else { return false };
        if b.waiting.load(Ordering::SeqCst) == 0 {
            return false;
        }
        let now = self.activity.load(Ordering::Relaxed);
        if b.thread_seen.swap(now, Ordering::Relaxed) != now && !idle {
            return true; // in use: its own calls send it, or the next look does
        }
        // A failure here is the application's to report, at its next operation on the peer.
        let _ = self.send_waiting(b, true);
        b.waiting.load(Ordering::SeqCst) > 0
    }

    /// Whether a batch is waiting to be sent.
    pub(super) fn batch_waiting(&self) -> bool {
        self.batches.is_some_and(|b| super::wake::Waiting::get(&b.waiting) > 0)
    }

    /// Peer `pe`'s batch counters: (batches sent, acknowledged, bytes waiting).
    #[cfg(test)]
    pub(super) fn batch_counts(&self, pe: usize) -> (u64, u64, usize) {
        let s = &self.batches.expect("batching").slots[pe];
        (s.sent.load(Ordering::Acquire), s.acked.load(Ordering::Acquire), s.len.load(Ordering::Acquire))
    }

    /// [`Channel::settle`] for `pe` when batching.
    pub(super) fn settle_pe(&self, pe: usize, path: Path) -> Result<(), OpError> {
        match self.batches {
            Some(b) => self.settle(b, pe, path),
            None => Ok(()),
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Complete what is outstanding, destroy the keys, force-close the endpoints (without
    /// talking to the peers, which may be gone: channels close only at finalize or when their
    /// creation failed) and destroy the worker, waiting no later than `deadline`. When something did not
    /// complete in time the worker is left to the process exit (destroying it under live
    /// requests would be unsafe) and the error says how much. Idempotent.
    pub(super) fn close(&self, deadline: Instant) -> Result<(), String> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let mut pending: Vec<sys::ucs_status_ptr_t> = Vec::new();
        if let Some(b) = self.batches {
            // Puts still waiting (a context never quieted) go now, and get their answers while
            // the peers still listen, as UCX's flush below waits for its own puts.
            if self.send_waiting(b, false).is_ok() {
                while b.unacked.load(Ordering::Acquire) > 0
                    && self.health.failure().is_none()
                    && Instant::now() < deadline
                {
                    // SAFETY: our own worker.
                    unsafe { sys::ucp_worker_progress(self.worker) };
                }
            }
        }
        let param = sys::ucp_request_param_t::default();
        // SAFETY: our own worker.
        let r = unsafe { sys::ucp_worker_flush_nbx(self.worker, &param) };
        // An error status here means a peer has left already, which is normal at finalize.
        if let Err(r) = self.wait_until(r, deadline) {
            pending.push(r);
        }
        for k in self.rkeys.iter() {
            let rkey = k.swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !rkey.is_null() {
                // SAFETY: a key we unpacked, destroyed once.
                unsafe { sys::ucp_rkey_destroy(rkey) };
            }
        }
        let close = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_FLAGS,
            flags: sys::UCP_EP_CLOSE_FLAG_FORCE,
            ..Default::default()
        };
        for e in self.eps.iter() {
            let ep = e.swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !ep.is_null() {
                // SAFETY: an endpoint we created, closed once; a forced close needs no peer and
                // cancels what is still outstanding on it.
                let r = unsafe { sys::ucp_ep_close_nbx(ep, &close) };
                if let Err(r) = self.wait_until(r, deadline) {
                    pending.push(r);
                }
            }
        }
        // Requests that were waiting for the closed endpoints complete now (cancelled).
        let grace = Instant::now() + Duration::from_millis(100);
        pending.retain(|&r| self.wait_until(r, deadline.max(grace)).is_err());
        if !pending.is_empty() {
            return Err(format!(
                "{} request(s) did not complete in time; the UCX worker is left to the process exit",
                pending.len()
            ));
        }
        // SAFETY: no endpoints, keys or requests use the worker any more, and it is closed to
        // every other use (the owner of a channel closes it only once nobody uses it).
        unsafe { sys::ucp_worker_destroy(self.worker) };
        Ok(())
    }
}
