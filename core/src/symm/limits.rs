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
