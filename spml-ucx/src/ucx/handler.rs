//! What every active-message handler of spml ucx shares: installing it, reading what UCX hands
//! it, answering from inside it, refusing a message, and the panic boundary around it.
//!
//! The handlers (put-with-signal in `am`, batches of puts in `batch`, transfers through the
//! target in `target`) run inside a worker's progress, called by UCX with raw pointers: the
//! header and the data are read here, once, so that the unsafe reading of UCX's arguments
//! is written once.

use rshmem_ucx_sys as sys;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Run a handler's (or a completion callback's) body: a panic must not unwind into UCX's C
/// frames, so it ends the process (which is also why no state a panic broke can be seen
/// afterwards: the body need not be unwind-safe).
#[inline(always)]
pub fn boundary<R>(body: impl FnOnce() -> R) -> R {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or_else(|_| std::process::abort())
}

/// The body of an active-message handler, run on UCX's arguments: `arg` as the `A` that
/// installed the handler, the message read once ([`Message::read`]), inside [`boundary`].
///
/// # Safety
/// UCX's handler arguments, as passed to the handler, during its call; `arg` points at a live
/// `A`.
#[inline(always)]
pub unsafe fn serve<A, H: Wire>(
    arg: *mut c_void,
    header: *const c_void,
    header_length: usize,
    data: *mut c_void,
    length: usize,
    param: *const sys::ucp_am_recv_param_t,
    body: impl FnOnce(&A, Message<'_, H>) -> sys::ucs_status_t,
) -> sys::ucs_status_t {
    boundary(|| {
        // SAFETY: caller.
        let (a, m) =
            unsafe { (&*(arg as *const A), Message::read(header, header_length, data, length, param)) };
        body(a, m)
    })
}

/// Define `$name`, a UCX active-message handler (`ucp_am_recv_callback_t`) whose `arg` is the
/// `$state` that installed it, serving each message with the closure's body through [`serve`]
/// (inside the panic boundary, the message read once): the `extern "C"` shell is written here
/// only.
macro_rules! am_handler {
    ($name:ident, |$state:ident: &$ty:ty, $m:ident: Message<$h:ty>| $body:block) => {
        unsafe extern "C" fn $name(
            arg: *mut std::ffi::c_void,
            header: *const std::ffi::c_void,
            header_length: usize,
            data: *mut std::ffi::c_void,
            length: usize,
            param: *const ::rshmem_ucx_sys::ucp_am_recv_param_t,
        ) -> ::rshmem_ucx_sys::ucs_status_t {
            // Outside the unsafe block below: the body's own unsafe operations say why.
            let body = |$state: &$ty,
                        $m: $crate::ucx::handler::Message<'_, $h>|
             -> ::rshmem_ucx_sys::ucs_status_t { $body };
            // SAFETY: UCX's arguments, during its call; `arg` is the leaked state that
            // installed this handler.
            unsafe { $crate::ucx::handler::serve(arg, header, header_length, data, length, param, body) }
        }
    };
}
pub(crate) use am_handler;

/// A message header as it travels: plain data read from whatever bytes arrive.
///
/// # Safety
/// `#[repr(C)]`, integers only and no padding, so that every bit pattern of its size is a
/// valid value.
pub unsafe trait Wire: Copy {
    /// Its size: a header of any other length is not one (tail aside).
    const BYTES: usize = std::mem::size_of::<Self>();
    /// How many bytes may follow it inside the header ([`Message::tail`]): a small answer's
    /// data travels there, so that its message has no data part (see [`without_data`]).
    const TAIL_MAX: usize = 0;
}

/// One message as UCX hands it to a handler, read once.
pub struct Message<'a, H> {
    /// The fixed-size header, or why it is not one (a header of another size, or none).
    pub header: Result<H, String>,
    /// A rendezvous message: its data is still at the sender, and `data` is UCX's descriptor
    /// for receiving it (`ucp_am_recv_data_nbx`), not the bytes.
    pub rndv: bool,
    /// The endpoint an answer goes back on, when the sender asked for one.
    pub reply_ep: Option<sys::ucp_ep_h>,
    /// The header's bytes after the fixed part (at most `H::TAIL_MAX`; empty when the header
    /// is not one).
    pub tail: &'a [u8],
    /// An eager message's bytes (empty for a rendezvous one).
    pub eager: &'a [u8],
    /// UCX's data argument as passed: the bytes, or the rendezvous descriptor.
    pub data: *mut c_void,
    /// The data's length in bytes, as UCX announced it.
    pub length: usize,
}

