//! What the machine can hold: heap sizes against its memory, and its cores.

/// A heap larger than the machine's memory can never be backed: pages are only allocated when
/// touched, so it would be accepted and the job killed later, far from the cause. Say so now.
/// Heaps that fit one by one but not all together only get a warning (most programs touch a
/// fraction of their heap).
pub(crate) fn check_heap_fits(heap: usize, what: &str, local_pes: i32, report: bool) -> Result<(), String> {
    let Some((ram, swap)) = machine_memory() else { return Ok(()) };
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    if heap as u64 > ram + swap {
        return Err(format!(
            "{what} of {heap} bytes ({:.1} GiB) per PE cannot be backed: this machine has {:.1} GiB of memory and {:.1} GiB of swap",
            gib(heap as u64),
            gib(ram),
            gib(swap)
        ));
    }
    let all = heap as u64 * local_pes.max(1) as u64;
    if all > ram + swap && report {
        crate::log::log(
            crate::log::WARN,
            "init",
            &format!(
                "{local_pes} PEs on this host with {:.1} GiB each for {what} need {:.1} GiB if filled; the machine has {:.1} GiB of memory and swap",
                gib(heap as u64),
                gib(all),
                gib(ram + swap)
            ),
        );
    }
    Ok(())
}

/// (RAM, swap) in bytes.
fn machine_memory() -> Option<(u64, u64)> {
    // SAFETY: a zeroed sysinfo is a valid out-parameter.
    let mut si: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `si` is writable.
    if unsafe { libc::sysinfo(&mut si) } != 0 {
        return None;
    }
    let unit = si.mem_unit.max(1) as u64;
    Some((si.totalram as u64 * unit, si.totalswap as u64 * unit))
}

/// Cores this process may run on.
pub(crate) fn available_cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Bootstrap key: the CPUs a PE may run on, as a bitmap (bit `c % 8` of byte `c / 8`).
pub(crate) const CPUS_KEY: &str = "rshmem.cpus";

/// The CPUs this process may run on ([`CPUS_KEY`]'s bitmap, trailing zero bytes dropped), or
/// None when the kernel does not say (more CPUs than a `cpu_set_t` holds).
pub(crate) fn cpu_mask() -> Option<Vec<u8>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is writable and its size is passed.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return None;
    }
    let mut bytes = vec![0u8; libc::CPU_SETSIZE as usize / 8];
    for c in 0..libc::CPU_SETSIZE as usize {
        // SAFETY: `c` is below CPU_SETSIZE.
        if unsafe { libc::CPU_ISSET(c, &set) } {
            bytes[c / 8] |= 1 << (c % 8);
        }
    }
    while bytes.last() == Some(&0) {
        bytes.pop();
    }
    Some(bytes)
}

/// How many CPUs the masks cover between them.
pub(crate) fn union_count<'a>(masks: impl IntoIterator<Item = &'a [u8]>) -> usize {
    let mut all: Vec<u8> = Vec::new();
    for m in masks {
        if all.len() < m.len() {
            all.resize(m.len(), 0);
        }
        for (a, b) in all.iter_mut().zip(m) {
            *a |= b;
        }
    }
    all.iter().map(|b| b.count_ones() as usize).sum()
}

/// How many CPUs this node's PEs may run on between them: what the last initialization
/// gathered (`Runtime::node_cpus`), else what this process may use.
pub(crate) fn node_cpus() -> usize {
    crate::symm::runtime::last().map_or_else(available_cores, |rt| rt.node_cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_counts_this_process_s_cpus_and_masks_add_up() {
        let mine = cpu_mask().expect("Linux says which CPUs a process may use");
        assert_eq!(union_count([mine.as_slice()]), available_cores());
        // Two PEs bound to one core each: two CPUs, not one.
        assert_eq!(union_count([&[0b01][..], &[0b10][..]]), 2);
        // Two PEs on the same core, and a longer mask: CPUs 0 and 9.
        assert_eq!(union_count([&[0b1][..], &[0b1, 0b10][..], &[0b1][..]]), 2);
        assert_eq!(union_count(std::iter::empty::<&[u8]>()), 0);
    }
}
