//! memheap "cuda": GPU memory for the GPU space, through `cudarc` with the CUDA driver
//! (`libcuda.so`) loaded at run time, so neither the build nor a host without a GPU needs
//! CUDA. The probe says why the component is unavailable (no driver, no device, an
//! initialisation error); cudarc panics when the driver library is missing, so the probe
//! looks for it first and every call into cudarc is inside a panic boundary.
//!
//! The device of a PE is the one the program made current on the thread that calls
//! `shmem_init` (`cudaSetDevice` before init, NVSHMEM's rule), so rshmem's device memory and
//! the program's kernels share a device and its primary context. Where no context is current,
//! it is the PE's local rank modulo the devices it can see (`CUDA_VISIBLE_DEVICES` narrows
//! those, as the driver applies it), so the PEs of a host spread over its GPUs.
//!
//! The allocator is the CPU heap's (offsets, bookkeeping in host memory, never in the
//! segment), with device-to-device copies when `realloc` moves a block.
//!
//! The device slots the core moves data with (`segments`, `copy`, `owns`):
//! - a segment is one `cuMemAlloc` allocation; its attach blob is its CUDA IPC handle, which a
//!   peer on the same host opens with `cuIpcOpenMemHandle` (CUDA IPC has no name to remove);
//! - `copy` is `cuMemcpyAsync` under unified addressing (either side host or device memory)
//!   on a stream of the memheap's own, then `cuStreamSynchronize`, because the core relies on
//!   a finished copy (an atomic's read-modify-write, the order of a put and its signal). The
//!   stream is a blocking one: ordered after the program's work on the legacy default stream,
//!   as `cudaMemcpy` is, but not waiting for its kernels on non-blocking streams. A plain
//!   `cuMemcpy` measured faster device to device only because it does not wait for the copy
//!   (docs/performance.md, "GPU check"). `SHMEM_MCA_memheap_cuda_poll_copies=1` waits by
//!   polling `cuStreamQuery` instead, to measure against it;
//! - `owns` asks `cuPointerGetAttribute` for the memory type;
//! - `host_alloc`/`host_free` give the core page-locked staging buffers (`cuMemHostAlloc`);
//! - `host_register`/`host_unregister` page-lock host memory the core has, its GPU spaces'
//!   host shadows (`cuMemHostRegister`).
//!
//! Every driver call runs with the primary context pushed on the calling thread's stack and
//! popped after (`OnDevice`), so a program with a driver-API context of its own finds it
//! current after each OpenSHMEM call.
//!
//! Run on an NVIDIA H100 on 2026-11-24 by `scripts/gpu-check.sh` (docs/performance.md, "GPU
//! check"), before the push and pop; in CI on the test driver `tests/plugins/fake_libcuda.c`
//! (`tests/tests/plugins.rs`, `memheap_cuda_runs_on_a_stand_in_driver`).

use cudarc::driver::{result, sys};
use rshmem_plugin_api::boundary;
use rshmem_plugin_api::heap_slots;
use rshmem_plugin_api::{
    cstr, CoreServices, Framework, MemheapOps, ParamDecl, QueryResult, SegmentDesc, SshmemOps, StreamWordOp,
    MEMHEAP_DEVICE_GPU, PARAM_BOOL, RC_ERROR, RC_OK, RC_UNSUPPORTED, STREAM_OP_WAIT, STREAM_OP_WRITE,
    STREAM_WAIT_EQ, STREAM_WAIT_GE,
};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

mod reduce;

/// `SHMEM_MCA_memheap_cuda_poll_copies`, read at open.
static POLL_COPIES: AtomicBool = AtomicBool::new(false);

/// The device this PE uses, its primary context, and the stream every copy runs on.
struct Device {
    ctx: sys::CUcontext,
    /// A stream of the memheap's own, created without `CU_STREAM_NON_BLOCKING`: a copy is
    /// ordered after the work the program queued on the legacy default stream (as a
    /// `cudaMemcpy` would be), and waiting for it (`cuStreamSynchronize`) does not wait for
    /// the program's kernels on its own non-blocking streams, as `cuCtxSynchronize` did.
    stream: sys::CUstream,
    /// The device takes 64-bit stream memory operations (`cuStreamWriteValue64`,
    /// `cuStreamWaitValue64`), which the stream-ordered signals and waits are made of.
    stream_mem_ops: bool,
}

// SAFETY: a primary context handle is process-wide and may be made current on any thread; a
// stream of that context may be used from any thread where the context is current.
unsafe impl Send for Device {}
// SAFETY: as for Send.
unsafe impl Sync for Device {}

static DEVICE: OnceLock<Result<Device, String>> = OnceLock::new();

