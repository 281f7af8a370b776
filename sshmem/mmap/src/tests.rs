//! Unit tests through the component's own C ABI, with a fake core that only provides the job id
//! and PE number the component reads (the one-sided services are never called by sshmem).

use super::*;
use rshmem_plugin_api::ABI_VERSION;
use std::ffi::CStr;
use std::sync::OnceLock;

/// One fake core for the whole test binary (the component keeps the pointer). The job id has a
/// '/' to check that names stay a single path component, and the pid so that concurrent test
/// runs do not collide.
fn fake_core() -> *const CoreServices {
    static CORE: OnceLock<usize> = OnceLock::new();
    *CORE.get_or_init(|| {
        rshmem_plugin_api::testing::fake_core(3, 4, &format!("test/{}", std::process::id()), None)
            as *const CoreServices as usize
    }) as *const CoreServices
}

/// The ops table, opened with the fake core.
fn ops() -> &'static SshmemOps {
    let d = shmem_plugin_descriptor();
    // SAFETY: the descriptor is a static with both entry points set.
    let p = unsafe { ((*d).open.unwrap())(fake_core()) };
    // SAFETY: `open` returns the static SshmemOps table.
    unsafe { &*(p as *const SshmemOps) }
}

/// Entries of /dev/shm whose name has this test process's job id (the fake core's).
fn our_names() -> Vec<String> {
    let tag = format!("test_{}", std::process::id());
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(&tag))
                .collect()
        })
        .unwrap_or_default()
}

fn blob(seg: &SegmentDesc) -> Vec<u8> {
    seg.blob[..seg.blob_len].to_vec()
}

/// The abstract socket name inside a ticket (after magic, pid and token).
fn socket_name(seg: &SegmentDesc) -> String {
    String::from_utf8_lossy(&seg.blob[24..seg.blob_len]).into_owned()
}

#[test]
fn the_descriptor_is_an_sshmem_component() {
    // SAFETY: static descriptor.
    let d = unsafe { &*shmem_plugin_descriptor() };
    assert_eq!(d.abi_version, ABI_VERSION);
    assert_eq!(d.framework, Framework::Sshmem as u32);
    // SAFETY: static NUL-terminated strings.
    assert_eq!(unsafe { CStr::from_ptr(d.name) }.to_str().unwrap(), "mmap");
}

#[test]
fn query_probes_for_real_and_leaves_nothing_behind() {
    // SAFETY: the static descriptor's query with the fake core and a local result.
    let d = unsafe { &*shmem_plugin_descriptor() };
    let mut r = QueryResult::default();
    // SAFETY: as above.
    unsafe { (d.query.unwrap())(fake_core(), &mut r) };
    assert_eq!(r.available, 1, "{}", r.reason_str());
    assert_eq!(r.priority, 30);
    assert!(our_names().is_empty(), "{:?}", our_names());
}

#[test]
fn two_mappings_of_one_segment_share_memory() {
    let ops = ops();
    let size = 1 << 20;
    let mut seg = SegmentDesc::default();
    // SAFETY: calls through the component's table with valid arguments; the two mappings stay
    // alive while used and are released at the end.
    unsafe {
        assert_eq!((ops.create)(size, std::ptr::null_mut(), &mut seg), RC_OK);
        let name = socket_name(&seg);
        assert!(name.starts_with(&format!("rshmem-test_{}-3-", std::process::id())), "{name}");
        assert!(our_names().is_empty(), "a segment has no name in /dev/shm: {:?}", our_names());
        assert_eq!(seg.size, size);
        assert_eq!(seg.base as usize % BASE_ALIGN, 0);

        let mut other = std::ptr::null_mut();
        assert_eq!((ops.attach)(seg.blob.as_ptr(), seg.blob_len, size, &mut other), RC_OK);
        assert_ne!(other, seg.base);
        *(seg.base as *mut u64).add(1000) = 0xfeed;
        assert_eq!(*(other as *const u64).add(1000), 0xfeed);
        *(other as *mut u64).add(size / 8 - 1) = 42;
        assert_eq!(*(seg.base as *const u64).add(size / 8 - 1), 42);

        (ops.unlink)(&mut seg);
        // Both mappings still work once it is no longer handed out, but nobody new can attach.
        *(other as *mut u64) = 7;
        assert_eq!(*(seg.base as *const u64), 7);
        let mut third = std::ptr::null_mut();
        assert_eq!((ops.attach)(seg.blob.as_ptr(), seg.blob_len, size, &mut third), RC_ERROR);

        (ops.detach)(other, size);
        (ops.destroy)(&mut seg);
        assert!(seg.base.is_null() && seg.handle.is_null());
    }
}

#[test]
fn destroy_stops_handing_out_a_segment_that_was_never_unlinked() {
    let ops = ops();
    let mut seg = SegmentDesc::default();
    // SAFETY: calls through the component's table with valid arguments.
    unsafe {
        assert_eq!((ops.create)(4096, std::ptr::null_mut(), &mut seg), RC_OK);
        let ticket = blob(&seg);
        let mut other = std::ptr::null_mut();
        assert_eq!((ops.attach)(ticket.as_ptr(), ticket.len(), 4096, &mut other), RC_OK);
        (ops.detach)(other, 4096);
        (ops.destroy)(&mut seg);
        assert_eq!((ops.attach)(ticket.as_ptr(), ticket.len(), 4096, &mut other), RC_ERROR);
    }
}

#[test]
fn a_ticket_with_a_wrong_token_maps_nothing() {
    let ops = ops();
    let mut seg = SegmentDesc::default();
    // SAFETY: calls through the component's table with valid arguments.
    unsafe {
        assert_eq!((ops.create)(4096, std::ptr::null_mut(), &mut seg), RC_OK);
        let mut forged = blob(&seg);
        forged[10] ^= 0x80;
        let mut addr = std::ptr::null_mut();
        assert_eq!((ops.attach)(forged.as_ptr(), forged.len(), 4096, &mut addr), RC_ERROR);
        assert!(addr.is_null());
        (ops.destroy)(&mut seg);
    }
}

#[test]
fn tickets_are_unique_per_segment() {
    let ops = ops();
    let (mut a, mut b) = (SegmentDesc::default(), SegmentDesc::default());
    // SAFETY: calls through the component's table with valid arguments.
    unsafe {
        assert_eq!((ops.create)(4096, std::ptr::null_mut(), &mut a), RC_OK);
        assert_eq!((ops.create)(4096, std::ptr::null_mut(), &mut b), RC_OK);
        assert_ne!(blob(&a), blob(&b));
        assert_ne!(socket_name(&a), socket_name(&b));
        (ops.destroy)(&mut a);
        (ops.destroy)(&mut b);
    }
}

#[test]
fn bad_requests_fail_cleanly() {
    let ops = ops();
    let mut seg = SegmentDesc::default();
    let mut addr = std::ptr::null_mut();
    let bogus = b"/rshmem-no-such-object";
    // SAFETY: calls through the component's table; NULL and bogus arguments must be refused.
    unsafe {
        assert_eq!((ops.create)(0, std::ptr::null_mut(), &mut seg), RC_ERROR);
        assert_eq!((ops.create)(4096, std::ptr::null_mut(), std::ptr::null_mut()), RC_ERROR);
        assert_eq!((ops.attach)(bogus.as_ptr(), bogus.len(), 4096, &mut addr), RC_ERROR);
        assert_eq!((ops.attach)(std::ptr::null(), 0, 4096, &mut addr), RC_ERROR);
        assert!(addr.is_null());
        (ops.unlink)(std::ptr::null_mut());
        (ops.destroy)(std::ptr::null_mut());
    }
}
