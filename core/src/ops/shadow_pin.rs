//! Page-locking the host shadows of GPU spaces (`crate::ops::device::Shadow`), [`CHUNK`]
//! bytes at a time as collectives first copy through them. The device memheap's `copy` moves
//! page-locked host memory 2.3-5.9 times faster than pageable memory from 256 KiB up (NVIDIA
//! H200, `tests/gpu/host_copies.cu`, docs/performance.md), and staging pageable memory through
//! page-locked buffers does not get there, so the shadow itself is locked. Only the chunks
//! collectives reach are, which keeps the memory the system can no longer reclaim to those.
//! Under `SHMEM_GPU_PIN_SHADOW=0`, or with a memheap without `host_register`, shadows stay
//! pageable; a chunk the memheap cannot lock leaves the rest of that shadow pageable too,
//! with one warning.

use crate::symm::runtime::Runtime;
use crate::symm::segments::MAX_SEGMENTS;
use rshmem_plugin_api::{PinSlots, RC_OK};
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};
use std::sync::Mutex;

/// Bytes page-locked at a time (the first chunk a collective reaches costs one
/// `cuMemHostRegister` of this size).
pub const CHUNK: usize = 2 << 20;

const UNPINNED: u8 = 0;
const PINNED: u8 = 1;
/// Not page-locked, and not to be tried again (the memheap refused a chunk of this shadow).
const REFUSED: u8 = 2;

/// One shadow's chunks.
struct Pins {
    base: usize,
    len: usize,
    slots: PinSlots,
    chunks: Box<[AtomicU8]>,
    /// Held while a chunk is locked, so that two threads do not lock it twice.
    lock: Mutex<()>,
}

/// Per device segment: its shadow's chunks (null: not tracked). One table per initialization
/// (`crate::ops::state::OpsState::pins`).
pub(crate) struct Pinned([AtomicPtr<Pins>; MAX_SEGMENTS]);

impl Pinned {
    pub(crate) fn new() -> Pinned {
        Pinned([const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_SEGMENTS])
    }

    fn set(&self, seg: u32, pins: Option<Box<Pins>>) {
        let p = pins.map_or(std::ptr::null_mut(), Box::into_raw);
        release(self.0[seg as usize].swap(p, Ordering::AcqRel));
    }