/// What the probe found, for the reason text.
pub struct Found {
    pub ordinal: i32,
    /// The program had made this device current before init.
    pub current: bool,
    pub count: i32,
    pub name: String,
    pub bytes: usize,
}

/// Find the driver and this PE's device. `Err` says why there is no GPU memory here.
pub fn probe(local_rank: i32) -> Result<Found, String> {
    // SAFETY: only tries to dlopen the driver's library names; loads nothing else.
    if !unsafe { sys::is_culib_present() } {
        return Err("no CUDA driver: libcuda.so could not be loaded".into());
    }
    let cuda = |what: &str, e: result::DriverError| format!("{what} failed: {e}");
    result::init().map_err(|e| cuda("cuInit", e))?;
    let count = result::device::get_count().map_err(|e| cuda("cuDeviceGetCount", e))?;
    if count <= 0 {
        return Err(format!(
            "the CUDA driver sees no device (CUDA_VISIBLE_DEVICES={})",
            std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_else(|_| "unset".into())
        ));
    }
    let current = current_device().filter(|d| (0..count).contains(d));
    let ordinal = current.unwrap_or(local_rank.max(0) % count);
    let dev = result::device::get(ordinal).map_err(|e| cuda("cuDeviceGet", e))?;
    let name = result::device::get_name(dev).unwrap_or_else(|_| "unnamed".into());
    // SAFETY: `dev` is a device handle the driver just returned.
    let bytes = unsafe { result::device::total_mem(dev) }.map_err(|e| cuda("cuDeviceTotalMem", e))?;
    Ok(Found { ordinal, current: current.is_some(), count, name, bytes })
}

/// The device of the context current on this thread, if the program made one current
/// (`cudaSetDevice`, or a driver-API context) before calling into rshmem.
fn current_device() -> Option<i32> {
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: writes one context handle; the driver is initialised (cuInit) by the caller.
    if unsafe { sys::cuCtxGetCurrent(&mut ctx) } != sys::CUresult::CUDA_SUCCESS || ctx.is_null() {
        return None;
    }
    let mut dev: sys::CUdevice = 0;
    // SAFETY: writes one device handle of the current context; a device handle is its ordinal.
    (unsafe { sys::cuCtxGetDevice(&mut dev) } == sys::CUresult::CUDA_SUCCESS).then_some(dev)
}

fn device(local_rank: i32) -> &'static Result<Device, String> {
    DEVICE.get_or_init(|| {
        let f = probe(local_rank)?;
        let dev = result::device::get(f.ordinal).map_err(|e| format!("cuDeviceGet failed: {e}"))?;
        // SAFETY: `dev` is valid; the primary context is retained for the process's lifetime.
        let ctx = unsafe { result::primary_ctx::retain(dev) }
            .map_err(|e| format!("cuDevicePrimaryCtxRetain failed: {e}"))?;
        // The stream belongs to the primary context; a context the program made current
        // before init is current again when `on` drops.
        let on = enter(ctx)?;
        let mut stream: sys::CUstream = std::ptr::null_mut();
        let flags = sys::CUstream_flags_enum::CU_STREAM_DEFAULT as u32;
        // SAFETY: writes one stream handle; the stream lives as long as the process.
        check("cuStreamCreate", unsafe { sys::cuStreamCreate(&mut stream, flags) })?;
        drop(on);
        let mut v: c_int = 0;
        let attr = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS;
        // SAFETY: writes one int about a valid device.
        let asked = unsafe { sys::cuDeviceGetAttribute(&mut v, attr, dev) };
        let stream_mem_ops = asked == sys::CUresult::CUDA_SUCCESS && v != 0;
        Ok(Device { ctx, stream, stream_mem_ops })
    })
}

/// `realloc`'s copy: device to device, on the memheap's stream like every other copy.
///
/// # Safety
/// Both ranges are device memory of this PE's context, `len` bytes, not overlapping.
unsafe fn device_copy(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: the caller's contract.
    if let Err(e) = unsafe { stream_copy(dst.cast(), src.cast(), len) } {
        panic!("memheap cuda: realloc's copy: {e}");
    }
}

