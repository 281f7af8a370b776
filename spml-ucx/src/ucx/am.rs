//! Put-with-signal as one UCX active message (`SpmlOps::put_signal`): the sender sends a
//! header (destination, signal word, value) and the data; the target's handler writes the data
//! and then adds the value to the word with a CPU atomic. Over TCP a put followed by a posted
//! atomic is two messages, each costing about 5.5 µs across two emulated hosts; this is one.
//!
//! Small messages arrive whole with the header (UCX's eager protocol) and are copied in the
//! handler. Large ones arrive as a rendezvous: the handler asks UCX to receive the data straight
//! into the destination, and the signal is applied when that completes.
//!
//! The handler writes only into memory this process registered for remote access
//! ([`Regions`]): a message naming anything else is refused and ends the job, whatever sent it.

use super::handler::{am_handler, boundary, check_header_room, set_handler, Complaint, Refusals, Wire};
use rshmem_ucx_sys as sys;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

/// The active-message id of put-with-signal.
pub const PUT_SIGNAL: u32 = 1;

/// What travels in front of the data: addresses in the target's address space.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub dest: u64,
    pub sig: u64,
    pub value: u64,
}

// SAFETY: `repr(C)`, three u64s.
unsafe impl Wire for Header {}

pub const HEADER_BYTES: usize = std::mem::size_of::<Header>();

/// This process's memory registered for remote access, as `(base, len, host)`: the only memory
/// an active message may write (`host`: ordinary memory the CPU may copy into, not device
/// memory).
#[derive(Default)]
pub struct Regions(RwLock<Vec<(usize, usize, bool)>>);

impl Regions {
    pub fn add(&self, base: usize, len: usize, host: bool) {
        self.0.write().unwrap_or_else(|e| e.into_inner()).push((base, len, host));
    }

    /// Forget one registration of `[base, base + len)`.
    pub fn remove(&self, base: usize, len: usize) {
        let mut v = self.0.write().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = v.iter().position(|r| (r.0, r.1) == (base, len)) {
            v.swap_remove(i);
        }
    }

    /// Whether `[addr, addr + len)` lies inside one registration.
    pub fn contains(&self, addr: u64, len: usize) -> bool {
        self.find(addr, len, false)
    }

    /// Whether `[addr, addr + len)` lies inside one registration of host memory.
    pub fn contains_host(&self, addr: u64, len: usize) -> bool {
        self.find(addr, len, true)
    }

    fn find(&self, addr: u64, len: usize, host_only: bool) -> bool {
        let Ok(addr) = usize::try_from(addr) else { return false };
        let Some(end) = addr.checked_add(len) else { return false };
        let v = self.0.read().unwrap_or_else(|e| e.into_inner());
        v.iter().any(|&(b, l, host)| addr >= b && end <= b + l && (host || !host_only))
    }
}

/// The receiving side, whose address UCX passes to the handler: lives as long as the worker.
pub struct Receiver {
    worker: sys::ucp_worker_h,
    pub regions: Regions,
    /// Messages refused (a bad header or a destination outside [`Regions`]).
    refusals: Refusals,
}

// SAFETY: the worker handle is only used for rendezvous receives from inside its own
// progress (UCX serialises a multi-thread-mode worker); the rest is synchronised.
unsafe impl Send for Receiver {}
// SAFETY: as above.
unsafe impl Sync for Receiver {}

impl Receiver {
    pub fn new(worker: sys::ucp_worker_h) -> Receiver {
        Receiver { worker, regions: Regions::default(), refusals: Refusals::default() }
    }

    /// Install the handler on the worker. `self` must stay at its address, and alive, for as
    /// long as the worker exists (the `Ucx` boxes it and destroys the worker first).
    pub fn install(&self) -> Result<(), String> {
        check_header_room(self.worker, HEADER_BYTES, "put-with-signal")?;
        set_handler(self.worker, PUT_SIGNAL, on_put_signal, self as *const Receiver as *mut c_void)
    }

    /// Who to tell when a message must be refused (once; later calls change nothing).
    pub fn on_complaint(&self, f: Complaint) {
        self.refusals.on_complaint(f);
    }

    pub fn refused(&self) -> usize {
        self.refusals.count()
    }

    #[cold]
    fn refuse(&self, why: &str) {
        self.refusals.refuse(&format!("spml ucx: refused a put-with-signal message: {why}"));
    }

    #[cold]
    pub fn refuse_rma(&self, why: &str) {
        self.refusals.refuse(&format!("spml ucx: refused {why}"));
    }

