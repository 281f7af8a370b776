//! scoll "basic": collectives correct for any number of PEs, built only on the core's one-sided
//! services, so they work over any spml.
//!
//! Every synchronisation word in the team's scratch only ever grows (counts since the team was
//! created), and each PE remembers how far it has counted. That avoids resetting flags, which is
//! where barrier implementations usually race.

use rshmem_plugin_api::{CoreServices, Framework, QueryResult, ScollOps, TeamDesc, CMP_GE, RC_OK};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Scratch layout, in 64-bit words.
const BARRIER_WORDS: usize = 32; // one counter per dissemination round (2^32 PEs)
const READY: usize = BARRIER_WORDS; // broadcast: non-roots announce they have entered
const DATA: usize = BARRIER_WORDS + 1; // broadcast: the root announces the data is there
const SCRATCH_WORDS: usize = BARRIER_WORDS + 2;

static CORE: AtomicPtr<CoreServices> = AtomicPtr::new(std::ptr::null_mut());

fn core() -> &'static CoreServices {
    // SAFETY: set in `open` before any team is enabled; the table lives for the job.
    unsafe { &*CORE.load(Ordering::Acquire) }
}

struct Team {
    desc: TeamDesc,
    barriers: AtomicU64,
    /// Ready announcements this PE has received as a root, and data announcements as a non-root.
    ready_seen: AtomicU64,
    data_seen: AtomicU64,
}

impl Team {
    fn word(&self, i: usize) -> *mut u64 {
        (self.desc.scratch as *mut u64).wrapping_add(i)
    }
}

/// Partner offsets of the dissemination barrier: 1, 2, 4, ... below `n`.
pub fn rounds(n: c_int) -> impl Iterator<Item = c_int> {
    (0..31).map(|k| 1 << k).take_while(move |d| *d < n)
}

unsafe extern "C" fn enable(team: *const TeamDesc) -> *mut c_void {
    // SAFETY: the core passes a valid team description.
    let desc = unsafe { std::ptr::read(team) };
    if desc.scratch_len < SCRATCH_WORDS * 8 || desc.my_index < 0 {
        return std::ptr::null_mut();
    }
    Box::into_raw(Box::new(Team {
        desc,
        barriers: AtomicU64::new(0),
        ready_seen: AtomicU64::new(0),
        data_seen: AtomicU64::new(0),
    })) as *mut c_void
}

unsafe extern "C" fn disable(state: *mut c_void) {
    if !state.is_null() {
        // SAFETY: `state` came from `enable` and is not used again.
        drop(unsafe { Box::from_raw(state as *mut Team) });
    }
}

unsafe extern "C" fn barrier(state: *mut c_void) -> c_int {
    // SAFETY: `state` came from `enable`.
    let t = unsafe { &*(state as *const Team) };
    let (n, me) = (t.desc.size, t.desc.my_index);
    let epoch = t.barriers.fetch_add(1, Ordering::Relaxed) + 1;
    let c = core();
    for (k, d) in rounds(n).enumerate() {
        let partner = t.desc.pe_of((me + d) % n);
        // SAFETY: core services on the team's symmetric scratch words.
        unsafe {
            (c.atomic_add_u64)(t.word(k), 1, partner);
            (c.wait_until_u64)(t.word(k), CMP_GE, epoch);
        }
    }
    RC_OK
}

unsafe extern "C" fn broadcast(
    state: *mut c_void,
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    root: c_int,
) -> c_int {
    // SAFETY: `state` came from `enable`.
    let t = unsafe { &*(state as *const Team) };
    let (n, me) = (t.desc.size, t.desc.my_index);
    let c = core();
    // SAFETY (whole block): core services on symmetric addresses the core checked, and on the
    // team's scratch words.
    unsafe {
        if me == root {
            let want = t.ready_seen.fetch_add((n - 1) as u64, Ordering::Relaxed) + (n - 1) as u64;
            (c.wait_until_u64)(t.word(READY), CMP_GE, want);
            for i in (0..n).filter(|i| *i != root) {
                (c.putmem)(dest, src, nbytes, t.desc.pe_of(i));
            }
            if !std::ptr::eq(dest, src) {
                std::ptr::copy(src as *const u8, dest as *mut u8, nbytes);
            }
            (c.fence)();
            for i in (0..n).filter(|i| *i != root) {
                (c.atomic_add_u64)(t.word(DATA), 1, t.desc.pe_of(i));
            }
            (c.quiet)();
        } else {
            (c.atomic_add_u64)(t.word(READY), 1, t.desc.pe_of(root));
            let want = t.data_seen.fetch_add(1, Ordering::Relaxed) + 1;
            (c.wait_until_u64)(t.word(DATA), CMP_GE, want);
        }
    }
    RC_OK
}

static OPS: ScollOps = ScollOps {
    struct_size: std::mem::size_of::<ScollOps>(),
    scratch_needed: SCRATCH_WORDS * 8,
    enable,
    disable,
    barrier: Some(barrier),
    broadcast: Some(broadcast),
};

unsafe extern "C" fn query(_core: *const CoreServices, result: *mut QueryResult) {
    // SAFETY: the core passes a valid result pointer.
    let r = unsafe { &mut *result };
    r.available = 1;
    r.priority = 10;
    r.set_reason("portable algorithms over the core's one-sided services");
}

unsafe extern "C" fn open(core: *const CoreServices) -> *const c_void {
    CORE.store(core as *mut _, Ordering::Release);
    &OPS as *const ScollOps as *const c_void
}

rshmem_plugin_api::export_plugin! {
    framework: Framework::Scoll,
    name: "basic",
    description: "dissemination barrier, flag-synchronised linear broadcast; any team size",
    params: &[],
    query: query,
    open: open,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dissemination_rounds() {
        assert_eq!(rounds(1).count(), 0);
        assert_eq!(rounds(2).collect::<Vec<_>>(), [1]);
        assert_eq!(rounds(3).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(rounds(4).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(rounds(5).collect::<Vec<_>>(), [1, 2, 4]);
        assert!(rounds(i32::MAX).count() <= BARRIER_WORDS);
    }

    #[test]
    fn teams_without_enough_scratch_are_declined() {
        let d = TeamDesc {
            id: 0,
            start: 0,
            stride: 1,
            size: 2,
            my_index: 0,
            scratch: std::ptr::null_mut(),
            scratch_len: 8,
        };
        // SAFETY: enable only reads the description.
        assert!(unsafe { enable(&d) }.is_null());
    }
}