/// Copy `len` bytes on this PE's stream and wait until they are in place: the core relies on
/// a finished copy (an atomic's read-modify-write, the order of a put and its signal), and a
/// device-to-device copy may otherwise return before its bytes land.
///
/// # Safety
/// Both ranges valid for `len` bytes, host or device memory (unified addressing tells the
/// driver which).
unsafe fn stream_copy(dst: *mut c_void, src: *const c_void, len: usize) -> Result<(), String> {
    let Some(Ok(d)) = DEVICE.get() else { return Err("the device was not opened".into()) };
    let _on = enter(d.ctx)?;
    // SAFETY: the caller's contract on the ranges; the stream belongs to the current context.
    check("cuMemcpyAsync", unsafe {
        sys::cuMemcpyAsync(dst as sys::CUdeviceptr, src as sys::CUdeviceptr, len, d.stream)
    })?;
    if !POLL_COPIES.load(Ordering::Relaxed) {
        // SAFETY: the stream is live for the process.
        return check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(d.stream) });
    }
    loop {
        // SAFETY: as above.
        match unsafe { sys::cuStreamQuery(d.stream) } {
            sys::CUresult::CUDA_ERROR_NOT_READY => std::hint::spin_loop(),
            r => return check("cuStreamQuery", r),
        }
    }
}

unsafe extern "C" fn create(base: *mut c_void, size: usize) -> *mut c_void {
    heap_slots::create_with("memheap cuda", base, size, device_copy)
}

/// The device's primary context, current on the calling thread while this lives. A program
/// that made a context of its own current (driver API, `cuCtxCreate`) gets it back when this
/// drops: the primary context was pushed on the thread's stack and is popped. A thread with no
/// context keeps the primary one, as the CUDA runtime would make it current on first use; a
/// thread where it already is current pays one `cuCtxGetCurrent`.
struct OnDevice {
    pushed: bool,
}

impl Drop for OnDevice {
    fn drop(&mut self) {
        if self.pushed {
            let mut ctx: sys::CUcontext = std::ptr::null_mut();
            // SAFETY: pops the context `enter` pushed on this thread. It cannot fail for a
            // context that was pushed, and a drop has no one to tell if it did.
            unsafe { sys::cuCtxPopCurrent_v2(&mut ctx) };
        }
    }
}

/// Make `ctx` current on the calling thread until the guard drops (see `OnDevice`).
fn enter(ctx: sys::CUcontext) -> Result<OnDevice, String> {
    let mut now: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: writes one context handle.
    check("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut now) })?;
    if now == ctx {
        return Ok(OnDevice { pushed: false });
    }
    if now.is_null() {
        // SAFETY: `ctx` is the retained primary context, live for the process.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) })?;
        return Ok(OnDevice { pushed: false });
    }
    // SAFETY: as above; the guard pops it.
    check("cuCtxPushCurrent", unsafe { sys::cuCtxPushCurrent_v2(ctx) })?;
    Ok(OnDevice { pushed: true })
}

/// This PE's device context, current on the calling thread (the core calls from any thread)
/// until the guard drops.
fn on_device() -> Result<OnDevice, String> {
    let Some(Ok(d)) = DEVICE.get() else { return Err("the device was not opened".into()) };
    enter(d.ctx)
}

fn check(what: &str, r: sys::CUresult) -> Result<(), String> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed: {r:?}"))
    }
}

/// An slot's result: RC_OK, or RC_ERROR after saying why (a panic counts as an error).
fn rc(slot: &str, f: impl FnOnce() -> Result<(), String>) -> c_int {
    match boundary::catch(f) {
        Ok(Ok(())) => RC_OK,
        Ok(Err(e)) | Err(e) => {
            eprintln!("rshmem memheap cuda: {slot}: {e}");
            RC_ERROR
        }
    }
}

unsafe extern "C" fn seg_create(size: usize, _hint: *mut c_void, out: *mut SegmentDesc) -> c_int {
    rc("segment create", || {
        let _on = on_device()?;
        let mut dptr: sys::CUdeviceptr = 0;
        // SAFETY: a valid out-pointer, in this PE's context.
        check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut dptr, size) })?;
        let mut h = sys::CUipcMemHandle { reserved: [0; 64] };
        // SAFETY: `dptr` is the allocation just made; `h` is writable.
        let ipc = unsafe { sys::cuIpcGetMemHandle(&mut h, dptr) } == sys::CUresult::CUDA_SUCCESS;
        // SAFETY: the caller's out-pointer.
        let d = unsafe { &mut *out };
        *d = SegmentDesc::default();
        d.base = dptr as *mut c_void;
        d.size = size;
        if ipc {
            for (b, c) in d.blob.iter_mut().zip(h.reserved) {
                *b = c as u8;
            }
            d.blob_len = h.reserved.len();
        }
        Ok(())
    })
}

