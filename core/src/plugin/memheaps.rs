//! The memheap framework is resolved per device type, not once per job: every available
//! memheap (best first, after `SHMEM_MCA_memheap` narrowed the list) is opened, and the first
//! one serving each device type is that device's. A vendor memheap for GPU memory therefore
//! sits beside the CPU one instead of replacing it.

use super::Selection;
use rshmem_plugin_api::{CoreServices, MemheapOps, MEMHEAP_DEVICE_CPU, MEMHEAP_DEVICE_GPU};

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
