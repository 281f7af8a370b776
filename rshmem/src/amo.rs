//! Atomic memory operations on elements of symmetric arrays, and the point-to-point waits on
//! this PE's own elements.

use std::ffi::c_int;

use crate::ctx::Ctx;
use crate::device::{DeviceSymm, SharedDevice};
use crate::error::Result;
use crate::ffi::{self, AmoFns};
use crate::ops::{self, Amo};
use crate::symm::{at, Remote, Shared, Symm};

mod sealed {
    pub trait Sealed {}
}

/// The integer types with OpenSHMEM atomics, waits and tests: `i32`, `i64`, `u32`, `u64`.
pub trait AtomicInt: bytemuck::Pod + Amo + sealed::Sealed {
    #[doc(hidden)]
    const C: AmoFns<Self>;
    #[doc(hidden)]
    const ONE: Self;
}

macro_rules! atomic_int {
    ($($t:ty => $fns:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl AtomicInt for $t {
            const C: AmoFns<$t> = ffi::$fns;
            const ONE: $t = 1;
        }
    )*};
}
atomic_int!(i32 => AMO_I32, i64 => AMO_I64, u32 => AMO_U32, u64 => AMO_U64);

/// A comparison for waits and tests (`SHMEM_CMP_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Gt,
    Le,
    Lt,
    Ge,
}

impl Cmp {
    fn raw(self) -> c_int {
        match self {
            Cmp::Eq => 1,
            Cmp::Ne => 2,
            Cmp::Gt => 3,
            Cmp::Le => 4,
            Cmp::Lt => 5,
            Cmp::Ge => 6,
        }
    }
}