unsafe extern "C" fn seg_attach(
    blob: *const u8,
    blob_len: usize,
    _size: usize,
    addr: *mut *mut c_void,
) -> c_int {
    rc("segment attach", || {
        let _on = on_device()?;
        let mut h = sys::CUipcMemHandle { reserved: [0; 64] };
        if blob_len != h.reserved.len() {
            return Err(format!("an IPC handle of {blob_len} bytes"));
        }
        // SAFETY: the core passes `blob_len` readable bytes.
        let bytes = unsafe { std::slice::from_raw_parts(blob, blob_len) };
        for (c, b) in h.reserved.iter_mut().zip(bytes) {
            *c = *b as std::ffi::c_char;
        }
        let mut dptr: sys::CUdeviceptr = 0;
        let flags = sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32;
        // SAFETY: a handle another process of this host exported; a valid out-pointer.
        check("cuIpcOpenMemHandle", unsafe { sys::cuIpcOpenMemHandle_v2(&mut dptr, h, flags) })?;
        // SAFETY: the caller's out-pointer.
        unsafe { *addr = dptr as *mut c_void };
        Ok(())
    })
}

unsafe extern "C" fn seg_detach(addr: *mut c_void, _size: usize) {
    rc("segment detach", || {
        let _on = on_device()?;
        // SAFETY: an address `seg_attach` opened.
        check("cuIpcCloseMemHandle", unsafe { sys::cuIpcCloseMemHandle(addr as sys::CUdeviceptr) })
    });
}

unsafe extern "C" fn seg_unlink(_seg: *mut SegmentDesc) {}

unsafe extern "C" fn seg_destroy(seg: *mut SegmentDesc) {
    rc("segment destroy", || {
        let _on = on_device()?;
        // SAFETY: the caller's segment, made by `seg_create`.
        let base = unsafe { (*seg).base } as sys::CUdeviceptr;
        // SAFETY: an allocation of `seg_create` that nobody uses any more.
        check("cuMemFree", unsafe { sys::cuMemFree_v2(base) })
    });
}

static SEGMENTS: SshmemOps = SshmemOps {
    struct_size: std::mem::size_of::<SshmemOps>(),
    create: seg_create,
    attach: seg_attach,
    detach: seg_detach,
    unlink: seg_unlink,
    destroy: seg_destroy,
};

unsafe extern "C" fn copy(dst: *mut c_void, src: *const c_void, len: usize) -> c_int {
    // SAFETY: the core's contract: both ranges valid for `len` bytes, host or device memory.
    rc("copy", || unsafe { stream_copy(dst, src, len) })
}

unsafe extern "C" fn owns(ptr: *const c_void) -> c_int {
    let yes = boundary::catch(|| {
        let mut kind: u32 = 0;
        // SAFETY: asks about an address; writes one u32.
        let r = unsafe {
            sys::cuPointerGetAttribute(
                (&mut kind as *mut u32).cast(),
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                ptr as sys::CUdeviceptr,
            )
        };
        r == sys::CUresult::CUDA_SUCCESS && kind == sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32
    });
    c_int::from(yes.unwrap_or(false))
}

/// Page-locked host memory for the core's staging buffers: the device copies it by DMA at
/// full speed, where pageable memory goes through the driver's own bounce buffer.
/// `CU_MEMHOSTALLOC_PORTABLE` makes it pinned for every context of the process, not only this
/// PE's device's.
unsafe extern "C" fn host_alloc(len: usize) -> *mut c_void {
    let mut p: *mut c_void = std::ptr::null_mut();
    let ok = rc("host_alloc", || {
        let _on = on_device()?;
        // SAFETY: writes one pointer to `p`.
        check("cuMemHostAlloc", unsafe { sys::cuMemHostAlloc(&mut p, len, sys::CU_MEMHOSTALLOC_PORTABLE) })
    });
    if ok == RC_OK {
        p
    } else {
        std::ptr::null_mut()
    }
}

unsafe extern "C" fn host_free(p: *mut c_void) {
    rc("host_free", || {
        let _on = on_device()?;
        // SAFETY: the core's contract: `p` came from `host_alloc` and is freed once.
        check("cuMemFreeHost", unsafe { sys::cuMemFreeHost(p) })
    });
}

/// Page-lock host memory the core has (a GPU space's host shadow), for `copy` to move by DMA
/// as it moves `host_alloc`'s. `CU_MEMHOSTREGISTER_PORTABLE`, as for `host_alloc`.
unsafe extern "C" fn host_register(p: *mut c_void, len: usize) -> c_int {
    rc("host_register", || {
        let _on = on_device()?;
        // SAFETY: the core's contract: `len` bytes of its own mapped host memory at `p`,
        // page aligned, unregistered before they are unmapped.
        check("cuMemHostRegister", unsafe {
            sys::cuMemHostRegister_v2(p, len, sys::CU_MEMHOSTREGISTER_PORTABLE)
        })
    })
}

