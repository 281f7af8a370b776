//! Symmetric arrays: memory every PE has at the same place, which other PEs read and write at
//! any time. So a [`Symm`] hands out no `&`/`&mut` to its elements: this PE reads and writes
//! them by value, and gets a `&mut [T]` only inside [`Symm::exclusive`], an epoch every PE
//! enters for the same array, in which no PE can reach it remotely.

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::error::{Error, Result};
use crate::Shmem;

/// `len` elements of `T` in symmetric memory, made by [`crate::Scope::alloc`] and freed when
/// that scope ends. `T` is [`bytemuck::Pod`]: any bytes another PE puts there are a valid `T`.
///
/// Not `Send` nor `Sync` (see [`Shmem`]).
pub struct Symm<'s, T> {
    ptr: NonNull<T>,
    len: usize,
    /// Which collective allocation of the runtime this is (the same on every PE, unlike the
    /// address): what an exclusive epoch agrees on, with `offset`.
    id: u64,
    /// Where this array starts in its allocation, in elements: 0, or where a part of one
    /// ([`Symm::split_at_mut`]) starts.
    offset: usize,
    pub(crate) rt: &'s Shmem,
    _owns: PhantomData<*mut T>,
}

impl<'s, T: bytemuck::Pod> Symm<'s, T> {
    /// # Safety
    /// `ptr` is a live, aligned, symmetric block of `len` elements that outlives `'s`.
    pub(crate) unsafe fn from_raw(rt: &'s Shmem, ptr: NonNull<T>, len: usize, id: u64) -> Symm<'s, T> {
        Symm { ptr, len, id, offset: 0, rt, _owns: PhantomData }
    }

    pub(crate) fn empty(rt: &'s Shmem, id: u64) -> Symm<'s, T> {
        Symm { ptr: NonNull::dangling(), len: 0, id, offset: 0, rt, _owns: PhantomData }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The local address of `offset .. offset + len`, checked against the array's length.
    pub(crate) fn range(&self, routine: &'static str, offset: usize, len: usize) -> Result<*mut T> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(Error::OutOfBounds { routine, offset, len, array_len: self.len });
        }
        // SAFETY: offset <= len of the block (checked), so the result is in it or one past.
        Ok(unsafe { self.ptr.as_ptr().add(offset) })
    }

    /// The local address of element `i`, checked.
    pub(crate) fn at(&self, routine: &'static str, i: usize) -> Result<*mut T> {
        self.range(routine, i, 1)
    }

    /// This PE's element `i`, read now (other PEs may be writing it). Panics when `i` is out of
    /// bounds, as indexing a slice does.
    pub fn read(&self, i: usize) -> T {
        let p = self.at("Symm::read", i).unwrap_or_else(|e| panic!("{e}"));
        // SAFETY: in bounds and aligned; volatile, because other PEs write this memory behind
        // the compiler's back, and any bytes are a valid T (Pod).
        unsafe { p.read_volatile() }
    }

    /// Writes this PE's element `i`. Panics when `i` is out of bounds.
    pub fn write(&self, i: usize, value: T) {
        let p = self.at("Symm::write", i).unwrap_or_else(|e| panic!("{e}"));
        // SAFETY: in bounds and aligned; volatile, as other PEs read this memory.
        unsafe { p.write_volatile(value) }
    }

    /// This PE's elements, read now, as a vector.
    pub fn to_vec(&self) -> Vec<T> {
        (0..self.len).map(|i| self.read(i)).collect()
    }

    /// Writes `values` into this PE's elements from `offset`.
    pub fn write_from(&self, offset: usize, values: &[T]) -> Result<()> {
        let p = self.range("Symm::write_from", offset, values.len())?;
        for (i, v) in values.iter().enumerate() {
            // SAFETY: within the checked range; volatile, as in `write`.
            unsafe { p.add(i).write_volatile(*v) };
        }
        Ok(())
    }

    /// Sets every element of this PE's copy to `value`.
    pub fn fill(&self, value: T) {
        for i in 0..self.len {
            self.write(i, value);
        }
    }

    /// The array as two arrays, elements `..mid` and `mid..`, for as long as they are borrowed
    /// (as `<[T]>::split_at_mut`; panics if `mid > len`). Each is an array of its own: a
    /// target and source of every operation, a collective's buffer, and an exclusive epoch's
    /// array, so this PE can hold one part as a `&mut [T]` while other PEs put into the other
    /// (a halo exchange around a local update of the interior). Every PE splits its own copy;
    /// an epoch over a part agrees on the allocation, the part's start and its length, so it
    /// begins only when every PE names the same part.
    pub fn split_at_mut(&mut self, mid: usize) -> (Symm<'_, T>, Symm<'_, T>) {
        assert!(mid <= self.len, "Symm::split_at_mut: mid {mid} is past the length {}", self.len);
        let part = |ptr: NonNull<T>, offset: usize, len: usize| Symm {
            ptr,
            len,
            id: self.id,
            offset: self.offset + offset,
            rt: self.rt,
            _owns: PhantomData,
        };
        // SAFETY: mid <= len (checked), so the second part starts in the block or one past it.
        let second = unsafe { self.ptr.add(mid) };
        (part(self.ptr, 0, mid), part(second, mid, self.len - mid))
    }

    /// A collective epoch in which this PE has its copy as a `&mut [T]`: every PE calls it for
    /// the same array (checked: [`Error::EpochMismatch`] on every PE otherwise; for a part of
    /// an array, the same part). On entry every PE's operations have completed and every PE is
    /// inside; no PE can name this array while its `&mut self` is taken, so no remote write
    /// lands in it during `f` (a part's other parts stay reachable); on exit every PE waits
    /// until all have left `f`.
    pub fn exclusive<R>(&mut self, f: impl FnOnce(&mut [T]) -> R) -> Result<R> {
        const TAG_EPOCH: i64 = 2;
        self.rt.quiet_all();
        if !self.rt.agree([TAG_EPOCH, self.id as i64, self.offset as i64, self.len as i64]) {
            return Err(Error::EpochMismatch { routine: "Symm::exclusive" });
        }
        // SAFETY: the block is live for 's and this is the only reference made to it: the
        // local handle is borrowed mutably, and every other PE is inside the same epoch with
        // its own handle borrowed mutably, its earlier operations completed (quiet, then the
        // agreement, which nobody leaves before everybody entered). For a part, every PE's
        // whole array is borrowed by its split, and its other parts cover other elements.
        let slice = unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) };
        let r = f(slice);
        // SAFETY: the private team of a live runtime; collective over it.
        unsafe { crate::ffi::shmem_team_sync(self.rt.agree_team) };
        Ok(r)
    }
}

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// A symmetric array a context can reach on any PE: a [`Symm`], or the [`Shared`] view of one
/// that threads use. Sealed: only this crate's handles, which check every range, are arrays.
pub trait Remote<T>: sealed::Sealed {
    /// The local address of `offset .. offset + len`, checked against the array's length
    /// (`routine` names the caller in the error).
    #[doc(hidden)]
    fn checked_range(&self, routine: &'static str, offset: usize, len: usize) -> Result<*mut T>;
    /// The number of elements.
    #[doc(hidden)]
    fn elements(&self) -> usize;
}

impl<T> sealed::Sealed for Symm<'_, T> {}

impl<T: bytemuck::Pod> Remote<T> for Symm<'_, T> {
    #[inline]
    fn checked_range(&self, routine: &'static str, offset: usize, len: usize) -> Result<*mut T> {
        self.range(routine, offset, len)
    }

