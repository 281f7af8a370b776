//! Memory spaces (the memory-spaces proposals): symmetric heaps of their own, made collectively
//! in a [`Scope`] and destroyed when it ends, after the arrays allocated from them.
//!
//! Only host (CPU) spaces that every PE reaches are in this API: a [`Symm`] reads and writes
//! its own PE's elements with loads and stores, which device memory does not allow, and its
//! collective lifetime (scopes, exclusive epochs) is the world's.

use std::ffi::c_int;

use crate::error::{Error, Result};
use crate::ffi;
use crate::scope::{Owned, OwnedList, Scope};
use crate::symm::Symm;
use crate::Shmem;

/// A memory space this API allocates from: the predefined CPU space ([`Shmem::cpu_space`]) or
/// one made by [`Scope::create_space`].
pub struct Space<'a> {
    raw: ffi::RawSpace,
    /// The list of the scope that made the space, where its arrays go, so that they are freed
    /// before it is destroyed; `None` for a predefined space (never destroyed).
    owner: Option<&'a OwnedList>,
    _rt: &'a Shmem,
}

/// Agreement tag of a space's creation.
const TAG_SPACE: i64 = 3;

impl Shmem {
    /// `SHMEM_SPACE_CPU`: the host's symmetric heap as a space (the one [`Scope::alloc`] uses
    /// when the CPU space is the default). `None` when the library has no CPU space.
    pub fn cpu_space(&self) -> Option<Space<'_>> {
        // SAFETY: a variable the library sets at init and never changes afterwards; read only.
        let raw = unsafe { (&raw const ffi::rshmem_space_cpu).read() };
        Space::checked(self, raw, None).ok().flatten()
    }
}

impl<'a> Space<'a> {
    /// A space this API can use: live, of host memory, reached by every PE. `None` for the
    /// invalid handle.
    fn checked(rt: &'a Shmem, raw: ffi::RawSpace, owner: Option<&'a OwnedList>) -> Result<Option<Space<'a>>> {
        const ROUTINE: &str = "Scope::create_space";
        if raw.is_null() {
            return Ok(None);
        }
        let (mut device, mut caps): (c_int, u64) = (-1, 0);
        // SAFETY: a space handle the library gave out; valid out-pointers.
        let ok = unsafe {
            ffi::shmem_space_is_available(raw) == 0
                && ffi::shmem_space_get_device_type(raw, &mut device) == 0
                && ffi::shmem_space_get_caps(raw, &mut caps) == 0
        };
        if !ok || device != ffi::DEVICE_CPU || caps & ffi::SPACE_CAP_WORLD_ACCESS == 0 {
            return Err(Error::Invalid {
                routine: ROUTINE,
                what: format!("a space of device type {device}, capabilities {caps:#x}: only host spaces every PE reaches are in this API"),
            });
        }
        Ok(Some(Space { raw, owner, _rt: rt }))
    }

    /// The space's capabilities (`shmem_space_get_caps`: `SHMEM_SPACE_CAP_*` bits).
    pub fn caps(&self) -> u64 {
        let mut caps = 0;
        // SAFETY: a live space (it outlives this handle); a valid out-pointer.
        unsafe { ffi::shmem_space_get_caps(self.raw, &mut caps) };
        caps
    }
}

impl<'rt> Scope<'rt> {
    /// `shmem_space_create` of a host space of `size` bytes per PE, collectively over the
    /// world: every PE calls it with the same `size` (compared first: [`Error::Length`] on
    /// every PE otherwise). The space is destroyed when the scope ends, after every array
    /// allocated from it. [`Error::Declined`] on every PE when the library cannot make it.
    pub fn create_space<'s>(&'s self, size: usize) -> Result<Space<'s>> {
        const ROUTINE: &str = "Scope::create_space";
        if !self.rt.agree([TAG_SPACE, size as i64, 0]) {
            return Err(Error::Length {
                routine: ROUTINE,
                what: "size (it differs between PEs)",
                got: size,
                want: size,
            });
        }
        let config = ffi::SpaceConfig { device_type: ffi::DEVICE_CPU, size, flags: 0 };
        let (mut raw, mut team): (ffi::RawSpace, ffi::RawTeam) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: a readable config, valid out-pointers; collective over the world, with the
        // same config on every PE (agreed above).
        let rc = unsafe { ffi::shmem_space_create(&config, &mut raw, &mut team) };
        if rc != 0 || raw.is_null() {
            // The library answers alike on every PE (its creation is agreed).
            return Err(Error::Declined { routine: ROUTINE, code: rc });
        }
        self.own(Owned::Space(raw));
        match Space::checked(self.rt, raw, Some(self.owned_list()))? {
            Some(space) => Ok(space),
            None => Err(Error::Declined { routine: ROUTINE, code: rc }),
        }
    }

    /// `shmem_space_malloc`: a symmetric array of `len` zeroed elements in `space`, as
    /// [`Scope::alloc`] makes one in the default heap (the same agreement on the length). It
    /// is freed when the scope that made the space ends, before the space is destroyed (for
    /// the predefined CPU space, when this scope ends), and lives no longer than either.
    pub fn alloc_in<'s, T: bytemuck::Pod>(&'s self, space: &Space<'s>, len: usize) -> Result<Symm<'s, T>> {
        self.allocate("Scope::alloc_in", len, crate::Hints::default(), Some((space.raw, space.owner)))
    }
}
