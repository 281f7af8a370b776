//! The component against a stand-in core whose transport is a UCX context made here.

use super::*;
use rshmem_plugin_api::{TransportHandle, TRANSPORT_NONE};
use std::sync::atomic::AtomicU32;

static KIND: AtomicU32 = AtomicU32::new(TRANSPORT_NONE);
static CTX: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

unsafe extern "C" fn transport() -> TransportHandle {
    TransportHandle {
        kind: KIND.load(Ordering::Acquire),
        context: CTX.load(Ordering::Acquire),
        worker: std::ptr::null_mut(),
    }
}
/// A stand-in core table whose transport is the one set in `KIND` and `CTX`.
fn core_table() -> &'static CoreServices {
    rshmem_plugin_api::testing::fake_core(0, 1, "test", Some(transport))
}

fn ucx_context() -> sys::ucp_context_h {
    let mut config: *mut sys::ucp_config_t = std::ptr::null_mut();
    // SAFETY: default configuration; valid out-pointer.
    assert_eq!(unsafe { sys::ucp_config_read(std::ptr::null(), std::ptr::null(), &mut config) }, sys::UCS_OK);
    let params = sys::ucp_params_t {
        field_mask: sys::UCP_PARAM_FIELD_FEATURES as u64,
        features: (sys::UCP_FEATURE_RMA | sys::UCP_FEATURE_AMO64) as u64,
        ..Default::default()
    };
    let mut ctx: sys::ucp_context_h = std::ptr::null_mut();
    // SAFETY: valid parameters, configuration and out-pointer.
    let st = unsafe { sys::ucp_init(&params, config, &mut ctx) };
    // SAFETY: no longer needed.
    unsafe { sys::ucp_config_release(config) };
    assert_eq!(st, sys::UCS_OK);
    ctx
}

#[test]
fn needs_the_ucx_transport_then_allocates_segments() {
    let desc = shmem_plugin_descriptor();
    // SAFETY: the descriptor is a static.
    let desc = unsafe { &*desc };
    assert_eq!(desc.framework, Framework::Sshmem as u32);
    let (query, open) = (desc.query.unwrap(), desc.open.unwrap());
    let core_tbl = core_table();

    // Another spml was selected: unavailable, and open declines.
    let mut r = QueryResult::default();
    // SAFETY: plugin ABI calls with valid pointers.
    unsafe { query(core_tbl, &mut r) };
    assert_eq!(r.available, 0);
    assert_eq!(r.reason_str(), "needs the ucx spml's transport");
    // SAFETY: as above.
    assert!(unsafe { open(core_tbl) }.is_null());

    // The ucx spml's transport: available at priority 20.
    let ctx = ucx_context();
    CTX.store(ctx as *mut c_void, Ordering::Release);
    KIND.store(TRANSPORT_UCX, Ordering::Release);
    let mut r = QueryResult::default();
    // SAFETY: as above.
    unsafe { query(core_tbl, &mut r) };
    assert_eq!((r.available, r.priority), (1, 20), "{}", r.reason_str());
    // SAFETY: as above; sshmem components return an SshmemOps table.
    let ops = unsafe { &*(open(core_tbl) as *const SshmemOps) };
    assert_eq!(ops.struct_size, std::mem::size_of::<SshmemOps>());

    let mut seg = SegmentDesc::default();
    // SAFETY: plugin ABI call with a valid out-pointer.
    assert_eq!(unsafe { (ops.create)(3 << 20, std::ptr::null_mut(), &mut seg) }, RC_OK);
    assert!(!seg.base.is_null());
    assert_eq!(seg.size, 3 << 20);
    assert_eq!(seg.blob_len, 0);
    assert!(!seg.transport_memh.is_null());
    assert_eq!(seg.transport_memh, seg.handle);
    // SAFETY: the segment is ours, 3 MiB long.
    unsafe {
        let words = seg.base as *mut u64;
        *words = 1;
        *words.add((3 << 17) - 1) = 2;
        assert_eq!(*words + *words.add((3 << 17) - 1), 3);
    }
    let mut addr = std::ptr::null_mut();
    // SAFETY: plugin ABI calls.
    assert_eq!(unsafe { (ops.attach)(seg.blob.as_ptr(), 0, seg.size, &mut addr) }, RC_UNSUPPORTED);
    // SAFETY: as above.
    unsafe { (ops.unlink)(&mut seg) };
    // SAFETY: as above.
    assert_eq!(unsafe { (ops.create)(0, std::ptr::null_mut(), &mut SegmentDesc::default()) }, RC_ERROR);
    // SAFETY: as above; destroying twice is harmless.
    unsafe {
        (ops.destroy)(&mut seg);
        (ops.destroy)(&mut seg);
    }
    assert!(seg.handle.is_null());
    // SAFETY: every registration of the context is gone.
    unsafe { sys::ucp_cleanup(ctx) };
}
