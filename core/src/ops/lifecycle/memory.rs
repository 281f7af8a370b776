//! Phase 3 of `shmem_init`: this PE's symmetric memory (the heap from sshmem under the CPU
//! memheap, and the program's global data), registered with the spml and published for the
//! peers with the settings every PE must agree on; the host's relay starts here, its ticket
//! travelling with the first fence.

use super::components::Components;
use super::job::Job;
use super::InitError;
use crate::symm::peers::encode_segment;
use crate::symm::segments::{SegmentTable, SEG_DATA, SEG_HEAP};
use crate::symm::static_data::{self, DataSegment};
use rshmem_plugin_api::share::Relay;
use rshmem_plugin_api::SegmentDesc;
use std::ffi::c_void;

/// Heap bytes the core reserves for its own use on top of SHMEM_SYMMETRIC_SIZE, besides the
/// team scratch the scoll components ask for (`team::pool_bytes`).
const INTERNAL_HEAP: usize = 1 << 20;

/// This PE's symmetric memory, published.
pub struct Memory {
    pub heap_seg: SegmentDesc,
    /// The CPU memheap's allocator over the heap.
    pub heap: *mut c_void,
    pub data: Option<DataSegment>,
    /// Every segment, this PE's copies entered; the peers' follow in the next phase.
    pub segs: SegmentTable,
    /// The spml's registrations of the segments, released at the end.
    pub spml_regs: Vec<*mut c_void>,
    /// The settings every PE must agree on, as published.
    pub agreed: String,
    /// The host's relay, when this PE leads one.
    pub relay: Option<Relay>,
}

impl Memory {
    pub fn create(job: &Job, c: &Components) -> Result<Memory, InitError> {
        let (heap_seg, heap) = heap(job, c)?;
        let data = static_data::remap(&job.name_tag, job.my_pe)
            .map_err(|e| InitError::Memory(format!("cannot make global data symmetric: {e}")))?;
        let segs = SegmentTable::new(job.n_pes as usize);
        let heap_id = segs.add_local(heap_seg.base as usize, heap_seg.size);
        debug_assert_eq!(heap_id, SEG_HEAP);
        // SHMEM_DEBUG's range check asks the heap's memheap which block holds an address.
        segs.set_heap(SEG_HEAP, c.memheap, heap);
        let mut spml_regs = Vec::new();
        let blob = &heap_seg.blob[..heap_seg.blob_len];
        spml_regs.push(publish(
            job,
            c,
            SEG_HEAP,
            heap_seg.base as usize,
            heap_seg.size,
            heap_seg.transport_memh,
            blob,
        )?);
        if let Some(d) = &data {
            let id = segs.add_local(d.base, d.len);
            debug_assert_eq!(id, SEG_DATA);
            spml_regs.push(publish(job, c, SEG_DATA, d.base, d.len, std::ptr::null_mut(), &d.ticket)?);
        }
        let scoll_params: Vec<(&str, crate::config::params::Declared)> = c
            .found
            .components
            .iter()
            .filter(|c| c.framework == rshmem_plugin_api::Framework::Scoll)
            .flat_map(|c| c.params().into_iter().map(move |d| (c.name.as_str(), d)))
            .collect();
        let agreed = crate::config::agree::fingerprint(&scoll_params);
        job.boot.put(crate::config::agree::KEY, agreed.as_bytes()).map_err(|e| InitError::boot("", e))?;
        // Only a leader that maps its peers relays: one that does not would never hand anything out.
        let relay = crate::symm::relay::start(
            job.boot,
            job.my_pe,
            job.n_pes,
            job.relay && job.local_map,
            &job.name_tag,
        );
        Ok(Memory { heap_seg, heap, data, segs, spml_regs, agreed, relay })
    }
}

/// The heap: sshmem's segment of the program's size plus the core's share and the team
/// scratch pool, its pages placed (NUMA), and the CPU memheap's allocator over it.
fn heap(job: &Job, c: &Components) -> Result<(SegmentDesc, *mut c_void), InitError> {
    let mut seg = SegmentDesc::default();
    let bytes = job.heap_size + INTERNAL_HEAP + crate::ops::team::pool_bytes(&c.scolls);
    // SAFETY: plugin ABI call with a valid out-pointer.
    if unsafe { (c.sshmem.create)(bytes, std::ptr::null_mut(), &mut seg) } != 0 {
        return Err(InitError::Memory(format!(
            "sshmem {} could not create a symmetric heap of {bytes} bytes",
            c.sshmem_name
        )));
    }
    // SAFETY: the segment sshmem just created and mapped.
    unsafe { crate::symm::placement::place("the symmetric heap", seg.base.cast(), seg.size) };
    // SAFETY: plugin ABI call over the segment just created.
    let heap = unsafe { (c.memheap.create)(seg.base, seg.size) };
    if heap.is_null() {
        return Err(InitError::Memory(format!(
            "memheap {} could not manage the symmetric heap",
            c.memheap_name
        )));
    }
    Ok((seg, heap))
}

/// Register segment `seg` with the spml and publish its record (base, size, attach blob,
/// packed remote key); returns the registration.
fn publish(
    job: &Job,
    c: &Components,
    seg: u32,
    base: usize,
    len: usize,
    memh: *mut c_void,
    blob: &[u8],
) -> Result<*mut c_void, InitError> {
    let mut rkey = vec![0u8; 4096];
    let mut rkey_len = 0usize;
    let mut reg = std::ptr::null_mut();
    // SAFETY: plugin ABI call; buffers are valid for the given capacities.
    let rc = unsafe {
        (c.spml.mem_register)(
            base as *mut c_void,
            len,
            memh,
            rkey.as_mut_ptr(),
            rkey.len(),
            &mut rkey_len,
            &mut reg,
        )
    };
    if rc != 0 {
        return Err(InitError::Memory(format!(
            "spml {} could not register symmetric segment {seg}",
            c.spml_name
        )));
    }
    let v = encode_segment(base as u64, len as u64, blob, &rkey[..rkey_len]);
    job.boot.put(&format!("seg.{seg}"), &v).map_err(|e| InitError::boot("", e))?;
    Ok(reg)
}