    #[inline]
    fn elements(&self) -> usize {
        self.len
    }
}

/// The checked address of element `i` of any array.
#[inline]
pub(crate) fn at<T, A: Remote<T> + ?Sized>(a: &A, routine: &'static str, i: usize) -> Result<*mut T> {
    a.checked_range(routine, i, 1)
}

/// A view of a [`Symm`] that the threads of a [`crate::Threads`] runtime share (it is `Send`
/// and `Sync`; the array is not): contexts put into it, get from it and apply atomics to it on
/// any PE, and this PE reads its own elements and waits on them. It has no local writes, which
/// two threads could race on; a thread writes its own PE's copy through a context (`p`, `put`,
/// `atomic_set` to `my_pe`). While a view lives the array is borrowed, so no exclusive epoch
/// can begin.
pub struct Shared<'a, T> {
    ptr: NonNull<T>,
    len: usize,
    _borrow: PhantomData<&'a [T]>,
}

// SAFETY: a view only reads the block (volatile, as memory other PEs write) and hands its
// address to the library's routines, which are thread-safe under SHMEM_THREAD_MULTIPLE, the
// only level at which a view is made (`Threads::share`). The block lives for 'a (it borrows
// its Symm), and T is Pod, so whatever bytes another thread or PE writes are a valid T.
unsafe impl<T: bytemuck::Pod> Send for Shared<'_, T> {}
// SAFETY: as for Send: every method takes `&self` and is safe to call from threads at once.
unsafe impl<T: bytemuck::Pod> Sync for Shared<'_, T> {}

impl<T> Clone for Shared<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Shared<'_, T> {}

impl<T> sealed::Sealed for Shared<'_, T> {}

impl<T: bytemuck::Pod> Remote<T> for Shared<'_, T> {
    #[inline]
    fn checked_range(&self, routine: &'static str, offset: usize, len: usize) -> Result<*mut T> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(Error::OutOfBounds { routine, offset, len, array_len: self.len });
        }
        // SAFETY: offset <= len of the block (checked), so the result is in it or one past.
        Ok(unsafe { self.ptr.as_ptr().add(offset) })
    }

    #[inline]
    fn elements(&self) -> usize {
        self.len
    }
}

impl<'a, T: bytemuck::Pod> Shared<'a, T> {
    pub(crate) fn of(a: &'a Symm<'_, T>) -> Shared<'a, T> {
        Shared { ptr: a.ptr, len: a.len, _borrow: PhantomData }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// This PE's element `i`, read now. Panics when `i` is out of bounds.
    pub fn read(&self, i: usize) -> T {
        let p = at(self, "Shared::read", i).unwrap_or_else(|e| panic!("{e}"));
        // SAFETY: in bounds and aligned; volatile, because other PEs and threads write this
        // memory (through the library) behind the compiler's back; any bytes are a valid T.
        unsafe { p.read_volatile() }
    }

    /// This PE's elements, read now, as a vector.
    pub fn to_vec(&self) -> Vec<T> {
        (0..self.len).map(|i| self.read(i)).collect()
    }
}

impl<T: bytemuck::Pod + std::fmt::Debug> std::fmt::Debug for Shared<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("len", &self.len).field("local", &self.to_vec()).finish()
    }
}

impl<T: bytemuck::Pod + std::fmt::Debug> std::fmt::Debug for Symm<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symm").field("len", &self.len).field("local", &self.to_vec()).finish()
    }
}