    /// Segment `seg`'s tracked shadow and the offset of `host` in it, when `host` lies there.
    fn tracked(&self, seg: u32, host: *const u8) -> Option<(&Pins, usize)> {
        let p = self.0[seg as usize].load(Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        // SAFETY: a tracked shadow's chunks live until `untrack`, which runs only once no
        // collective uses the shadow (see there), and the callers run inside such a collective.
        let pins: &Pins = unsafe { &*p };
        let off = (host as usize).wrapping_sub(pins.base);
        (off < pins.len).then_some((pins, off))
    }

    /// Page-lock the chunks of segment `seg`'s shadow that `[host, host + len)` reaches and
    /// that are not yet, before a copy between them and the device.
    fn ensure(&self, seg: u32, host: *const u8, len: usize) {
        let Some((pins, off)) = self.tracked(seg, host).filter(|_| len > 0) else { return };
        let last = (off + len - 1).min(pins.len - 1) / CHUNK;
        for c in off / CHUNK..=last {
            if pins.chunks[c].load(Ordering::Acquire) != UNPINNED {
                continue;
            }
            let _held = pins.lock.lock().unwrap_or_else(|e| e.into_inner());
            if pins.chunks[c].load(Ordering::Acquire) != UNPINNED {
                continue;
            }
            let n = CHUNK.min(pins.len - c * CHUNK);
            // SAFETY: plugin ABI call on a page-aligned range of this PE's own shadow (`track`),
            // which stays mapped until `untrack` unlocks it.
            if unsafe { (pins.slots.register)((pins.base + c * CHUNK) as *mut c_void, n) } == RC_OK {
                pins.chunks[c].store(PINNED, Ordering::Release);
                continue;
            }
            for s in pins.chunks.iter() {
                let _ = s.compare_exchange(UNPINNED, REFUSED, Ordering::AcqRel, Ordering::Acquire);
            }
            crate::log::log(
                crate::log::WARN,
                "GPU space",
                &format!(
                    "the device memheap could not page-lock {n} bytes of a GPU space's host shadow (SHMEM_GPU_PIN_SHADOW): collectives on that space copy through pageable memory, more slowly"
                ),
            );
            return;
        }
    }

    /// See [`piece`].
    fn piece(&self, seg: u32, host: *const u8, len: usize) -> usize {
        self.tracked(seg, host).map_or(len, |(_, off)| len.min(CHUNK - off % CHUNK))
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        for seg in 0..MAX_SEGMENTS {
            self.set(seg as u32, None);
        }
    }
}

/// Track the shadow `[base, base + len)` (page aligned, this PE's own mapping) of device
/// segment `seg`, where the device memheap can page-lock memory and the setting allows.
pub fn track(rt: &Runtime, seg: u32, base: *mut u8, len: usize) {
    let Some(slots) = rt.gpu.as_ref().and_then(|g| g.pin) else { return };
    if base.is_null() || len == 0 || !crate::config::get_bool("SHMEM_GPU_PIN_SHADOW").unwrap_or(true) {
        return;
    }
    // The mapping covers whole pages, and page-locking takes whole pages.
    let len = len.next_multiple_of(crate::symm::static_data::page_size());
    let chunks = (0..len.div_ceil(CHUNK)).map(|_| AtomicU8::new(UNPINNED)).collect();
    let pins = Box::new(Pins { base: base as usize, len, slots, chunks, lock: Mutex::new(()) });
    crate::ops::state::of(rt).pins.set(seg, Some(pins));
}

/// Stop tracking segment `seg`'s shadow, unlocking what was locked: before the shadow is
/// unmapped, once no collective runs on it (the space is being destroyed, or the job ends).
pub fn untrack(rt: &Runtime, seg: u32) {
    crate::ops::state::of(rt).pins.set(seg, None);
}

fn release(p: *mut Pins) {
    if p.is_null() {
        return;
    }
    // SAFETY: made by `Box::into_raw` in `Pinned::set` and just taken out of the table, so no
    // other reference is made from now on; none is in use (the callers' contract).
    let pins = unsafe { Box::from_raw(p) };
    for (c, state) in pins.chunks.iter().enumerate() {
        if state.load(Ordering::Acquire) == PINNED {
            // SAFETY: plugin ABI call undoing this chunk's `register`; the shadow is still mapped.
            unsafe { (pins.slots.unregister)((pins.base + c * CHUNK) as *mut c_void) };
        }
    }
}

/// Page-lock the chunks of segment `seg`'s shadow that `[host, host + len)` reaches and that
/// are not yet, before a copy between them and the device.
pub fn ensure(rt: &Runtime, seg: u32, host: *const u8, len: usize) {
    crate::ops::state::of(rt).pins.ensure(seg, host, len)
}

/// How much of a copy of `[host, host + len)` may go in one piece from `host`: up to the end
/// of its chunk where segment `seg`'s shadow is tracked, since a driver refuses a copy that
/// runs past the page-locked range it starts in (CUDA: `CUDA_ERROR_INVALID_VALUE`, seen on an
/// H200 for a 2 MiB fcollect), else all of it.
pub fn piece(rt: &Runtime, seg: u32, host: *const u8, len: usize) -> usize {
    crate::ops::state::of(rt).pins.piece(seg, host, len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    static REGISTERED: AtomicUsize = AtomicUsize::new(0);
    static UNREGISTERED: AtomicUsize = AtomicUsize::new(0);
    static REFUSE_AT: AtomicUsize = AtomicUsize::new(usize::MAX);

    unsafe extern "C" fn register(ptr: *mut c_void, len: usize) -> std::ffi::c_int {
        assert_eq!(ptr as usize % 4096, 0, "chunks start on pages");
        assert!(len <= CHUNK);
        if REGISTERED.load(Ordering::SeqCst) == REFUSE_AT.load(Ordering::SeqCst) {
            return rshmem_plugin_api::RC_ERROR;
        }
        REGISTERED.fetch_add(1, Ordering::SeqCst);
        RC_OK
    }

    unsafe extern "C" fn unregister(_ptr: *mut c_void) -> std::ffi::c_int {
        UNREGISTERED.fetch_add(1, Ordering::SeqCst);
        RC_OK
    }

    fn track_at(t: &Pinned, seg: u32, base: usize, len: usize) {
        let slots = PinSlots { register, unregister };
        let chunks = (0..len.div_ceil(CHUNK)).map(|_| AtomicU8::new(UNPINNED)).collect();
        t.set(seg, Some(Box::new(Pins { base, len, slots, chunks, lock: Mutex::new(()) })));
    }

    #[test]
    fn chunks_are_locked_once_as_copies_reach_them_and_unlocked_at_release() {
        let t = Pinned::new();
        let base = 1usize << 30; // never dereferenced
        let len = 5 * CHUNK + 4096;
        track_at(&t, 3, base, len);
        let at = |off: usize| (base + off) as *const u8;
        t.ensure(3, at(10), 8);
        assert_eq!(REGISTERED.load(Ordering::SeqCst), 1, "the first chunk only");
        t.ensure(3, at(100), 64);
        assert_eq!(REGISTERED.load(Ordering::SeqCst), 1, "locked once");
        t.ensure(3, at(CHUNK - 4), 8);
        assert_eq!(REGISTERED.load(Ordering::SeqCst), 2, "a copy across a boundary locks both chunks");
        t.ensure(3, at(5 * CHUNK), 4096);
        assert_eq!(REGISTERED.load(Ordering::SeqCst), 3, "the short last chunk");
        t.ensure(3, at(len), 8);
        t.ensure(3, at(0).wrapping_sub(8), 8);
        assert_eq!(REGISTERED.load(Ordering::SeqCst), 3, "outside the shadow: nothing");
        assert_eq!(t.piece(3, at(10), 8), 8);
        assert_eq!(t.piece(3, at(CHUNK - 4), 100), 4, "a piece ends where its chunk does");
        assert_eq!(t.piece(3, at(CHUNK), 3 * CHUNK), CHUNK);
        t.set(3, None);
        assert_eq!(UNREGISTERED.load(Ordering::SeqCst), 3, "every locked chunk unlocked");
        assert_eq!(t.piece(3, at(CHUNK - 4), 100), 100, "untracked: one piece");
        t.ensure(3, at(3 * CHUNK), 8);
        assert_eq!(REGISTERED.load(Ordering::SeqCst), 3, "untracked: nothing");

        // A refusal stops the tries on that shadow.
        REFUSE_AT.store(4, Ordering::SeqCst);
        track_at(&t, 3, base, len);
        t.ensure(3, at(0), 8);
        t.ensure(3, at(CHUNK), 8);
        assert_eq!(REGISTERED.load(Ordering::SeqCst), 4);
        t.ensure(3, at(2 * CHUNK), 3 * CHUNK);
        assert_eq!(REGISTERED.load(Ordering::SeqCst), 4, "refused, then not tried again");
        t.set(3, None);
        assert_eq!(UNREGISTERED.load(Ordering::SeqCst), 4, "only the locked chunk unlocked");

        // Each runtime has its own table, and one dropped unlocks what it still holds.
        REFUSE_AT.store(usize::MAX, Ordering::SeqCst);
        let other = Pinned::new();
        track_at(&other, 3, base, len);
        other.ensure(3, at(0), 8);
        assert_eq!(REGISTERED.load(Ordering::SeqCst), 5);
        assert_eq!(t.piece(3, at(CHUNK - 4), 100), 100, "the first table tracks nothing");
        drop(other);
        assert_eq!(UNREGISTERED.load(Ordering::SeqCst), 5, "dropping the table unlocked its chunk");
    }
}