/// One fetching atomic: checks the element and the PE, then calls the core's `op`.
macro_rules! fetching {
    ($(#[$doc:meta])* $name:ident, $op:ident, $routine:literal, $c_routine:literal) => {
        $(#[$doc])*
        #[inline]
        pub fn $name<T: AtomicInt>(&self, dest: &impl Remote<T>, i: usize, value: T, pe: usize) -> Result<T> {
            let d = at(dest, $routine, i)?;
            let pe = self.checked_pe($routine, pe)?;
            // SAFETY: a checked element of a live symmetric array, a PE in range.
            unsafe { ops::rmw::<T, true>($c_routine, self.raw(), d, ops::$op, value, pe) }
        }
    };
}

/// One non-fetching atomic: checks the element and the PE, then calls the core's `op`.
macro_rules! posting {
    ($(#[$doc:meta])* $name:ident, $op:ident, $routine:literal, $c_routine:literal) => {
        $(#[$doc])*
        #[inline]
        pub fn $name<T: AtomicInt>(&self, dest: &impl Remote<T>, i: usize, value: T, pe: usize) -> Result<()> {
            let d = at(dest, $routine, i)?;
            let pe = self.checked_pe($routine, pe)?;
            // SAFETY: a checked element of a live symmetric array, a PE in range.
            unsafe { ops::rmw::<T, false>($c_routine, self.raw(), d, ops::$op, value, pe) }.map(|_| ())
        }
    };
}

impl Ctx {
    /// `shmem_atomic_fetch`: `dest[i]` on `pe`, read atomically.
    #[inline]
    pub fn atomic_fetch<T: AtomicInt>(&self, src: &impl Remote<T>, i: usize, pe: usize) -> Result<T> {
        const ROUTINE: &str = "Ctx::atomic_fetch";
        let s = at(src, ROUTINE, i)?;
        let pe = self.checked_pe(ROUTINE, pe)?;
        // SAFETY: a checked element of a live symmetric array, a PE in range.
        unsafe { ops::fetch(c"Ctx::atomic_fetch", self.raw(), s, pe) }
    }

    /// `shmem_atomic_set`: writes `dest[i]` on `pe` atomically.
    #[inline]
    pub fn atomic_set<T: AtomicInt>(
        &self,
        dest: &impl Remote<T>,
        i: usize,
        value: T,
        pe: usize,
    ) -> Result<()> {
        const ROUTINE: &str = "Ctx::atomic_set";
        let d = at(dest, ROUTINE, i)?;
        let pe = self.checked_pe(ROUTINE, pe)?;
        // SAFETY: a checked element of a live symmetric array, a PE in range.
        unsafe { ops::rmw::<T, false>(c"Ctx::atomic_set", self.raw(), d, ops::SET, value, pe) }.map(|_| ())
    }

    posting!(
        /// `shmem_atomic_add`: adds `value` to `dest[i]` on `pe`.
        atomic_add, ADD, "Ctx::atomic_add", c"Ctx::atomic_add"
    );

    /// `shmem_atomic_inc`: adds one to `dest[i]` on `pe`.
    #[inline]
    pub fn atomic_inc<T: AtomicInt>(&self, dest: &impl Remote<T>, i: usize, pe: usize) -> Result<()> {
        self.atomic_add(dest, i, T::ONE, pe)
    }

    /// `shmem_atomic_fetch_inc`: adds one to `dest[i]` on `pe`; returns the value before.
    #[inline]
    pub fn atomic_fetch_inc<T: AtomicInt>(&self, dest: &impl Remote<T>, i: usize, pe: usize) -> Result<T> {
        self.atomic_fetch_add(dest, i, T::ONE, pe)
    }

    /// `shmem_atomic_compare_swap`: sets `dest[i]` on `pe` to `value` if it equals `cond`;
    /// returns the value before.
    #[inline]
    pub fn atomic_compare_swap<T: AtomicInt>(
        &self,
        dest: &impl Remote<T>,
        i: usize,
        cond: T,
        value: T,
        pe: usize,
    ) -> Result<T> {
        const ROUTINE: &str = "Ctx::atomic_compare_swap";
        let d = at(dest, ROUTINE, i)?;
        let pe = self.checked_pe(ROUTINE, pe)?;
        // SAFETY: as `atomic_fetch`.
        unsafe { ops::compare_swap(c"Ctx::atomic_compare_swap", self.raw(), d, cond, value, pe) }
    }

    fetching!(
        /// `shmem_atomic_swap`: sets `dest[i]` on `pe` to `value`; returns the value before.
        atomic_swap, SWAP, "Ctx::atomic_swap", c"Ctx::atomic_swap"
    );
    fetching!(
        /// `shmem_atomic_fetch_add`: adds `value` to `dest[i]` on `pe`; returns the value before.
        atomic_fetch_add, ADD, "Ctx::atomic_fetch_add", c"Ctx::atomic_fetch_add"
    );
    fetching!(
        /// `shmem_atomic_fetch_and`: `dest[i] &= value` on `pe`; returns the value before.
        atomic_fetch_and, AMO_AND, "Ctx::atomic_fetch_and", c"Ctx::atomic_fetch_and"
    );
    fetching!(
        /// `shmem_atomic_fetch_or`: `dest[i] |= value` on `pe`; returns the value before.
        atomic_fetch_or, AMO_OR, "Ctx::atomic_fetch_or", c"Ctx::atomic_fetch_or"
    );
    fetching!(
        /// `shmem_atomic_fetch_xor`: `dest[i] ^= value` on `pe`; returns the value before.
        atomic_fetch_xor, AMO_XOR, "Ctx::atomic_fetch_xor", c"Ctx::atomic_fetch_xor"
    );
}

/// The waits and tests on this PE's own elements, for an array and for its shared view.
macro_rules! local_waits {
    ($ty:ident, $name:literal) => {
        impl<T: AtomicInt> $ty<'_, T> {
            /// `shmem_wait_until`: waits until this PE's element `i` compares `cmp` to `value`
            /// (other PEs change it). Panics when `i` is out of bounds.
            pub fn wait_until(&self, i: usize, cmp: Cmp, value: T) {
                let p = at(self, concat!($name, "::wait_until"), i).unwrap_or_else(|e| panic!("{e}"));
                // SAFETY: a checked element of a live symmetric array of this PE.
                unsafe { (T::C.wait_until)(p, cmp.raw(), value) }
            }

            /// `shmem_test`: whether this PE's element `i` compares `cmp` to `value` now.
            pub fn test(&self, i: usize, cmp: Cmp, value: T) -> bool {
                let p = at(self, concat!($name, "::test"), i).unwrap_or_else(|e| panic!("{e}"));
                // SAFETY: as `wait_until`.
                unsafe { (T::C.test)(p, cmp.raw(), value) != 0 }
            }
        }

        impl $ty<'_, u64> {
            /// `shmem_signal_wait_until`: waits until signal word `i` of this PE compares `cmp`
            /// to `value`; returns its value then.
            pub fn signal_wait_until(&self, i: usize, cmp: Cmp, value: u64) -> u64 {
                let p = at(self, concat!($name, "::signal_wait_until"), i).unwrap_or_else(|e| panic!("{e}"));
                // SAFETY: a checked element of a live symmetric array of this PE.
                unsafe { ffi::shmem_signal_wait_until(p, cmp.raw(), value) }
            }

            /// `shmem_signal_fetch`: signal word `i` of this PE, read atomically.
            pub fn signal_fetch(&self, i: usize) -> u64 {
                let p = at(self, concat!($name, "::signal_fetch"), i).unwrap_or_else(|e| panic!("{e}"));
                // SAFETY: as `signal_wait_until`.
                unsafe { ffi::shmem_signal_fetch(p) }
            }
        }
    };
}
local_waits!(Symm, "Symm");
local_waits!(Shared, "Shared");
local_waits!(DeviceSymm, "DeviceSymm");
local_waits!(SharedDevice, "SharedDevice");
