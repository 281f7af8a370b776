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
pub(crate) enum Owned {
    Memory(*mut c_void),
    Team(ffi::RawTeam),
    /// A space this scope created, destroyed after every array allocated from it (they come
    /// later in the list).
    Space(ffi::RawSpace),
    /// An array allocated from a space.
    SpaceMemory(ffi::RawSpace, *mut c_void),
}

/// The list of what a scope releases, which the spaces it made also keep (their arrays go
/// into the list of the scope that made the space).
pub(crate) type OwnedList = RefCell<Vec<Owned>>;

/// A collective region: [`Shmem::scope`] runs a closure on every PE, and what was allocated or
/// split in it is released when the closure returns on every PE. Handles made here borrow the
/// scope, so none escapes it.
pub struct Scope<'rt> {
    pub(crate) rt: &'rt Shmem,
    owned: OwnedList,
    _invariant: PhantomData<&'rt mut &'rt ()>,
}

/// Agreement tags: an allocation can only agree with an allocation.
const TAG_ALLOC: i64 = 1;

/// How remote PEs will use an array ([`Scope::alloc_with_hints`]; `SHMEM_MALLOC_*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints {
    /// Remote PEs will apply atomics to it (`SHMEM_MALLOC_ATOMICS_REMOTE`).
    pub atomics_remote: bool,
    /// Remote PEs will signal through it (`SHMEM_MALLOC_SIGNAL_REMOTE`).
    pub signal_remote: bool,
}