unsafe extern "C" fn host_unregister(p: *mut c_void) -> c_int {
    rc("host_unregister", || {
        let _on = on_device()?;
        // SAFETY: the core's contract: `p` was registered by `host_register` and is still mapped.
        check("cuMemHostUnregister", unsafe { sys::cuMemHostUnregister(p) })
    })
}

/// The context a program's stream belongs to (the primary context for the default stream),
/// current on the calling thread until the guard drops: a stream's operations are queued in
/// its own context, which need not be this PE's primary one (a program's `cuCtxCreate`).
fn on_stream(stream: *mut c_void) -> Result<OnDevice, String> {
    let Some(Ok(d)) = DEVICE.get() else { return Err("the device was not opened".into()) };
    if stream.is_null() {
        return enter(d.ctx);
    }
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: the core's contract: `stream` is a live stream of the program's; writes one handle.
    check("cuStreamGetCtx", unsafe { sys::cuStreamGetCtx(stream as sys::CUstream, &mut ctx) })?;
    enter(ctx)
}

/// Whether the device takes the 64-bit stream memory operations (see `Device`).
fn stream_mem_ops() -> bool {
    matches!(DEVICE.get(), Some(Ok(d)) if d.stream_mem_ops)
}

/// Queue a copy on the program's stream (`cuMemcpyAsync`): it runs after the stream's earlier
/// work, and the stream's later work runs after it.
unsafe extern "C" fn stream_copy_slot(
    stream: *mut c_void,
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
) -> c_int {
    rc("stream_copy", || {
        let _on = on_stream(stream)?;
        // SAFETY: the core's contract: both ranges valid for `len` bytes, host or device
        // memory, `stream` a live stream.
        check("cuMemcpyAsync", unsafe {
            sys::cuMemcpyAsync(dst as sys::CUdeviceptr, src as sys::CUdeviceptr, len, stream as sys::CUstream)
        })
    })
}

/// Queue a store of `value` at device word `addr` (`cuStreamWriteValue64` without
/// `CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER`: the stream's earlier writes are visible first).
unsafe extern "C" fn stream_write_u64(stream: *mut c_void, addr: *mut u64, value: u64) -> c_int {
    if !stream_mem_ops() {
        return RC_UNSUPPORTED;
    }
    rc("stream_write_u64", || {
        let _on = on_stream(stream)?;
        let flags = sys::CUstreamWriteValue_flags::CU_STREAM_WRITE_VALUE_DEFAULT as u32;
        // SAFETY: the core's contract: `addr` an aligned device word, `stream` live.
        check("cuStreamWriteValue64", unsafe {
            sys::cuStreamWriteValue64_v2(stream as sys::CUstream, addr as sys::CUdeviceptr, value, flags)
        })
    })
}

/// Queue a wait for device word `addr` (`cuStreamWaitValue64`, EQ or GEQ).
unsafe extern "C" fn stream_wait_u64(stream: *mut c_void, addr: *const u64, cmp: c_int, value: u64) -> c_int {
    let how = match cmp {
        STREAM_WAIT_EQ => sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_EQ,
        STREAM_WAIT_GE => sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ,
        _ => return RC_UNSUPPORTED,
    };
    if !stream_mem_ops() {
        return RC_UNSUPPORTED;
    }
    rc("stream_wait_u64", || {
        let _on = on_stream(stream)?;
        // SAFETY: the core's contract: `addr` an aligned device word, `stream` live.
        check("cuStreamWaitValue64", unsafe {
            sys::cuStreamWaitValue64_v2(stream as sys::CUstream, addr as sys::CUdeviceptr, value, how as u32)
        })
    })
}

/// The most operations one `cuStreamBatchMemOp` takes (the driver's documented limit).
const BATCH_MAX: usize = 256;

/// `SHMEM_MCA_memheap_cuda_batch_stream_ops`, read at open.
static BATCH: AtomicBool = AtomicBool::new(true);

/// Queue word operations on the stream together (`cuStreamBatchMemOp`), 256 at a time.
unsafe extern "C" fn stream_batch(stream: *mut c_void, ops: *const StreamWordOp, n: usize) -> c_int {
    if !stream_mem_ops() || !BATCH.load(Ordering::Relaxed) {
        return RC_UNSUPPORTED;
    }
    // SAFETY: the core's contract: `n` operations at `ops`.
    let ops = unsafe { std::slice::from_raw_parts(ops, n) };
    if ops.iter().any(|o| o.kind == STREAM_OP_WAIT && o.cmp != STREAM_WAIT_EQ && o.cmp != STREAM_WAIT_GE) {
        return RC_UNSUPPORTED;
    }
    rc("stream_batch", || {
        let _on = on_stream(stream)?;
        for chunk in ops.chunks(BATCH_MAX) {
            let mut params: Vec<sys::CUstreamBatchMemOpParams> = chunk.iter().map(batch_param).collect();
            // SAFETY: `params` holds `chunk.len()` initialised operations on device words (the
            // core's contract); `stream` is live.
            check("cuStreamBatchMemOp", unsafe {
                sys::cuStreamBatchMemOp_v2(
                    stream as sys::CUstream,
                    params.len() as u32,
                    params.as_mut_ptr(),
                    0,
                )
            })?;
        }
        Ok(())
    })
}

