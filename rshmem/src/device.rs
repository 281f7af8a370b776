//! Arrays in device memory: the library's GPU space (`SHMEM_SPACE_GPU`, the GPU auxiliary
//! specification's GPU heap).
//!
//! This PE's CPU may not load or store device memory, so a [`DeviceSymm`] has no local
//! element access at all, not even by value: its own PE's elements are read and written
//! through the library, as any PE's are ([`DeviceSymm::to_vec`], [`DeviceSymm::write_from`],
//! or a context's `get`/`put` with this PE as the target), which copies with the device. It is
//! a [`crate::Remote`] array, so every context operation takes it (put, get, `p`, `g`, atomics,
//! put-with-signal), and this PE waits on its own words ([`DeviceSymm::wait_until`],
//! [`DeviceSymm::signal_wait_until`]) through the library, which reads them with the device.
//! The world's collectives and those of teams split from it take it too: the library copies
//! through the GPU space's host shadow, or device to device where every PE maps every PE's
//! device memory. Under `SHMEM_GPU_COLLECTIVES=0` the GPU space has no collectives, and the
//! library ends the job naming the routine instead.

use std::ffi::c_int;
use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::error::{Error, Result};
use crate::ffi;
use crate::scope::{Hints, Owned, OwnedList, Scope};
use crate::symm::{sealed, Remote};
use crate::team::Team;
use crate::Shmem;

/// A GPU space as this API allocates from it: live, of device memory, reached by every PE.
/// The predefined one ([`Shmem::gpu_space`]), never destroyed while the runtime lives, or one
/// made by [`Scope::create_gpu_space`], destroyed when that scope ends, after its arrays.
pub struct GpuSpace<'a> {
    raw: ffi::RawSpace,
    /// The space's team (`shmem_space_get_team`): the world's PEs, a team of its own.
    team: ffi::RawTeam,
    /// The list of the scope that made the space, where its arrays go, so that they are freed
    /// before it is destroyed; `None` for the predefined space.
    owner: Option<&'a OwnedList>,
    _rt: &'a Shmem,
}

/// Agreement tag of a GPU space's creation.
const TAG_GPU_SPACE: i64 = 4;

impl Shmem {
    /// `SHMEM_SPACE_GPU`, when the library made it (initialized by
    /// [`Shmem::init_with_gpu_heap`], or with `SHMEM_ENABLE_GPU_SPACE=1`) and every PE reaches
    /// it; `None` otherwise (no GPU, no GPU memheap: the library's log says why). The same
    /// answer on every PE: the library makes the GPU space on every PE or on none.
    pub fn gpu_space(&self) -> Option<GpuSpace<'_>> {
        // SAFETY: a variable the library sets at init and never changes until finalize; read
        // only, while this runtime (which borrows nothing past finalize) lives.
        let raw = unsafe { (&raw const ffi::rshmem_space_gpu).read() };
        GpuSpace::checked(self, raw, None)
    }
}

impl<'a> GpuSpace<'a> {
    /// A space this API can use as a GPU space: live, of device memory, with RMA, reached by
    /// every PE. `None` for the invalid handle and for any other space.
    fn checked(rt: &'a Shmem, raw: ffi::RawSpace, owner: Option<&'a OwnedList>) -> Option<GpuSpace<'a>> {
        if raw.is_null() {
            return None;
        }
        let (mut device, mut caps, mut team): (c_int, u64, ffi::RawTeam) = (-1, 0, std::ptr::null_mut());
        // SAFETY: a space handle the library gave out; valid out-pointers.
        let ok = unsafe {
            ffi::shmem_space_is_available(raw) == 0
                && ffi::shmem_space_get_device_type(raw, &mut device) == 0
                && ffi::shmem_space_get_caps(raw, &mut caps) == 0
                && ffi::shmem_space_get_team(raw, &mut team) == 0
        };
        let wanted = ffi::SPACE_CAP_RMA | ffi::SPACE_CAP_WORLD_ACCESS;
        (ok && !team.is_null() && device == ffi::DEVICE_GPU && caps & wanted == wanted).then_some(GpuSpace {
            raw,
            team,
            owner,
            _rt: rt,
        })
    }
}

