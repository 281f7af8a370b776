//! UCX, wrapped: context, worker, endpoints, registrations and remote keys, and the operations
//! the spml offers. Plain Rust so it can be tested in one process; `lib.rs` is the C table.

use rshmem_ucx_sys as sys;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub const MAX_SEGMENTS: usize = 4;

fn check(what: &str, s: sys::ucs_status_t) -> Result<(), String> {
    if s == sys::UCS_OK {
        Ok(())
    } else {
        Err(format!("{what}: {}", sys::status_string(s)))
    }
}

/// A UCX context with one worker. The worker runs in multi-thread mode because the progress
/// thread drives it while the application issues operations.
pub struct Ucx {
    pub context: sys::ucp_context_h,
    pub worker: sys::ucp_worker_h,
    pub address: Vec<u8>,
    eps: Vec<sys::ucp_ep_h>,
    rkeys: Vec<sys::ucp_rkey_h>,
    progress: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
}

// SAFETY: the worker is created in UCS_THREAD_MODE_MULTI, so UCX serialises access internally;
// the endpoint and key tables are only written during initialisation.
unsafe impl Send for Ucx {}
unsafe impl Sync for Ucx {}

struct SendPtr(sys::ucp_worker_h);
// SAFETY: a multi-thread-mode worker may be progressed from another thread.
unsafe impl Send for SendPtr {}

/// `ucp_dt_make_contig(8)`.
const DT_U64: sys::ucp_datatype_t =
    (8 << sys::UCP_DATATYPE_SHIFT) as sys::ucp_datatype_t | sys::UCP_DATATYPE_CONTIG as sys::ucp_datatype_t;

/// Only report failed endpoints: a peer that exits after finalizing is normal, and an
/// operation on a failed endpoint returns an error that the core turns into a clear abort.
unsafe extern "C" fn ep_error(_arg: *mut c_void, _ep: sys::ucp_ep_h, _status: sys::ucs_status_t) {}

impl Ucx {
    /// Read UCX's configuration and create a context and a worker.
    pub fn new() -> Result<Ucx, String> {
        // SAFETY (whole block): UCX calls with valid out-pointers; every status is checked.
        unsafe {
            let mut config: *mut sys::ucp_config_t = std::ptr::null_mut();
            check("ucp_config_read", sys::ucp_config_read(std::ptr::null(), std::ptr::null(), &mut config))?;
            let params = sys::ucp_params_t {
                field_mask: sys::UCP_PARAM_FIELD_FEATURES as u64,
                features: (sys::UCP_FEATURE_RMA
                    | sys::UCP_FEATURE_AMO32
                    | sys::UCP_FEATURE_AMO64
                    | sys::UCP_FEATURE_WAKEUP) as u64,
                ..Default::default()
            };
            let mut context: sys::ucp_context_h = std::ptr::null_mut();
            let st = sys::ucp_init(&params, config, &mut context);
            sys::ucp_config_release(config);
            check("ucp_init", st)?;
            let wparams = sys::ucp_worker_params_t {
                field_mask: sys::UCP_WORKER_PARAM_FIELD_THREAD_MODE as u64,
                thread_mode: sys::UCS_THREAD_MODE_MULTI,
                ..Default::default()
            };
            let mut worker: sys::ucp_worker_h = std::ptr::null_mut();
            if let Err(e) = check("ucp_worker_create", sys::ucp_worker_create(context, &wparams, &mut worker))
            {
                sys::ucp_cleanup(context);
                return Err(e);
            }
            let mut addr: *mut sys::ucp_address_t = std::ptr::null_mut();
            let mut len = 0usize;
            if let Err(e) =
                check("ucp_worker_get_address", sys::ucp_worker_get_address(worker, &mut addr, &mut len))
            {
                sys::ucp_worker_destroy(worker);
                sys::ucp_cleanup(context);
                return Err(e);
            }
            let address = std::slice::from_raw_parts(addr as *const u8, len).to_vec();
            sys::ucp_worker_release_address(worker, addr);
            Ok(Ucx { context, worker, address, eps: Vec::new(), rkeys: Vec::new(), progress: None })
        }
    }