impl<'a, H: Wire> Message<'a, H> {
    /// Read a handler's arguments.
    ///
    /// # Safety
    /// The arguments UCX passed to the handler, used only during its call: `header` readable
    /// for `header_length` bytes, an eager message's `data` for `length`, `param` valid.
    #[inline(always)]
    pub unsafe fn read(
        header: *const c_void,
        header_length: usize,
        data: *mut c_void,
        length: usize,
        param: *const sys::ucp_am_recv_param_t,
    ) -> Message<'a, H> {
        // SAFETY: UCX passes a valid parameter structure (caller).
        let (attr, reply_ep) = unsafe { ((*param).recv_attr, (*param).reply_ep) };
        let rndv = attr & sys::UCP_AM_RECV_ATTR_FLAG_RNDV as u64 != 0;
        let wanted = H::BYTES;
        let (header, tail) =
            if header_length < wanted || header_length - wanted > H::TAIL_MAX || header.is_null() {
                let extra =
                    if H::TAIL_MAX == 0 { String::new() } else { format!(" (+ at most {})", H::TAIL_MAX) };
                (Err(format!("a header of {header_length} bytes, not {wanted}{extra}")), &[][..])
            } else {
                // SAFETY: `header_length >= size_of::<H>()` readable bytes (caller), in no
                // particular alignment; any bit pattern is an `H` (`Wire`); the tail is the rest of
                // them, read as bytes during the call.
                unsafe {
                    let tail =
                        std::slice::from_raw_parts((header as *const u8).add(wanted), header_length - wanted);
                    (Ok(std::ptr::read_unaligned(header as *const H)), tail)
                }
            };
        let eager: &[u8] = if rndv || length == 0 || data.is_null() {
            &[]
        } else {
            // SAFETY: an eager message's data is `length` readable bytes during the call
            // (caller).
            unsafe { std::slice::from_raw_parts(data as *const u8, length) }
        };
        let has_reply = attr & sys::UCP_AM_RECV_ATTR_FIELD_REPLY_EP as u64 != 0 && !reply_ep.is_null();
        Message { header, rndv, reply_ep: has_reply.then_some(reply_ep), tail, eager, data, length }
    }
}

/// A UCX active-message handler.
pub type Handler = unsafe extern "C" fn(
    *mut c_void,
    *const c_void,
    usize,
    *mut c_void,
    usize,
    *const sys::ucp_am_recv_param_t,
) -> sys::ucs_status_t;

/// Whether `worker` carries headers of `bytes`, which `what` needs.
pub fn check_header_room(worker: sys::ucp_worker_h, bytes: usize, what: &str) -> Result<(), String> {
    let mut attr = sys::ucp_worker_attr_t {
        field_mask: sys::UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER as u64,
        ..Default::default()
    };
    // SAFETY: a live worker; valid out-pointer.
    super::check("ucp_worker_query", unsafe { sys::ucp_worker_query(worker, &mut attr) })?;
    if attr.max_am_header < bytes {
        return Err(format!(
            "UCX carries active-message headers of {} bytes, {what} needs {bytes}",
            attr.max_am_header
        ));
    }
    Ok(())
}

/// Install `cb` for messages `id` on `worker`, whole messages only; `arg` must outlive the
/// worker.
pub fn set_handler(worker: sys::ucp_worker_h, id: u32, cb: Handler, arg: *mut c_void) -> Result<(), String> {
    let param = sys::ucp_am_handler_param_t {
        field_mask: (sys::UCP_AM_HANDLER_PARAM_FIELD_ID
            | sys::UCP_AM_HANDLER_PARAM_FIELD_FLAGS
            | sys::UCP_AM_HANDLER_PARAM_FIELD_CB
            | sys::UCP_AM_HANDLER_PARAM_FIELD_ARG) as u64,
        id,
        flags: sys::UCP_AM_FLAG_WHOLE_MSG,
        cb: Some(cb),
        arg,
    };
    // SAFETY: a live worker; the argument outlives it (caller).
    super::check("ucp_worker_set_am_recv_handler", unsafe {
        sys::ucp_worker_set_am_recv_handler(worker, &param)
    })
}

