//! The host's hardware topology, read through hwloc (the `hwlocality` crate): a summary for
//! `shmem_info`, the CPU sets `oshrun --bind-to core|numa` gives its PEs, and the NUMA node a
//! bound PE's symmetric memory is placed on.
//!
//! Loading a topology takes milliseconds, so callers load one only when they need it (oshrun
//! when asked to bind, a PE when it finds itself bound, `shmem_info` when asked).

use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::memory::binding::{MemoryBindingFlags, MemoryBindingPolicy};
use hwlocality::memory::nodeset::NodeSet;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::ObjectType;
use hwlocality::object::TopologyObject;
use hwlocality::Topology;
use std::sync::atomic::AtomicU8;

/// What `oshrun --bind-to` binds each PE to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BindTo {
    /// One core (all its hardware threads) per PE.
    Core,
    /// As `Core`, and with more PEs than cores, PE i gets core i mod cores (Open MPI's
    /// `--bind-to core:overload-allowed`): the PEs spread evenly, two or more to a core,
    /// instead of wherever the scheduler first put them.
    CoreOverload,
    /// The NUMA node of the core the PE would get, so that PEs spread over the nodes.
    Numa,
    /// No binding.
    None,
}

impl BindTo {
    pub fn parse(s: &str) -> Option<BindTo> {
        match s {
            "core" => Some(BindTo::Core),
            "core:overload-allowed" => Some(BindTo::CoreOverload),
            "numa" => Some(BindTo::Numa),
            "none" => Some(BindTo::None),
            _ => None,
        }
    }
}

/// A loaded topology of this host (restricted to the CPUs and memory this process may use).
pub struct Host {
    topo: Topology,
}

fn pus(set: &CpuSet) -> Vec<usize> {
    set.iter_set().map(usize::from).collect()
}

fn cpus_of(o: &TopologyObject) -> Vec<usize> {
    o.cpuset().map(|s| pus(&s)).unwrap_or_default()
}

fn mib(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", b >> 20)
    }
}

/// `0-3,8` style list of CPU numbers.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    out.join(",")
}

impl Host {
    pub fn load() -> Result<Host, String> {
        Topology::new()
            .map(|topo| Host { topo })
            .map_err(|e| format!("hwloc cannot read this host's topology: {e}"))
    }

    fn objects(&self, t: ObjectType) -> Vec<&TopologyObject> {
        self.topo.objects_with_type(t).collect()
    }

    /// The cores (the CPUs of each, by OS number) this process may use, in topology order.
    pub fn cores(&self) -> Vec<Vec<usize>> {
        self.objects(ObjectType::Core).into_iter().map(cpus_of).filter(|c| !c.is_empty()).collect()
    }

    /// The NUMA nodes: (OS index, CPUs, memory in bytes).
    pub fn numa_nodes(&self) -> Vec<(usize, Vec<usize>, u64)> {
        self.objects(ObjectType::NUMANode)
            .into_iter()
            .map(|n| {
                let mem = match n.attributes() {
                    Some(ObjectAttributes::NUMANode(a)) => a.local_memory().map_or(0, |m| m.get()),
                    _ => 0,
                };
                (n.os_index().unwrap_or(0), cpus_of(n), mem)
            })
            .collect()
    }

    /// One paragraph for `shmem_info`: packages, NUMA nodes with their CPUs and memory, cores,
    /// hardware threads and caches.
    pub fn summary(&self) -> String {
        let count = |t| self.topo.objects_with_type(t).count();
        let cache = |t| {
            self.objects(t).first().and_then(|o| match o.attributes() {
                Some(ObjectAttributes::Cache(c)) => c.size().map(|s| s.get()),
                _ => None,
            })
        };
        let mut s = format!(
            "{} package(s), {} NUMA node(s), {} core(s), {} hardware thread(s)",
            count(ObjectType::Package),
            count(ObjectType::NUMANode),
            count(ObjectType::Core),
            count(ObjectType::PU)
        );
        for (name, t) in [("L2", ObjectType::L2Cache), ("L3", ObjectType::L3Cache)] {
            if let Some(b) = cache(t) {
                s.push_str(&format!(", {name} {} ({} of them)", mib(b), count(t)));
            }
        }
        s.push('\n');
        for (idx, cpus, mem) in self.numa_nodes() {
            s.push_str(&format!("NUMA node {idx}: CPUs {}, {}\n", cpu_list(&cpus), mib(mem)));
        }
        s
    }