    /// Create an endpoint to every worker address (index = PE).
    pub fn connect(&mut self, addrs: &[Vec<u8>]) -> Result<(), String> {
        self.eps = Vec::with_capacity(addrs.len());
        self.rkeys = vec![std::ptr::null_mut(); addrs.len() * MAX_SEGMENTS];
        for (pe, a) in addrs.iter().enumerate() {
            let params = sys::ucp_ep_params_t {
                field_mask: (sys::UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
                    | sys::UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
                    | sys::UCP_EP_PARAM_FIELD_ERR_HANDLER) as u64,
                address: a.as_ptr() as *const sys::ucp_address_t,
                err_mode: sys::UCP_ERR_HANDLING_MODE_PEER,
                err_handler: sys::ucp_err_handler_t { cb: Some(ep_error), arg: pe as *mut c_void },
                ..Default::default()
            };
            let mut ep: sys::ucp_ep_h = std::ptr::null_mut();
            // SAFETY: the address bytes outlive the call; valid out-pointer.
            check(&format!("ucp_ep_create to PE {pe}"), unsafe {
                sys::ucp_ep_create(self.worker, &params, &mut ep)
            })?;
            self.eps.push(ep);
        }
        Ok(())
    }

    /// Register `[base, base+len)`; with `allocate`, UCX allocates the memory (base may be NULL
    /// or a hint) so that local peers can map it.
    pub fn mem_map(
        &self,
        base: *mut c_void,
        len: usize,
        allocate: bool,
    ) -> Result<(sys::ucp_mem_h, *mut c_void), String> {
        let mut flags = 0u32;
        if allocate {
            flags |= sys::UCP_MEM_MAP_ALLOCATE;
        }
        let params = sys::ucp_mem_map_params_t {
            field_mask: (sys::UCP_MEM_MAP_PARAM_FIELD_ADDRESS
                | sys::UCP_MEM_MAP_PARAM_FIELD_LENGTH
                | sys::UCP_MEM_MAP_PARAM_FIELD_FLAGS) as u64,
            address: base,
            length: len,
            flags: flags as _,
            ..Default::default()
        };
        let mut memh: sys::ucp_mem_h = std::ptr::null_mut();
        // SAFETY: valid parameters and out-pointer.
        check("ucp_mem_map", unsafe { sys::ucp_mem_map(self.context, &params, &mut memh) })?;
        let mut attr =
            sys::ucp_mem_attr_t { field_mask: sys::UCP_MEM_ATTR_FIELD_ADDRESS as u64, ..Default::default() };
        // SAFETY: querying the registration just made.
        check("ucp_mem_query", unsafe { sys::ucp_mem_query(memh, &mut attr) })?;
        Ok((memh, attr.address))
    }

    /// # Safety
    /// `memh` must be a registration of this context.
    pub unsafe fn mem_unmap(&self, memh: sys::ucp_mem_h) {
        // SAFETY: a registration made by this context.
        unsafe { sys::ucp_mem_unmap(self.context, memh) };
    }

    /// # Safety
    /// `memh` must be a registration of this context.
    pub unsafe fn rkey_pack(&self, memh: sys::ucp_mem_h) -> Result<Vec<u8>, String> {
        let mut buf: *mut c_void = std::ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: valid registration and out-pointers; the buffer is released below.
        unsafe {
            check("ucp_rkey_pack", sys::ucp_rkey_pack(self.context, memh, &mut buf, &mut len))?;
            let v = std::slice::from_raw_parts(buf as *const u8, len).to_vec();
            sys::ucp_rkey_buffer_release(buf);
            Ok(v)
        }
    }

