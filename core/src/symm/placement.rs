//! NUMA placement of this PE's symmetric segments. When the PE is bound (`oshrun --bind-to`,
//! or the binding of `mpirun`/`srun`) to CPUs that all belong to one NUMA node, the pages of
//! each segment it creates are bound to that node through hwloc. Segments are shared mappings,
//! so the policy belongs to the shared object: a page lands on the owner's node whichever PE
//! touches it first (a peer's put, say), not on the node of the first toucher.
//!
//! An unbound PE keeps the kernel's default (first touch) and never loads the topology, which
//! costs milliseconds.

use crate::log;
use rshmem_topology::Host;
use std::sync::OnceLock;

/// The topology and this PE's NUMA node, when the PE is bound within one node.
static HOME: OnceLock<Option<(Host, usize)>> = OnceLock::new();

/// Whether this process may run on fewer CPUs than are online.
fn bound() -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid out-parameter for sched_getaffinity; CPU_COUNT
    // reads it; sysconf has no memory arguments.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return false;
        }
        let online = libc::sysconf(libc::_SC_NPROCESSORS_ONLN);
        online > 0 && (libc::CPU_COUNT(&set) as i64) < online as i64
    }
}

fn home() -> Option<&'static (Host, usize)> {
    HOME.get_or_init(|| {
        if !bound() {
            return None;
        }
        match Host::load() {
            Ok(h) => h.home_node().map(|n| (h, n)),
            Err(e) => {
                log::log(log::WARN, "init", &format!("no NUMA placement of symmetric memory: {e}"));
                None
            }
        }
    })
    .as_ref()
}

/// The NUMA node this PE's segments are bound to, if any.
pub fn home_node() -> Option<usize> {
    home().map(|(_, n)| *n)
}

/// Bind `[base, base + len)`, a segment this PE just created, to its NUMA node (when it has
/// one). A failure only costs locality: it is logged, and the segment is used as it is.
///
/// # Safety
/// `[base, base + len)` must be mapped memory of this process.
pub unsafe fn place(what: &str, base: *mut u8, len: usize) {
    let Some((host, node)) = home() else { return };
    // SAFETY: guaranteed by the caller.
    match unsafe { host.bind_area(base, len, *node) } {
        Ok(()) => log::log(log::DEBUG, "init", &format!("{what}: {len} bytes bound to NUMA node {node}")),
        Err(e) => log::log(log::WARN, "init", &format!("{what}: {e}")),
    }
}