/// The driver's form of one word operation.
fn batch_param(o: &StreamWordOp) -> sys::CUstreamBatchMemOpParams {
    // SAFETY: an all-zero union is a valid value of every member (plain integers).
    let mut p: sys::CUstreamBatchMemOpParams = unsafe { std::mem::zeroed() };
    if o.kind == STREAM_OP_WRITE {
        p.writeValue.operation = sys::CUstreamBatchMemOpType::CU_STREAM_MEM_OP_WRITE_VALUE_64;
        p.writeValue.address = o.addr as sys::CUdeviceptr;
        p.writeValue.__bindgen_anon_1.value64 = o.value;
        p.writeValue.flags = sys::CUstreamWriteValue_flags::CU_STREAM_WRITE_VALUE_DEFAULT as u32;
    } else {
        p.waitValue.operation = sys::CUstreamBatchMemOpType::CU_STREAM_MEM_OP_WAIT_VALUE_64;
        p.waitValue.address = o.addr as sys::CUdeviceptr;
        p.waitValue.__bindgen_anon_1.value64 = o.value;
        p.waitValue.flags = if o.cmp == STREAM_WAIT_EQ {
            sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_EQ as u32
        } else {
            sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ as u32
        };
    }
    p
}

/// Compiled reduction kernels by (type, operation): the `CUfunction`, or 0 where compiling
/// failed (said once, then declined).
static KERNELS: Mutex<Vec<((u32, u32), usize)>> = Mutex::new(Vec::new());

/// The reduction kernel for `dtype` and `op`, compiled in the device's primary context on
/// first use. `Err` says why there is none.
fn kernel(dtype: u32, op: u32) -> Result<sys::CUfunction, String> {
    let mut k = KERNELS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, f)) = k.iter().find(|(key, _)| *key == (dtype, op)) {
        return if f == 0 { Err("compiling it failed before".into()) } else { Ok(f as sys::CUfunction) };
    }
    let made = (|| {
        let ptx = reduce::ptx(dtype, op).ok_or("no kernel for this type and operation")?;
        let ptx = std::ffi::CString::new(ptx).map_err(|e| e.to_string())?;
        let _on = on_device()?;
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: a NUL-terminated PTX text; writes one module handle (kept for the process).
        check("cuModuleLoadData", unsafe { sys::cuModuleLoadData(&mut module, ptx.as_ptr().cast()) })?;
        let mut f: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: the module just loaded; writes one function handle.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut f, module, reduce::KERNEL.as_ptr())
        })?;
        Ok::<_, String>(f)
    })();
    k.push(((dtype, op), made.as_ref().map_or(0, |f| *f as usize)));
    made
}

/// Queue a reduction of `nsrc` device arrays into `dst` (see `MemheapOps::reduce`).
unsafe extern "C" fn reduce_slot(
    stream: *mut c_void,
    dst: *mut c_void,
    srcs: *const *const c_void,
    nsrc: usize,
    count: usize,
    dtype: u32,
    op: u32,
) -> c_int {
    if nsrc == 0 || nsrc > reduce::MAX_SOURCES || reduce::supported(dtype, op).is_none() {
        return RC_UNSUPPORTED;
    }
    let f = match boundary::catch(|| kernel(dtype, op)) {
        Ok(Ok(f)) => f,
        Ok(Err(e)) | Err(e) => {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                eprintln!("rshmem memheap cuda: no reduction kernel (type {dtype}, operation {op}): {e}; reductions go through the host");
            }
            return RC_UNSUPPORTED;
        }
    };
    if count == 0 {
        return RC_OK;
    }
    rc("reduce", || {
        let _on = on_stream(stream)?;
        let mut dst = dst as u64;
        // SAFETY: the core's contract: `nsrc` pointers at `srcs`.
        let given = unsafe { std::slice::from_raw_parts(srcs, nsrc) };
        let mut s = [0u64; reduce::MAX_SOURCES];
        for (slot, p) in s.iter_mut().zip(given) {
            *slot = *p as u64;
        }
        let mut n = nsrc as u32;
        let mut count = count as u64;
        let mut params: Vec<*mut c_void> = vec![(&mut dst as *mut u64).cast()];
        params.extend(s.iter_mut().map(|p| (p as *mut u64).cast::<c_void>()));
        params.push((&mut n as *mut u32).cast());
        params.push((&mut count as *mut u64).cast());
        let threads = 256u32;
        let blocks = count.div_ceil(u64::from(threads)).clamp(1, 1024) as u32;
        // SAFETY: a kernel of this context whose parameters are the ten values above, each
        // alive until the call returns (the driver copies them); the arrays are the core's.
        check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                f,
                blocks,
                1,
                1,
                threads,
                1,
                1,
                0,
                stream as sys::CUstream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    })
}