    /// Unpack PE `pe`'s key for segment `seg`.
    pub fn add_rkey(&mut self, pe: usize, seg: usize, packed: &[u8]) -> Result<(), String> {
        let mut rkey: sys::ucp_rkey_h = std::ptr::null_mut();
        // SAFETY: the endpoint exists (connect ran) and the packed key outlives the call.
        check(&format!("ucp_ep_rkey_unpack for PE {pe}"), unsafe {
            sys::ucp_ep_rkey_unpack(self.eps[pe], packed.as_ptr() as *const c_void, &mut rkey)
        })?;
        self.rkeys[pe * MAX_SEGMENTS + seg] = rkey;
        Ok(())
    }

    #[inline(always)]
    fn rkey(&self, pe: usize, seg: usize) -> sys::ucp_rkey_h {
        self.rkeys[pe * MAX_SEGMENTS + seg]
    }

    /// A local mapping of a remote address, when the transport allows load/store.
    pub fn remote_ptr(&self, pe: usize, seg: usize, raddr: u64) -> *mut c_void {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: a key unpacked for this endpoint; valid out-pointer.
        match unsafe { sys::ucp_rkey_ptr(self.rkey(pe, seg), raddr, &mut p) } {
            sys::UCS_OK => p,
            _ => std::ptr::null_mut(),
        }
    }

    /// Wait for a request (or an immediate status) to complete.
    fn wait(&self, r: sys::ucs_status_ptr_t) -> sys::ucs_status_t {
        if r.is_null() {
            return sys::UCS_OK;
        }
        if !sys::ptr_is_request(r) {
            return sys::ptr_status(r);
        }
        // SAFETY: a live request of this worker; freed exactly once.
        unsafe {
            loop {
                let st = sys::ucp_request_check_status(r);
                if st != sys::UCS_INPROGRESS {
                    sys::ucp_request_free(r);
                    return st;
                }
                sys::ucp_worker_progress(self.worker);
            }
        }
    }

