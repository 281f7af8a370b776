//! Load/store pointers into peers' segments through UCX (`ucp_rkey_ptr`), for segments an
//! sshmem component cannot map by name (sshmem "ucx").
//!
//! The keys of the default channel cannot be used for this: its endpoints ask for peer-failure
//! detection, which keeps UCX off its shared-memory transports, so a key unpacked on them
//! reaches the peer's memory only if it happened to be unpacked while the endpoint was still
//! being wired up. That made mapping a matter of timing: with 4 PEs on one host and sshmem
//! "ucx", 7 runs of 20 had some PE fail to map some peer (`ucp_rkey_ptr`:
//! UCS_ERR_UNREACHABLE), 2026-11-24. So each peer gets a second endpoint, without error
//! handling, used for nothing but unpacking keys to map; no operation goes through it (UCX
//! 1.13's shared-memory atomics are wrong, see `Channel::connect`).

use super::channel::Channel;
use rshmem_ucx_sys as sys;
use std::ffi::c_void;
use std::time::Instant;

/// The mapping endpoints (created on first use, one per peer) and the keys unpacked on them.
#[derive(Default)]
pub(super) struct Mappings {
    eps: Vec<(usize, usize)>,
    /// `(pe, seg, rkey)`: a key stays while its mapping may be in use (until the segment is
    /// announced again, or finalize).
    keys: Vec<(usize, usize, usize)>,
}

impl Mappings {
    /// A pointer to `raddr` in PE `pe`'s segment `seg`, whose latest packed key is `packed`,
    /// or null when no transport can map it. `addr` is the peer's worker address.
    pub(super) fn ptr(
        &mut self,
        chan: &Channel,
        addr: &[u8],
        pe: usize,
        seg: usize,
        packed: &[u8],
        raddr: u64,
    ) -> *mut c_void {
        let rkey = match self.keys.iter().find(|k| (k.0, k.1) == (pe, seg)) {
            Some(k) => k.2 as sys::ucp_rkey_h,
            None => {
                let Some(ep) = self.ep(chan, addr, pe) else { return std::ptr::null_mut() };
                let mut rkey: sys::ucp_rkey_h = std::ptr::null_mut();
                // SAFETY: a live endpoint; the packed key outlives the call; valid out-pointer.
                if unsafe { sys::ucp_ep_rkey_unpack(ep, packed.as_ptr() as *const c_void, &mut rkey) }
                    != sys::UCS_OK
                {
                    return std::ptr::null_mut();
                }
                self.keys.push((pe, seg, rkey as usize));
                rkey
            }
        };
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: a live key; valid out-pointer.
        match unsafe { sys::ucp_rkey_ptr(rkey, raddr, &mut p) } {
            sys::UCS_OK => p,
            _ => std::ptr::null_mut(),
        }
    }

    fn ep(&mut self, chan: &Channel, addr: &[u8], pe: usize) -> Option<sys::ucp_ep_h> {
        if let Some(e) = self.eps.iter().find(|e| e.0 == pe) {
            return Some(e.1 as sys::ucp_ep_h);
        }
        // The channel's endpoint to the peer first. UCX pairs two workers' endpoints in the
        // order each side created them, and refuses a pair whose error handling differs
        // ("asymmetric endpoint configuration"): both sides must make the channel's endpoint
        // (peer failure detection) before this one (none), as when `connect` made them all at
        // once. With endpoints made on first use, a PE that maps a peer here may otherwise
        // create this one first while the peer creates its channel endpoint first.
        chan.ep(pe).ok()?;
        let params = sys::ucp_ep_params_t {
            field_mask: sys::UCP_EP_PARAM_FIELD_REMOTE_ADDRESS as u64,
            address: addr.as_ptr() as *const sys::ucp_address_t,
            ..Default::default()
        };
        let mut ep: sys::ucp_ep_h = std::ptr::null_mut();
        // SAFETY: the default worker; the address bytes outlive the call; valid out-pointer.
        if unsafe { sys::ucp_ep_create(chan.worker(), &params, &mut ep) } != sys::UCS_OK {
            return None;
        }
        self.eps.push((pe, ep as usize));
        Some(ep)
    }

    /// PE `pe` announced segment `seg` again: its old mapping is gone with the old segment.
    pub(super) fn forget(&mut self, pe: usize, seg: usize) {
        self.keys.retain(|&(p, s, k)| {
            let keep = (p, s) != (pe, seg);
            if !keep {
                // SAFETY: our key, destroyed once (removed from the list).
                unsafe { sys::ucp_rkey_destroy(k as sys::ucp_rkey_h) };
            }
            keep
        });
    }

    /// Release every key, then close the endpoints (forced: nothing is outstanding on them).
    pub(super) fn close(&mut self, chan: &Channel, deadline: Instant) {
        for (_, _, k) in self.keys.drain(..) {
            // SAFETY: our key, destroyed once.
            unsafe { sys::ucp_rkey_destroy(k as sys::ucp_rkey_h) };
        }
        let close = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_FLAGS,
            flags: sys::UCP_EP_CLOSE_FLAG_FORCE,
            ..Default::default()
        };
        for (_, ep) in self.eps.drain(..) {
            // SAFETY: an endpoint we created, closed once.
            let r = unsafe { sys::ucp_ep_close_nbx(ep as sys::ucp_ep_h, &close) };
            if let Err(r) = chan.wait_until(r, deadline) {
                // SAFETY: a live request; UCX releases it when it completes.
                unsafe { sys::ucp_request_free(r) };
            }
        }
    }
}