/// Wait for everything queued on the program's stream so far (by polling under
/// `poll_copies`, as for the memheap's own copies).
unsafe extern "C" fn stream_sync(stream: *mut c_void) -> c_int {
    rc("stream_sync", || {
        let _on = on_stream(stream)?;
        let stream = stream as sys::CUstream;
        if !POLL_COPIES.load(Ordering::Relaxed) {
            // SAFETY: the core's contract: `stream` is live (NULL: the default stream).
            return check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(stream) });
        }
        loop {
            // SAFETY: as above.
            match unsafe { sys::cuStreamQuery(stream) } {
                sys::CUresult::CUDA_ERROR_NOT_READY => std::hint::spin_loop(),
                r => return check("cuStreamQuery", r),
            }
        }
    })
}

/// Where an MPS control daemon's pipes are (`CUDA_MPS_PIPE_DIRECTORY`, else CUDA's default),
/// which is where an MPS client connects: a `control` pipe there means the PE's contexts are
/// served by MPS.
fn mps_serves() -> bool {
    let dir = std::env::var("CUDA_MPS_PIPE_DIRECTORY").unwrap_or_else(|_| "/tmp/nvidia-mps".into());
    std::path::Path::new(&dir).join("control").exists()
}

/// This PE's device UUID, and whether MPS serves it (see `MemheapOps::device_identity`).
unsafe extern "C" fn device_identity(uuid: *mut u8, shared_server: *mut c_int) -> c_int {
    rc("device_identity", || {
        let Some(Ok(d)) = DEVICE.get() else { return Err("the device was not opened".into()) };
        let _on = enter(d.ctx)?;
        let mut dev: sys::CUdevice = 0;
        // SAFETY: writes one device handle of the current (primary) context.
        check("cuCtxGetDevice", unsafe { sys::cuCtxGetDevice(&mut dev) })?;
        let mut u = sys::CUuuid { bytes: [0; 16] };
        // SAFETY: writes the 16-byte UUID of a valid device.
        check("cuDeviceGetUuid", unsafe { sys::cuDeviceGetUuid_v2(&mut u, dev) })?;
        // SAFETY: the core's contract: 16 writable bytes at `uuid`, one int at `shared_server`.
        unsafe {
            for (i, b) in u.bytes.iter().enumerate() {
                *uuid.add(i) = *b as u8;
            }
            *shared_server = c_int::from(mps_serves());
        }
        Ok(())
    })
}

static OPS: MemheapOps = MemheapOps {
    segments: &SEGMENTS,
    copy: Some(copy),
    owns: Some(owns),
    host_alloc: Some(host_alloc),
    host_free: Some(host_free),
    host_register: Some(host_register),
    host_unregister: Some(host_unregister),
    stream_copy: Some(stream_copy_slot),
    stream_write_u64: Some(stream_write_u64),
    stream_wait_u64: Some(stream_wait_u64),
    stream_sync: Some(stream_sync),
    device_identity: Some(device_identity),
    stream_batch: Some(stream_batch),
    reduce: Some(reduce_slot),
    ..heap_slots::table(create, MEMHEAP_DEVICE_GPU)
};

fn query(core: &'static CoreServices, r: &mut QueryResult) {
    let rank = core.local_rank;
    // cudarc reports a missing symbol or library by panicking: that is "unavailable" too.
    let found = boundary::catch(|| probe(rank))
        .unwrap_or_else(|m| Err(format!("the CUDA driver could not be used (cudarc: {m})")));
    match found {
        Ok(f) => {
            r.available = 1;
            r.priority = 10;
            let why = if f.current {
                "current at shmem_init".to_string()
            } else {
                format!("for local rank {rank}")
            };
            r.set_reason(&format!(
                "GPU memory: device {} of {} ({}, {:.1} GiB) {why}",
                f.ordinal,
                f.count,
                f.name,
                f.bytes as f64 / (1u64 << 30) as f64
            ));
        }
        Err(why) => {
            r.available = 0;
            r.set_reason(&why);
        }
    }
}

