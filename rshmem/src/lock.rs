//! Distributed locks (OpenSHMEM's `shmem_set_lock`, `shmem_test_lock`, `shmem_clear_lock`): a
//! [`Lock`] owns its symmetric word, so nothing else can read or write it, and holding the lock
//! is a [`LockGuard`] that clears it when dropped. Clearing is not collective (only the holder
//! does it), so a guard's `Drop` is where it belongs, unlike a symmetric free.

use std::cell::Cell;
use std::ffi::c_long;

use crate::error::{Error, Result};
use crate::symm::Symm;

/// A lock every PE shares, made by [`crate::Scope::lock`] (collectively, as any symmetric
/// allocation) and gone with that scope. PEs get it in the order they asked for it.
pub struct Lock<'s> {
    word: Symm<'s, i64>,
    /// Whether this PE holds it: the lock is not reentrant, and asking again while holding it
    /// would wait forever.
    held: Cell<bool>,
}

/// This PE holds the lock until the guard is dropped; what it put or got meanwhile is
/// complete before the next holder gets the lock (the clear completes this PE's operations
/// first).
pub struct LockGuard<'l, 's> {
    lock: &'l Lock<'s>,
}

impl<'s> Lock<'s> {
    pub(crate) fn new(word: Symm<'s, i64>) -> Lock<'s> {
        Lock { word, held: Cell::new(false) }
    }

    fn raw(&self) -> *mut c_long {
        // The word is one zeroed element, symmetric, that only this type reaches.
        self.word.at("Lock", 0).expect("a lock's word").cast()
    }

    fn not_held(&self, routine: &'static str) -> Result<()> {
        if self.held.get() {
            return Err(Error::Invalid {
                routine,
                what: "this PE already holds the lock (it is not reentrant)".into(),
            });
        }
        Ok(())
    }

    /// Wait for the lock and take it.
    pub fn set(&self) -> Result<LockGuard<'_, 's>> {
        self.not_held("Lock::set")?;
        // SAFETY: the symmetric, zero-initialised long this lock owns; only lock routines
        // touch it.
        unsafe { crate::ffi::shmem_set_lock(self.raw()) };
        self.held.set(true);
        Ok(LockGuard { lock: self })
    }

    /// Take the lock if no PE holds it or waits for it; `Ok(None)` otherwise (never waits).
    pub fn try_set(&self) -> Result<Option<LockGuard<'_, 's>>> {
        self.not_held("Lock::try_set")?;
        // SAFETY: as in `set`.
        if unsafe { crate::ffi::shmem_test_lock(self.raw()) } != 0 {
            return Ok(None);
        }
        self.held.set(true);
        Ok(Some(LockGuard { lock: self }))
    }
}

impl Drop for LockGuard<'_, '_> {
    fn drop(&mut self) {
        // SAFETY: this PE holds the lock (the guard exists only while it does).
        unsafe { crate::ffi::shmem_clear_lock(self.lock.raw()) };
        self.lock.held.set(false);
    }
}

impl std::fmt::Debug for Lock<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock").field("held_here", &self.held.get()).finish()
    }
}