    /// The CPUs each of `n` PEs on this host is bound to (`None` for [`BindTo::None`]). With
    /// `Core`, PE i gets core i, and more PEs than cores is an error (the caller decides what to
    /// do); with `CoreOverload`, PE i gets core i mod cores. With `Numa`, PE i gets the NUMA
    /// node of core `i * cores / n`, so PEs spread evenly over the nodes.
    pub fn binding(&self, to: BindTo, n: usize) -> Result<Option<Vec<Vec<usize>>>, String> {
        let cores = self.cores();
        if to == BindTo::None || n == 0 {
            return Ok(None);
        }
        if cores.is_empty() {
            return Err("hwloc found no cores this process may use".into());
        }
        match to {
            BindTo::Core if n > cores.len() => Err(format!(
                "{n} PEs but only {} core(s) on this host: one core per PE is impossible \
                 (--bind-to core:overload-allowed shares the cores out evenly)",
                cores.len()
            )),
            BindTo::Core | BindTo::CoreOverload => {
                Ok(Some((0..n).map(|i| cores[i % cores.len()].clone()).collect()))
            }
            BindTo::Numa => {
                let nodes = self.numa_nodes();
                let sets = (0..n)
                    .map(|i| {
                        let core = &cores[i * cores.len() / n];
                        nodes
                            .iter()
                            .find(|(_, cpus, _)| core.iter().all(|c| cpus.contains(c)))
                            .map(|(_, cpus, _)| cpus.clone())
                            .unwrap_or_else(|| core.clone())
                    })
                    .collect();
                Ok(Some(sets))
            }
            BindTo::None => Ok(None),
        }
    }

    /// The NUMA node (OS index) that holds every CPU this process is bound to, when the process
    /// is bound to fewer CPUs than it could use and they all belong to one node; else `None`.
    pub fn home_node(&self) -> Option<usize> {
        let bound = self.topo.cpu_binding(CpuBindingFlags::PROCESS).ok()?;
        let all = self.topo.cpuset();
        if bound.is_empty() || !all.includes(&bound) || *all == bound {
            return None;
        }
        let homes: Vec<usize> = self
            .objects(ObjectType::NUMANode)
            .into_iter()
            .filter(|n| n.cpuset().is_some_and(|c| c.includes(&bound)))
            .filter_map(|n| n.os_index())
            .collect();
        (homes.len() == 1).then(|| homes[0])
    }

    /// Bind the pages of `[base, base + len)` to NUMA node `node` (hwloc's BIND policy; on a
    /// shared mapping the policy belongs to the shared object, so pages go there whichever
    /// process touches them first).
    ///
    /// # Safety
    /// `[base, base + len)` must be mapped memory of this process.
    pub unsafe fn bind_area(&self, base: *mut u8, len: usize, node: usize) -> Result<(), String> {
        let mut set = NodeSet::new();
        set.set(node);
        // SAFETY: the caller guarantees the range is mapped; atomics make a shared view of
        // memory that other processes write sound, and hwloc only passes the address range on
        // to mbind.
        let area = unsafe { std::slice::from_raw_parts(base as *const AtomicU8, len) };
        self.topo
            .bind_memory_area(area, &set, MemoryBindingPolicy::Bind, MemoryBindingFlags::empty())
            .map_err(|e| format!("binding {len} bytes to NUMA node {node}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_compact() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 8]), "0-3,8");
        assert_eq!(cpu_list(&[5]), "5");
        assert_eq!(cpu_list(&[]), "");
        assert_eq!(BindTo::parse("numa"), Some(BindTo::Numa));
        assert_eq!(BindTo::parse("socket"), None);
    }

    #[test]
    fn this_host_has_cores_nodes_and_a_summary() {
        let h = Host::load().unwrap();
        let cores = h.cores();
        assert!(!cores.is_empty());
        let nodes = h.numa_nodes();
        assert!(!nodes.is_empty());
        // every core lies in exactly one node
        for c in &cores {
            assert_eq!(nodes.iter().filter(|(_, cpus, _)| c.iter().all(|x| cpus.contains(x))).count(), 1);
        }
        let s = h.summary();
        assert!(s.contains(&format!("{} core(s)", cores.len())), "{s}");
        assert!(s.contains("NUMA node "), "{s}");
    }

    #[test]
    fn core_binding_gives_each_pe_its_own_core_and_shares_them_only_when_allowed() {
        let h = Host::load().unwrap();
        let n = h.cores().len();
        let sets = h.binding(BindTo::Core, n).unwrap().unwrap();
        assert_eq!(sets.len(), n);
        for (i, a) in sets.iter().enumerate() {
            for b in &sets[i + 1..] {
                assert!(a.iter().all(|c| !b.contains(c)), "{sets:?}");
            }
        }
        assert!(h.binding(BindTo::Core, n + 1).is_err());
        assert_eq!(h.binding(BindTo::CoreOverload, n).unwrap().unwrap(), sets);
        let shared = h.binding(BindTo::CoreOverload, 2 * n + 1).unwrap().unwrap();
        for (i, set) in shared.iter().enumerate() {
            assert_eq!(set, &sets[i % n], "PE {i}: {shared:?}");
        }
        assert_eq!(h.binding(BindTo::None, 4).unwrap(), None);
        let numa = h.binding(BindTo::Numa, 2 * n).unwrap().unwrap();
        let nodes = h.numa_nodes();
        for s in &numa {
            assert!(nodes.iter().any(|(_, cpus, _)| cpus == s), "{numa:?} {nodes:?}");
        }
    }
}