    /// Fire and forget: completion is observed by the next flush.
    fn release(r: sys::ucs_status_ptr_t) -> sys::ucs_status_t {
        if sys::ptr_is_request(r) {
            // SAFETY: a live request; UCX completes it and frees it later.
            unsafe { sys::ucp_request_free(r) };
            sys::UCS_OK
        } else {
            sys::ptr_status(r)
        }
    }

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
    ) -> sys::ucs_status_t {
        let param = sys::ucp_request_param_t::default();
        // SAFETY: endpoint and key for this PE; `src` readable for `len`.
        let r = unsafe { sys::ucp_put_nbx(self.eps[pe], src, len, raddr, self.rkey(pe, seg), &param) };
        if blocking {
            self.wait(r)
        } else {
            Self::release(r)
        }
    }

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
    ) -> sys::ucs_status_t {
        let param = sys::ucp_request_param_t::default();
        // SAFETY: endpoint and key for this PE; `dst` writable for `len`.
        let r = unsafe { sys::ucp_get_nbx(self.eps[pe], dst, len, raddr, self.rkey(pe, seg), &param) };
        if blocking {
            self.wait(r)
        } else {
            Self::release(r)
        }
    }

    pub fn atomic_add_u64(&self, pe: usize, seg: usize, raddr: u64, value: u64) -> sys::ucs_status_t {
        let param = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_DATATYPE,
            datatype: DT_U64,
            ..Default::default()
        };
        // SAFETY: `value` lives until the request completes (we wait for it).
        let r = unsafe {
            sys::ucp_atomic_op_nbx(
                self.eps[pe],
                sys::UCP_ATOMIC_OP_ADD,
                &value as *const u64 as *const c_void,
                1,
                raddr,
                self.rkey(pe, seg),
                &param,
            )
        };
        self.wait(r)
    }

    /// A 4- or 8-byte atomic (`AMO_*` of the plugin ABI); the old value is returned when
    /// `fetch` is set. Waits for completion.
    #[allow(clippy::too_many_arguments)]
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
    ) -> Result<u64, sys::ucs_status_t> {
        use rshmem_plugin_api::*;
        let (uop, operand) = match op {
            AMO_FETCH => (sys::UCP_ATOMIC_OP_ADD, 0),
            AMO_SET | AMO_SWAP => (sys::UCP_ATOMIC_OP_SWAP, value),
            AMO_CSWAP => (sys::UCP_ATOMIC_OP_CSWAP, cond),
            AMO_ADD => (sys::UCP_ATOMIC_OP_ADD, value),
            AMO_AND => (sys::UCP_ATOMIC_OP_AND, value),
            AMO_OR => (sys::UCP_ATOMIC_OP_OR, value),
            AMO_XOR => (sys::UCP_ATOMIC_OP_XOR, value),
            _ => return Err(sys::UCS_ERR_INVALID_PARAM),
        };
        let fetch = fetch || op == AMO_FETCH || op == AMO_CSWAP;
        // 4- and 8-byte words travel in their own width (little-endian low bytes of a u64).
        let mut buf = operand;
        // For CSWAP (Result=Y; if X==Y then Y=Z) the buffer holds the compare value X and the
        // reply buffer carries the new value Z in and the old value out.
        let mut reply: u64 = if op == AMO_CSWAP { value } else { 0 };
        let dt = ((size as u64) << sys::UCP_DATATYPE_SHIFT) | sys::UCP_DATATYPE_CONTIG as u64;
        let mut param = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_DATATYPE,
            datatype: dt as sys::ucp_datatype_t,
            ..Default::default()
        };
        if fetch {
            param.op_attr_mask |= sys::UCP_OP_ATTR_FIELD_REPLY_BUFFER;
            param.reply_buffer = &mut reply as *mut u64 as *mut c_void;
        }
        // SAFETY: `buf` and `reply` live until the request completes (we wait for it).
        let r = unsafe {
            sys::ucp_atomic_op_nbx(
                self.eps[pe],
                uop,
                &mut buf as *mut u64 as *const c_void,
                1,
                raddr,
                self.rkey(pe, seg),
                &param,
            )
        };
        match self.wait(r) {
            sys::UCS_OK => Ok(if size == 4 { reply & 0xffff_ffff } else { reply }),
            st => Err(st),
        }
    }

    pub fn flush(&self) -> sys::ucs_status_t {
        let param = sys::ucp_request_param_t::default();
        // SAFETY: flushing our own worker.
        let r = unsafe { sys::ucp_worker_flush_nbx(self.worker, &param) };
        self.wait(r)
    }

    pub fn fence(&self) -> sys::ucs_status_t {
        // SAFETY: our own worker.
        unsafe { sys::ucp_worker_fence(self.worker) }
    }

    pub fn progress(&self) {
        // SAFETY: our own multi-thread-mode worker.
        unsafe { sys::ucp_worker_progress(self.worker) };
    }

    /// Start the thread that gives this PE's memory target-side progress when the application
    /// is busy: it progresses the worker, and when idle sleeps on the worker's event fd.
    pub fn start_progress_thread(&mut self) -> Result<(), String> {
        let mut efd = -1;
        // SAFETY: valid out-pointer; the worker was created with the WAKEUP feature.
        check("ucp_worker_get_efd", unsafe { sys::ucp_worker_get_efd(self.worker, &mut efd) })?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let w = SendPtr(self.worker);
        let h = std::thread::Builder::new()
            .name("rshmem-ucx-progress".into())
            .spawn(move || {
                let w = w;
                while !s.load(Ordering::Acquire) {
                    // SAFETY: the worker outlives the thread (joined before it is destroyed).
                    unsafe {
                        if sys::ucp_worker_progress(w.0) != 0 {
                            continue;
                        }
                        if sys::ucp_worker_arm(w.0) == sys::UCS_OK {
                            let mut pfd = libc::pollfd { fd: efd, events: libc::POLLIN, revents: 0 };
                            libc::poll(&mut pfd, 1, 10);
                        }
                    }
                }
            })
            .map_err(|e| format!("cannot start the progress thread: {e}"))?;
        self.progress = Some((stop, h));
        Ok(())
    }

    /// Stop the progress thread and complete outstanding operations. Endpoints are not closed:
    /// peers may still be finishing, and the process exit releases them.
    pub fn finalize(&mut self) {
        if let Some((stop, h)) = self.progress.take() {
            stop.store(true, Ordering::Release);
            let _ = h.join();
        }
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_and_atomics_to_self() {
        let mut u = Ucx::new().expect("UCX context");
        let addr = u.address.clone();
        u.connect(&[addr]).expect("connect to self");
        u.start_progress_thread().unwrap();
        let mut target = vec![0u64; 64];
        let (memh, base) = u.mem_map(target.as_mut_ptr().cast(), 64 * 8, false).unwrap();
        assert_eq!(base, target.as_mut_ptr().cast());
        // SAFETY: a registration of this context.
        let packed = unsafe { u.rkey_pack(memh) }.unwrap();
        u.add_rkey(0, 1, &packed).unwrap();
        let src: Vec<u64> = (0..64).map(|i| i * 3 + 1).collect();
        let raddr = target.as_ptr() as u64;
        // SAFETY: buffers outlive the operations.
        assert_eq!(unsafe { u.put(0, 1, raddr, src.as_ptr().cast(), 64 * 8, true) }, sys::UCS_OK);
        assert_eq!(u.flush(), sys::UCS_OK);
        assert_eq!(target, src);
        let mut back = vec![0u64; 8];
        // SAFETY: as above.
        assert_eq!(unsafe { u.get(0, 1, raddr + 8 * 8, back.as_mut_ptr().cast(), 64, true) }, sys::UCS_OK);
        assert_eq!(back, src[8..16]);
        assert_eq!(u.atomic_add_u64(0, 1, raddr, 100), sys::UCS_OK);
        assert_eq!(u.flush(), sys::UCS_OK);
        // SAFETY: reading our own buffer that UCX wrote.
        assert_eq!(unsafe { std::ptr::read_volatile(&target[0]) }, 101);
        // compare-and-swap: swaps only when the compare value matches, returns the old value
        assert_eq!(u.atomic(0, 1, raddr, rshmem_plugin_api::AMO_CSWAP, 8, 5, 101, true), Ok(101));
        assert_eq!(u.atomic(0, 1, raddr, rshmem_plugin_api::AMO_CSWAP, 8, 6, 999, true), Ok(5));
        assert_eq!(u.atomic(0, 1, raddr, rshmem_plugin_api::AMO_FETCH, 8, 0, 0, true), Ok(5));
        assert_eq!(u.atomic(0, 1, raddr, rshmem_plugin_api::AMO_SWAP, 8, 101, 0, true), Ok(5));
        // non-blocking forms complete at flush
        let v = [9u64; 4];
        // SAFETY: `v` outlives the flush below.
        assert_eq!(unsafe { u.put(0, 1, raddr + 32 * 8, v.as_ptr().cast(), 32, false) }, sys::UCS_OK);
        assert_eq!(u.flush(), sys::UCS_OK);
        assert_eq!(target[32..36], v);
        u.finalize();
        // SAFETY: our registration, no longer used.
        unsafe { u.mem_unmap(memh) };
    }

    #[test]
    fn allocated_memory_is_mappable_through_its_key() {
        let mut u = Ucx::new().expect("UCX context");
        let addr = u.address.clone();
        u.connect(&[addr]).unwrap();
        let (memh, base) = u.mem_map(std::ptr::null_mut(), 1 << 20, true).unwrap();
        assert!(!base.is_null());
        // SAFETY: a registration of this context.
        let packed = unsafe { u.rkey_pack(memh) }.unwrap();
        u.add_rkey(0, 0, &packed).unwrap();
        // SAFETY: writing into memory UCX allocated for us.
        unsafe { *(base as *mut u64) = 77 };
        let p = u.remote_ptr(0, 0, base as u64);
        if !p.is_null() {
            // SAFETY: UCX mapped the same memory.
            assert_eq!(unsafe { *(p as *const u64) }, 77);
        }
        u.finalize();
        // SAFETY: our registration, no longer used.
        unsafe { u.mem_unmap(memh) };
    }
}