impl Hints {
    /// The `SHMEM_MALLOC_*` bits (two, so a byte holds them on every platform's `long`).
    fn bits(self) -> u8 {
        u8::from(self.atomics_remote) * ffi::MALLOC_ATOMICS_REMOTE
            + u8::from(self.signal_remote) * ffi::MALLOC_SIGNAL_REMOTE
    }
}

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
        self.allocate("Scope::alloc", len, Hints::default(), None)
    }

    /// `shmem_malloc_with_hints`: as [`Scope::alloc`], telling the library how remote PEs will
    /// use the array (here, cache lines of its own, so that remote atomics or signals on it do
    /// not contend with this PE's work on its neighbours). Every PE passes the same `len` and
    /// `hints` (compared first: [`Error::Length`] or [`Error::Invalid`] on every PE otherwise).
    pub fn alloc_with_hints<'s, T: bytemuck::Pod>(&'s self, len: usize, hints: Hints) -> Result<Symm<'s, T>> {
        self.allocate("Scope::alloc_with_hints", len, hints, None)
    }

    /// The one allocation path: in the default heap (with `hints`), or in a space whose
    /// arrays go into `space`'s list (that of the scope that made it, or this one's for a
    /// predefined space).
    pub(crate) fn allocate<'s, T: bytemuck::Pod>(
        &'s self,
        routine: &'static str,
        len: usize,
        hints: Hints,
        space: Option<(ffi::RawSpace, Option<&'s OwnedList>)>,
    ) -> Result<Symm<'s, T>> {
        let (p, id) = self.block::<T>(routine, len, hints, space, false)?;
        Ok(match p {
            // SAFETY: a live, aligned, symmetric block of `len` elements of host memory,
            // released only when this scope ends (`block`).
            Some(p) => unsafe { Symm::from_raw(self.rt, p, len, id) },
            None => Symm::empty(self.rt, id),
        })
    }

    /// The collective block of an allocation, zeroed, after the agreement on its length (None
    /// for zero bytes), and the allocation's number. `device`: the space is device memory,
    /// which the library zeroes (this PE's CPU cannot touch it).
    pub(crate) fn block<'s, T: bytemuck::Pod>(
        &'s self,
        routine: &'static str,
        len: usize,
        hints: Hints,
        space: Option<(ffi::RawSpace, Option<&'s OwnedList>)>,
        device: bool,
    ) -> Result<(Option<std::ptr::NonNull<T>>, u64)> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .filter(|b| *b <= i64::MAX as usize)
            .ok_or_else(|| Error::Invalid { routine, what: format!("len {len} overflows") })?;
        let align = std::mem::align_of::<T>();
        let hint_bits = hints.bits();
        // The hints and whether a space is named travel with the tag, so a plain allocation
        // agrees with one without hints (`shmem_malloc_with_hints(size, 0)` is `shmem_malloc`),
        // and with no other.
        let tag = TAG_ALLOC
            | (i64::from(hint_bits) << 8)
            | (i64::from(space.is_some()) << 16)
            | (i64::from(device) << 17);
        if !self.rt.agree([tag, bytes as i64, align as i64]) {
            if !self.rt.agree([TAG_ALLOC, bytes as i64, align as i64]) {
                return Err(Error::Length {
                    routine,
                    what: "len (it differs between PEs)",
                    got: len,
                    want: len,
                });
            }
            return Err(Error::Invalid {
                routine,
                what: format!("hints {hints:?}, or whether a space is named, or which, differ between PEs"),
            });
        }
        // What the library aligns a block to when it takes no alignment: spaces to 16 bytes,
        // hinted blocks to their cache lines. A type that needs more is refused, alike on
        // every PE (they agreed on the alignment).
        let given = match (space, hint_bits) {
            (Some(_), _) => Some(16),
            (None, 0) => None,
            (None, _) => Some(128),
        };
        if let Some(given) = given.filter(|g| align > *g) {
            return Err(Error::Invalid {
                routine,
                what: format!(
                    "{} needs {align}-byte alignment; these blocks have {given}",
                    std::any::type_name::<T>()
                ),
            });
        }
        let id = self.rt.allocations.get();
        self.rt.allocations.set(id + 1);
        if bytes == 0 {
            return Ok((None, id));
        }
        let p = if let (Some((sp, _)), true) = (space, device) {
            // SAFETY: a live device space every PE reaches (`GpuSpace`); collective allocation
            // over the world, its team's members, with the same size on every PE (agreed);
            // the library zeroes it.
            unsafe { ffi::shmem_space_calloc(sp, len, std::mem::size_of::<T>()) }
        } else if let Some((sp, _)) = space {
            // SAFETY: a live space every PE reaches (`Space::checked`); collective allocation
            // over the world, its team's members, with the same size on every PE (agreed).
            unsafe { ffi::shmem_space_malloc(sp, bytes) }
        } else if hint_bits == 0 {
            // SAFETY: collective allocation with the same size on every PE (agreed above).
            unsafe { ffi::shmem_align(align.max(8), bytes) }
        } else {
            // SAFETY: collective allocation with the same size and hints on every PE (agreed).
            unsafe { ffi::shmem_malloc_with_hints(bytes, std::ffi::c_long::from(hint_bits)) }
        };
        if p.is_null() {
            return Err(Error::NoMemory { routine, bytes });
        }
        // The library aligns blocks as documented; were it not so, a typed access would be
        // undefined, so this ends the job (a panic does) rather than go on.
        assert!(
            (p as usize).is_multiple_of(align),
            "{routine}: the library returned a block aligned below {align} bytes"
        );
        // Zeroed, then a barrier so that no PE writes into another's array before it is zeroed.
        if !device {
            // SAFETY: a fresh block of `bytes` bytes of host memory, not yet reachable by any
            // other PE's handle.
            unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
        }
        self.rt.barrier_all();
        match space {
            Some((sp, list)) => list.unwrap_or(&self.owned).borrow_mut().push(Owned::SpaceMemory(sp, p)),
            None => self.own(Owned::Memory(p)),
        }
        // `p` is non-NULL (checked), a live, aligned (asserted), symmetric block of `len`
        // elements, released only when this scope ends.
        Ok((std::ptr::NonNull::new(p.cast()), id))
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
        Ok(Some(Team::from_split(self.rt, t)))
    }

    /// `shmem_team_split_2d` of `parent`: its PEs laid out in rows of `xrange` (the parent's
    /// PE `p` at column `p % xrange` of row `p / xrange`; an `xrange` above the parent's size
    /// is its size). Every PE of `parent` calls it with the same `xrange` (compared first:
    /// [`Error::Invalid`] on every PE otherwise), and gets its row (the x-axis team, in which
    /// its number is its column) and its column (the y-axis team, numbered by row). Both are
    /// destroyed when the scope ends.
    pub fn split_2d<'s>(&'s self, parent: &Team<'_>, xrange: usize) -> Result<(Team<'s>, Team<'s>)> {
        const ROUTINE: &str = "Scope::split_2d";
        let xr = i32::try_from(xrange).ok().filter(|x| *x > 0);
        let agreed = self
            .rt
            .team_agrees(parent.raw(), xr.map_or(-1, i64::from))
            .ok_or(Error::Declined { routine: ROUTINE, code: -1 })?;
        let xr = match xr {
            Some(x) if agreed => x,
            _ => {
                let why = if agreed { "must be positive" } else { "differs between the parent's PEs" };
                return Err(Error::Invalid { routine: ROUTINE, what: format!("xrange {xrange} {why}") });
            }
        };
        let (mut x, mut y): (ffi::RawTeam, ffi::RawTeam) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: a live parent team; valid out-pointers; collective over the parent, with the
        // same positive xrange on every member (agreed above).
        let rc = unsafe {
            ffi::shmem_team_split_2d(
                parent.raw(),
                xr,
                std::ptr::null(),
                0,
                &mut x,
                std::ptr::null(),
                0,
                &mut y,
            )
        };
        if rc != 0 || x.is_null() || y.is_null() {
            // The spec makes both handles invalid on every PE when any cannot be made.
            return Err(Error::Declined { routine: ROUTINE, code: rc });
        }
        let mut owned = self.owned.borrow_mut();
        owned.push(Owned::Team(x));
        owned.push(Owned::Team(y));
        Ok((Team::from_split(self.rt, x), Team::from_split(self.rt, y)))
    }

    /// Keeps `o` for release when the scope ends.
    pub(crate) fn own(&self, o: Owned) {
        self.owned.borrow_mut().push(o);
    }

    /// The list the scope releases (a space it makes keeps it for its arrays).
    pub(crate) fn owned_list(&self) -> &OwnedList {
        &self.owned
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
                // SAFETY: an array of a live space (destroyed only later: it was made
                // earlier), freed as the default heap's arrays are, collectively, in order.
                Owned::SpaceMemory(sp, p) => unsafe { ffi::shmem_space_free(sp, p) },
                // SAFETY: a space this scope made, every array of it already freed (they
                // were made later, so freed earlier), destroyed by every PE, in order.
                Owned::Space(sp) => unsafe {
                    ffi::shmem_space_destroy(sp);
                },
            }
        }
    }
}