    #[cold]
    pub fn refuse_batch(&self, why: &str) {
        self.refusals.refuse(&format!("spml ucx: refused a batch of puts: {why}"));
    }

    /// Check a message against the registrations: the data's range and an aligned word.
    fn admissible(&self, h: &Header, len: usize) -> Result<(), String> {
        if len > 0 && !self.regions.contains(h.dest, len) {
            return Err(format!("{len} bytes at {:#x} are not registered memory of this PE", h.dest));
        }
        if !h.sig.is_multiple_of(8) || !self.regions.contains(h.sig, 8) {
            return Err(format!("the signal word {:#x} is not an aligned word of registered memory", h.sig));
        }
        Ok(())
    }
}

/// Add the value to the word once the data is in place.
///
/// # Safety
/// `sig` is an aligned word of registered memory, only ever updated atomically.
unsafe fn apply(sig: u64, value: u64) {
    // SAFETY: caller.
    unsafe { AtomicU64::from_ptr(sig as usize as *mut u64) }.fetch_add(value, Ordering::AcqRel);
}

/// A rendezvous receive in flight: what to signal when it completes.
struct Pending {
    rx: *const Receiver,
    sig: u64,
    value: u64,
}

am_handler!(on_put_signal, |rx: &Receiver, m: Message<Header>| {
    // Refused: a rendezvous sender's operation fails with this status; eager data is
    // dropped (UCX accepts no other answer for it).
    let refused = if m.rndv { sys::UCS_ERR_INVALID_PARAM } else { sys::UCS_OK };
    let h = match m.header {
        Ok(h) => h,
        Err(why) => {
            rx.refuse(&why);
            return refused;
        }
    };
    if let Err(why) = rx.admissible(&h, m.length) {
        rx.refuse(&why);
        return refused;
    }
    if !m.rndv {
        // SAFETY: the destination is registered memory of this process, checked for
        // `length >= eager.len()` bytes, that the sender's protocol gives to it now.
        unsafe {
            if !m.eager.is_empty() {
                rshmem_plugin_api::deliver::deliver(
                    h.dest as usize as *mut u8,
                    m.eager.as_ptr(),
                    m.eager.len(),
                );
            }
            apply(h.sig, h.value);
        }
        return sys::UCS_OK;
    }
    let pending = Box::into_raw(Box::new(Pending { rx, sig: h.sig, value: h.value }));
    let p = sys::ucp_request_param_t {
        op_attr_mask: sys::UCP_OP_ATTR_FIELD_CALLBACK | sys::UCP_OP_ATTR_FIELD_USER_DATA,
        cb: sys::ucp_request_param_t__bindgen_ty_1 { recv_am: Some(on_rendezvous_done) },
        user_data: pending as *mut c_void,
        ..Default::default()
    };
    // SAFETY: the descriptor UCX just handed us, received into checked registered memory,
    // from inside the worker's progress (allowed for this call).
    let r =
        unsafe { sys::ucp_am_recv_data_nbx(rx.worker, m.data, h.dest as usize as *mut c_void, m.length, &p) };
    if sys::ptr_is_request(r) {
        return sys::UCS_OK; // `on_rendezvous_done` signals and frees
    }
    // SAFETY: no request: the callback will not run, so the box is ours again.
    let pending = unsafe { Box::from_raw(pending) };
    let st = sys::ptr_status(r);
    if st == sys::UCS_OK {
        // SAFETY: checked above.
        unsafe { apply(pending.sig, pending.value) };
    } else {
        rx.refuse(&format!("receiving {} bytes failed: {}", m.length, sys::status_string(st)));
    }
    sys::UCS_OK
});

unsafe extern "C" fn on_rendezvous_done(
    request: *mut c_void,
    status: sys::ucs_status_t,
    length: usize,
    user_data: *mut c_void,
) {
    boundary(|| {
        // SAFETY: the box `on_put_signal` leaked for this request, taken back exactly once.
        let pending = unsafe { Box::from_raw(user_data as *mut Pending) };
        // SAFETY: the Receiver outlives its worker's requests.
        let rx = unsafe { &*pending.rx };
        if status == sys::UCS_OK {
            // SAFETY: checked when the message arrived.
            unsafe { apply(pending.sig, pending.value) };
        } else {
            rx.refuse(&format!("receiving {length} bytes failed: {}", sys::status_string(status)));
        }
        // SAFETY: a request of the worker, released once, from its completion callback.
        unsafe { sys::ucp_request_free(request) };
    })
}
