//! memheap "cuda": GPU memory for the GPU space, through `cudarc` with the CUDA driver
//! (`libcuda.so`) loaded at run time, so neither the build nor a host without a GPU needs
//! CUDA. The probe says why the component is unavailable (no driver, no device, an
//! initialisation error); cudarc panics when the driver library is missing, so the probe
//! looks for it first and every call into cudarc is inside a panic boundary.
//!
//! The device of a PE is its local rank modulo the devices it can see
//! (`CUDA_VISIBLE_DEVICES` narrows those, as the driver applies it), so the PEs of a host
//! spread over its GPUs.
//!
//! The allocator is the CPU heap's (offsets, bookkeeping in host memory, never in the
//! segment), with device-to-device copies when `realloc` moves a block.

use cudarc::driver::{result, sys};
use rshmem_plugin_api::boundary;
use rshmem_plugin_api::heap_slots;
use rshmem_plugin_api::{CoreServices, Framework, MemheapOps, QueryResult, MEMHEAP_DEVICE_GPU};
use std::ffi::c_void;
use std::sync::OnceLock;

/// The device this PE uses and its primary context.
struct Device {
    ctx: sys::CUcontext,
}

// SAFETY: a primary context handle is process-wide and may be made current on any thread.
unsafe impl Send for Device {}
// SAFETY: as for Send.
unsafe impl Sync for Device {}

static DEVICE: OnceLock<Result<Device, String>> = OnceLock::new();

/// What the probe found, for the reason text.
pub struct Found {
    pub ordinal: i32,
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
    let ordinal = local_rank.max(0) % count;
    let dev = result::device::get(ordinal).map_err(|e| cuda("cuDeviceGet", e))?;
    let name = result::device::get_name(dev).unwrap_or_else(|_| "unnamed".into());
    // SAFETY: `dev` is a device handle the driver just returned.
    let bytes = unsafe { result::device::total_mem(dev) }.map_err(|e| cuda("cuDeviceTotalMem", e))?;
    Ok(Found { ordinal, count, name, bytes })
}

fn device(local_rank: i32) -> &'static Result<Device, String> {
    DEVICE.get_or_init(|| {
        let f = probe(local_rank)?;
        let dev = result::device::get(f.ordinal).map_err(|e| format!("cuDeviceGet failed: {e}"))?;
        // SAFETY: `dev` is valid; the primary context is retained for the process's lifetime.
        let ctx = unsafe { result::primary_ctx::retain(dev) }
            .map_err(|e| format!("cuDevicePrimaryCtxRetain failed: {e}"))?;
        Ok(Device { ctx })
    })
}

/// `realloc`'s copy: device to device, in this PE's context.
///
/// # Safety
/// Both ranges are device memory of this PE's context, `len` bytes, not overlapping.
unsafe fn device_copy(dst: *mut u8, src: *const u8, len: usize) {
    let Some(Ok(d)) = DEVICE.get() else { panic!("memheap cuda: a copy before the device was opened") };
    // SAFETY: the context was retained in `device`; the ranges are the caller's promise.
    unsafe {
        result::ctx::set_current(d.ctx).expect("cuCtxSetCurrent");
        result::memcpy_dtod_sync(dst as sys::CUdeviceptr, src as sys::CUdeviceptr, len)
            .expect("cuMemcpyDtoD");
    }
}

unsafe extern "C" fn create(base: *mut c_void, size: usize) -> *mut c_void {
    heap_slots::create_with("memheap cuda", base, size, device_copy)
}

static OPS: MemheapOps = heap_slots::table(create, MEMHEAP_DEVICE_GPU);

fn query(core: &'static CoreServices, r: &mut QueryResult) {
    let rank = core.local_rank;
    // cudarc reports a missing symbol or library by panicking: that is "unavailable" too.
    let found = boundary::catch(|| probe(rank))
        .unwrap_or_else(|m| Err(format!("the CUDA driver could not be used (cudarc: {m})")));
    match found {
        Ok(f) => {
            r.available = 1;
            r.priority = 10;
            r.set_reason(&format!(
                "GPU memory: device {} of {} ({}, {:.1} GiB) for local rank {rank}",
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
    match device(core.local_rank) {
        Ok(_) => &OPS as *const MemheapOps as *const c_void,
        Err(_) => std::ptr::null(),
    }
}

rshmem_plugin_api::export_plugin! {
    framework: Framework::Memheap,
    name: "cuda",
    description: "GPU memory heap through the CUDA driver (loaded at run time); first-fit allocator with host-side bookkeeping",
    params: &[],
    caps: 0,
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
    }
}
