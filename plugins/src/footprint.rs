//! What the process holds in memory, for the per-peer memory report (`SHMEM_PEER_MEMORY`,
//! issue 51): the private memory it has now, and how much of a table the kernel backs.
//!
//! Private memory is the process's anonymous resident pages (`/proc/self/statm`: resident
//! less shared). Symmetric heaps and mapped peers' segments are shared memory, so they are
//! not in it; what the library mallocs or maps anonymously for its peers is. Growth measured
//! around a step is page-granular and counts whatever else the process allocated meanwhile
//! (another thread's), so it is meaningful as an average over many peers, not for one.

/// The process's private (anonymous) resident bytes, or 0 where `/proc` cannot say.
pub fn private_bytes() -> u64 {
    let Ok(statm) = std::fs::read_to_string("/proc/self/statm") else { return 0 };
    let mut fields = statm.split_ascii_whitespace().skip(1).map(|f| f.parse::<u64>().unwrap_or(0));
    let (resident, shared) = (fields.next().unwrap_or(0), fields.next().unwrap_or(0));
    resident.saturating_sub(shared) * page_size() as u64
}

/// The private memory that `f` added (0 if it shrank), and `f`'s value.
pub fn growth<R>(f: impl FnOnce() -> R) -> (u64, R) {
    let before = private_bytes();
    let r = f();
    (private_bytes().saturating_sub(before), r)
}

fn page_size() -> usize {
    // SAFETY: sysconf only reads a system constant.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// The bytes of `table` the kernel backs now: its pages that are resident (`mincore`), as
/// many bytes of each as the table covers. A zeroed table whose slots are written only for
/// the peers reached holds a page for each run of slots one of them is in.
pub fn resident_bytes<T>(table: &[T]) -> u64 {
    let len = std::mem::size_of_val(table);
    if len == 0 {
        return 0;
    }
    let page = page_size();
    let start = table.as_ptr() as usize;
    let first = start & !(page - 1);
    let end = start + len;
    let pages = (end - first).div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: [first, first + pages * page) covers the table's pages, which belong to this
    // process's mappings (the table lives in them); `vec` has one byte per page.
    let rc = unsafe { libc::mincore(first as *mut libc::c_void, pages * page, vec.as_mut_ptr()) };
    if rc != 0 {
        // Not knowable here: count the table whole rather than report less than it may hold.
        return len as u64;
    }
    let mut bytes = 0u64;
    for (k, v) in vec.iter().enumerate() {
        if v & 1 == 0 {
            continue;
        }
        let lo = (first + k * page).max(start);
        let hi = (first + (k + 1) * page).min(end);
        bytes += (hi - lo) as u64;
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zeroed_table_is_resident_only_where_it_was_written() {
        let n = 1 << 20;
        // SAFETY: all-zero bytes are a valid u64.
        let mut table = unsafe { Box::<[u64]>::new_zeroed_slice(n).assume_init() };
        let virt = (n * 8) as u64;
        assert!(resident_bytes(&table) < virt / 4, "a fresh zeroed 8 MiB table is mostly not backed");
        let before = resident_bytes(&table);
        // One slot in every 64th page: 32 pages of the 2048.
        for k in (0..n).step_by(512 * 64) {
            table[k] = 1;
        }
        let after = resident_bytes(&table);
        assert!(after >= before + 16 * 4096, "writing 32 pages made {} bytes resident", after - before);
        assert!(after <= before + 64 * 4096, "writing 32 pages made {} bytes resident", after - before);
        for v in table.iter_mut() {
            *v = 2;
        }
        assert_eq!(resident_bytes(&table), virt);
    }

    #[test]
    fn private_memory_grows_with_what_is_touched() {
        let (grown, v) = growth(|| {
            let mut v = vec![0u8; 16 << 20];
            for k in (0..v.len()).step_by(4096) {
                v[k] = 1;
            }
            v
        });
        assert!(grown >= 15 << 20, "16 MiB touched, private memory grew by {grown} bytes");
        assert!(private_bytes() >= 16 << 20);
        drop(v);
    }
}