impl<'a> GpuSpace<'a> {
    /// The space's team: every PE, as a team of its own (for the predefined space,
    /// `SHMEM_DEVICE_TEAM_WORLD`). Its collectives take the space's arrays; it is the
    /// library's, destroyed with the space, so it is not lent to threads.
    pub fn team(&self) -> Team<'a> {
        Team::from_raw(self._rt, self.team)
    }

    /// The space's capabilities (`shmem_space_get_caps`: `SHMEM_SPACE_CAP_*` bits).
    pub fn caps(&self) -> u64 {
        let mut caps = 0;
        // SAFETY: a live space (predefined, for the runtime's life); a valid out-pointer.
        unsafe { ffi::shmem_space_get_caps(self.raw, &mut caps) };
        caps
    }
}

impl<'rt> Scope<'rt> {
    /// `shmem_space_create` of a GPU space of `size` bytes of device memory per PE,
    /// collectively over the world: every PE calls it with the same `size` (compared first:
    /// [`Error::Length`] on every PE otherwise). The space is destroyed when the scope ends,
    /// after every array allocated from it. [`Error::Declined`] on every PE when the library
    /// cannot make it (no GPU memheap on some PE, peers that cannot reach each other's device
    /// memory): the library answers alike on every PE.
    pub fn create_gpu_space<'s>(&'s self, size: usize) -> Result<GpuSpace<'s>> {
        const ROUTINE: &str = "Scope::create_gpu_space";
        if !self.rt.agree([TAG_GPU_SPACE, size as i64, 0]) {
            return Err(Error::Length {
                routine: ROUTINE,
                what: "size (it differs between PEs)",
                got: size,
                want: size,
            });
        }
        let config = ffi::SpaceConfig { device_type: ffi::DEVICE_GPU, size, flags: 0 };
        let (mut raw, mut team): (ffi::RawSpace, ffi::RawTeam) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: a readable config, valid out-pointers; collective over the world, with the
        // same config on every PE (agreed above).
        let rc = unsafe { ffi::shmem_space_create(&config, &mut raw, &mut team) };
        if rc != 0 || raw.is_null() {
            return Err(Error::Declined { routine: ROUTINE, code: rc });
        }
        self.own(Owned::Space(raw));
        // A space the library made on every PE is one every PE reaches; were it not one this
        // API takes, it is destroyed with the scope all the same.
        GpuSpace::checked(self.rt, raw, Some(self.owned_list()))
            .ok_or(Error::Declined { routine: ROUTINE, code: rc })
    }

    /// `shmem_space_calloc` in the GPU space: a symmetric array of `len` zeroed elements of
    /// device memory, collectively, with the same agreement on the length as
    /// [`Scope::alloc`] ([`Error::Length`] on every PE when the PEs pass different lengths).
    /// Freed when the scope that made the space ends, before the space is destroyed (for the
    /// predefined GPU space, when this scope ends); it lives no longer than either.
    pub fn alloc_device<'s, T: bytemuck::Pod>(
        &'s self,
        space: &GpuSpace<'s>,
        len: usize,
    ) -> Result<DeviceSymm<'s, T>> {
        let (p, _) = self.block::<T>(
            "Scope::alloc_device",
            len,
            Hints::default(),
            Some((space.raw, space.owner)),
            true,
        )?;
        Ok(DeviceSymm { ptr: p.unwrap_or(NonNull::dangling()), len, rt: self.rt, _owns: PhantomData })
    }
}

/// `len` elements of `T` in a GPU space, made by [`Scope::alloc_device`] and freed when
/// the scope that made the space ends (see there). No local access: see the module's documentation.
///
/// Not `Send` nor `Sync` (see [`Shmem`]).
pub struct DeviceSymm<'s, T> {
    ptr: NonNull<T>,
    len: usize,
    rt: &'s Shmem,
    _owns: PhantomData<*mut T>,
}

