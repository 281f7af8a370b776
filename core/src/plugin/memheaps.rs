//! The memheap framework is resolved per device type, not once per job: the available memheaps
//! (best first, after `SHMEM_MCA_memheap` narrowed the list) are taken in order, and the first
//! one serving each device type (`MEMHEAP_CAP_GPU` says which it declares) is opened and is that
//! device's; the others are never opened. A vendor memheap for GPU memory therefore sits beside
//! the CPU one instead of replacing it.

use super::Selection;
use rshmem_plugin_api::{
    CoreServices, HostSlots, MemheapOps, PinSlots, ReduceSlot, SshmemOps, StreamSlots, StreamWordOp,
    MEMHEAP_DEVICE_CPU, MEMHEAP_DEVICE_GPU,
};
use std::ffi::{c_int, c_void};

/// The memheap chosen for one device type.
pub struct DeviceHeap {
    pub device: u32,
    pub ops: &'static MemheapOps,
    pub name: String,
}

pub fn device_name(device: u32) -> String {
    match device {
        MEMHEAP_DEVICE_CPU => "CPU".into(),
        MEMHEAP_DEVICE_GPU => "GPU".into(),
        other => format!("device type {other}"),
    }
}

/// Open the ranked memheaps and keep the best per device type; `Err` lists the components
/// that could not be opened when no memheap serves CPU memory, which the job needs.
///
/// # Safety
/// `core` must be the core's services table, valid while the plugins are loaded.
pub unsafe fn resolve(sel: &Selection, core: *const CoreServices) -> Result<Vec<DeviceHeap>, String> {
    let mut chosen: Vec<DeviceHeap> = Vec::new();
    let mut notes = Vec::new();
    for c in &sel.ranked {
        let declared = if c.desc.caps & rshmem_plugin_api::MEMHEAP_CAP_GPU != 0 {
            MEMHEAP_DEVICE_GPU
        } else {
            MEMHEAP_DEVICE_CPU
        };
        if chosen.iter().any(|d| d.device == declared) {
            continue; // a better one serves that device: not opened (docs/plugin-abi.md)
        }
        // SAFETY: the caller's services table; `c` is a memheap component.
        let ops: &'static MemheapOps = match unsafe { super::bind::open::<MemheapOps>(c, core) } {
            Ok(ops) => ops,
            Err(e) => {
                crate::log::log(crate::log::WARN, "plugin select", &format!("not using it: {e}"));
                notes.push(e);
                continue;
            }
        };
        let device = ops.device();
        if device != declared {
            crate::log::log(
                crate::log::WARN,
                "plugin select",
                &format!(
                    "memheap {} serves {} memory but does not declare it (MEMHEAP_CAP_GPU in its descriptor's caps)",
                    c.name,
                    device_name(device)
                ),
            );
        }
        if chosen.iter().all(|d| d.device != device) {
            chosen.push(DeviceHeap { device, ops, name: c.name.clone() });
        }
    }
    if chosen.iter().all(|d| d.device != MEMHEAP_DEVICE_CPU) {
        let others: Vec<String> =
            chosen.iter().map(|d| format!("{} serves {}", d.name, device_name(d.device))).collect();
        notes.extend(others);
        return Err(format!(
            "no memheap component serves CPU memory{}",
            if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) }
        ));
    }
    Ok(chosen)
}

/// A device memheap the core can move data with: its heap, its segments and its copy.
pub struct DeviceMemory {
    pub device: u32,
    pub name: String,
    pub heap: &'static MemheapOps,
    pub segments: &'static SshmemOps,
    pub copy: unsafe extern "C" fn(dst: *mut c_void, src: *const c_void, len: usize) -> c_int,
    pub owns: unsafe extern "C" fn(ptr: *const c_void) -> c_int,
    /// Page-locked host memory for staging, when the memheap offers it.
    pub host: Option<HostSlots>,
    /// Page-locking host memory the core has (GPU spaces' shadows), when the memheap can.
    pub pin: Option<PinSlots>,
    /// Operations queued on a program's stream (`crate::ops::on_stream`), when it can.
    pub stream: Option<StreamSlots>,
    /// Word operations queued on a stream together (the stream barrier), when it can.
    pub batch: Option<unsafe extern "C" fn(*mut c_void, *const StreamWordOp, usize) -> c_int>,
    /// Reductions on the device (direct collectives), when it can.
    pub reduce: Option<ReduceSlot>,
}

/// The data path of memheap `d`: `Err` says why the core cannot use it (a table without the
/// device slots, or a segments table that fails the checks every table passes).
pub fn device_memory(d: &DeviceHeap) -> Result<DeviceMemory, String> {
    let slots = d.ops.device_slots().ok_or_else(|| {
        format!(
            "memheap {} serves {} memory but lacks the device slots (segments, copy, owns) the core moves data with",
            d.name,
            device_name(d.device)
        )
    })?;
    // SAFETY: the plugin's `segments` points at an sshmem table (the ABI's contract for the slot).
    let segments =
        unsafe { super::bind::bind::<SshmemOps>(&format!("{} segments", d.name), slots.segments.cast()) }?;
    Ok(DeviceMemory {
        device: d.device,
        name: d.name.clone(),
        heap: d.ops,
        segments,
        copy: slots.copy,
        owns: slots.owns,
        host: d.ops.host_slots(),
        pin: d.ops.pin_slots(),
        stream: d.ops.stream_slots(),
        batch: d.ops.batch_slot(),
        reduce: d.ops.reduce_slot(),
    })
}