/// The data argument of a message that has none, sent through UCX's copying path: the
/// message is packed into one buffer and written with one `send`.
///
/// Why: UCX sends a message described as contiguous bytes that fit a short send as an I/O
/// vector, UCX's header, ours and the data, with one `sendmsg` over TCP (1.13's
/// `uct_tcp_ep_am_short_iov`), and an I/O vector of one part with `sendmsg` too (its
/// zero-copy path). An empty I/O vector allows neither. For a get, whose request and answer
/// are both small, this made the 8-byte get over TCP 2-4% faster (docs/performance.md,
/// "Messages without data"). Sets `param`'s datatype; returns the `buffer` argument, with a
/// count of 0.
pub fn without_data(param: &mut sys::ucp_request_param_t) -> *const c_void {
    /// An I/O vector's entry UCX never reads (the count is 0) but wants to be there.
    struct Empty(sys::ucp_dt_iov_t);
    // SAFETY: never written, and it points at nothing.
    unsafe impl Sync for Empty {}
    static EMPTY: Empty = Empty(sys::ucp_dt_iov_t { buffer: std::ptr::null_mut(), length: 0 });
    param.op_attr_mask |= sys::UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = sys::UCP_DATATYPE_IOV as sys::ucp_datatype_t;
    (&EMPTY.0 as *const sys::ucp_dt_iov_t).cast()
}

/// A message a handler sends (an answer): its header and data, which must stay where they are
/// until UCX has sent them.
pub trait Outbound: Send + 'static {
    /// `(header, header bytes, data, data bytes)`.
    fn parts(&self) -> (*const c_void, usize, *const c_void, usize);
}

/// Send `msg` as active message `id` on `ep` from inside a handler, where nothing may wait: the
/// message is boxed until its send completes (freed by the completion callback, or here when
/// UCX sent it at once). A failed send needs nothing more: whoever waits for the answer learns
/// of the lost peer through its endpoint.
pub fn send_boxed<T: Outbound>(ep: sys::ucp_ep_h, id: u32, msg: T) {
    let msg = Box::into_raw(Box::new(msg));
    let mut p = sys::ucp_request_param_t {
        op_attr_mask: sys::UCP_OP_ATTR_FIELD_CALLBACK
            | sys::UCP_OP_ATTR_FIELD_USER_DATA
            | sys::UCP_OP_ATTR_FIELD_FLAGS,
        flags: sys::UCP_AM_SEND_FLAG_EAGER,
        cb: sys::ucp_request_param_t__bindgen_ty_1 { send: Some(on_boxed_sent::<T>) },
        user_data: msg.cast(),
        ..Default::default()
    };
    // SAFETY: an endpoint UCX handed the handler; the boxed message stays valid and in place
    // until the send completes.
    let r = unsafe {
        let (h, hlen, d, dlen) = (*msg).parts();
        if dlen == 0 {
            sys::ucp_am_send_nbx(ep, id, h, hlen, without_data(&mut p), 0, &p)
        } else {
            sys::ucp_am_send_nbx(ep, id, h, hlen, d, dlen, &p)
        }
    };
    if !sys::ptr_is_request(r) {
        // SAFETY: no request: the callback will not run, so the box is ours again.
        drop(unsafe { Box::from_raw(msg) });
    }
}

unsafe extern "C" fn on_boxed_sent<T: Outbound>(
    request: *mut c_void,
    _status: sys::ucs_status_t,
    user_data: *mut c_void,
) {
    boundary(|| {
        // SAFETY: the box `send_boxed` leaked for this request, taken back exactly once; the
        // request is a worker's, released once from its completion callback.
        unsafe {
            drop(Box::from_raw(user_data as *mut T));
            sys::ucp_request_free(request);
        }
    })
}

/// Told why a message was refused or a receive failed; ends the job (see `lib.rs`).
pub type Complaint = fn(&str);

/// Messages a handler refused: counted, and told to whoever ends the job (printed until
/// someone is set).
#[derive(Default)]
pub struct Refusals {
    complain: OnceLock<Complaint>,
    count: AtomicUsize,
}

impl Refusals {
    /// Who to tell (once; later calls change nothing).
    pub fn on_complaint(&self, f: Complaint) {
        let _ = self.complain.set(f);
    }

