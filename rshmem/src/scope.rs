//! Collective lifetimes: symmetric memory and teams are made inside a [`Scope`] that every PE
//! enters, and released together when every PE leaves it, never from one PE's `Drop`.

use std::cell::RefCell;
use std::ffi::c_void;
use std::marker::PhantomData;

use crate::error::{Error, Result};
use crate::ffi;
use crate::symm::Symm;
use crate::team::Team;
use crate::Shmem;

/// What a scope releases when it ends, in the reverse order of making.
enum Owned {
    Memory(*mut c_void),
    Team(ffi::RawTeam),
}

/// A collective region: [`Shmem::scope`] runs a closure on every PE, and what was allocated or
/// split in it is released when the closure returns on every PE. Handles made here borrow the
/// scope, so none escapes it.
pub struct Scope<'rt> {
    pub(crate) rt: &'rt Shmem,
    owned: RefCell<Vec<Owned>>,
    _invariant: PhantomData<&'rt mut &'rt ()>,
}

/// Agreement tags: an allocation can only agree with an allocation.
const TAG_ALLOC: i64 = 1;

impl Shmem {
    /// Runs `f` as a collective region: every PE calls `scope` at the same point of its
    /// program. Symmetric arrays ([`Scope::alloc`]) and teams ([`Scope::split_strided`]) made in
    /// it are released when `f` returns, after this PE's operations have completed, in the
    /// reverse order they were made (the same order on every PE). If `f` panics nothing is
    /// released (the job ends: see [`Shmem`]).
    pub fn scope<'rt, R>(&'rt self, f: impl for<'s> FnOnce(&'s Scope<'rt>) -> R) -> R {
        let scope = Scope { rt: self, owned: RefCell::new(Vec::new()), _invariant: PhantomData };
        let r = f(&scope);
        scope.release();
        r
    }
}

impl<'rt> Scope<'rt> {
    /// A symmetric array of `len` zeroed elements, collectively: every PE calls it with the same
    /// `len`, in the same order. The lengths are compared across the PEs first; if they differ
    /// every PE gets [`Error::Length`].
    pub fn alloc<'s, T: bytemuck::Pod>(&'s self, len: usize) -> Result<Symm<'s, T>> {
        const ROUTINE: &str = "Scope::alloc";
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .filter(|b| *b <= i64::MAX as usize)
            .ok_or_else(|| Error::Invalid { routine: ROUTINE, what: format!("len {len} overflows") })?;
        if !self.rt.agree([TAG_ALLOC, bytes as i64, std::mem::align_of::<T>() as i64]) {
            return Err(Error::Length {
                routine: ROUTINE,
                what: "len (it differs between PEs)",
                got: len,
                want: len,
            });
        }
        let id = self.rt.allocations.get();
        self.rt.allocations.set(id + 1);
        if bytes == 0 {
            return Ok(Symm::empty(self.rt, id));
        }
        let align = std::mem::align_of::<T>().max(8);
        // SAFETY: collective allocation with the same size on every PE (agreed above).
        let p = unsafe { ffi::shmem_align(align, bytes) };
        if p.is_null() {
            return Err(Error::NoMemory { routine: ROUTINE, bytes });
        }
        // Zeroed, then a barrier so that no PE writes into another's array before it is zeroed.
        // SAFETY: a fresh block of `bytes` bytes, not yet reachable by any other PE's handle.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
        self.rt.barrier_all();
        self.owned.borrow_mut().push(Owned::Memory(p));
        // SAFETY: `p` is non-NULL (checked), a live, aligned, symmetric block of `len` elements,
        // released only when this scope ends.
        Ok(unsafe { Symm::from_raw(self.rt, std::ptr::NonNull::new_unchecked(p.cast()), len, id) })
    }

    /// A distributed lock, collectively (a symmetric allocation of one word, zeroed: free).
    pub fn lock<'s>(&'s self) -> Result<crate::Lock<'s>> {
        Ok(crate::Lock::new(self.alloc::<i64>(1)?))
    }

    /// `shmem_team_split_strided` from `parent`: the PEs `start, start + stride, ...` (`size`
    /// of them, numbered in `parent`). Every PE of `parent` calls it; a member gets
    /// `Some(team)`, the others `None`. The team is destroyed when the scope ends.
    pub fn split_strided<'s>(
        &'s self,
        parent: &Team<'_>,
        start: usize,
        stride: isize,
        size: usize,
    ) -> Result<Option<Team<'s>>> {
        const ROUTINE: &str = "Scope::split_strided";
        let n = parent.n_pes();
        let last = start as isize + stride * (size as isize - 1);
        if size == 0 || start >= n || last < 0 || last as usize >= n || (stride == 0 && size > 1) {
            return Err(Error::Invalid {
                routine: ROUTINE,
                what: format!("start {start}, stride {stride}, size {size} do not fit a team of {n} PEs"),
            });
        }
        let mut t: ffi::RawTeam = std::ptr::null_mut();
        // SAFETY: a live parent team; a valid out-pointer; collective over the parent.
        let rc = unsafe {
            ffi::shmem_team_split_strided(
                parent.raw(),
                start as i32,
                stride as i32,
                size as i32,
                std::ptr::null(),
                0,
                &mut t,
            )
        };
        if rc != 0 {
            return Err(Error::Declined { routine: ROUTINE, code: rc });
        }
        if t.is_null() {
            return Ok(None);
        }
        self.owned.borrow_mut().push(Owned::Team(t));
        Ok(Some(Team::from_raw(self.rt, t)))
    }

    /// The runtime this scope belongs to.
    pub fn shmem(&self) -> &'rt Shmem {
        self.rt
    }

    fn release(self) {
        let owned = std::mem::take(&mut *self.owned.borrow_mut());
        if owned.is_empty() {
            return;
        }
        // Nothing of this PE's may still be on its way into memory about to be freed.
        self.rt.quiet_all();
        for o in owned.into_iter().rev() {
            match o {
                // SAFETY: a block this scope allocated; every PE frees the same blocks in the
                // same order (the reverse of the collective allocations), and no handle to it
                // is left (they borrowed the scope).
                Owned::Memory(p) => unsafe { ffi::shmem_free(p) },
                // SAFETY: a team this scope split, destroyed once, by every member, in order.
                Owned::Team(t) => unsafe { ffi::shmem_team_destroy(t) },
            }
        }
    }
}