fn open(core: &'static CoreServices) -> *const c_void {
    // SAFETY: the table the core passed to open. The core checked the value is a boolean.
    let poll = unsafe { rshmem_plugin_api::param(core, "memheap", "cuda", "poll_copies") };
    let poll = poll.and_then(|v| rshmem_plugin_api::values::parse_bool(&v)).unwrap_or(false);
    POLL_COPIES.store(poll, Ordering::Relaxed);
    // SAFETY: as above.
    let batch = unsafe { rshmem_plugin_api::param(core, "memheap", "cuda", "batch_stream_ops") };
    BATCH.store(
        batch.and_then(|v| rshmem_plugin_api::values::parse_bool(&v)).unwrap_or(true),
        Ordering::Relaxed,
    );
    match device(core.local_rank) {
        Ok(_) => &OPS as *const MemheapOps as *const c_void,
        Err(_) => std::ptr::null(),
    }
}

rshmem_plugin_api::export_plugin! {
    framework: Framework::Memheap,
    name: "cuda",
    description: "GPU memory heap through the CUDA driver (loaded at run time); first-fit allocator with host-side bookkeeping",
    params: &[
        ParamDecl {
            name: cstr!("poll_copies"),
            kind: PARAM_BOOL,
            default_value: cstr!("0"),
            doc: cstr!("Wait for each copy by polling cuStreamQuery on the calling thread instead of cuStreamSynchronize: on an H100 polling was faster for some directions at 8 B and 64 KiB and slower for others (docs/performance.md, GPU check), so it stays a choice to measure with tests/bench/device_rma.c"),
        },
        ParamDecl {
            name: cstr!("batch_stream_ops"),
            kind: PARAM_BOOL,
            default_value: cstr!("1"),
            doc: cstr!("Queue a stream barrier's writes and waits in one cuStreamBatchMemOp; 0 queues them one by one (cuStreamWriteValue64, cuStreamWaitValue64), to compare with tests/bench/on_stream.c"),
        },
    ],
    caps: rshmem_plugin_api::MEMHEAP_CAP_GPU,
    query: query,
    open: open,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rshmem_plugin_api::ABI_VERSION;

    #[test]
    fn the_probe_answers_without_panicking_and_says_why_when_unavailable() {
        // SAFETY: the static descriptor; query writes only into `r`.
        let d = unsafe { &*shmem_plugin_descriptor() };
        assert_eq!(d.abi_version, ABI_VERSION);
        let mut r = QueryResult::default();
        let core = rshmem_plugin_api::testing::fake_core(0, 1, "cuda-test", None);
        // SAFETY: a valid core table; `r` is writable.
        unsafe { (d.query.unwrap())(core, &mut r) };
        let reason = r.reason_str();
        assert!(!reason.is_empty());
        // SAFETY: only dlopens the driver library names.
        if !unsafe { sys::is_culib_present() } {
            assert_eq!(r.available, 0);
            assert!(reason.contains("no CUDA driver"), "{reason}");
        }
    }

    #[test]
    fn the_table_serves_gpu_memory() {
        assert_eq!(OPS.device(), MEMHEAP_DEVICE_GPU);
        assert_eq!(OPS.struct_size, std::mem::size_of::<MemheapOps>());
        assert!(OPS.device_slots().is_some(), "segments, copy and owns are all there");
        assert!(OPS.host_slots().is_some(), "host_alloc and host_free are both there");
        assert!(OPS.stream_slots().is_some(), "the four stream-ordered slots are there");
        // The 64-bit stream memory operations of CUDA 12 and later (attribute 122; 93 is the
        // older form, which needed a driver parameter).
        assert_eq!(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS as u32, 122);
    }

    #[test]
    fn without_a_device_the_slots_fail_cleanly() {
        // SAFETY: only dlopens the driver library names.
        if unsafe { sys::is_culib_present() } {
            return;
        }
        let mut d = SegmentDesc::default();
        // SAFETY: a valid out-pointer; no device was opened, so the slot must refuse.
        assert_eq!(unsafe { seg_create(1 << 20, std::ptr::null_mut(), &mut d) }, RC_ERROR);
        let mut x = 0u64;
        // SAFETY: both ranges are a local word.
        assert_eq!(unsafe { copy((&mut x as *mut u64).cast(), (&x as *const u64).cast(), 8) }, RC_ERROR);
        // SAFETY: looks a pointer up; without a driver the answer is no.
        assert_eq!(unsafe { owns((&x as *const u64).cast()) }, 0);
        // SAFETY: no device: the slot answers NULL instead of pinned memory.
        assert!(unsafe { host_alloc(4096) }.is_null());
    }
}