    pub fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    #[cold]
    pub fn refuse(&self, msg: &str) {
        self.count.fetch_add(1, Ordering::AcqRel);
        match self.complain.get() {
            Some(f) => f(msg),
            None => eprintln!("{msg}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct Pair {
        a: u64,
        b: u32,
        c: u32,
    }
    // SAFETY: `repr(C)`, integers only, no padding.
    unsafe impl Wire for Pair {}

    /// A header that may carry up to 4 bytes after it.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct Tailed {
        a: u64,
    }
    // SAFETY: `repr(C)`, one integer.
    unsafe impl Wire for Tailed {
        const TAIL_MAX: usize = 4;
    }

    fn param(attr: u64, reply_ep: sys::ucp_ep_h) -> sys::ucp_am_recv_param_t {
        sys::ucp_am_recv_param_t { recv_attr: attr, reply_ep }
    }

    #[test]
    fn a_header_is_read_at_any_alignment_and_refused_at_any_other_size() {
        let want = Pair { a: 0x0102_0304_0506_0708, b: 9, c: 10 };
        let mut buf = [0u8; 1 + Pair::BYTES];
        // SAFETY: `Pair` is plain data; `buf` holds its bytes after one byte of offset.
        let bytes = unsafe { std::slice::from_raw_parts(&want as *const Pair as *const u8, Pair::BYTES) };
        buf[1..].copy_from_slice(bytes);
        let data = [7u8, 8, 9];
        let p = param(0, std::ptr::null_mut());
        let hdr = buf[1..].as_ptr() as *const c_void;
        // SAFETY: every pointer covers the lengths given, for the calls' duration.
        let m = unsafe { Message::<Pair>::read(hdr, Pair::BYTES, data.as_ptr() as *mut c_void, 3, &p) };
        assert_eq!(m.header, Ok(want));
        assert_eq!(m.eager, &data[..]);
        assert!(!m.rndv);
        assert!(m.reply_ep.is_none(), "no reply endpoint without the attribute");
        // SAFETY: as above, with a shorter header length.
        let m = unsafe { Message::<Pair>::read(hdr, Pair::BYTES - 1, std::ptr::null_mut(), 0, &p) };
        assert_eq!(m.header, Err(format!("a header of {} bytes, not {}", Pair::BYTES - 1, Pair::BYTES)));
        // SAFETY: no header at all.
        let m = unsafe { Message::<Pair>::read(std::ptr::null(), Pair::BYTES, std::ptr::null_mut(), 0, &p) };
        assert!(m.header.is_err());
    }

    #[test]
    fn a_rendezvous_has_no_eager_bytes_and_a_reply_endpoint_needs_its_attribute() {
        let hdr = Pair { a: 1, b: 2, c: 3 };
        let h = &hdr as *const Pair as *const c_void;
        let fake_ep = 0x1000 as sys::ucp_ep_h;
        let attr = sys::UCP_AM_RECV_ATTR_FLAG_RNDV as u64 | sys::UCP_AM_RECV_ATTR_FIELD_REPLY_EP as u64;
        let p = param(attr, fake_ep);
        let desc = 0x2000 as *mut c_void;
        // SAFETY: a rendezvous descriptor is only carried, never read.
        let m = unsafe { Message::<Pair>::read(h, Pair::BYTES, desc, 1 << 20, &p) };
        assert!(m.rndv);
        assert!(m.eager.is_empty());
        assert_eq!((m.data, m.length), (desc, 1 << 20));
        assert_eq!(m.reply_ep, Some(fake_ep));
        let p = param(sys::UCP_AM_RECV_ATTR_FIELD_REPLY_EP as u64, std::ptr::null_mut());
        // SAFETY: as above.
        let m = unsafe { Message::<Pair>::read(h, Pair::BYTES, std::ptr::null_mut(), 0, &p) };
        assert!(m.reply_ep.is_none(), "a null reply endpoint is none");
    }

    #[test]
    fn a_tail_follows_the_header_up_to_its_bound_and_only_where_allowed() {
        let mut buf = [0u8; 24];
        buf[..8].copy_from_slice(&0x1122u64.to_ne_bytes());
        buf[8..13].copy_from_slice(&[1, 2, 3, 4, 5]);
        let p = param(0, std::ptr::null_mut());
        let h = buf.as_ptr() as *const c_void;
        for (len, tail) in [(8, &[][..]), (10, &[1, 2][..]), (12, &[1, 2, 3, 4][..])] {
            // SAFETY: `buf` covers every length tried, for the call's duration.
            let m = unsafe { Message::<Tailed>::read(h, len, std::ptr::null_mut(), 0, &p) };
            assert_eq!((m.header, m.tail), (Ok(Tailed { a: 0x1122 }), tail));
        }
        // SAFETY: as above.
        let m = unsafe { Message::<Tailed>::read(h, 13, std::ptr::null_mut(), 0, &p) };
        assert_eq!(m.header, Err("a header of 13 bytes, not 8 (+ at most 4)".to_string()));
        assert!(m.tail.is_empty());
        // A header without a tail bound takes none.
        // SAFETY: as above.
        let m = unsafe { Message::<Pair>::read(h, Pair::BYTES + 1, std::ptr::null_mut(), 0, &p) };
        assert!(m.header.is_err() && m.tail.is_empty());
    }
}
