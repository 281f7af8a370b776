//! The team scratch pool: fixed slots of symmetric memory reserved in the heap at init, one per
//! team that may exist at once (`crate::ops::team` decides the slots and their size). Part of
//! the `Runtime` (`Runtime::team_pool`).

/// The pool: its base, the bytes of a slot and how many slots it has.
pub struct Pool {
    base: usize,
    slot_bytes: usize,
    slots: usize,
}

impl Pool {
    /// The pool of `slots` slots of `slot_bytes` at `base`.
    pub fn new(base: *mut u8, slot_bytes: usize, slots: usize) -> Pool {
        Pool { base: base as usize, slot_bytes, slots }
    }

    /// Slot `slot`'s memory: its address and length.
    pub fn slot(&self, slot: usize) -> (*mut u8, usize) {
        assert!(slot < self.slots, "team slot {slot} is outside the pool of {}", self.slots);
        ((self.base + slot * self.slot_bytes) as *mut u8, self.slot_bytes)
    }
}