impl<T: bytemuck::Pod> DeviceSymm<'_, T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `shmem_ptr`: the device address of `pe`'s copy of this array, where this process maps
    /// it (this PE's own always; a peer's on this host through the driver's IPC), for the
    /// program's own kernels and device copies (cudarc, a kernel launch); `None` where `pe`'s
    /// copy is reached only through the library. An address, not a reference: what a kernel
    /// does with it is the kernel's business, and it is valid until the array is freed.
    pub fn device_ptr(&self, pe: usize) -> Result<Option<NonNull<T>>> {
        let pe = self.rt.checked_pe("DeviceSymm::device_ptr", pe)?;
        if self.len == 0 {
            return Ok(None);
        }
        // SAFETY: a live symmetric block of this runtime; the library only looks it up.
        Ok(NonNull::new(unsafe { ffi::shmem_ptr(self.ptr.as_ptr().cast(), pe) }.cast()))
    }

    /// This PE's elements, copied from the device now (a get from this PE on the default
    /// context).
    pub fn to_vec(&self) -> Vec<T> {
        let mut v = vec![T::zeroed(); self.len];
        self.rt.get(&mut v, self, 0, self.rt.my_pe()).unwrap_or_else(|e| panic!("DeviceSymm::to_vec: {e}"));
        v
    }

    /// Writes `values` into this PE's elements from `offset`, through the device (a put to
    /// this PE on the default context, complete when this returns).
    pub fn write_from(&self, offset: usize, values: &[T]) -> Result<()> {
        self.rt.put(self, offset, values, self.rt.my_pe())?;
        self.rt.quiet();
        Ok(())
    }
}

impl<T> sealed::Sealed for DeviceSymm<'_, T> {}

/// The `Remote` side of a device array and of its view: checked ranges of addresses only,
/// which the library is given and reaches the device memory behind.
macro_rules! device_remote {
    ($ty:ident) => {
        impl<T: bytemuck::Pod> Remote<T> for $ty<'_, T> {
            #[inline]
            fn checked_range(&self, routine: &'static str, offset: usize, len: usize) -> Result<*mut T> {
                if offset.checked_add(len).is_none_or(|end| end > self.len) {
                    return Err(Error::OutOfBounds { routine, offset, len, array_len: self.len });
                }
                Ok(self.ptr.as_ptr().wrapping_add(offset))
            }

            #[inline]
            fn elements(&self) -> usize {
                self.len
            }
        }
    };
}
device_remote!(DeviceSymm);
device_remote!(SharedDevice);

/// A view of a [`DeviceSymm`] that the threads of a [`crate::Threads`] runtime share (`Send`,
/// `Sync` and `Copy`; the array is neither), from [`crate::Threads::share_device`]: the target
/// and source of any thread's context operations, and this PE's words to wait on. Like the
/// array it has no local access; the array stays borrowed while the view lives.
pub struct SharedDevice<'a, T> {
    ptr: NonNull<T>,
    len: usize,
    _borrow: PhantomData<&'a [T]>,
}

// SAFETY: a view never touches the memory itself: it hands its address to the library's
// routines, which are thread-safe under SHMEM_THREAD_MULTIPLE, the only level at which a view
// is made (`Threads::share_device`). The block lives for 'a (the view borrows its array).
unsafe impl<T: bytemuck::Pod> Send for SharedDevice<'_, T> {}
// SAFETY: as for Send: every method takes `&self` and is safe to call from threads at once.
unsafe impl<T: bytemuck::Pod> Sync for SharedDevice<'_, T> {}

impl<T> Clone for SharedDevice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedDevice<'_, T> {}

impl<'a, T: bytemuck::Pod> SharedDevice<'a, T> {
    pub(crate) fn of(a: &'a DeviceSymm<'_, T>) -> SharedDevice<'a, T> {
        SharedDevice { ptr: a.ptr, len: a.len, _borrow: PhantomData }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T> sealed::Sealed for SharedDevice<'_, T> {}
