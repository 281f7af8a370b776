//! Teams and their collectives: sync, broadcast, collect, all-to-all and reductions, over
//! whole symmetric arrays whose lengths are checked before any PE communicates.

use std::marker::PhantomData;
use std::mem::size_of;

use crate::ctx::{CtxOptions, OwnedCtx};
use crate::error::{Error, Result};
use crate::ffi::{self, ReduceFns};
use crate::symm::Remote;
use crate::Shmem;

/// A team of PEs (`shmem_team_t`): the world team ([`Shmem::world`]), or one split in a
/// [`crate::Scope`] and destroyed when it ends. PE numbers given to its methods are its own.
pub struct Team<'a> {
    coll: Collectives<'a>,
    rt: &'a Shmem,
    /// Split in a scope, so this value is its only handle (not the world or shared team, of
    /// which any number exist): a `&mut` to it is exclusive use of the team, which
    /// [`crate::Threads::collectives`] lends to another thread.
    split: bool,
}

/// A team's collectives that need nothing but the team (sync, broadcast, fcollect,
/// all-to-all, reductions, scans), over whole symmetric arrays or their views: what a
/// [`Team`] dereferences to, and what [`crate::TeamCollectives`] lends to another thread.
/// Neither `Send` nor `Sync`: one thread runs a team's collectives.
pub struct Collectives<'a> {
    raw: ffi::RawTeam,
    _team: PhantomData<&'a ()>,
    _not_send: PhantomData<*mut ()>,
}

impl<'a> std::ops::Deref for Team<'a> {
    type Target = Collectives<'a>;

    fn deref(&self) -> &Collectives<'a> {
        &self.coll
    }
}

/// The world team's handle (`SHMEM_TEAM_WORLD`).
pub(crate) fn world_raw() -> ffi::RawTeam {
    // Only the address of the exported object is taken.
    (&raw mut ffi::rshmem_team_world).cast()
}

/// The team of the PEs on this PE's host (`SHMEM_TEAM_SHARED`).
fn shared_raw() -> ffi::RawTeam {
    // Only the address of the exported object is taken.
    (&raw mut ffi::rshmem_team_shared).cast()
}

impl Shmem {
    /// The team of every PE (`SHMEM_TEAM_WORLD`).
    pub fn world(&self) -> Team<'_> {
        Team::from_raw(self, world_raw())
    }

    /// The team of the PEs that share memory with this one (`SHMEM_TEAM_SHARED`).
    pub fn shared(&self) -> Team<'_> {
        Team::from_raw(self, shared_raw())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// The element types with OpenSHMEM reductions: `i8`..`i64`, `u8`..`u64`, `f32`, `f64`.
pub trait Reduce: bytemuck::Pod + sealed::Sealed {
    #[doc(hidden)]
    const C: ReduceFns<Self>;
}

macro_rules! reduce {
    ($($t:ty => $fns:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Reduce for $t {
            const C: ReduceFns<$t> = ffi::$fns;
        }
    )*};
}
reduce!(i8 => RED_I8, i16 => RED_I16, i32 => RED_I32, i64 => RED_I64, u8 => RED_U8, u16 => RED_U16,
        u32 => RED_U32, u64 => RED_U64, f32 => RED_F32, f64 => RED_F64);

/// A reduction operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Sum,
    Prod,
    Min,
    Max,
    /// Bitwise, integers only.
    And,
    /// Bitwise, integers only.
    Or,
    /// Bitwise, integers only.
    Xor,
}

impl<'a> Team<'a> {
    pub(crate) fn from_raw(rt: &'a Shmem, raw: ffi::RawTeam) -> Team<'a> {
        Team { coll: Collectives::of(raw), rt, split: false }
    }

    /// A team a scope split (its only handle).
    pub(crate) fn from_split(rt: &'a Shmem, raw: ffi::RawTeam) -> Team<'a> {
        Team { coll: Collectives::of(raw), rt, split: true }
    }

    pub(crate) fn is_split(&self) -> bool {
        self.split
    }

    /// The team's collectives, for [`crate::TeamCollectives`], which holds the `&mut` borrow.
    pub(crate) fn lend(&self) -> Collectives<'a> {
        Collectives::of(self.coll.raw)
    }

    /// `shmem_team_translate_pe`: the number in `other` of this team's PE `pe`, if it is in
    /// `other`.
    pub fn translate_pe(&self, pe: usize, other: &Team<'_>) -> Option<usize> {
        if pe >= self.n_pes() {
            return None;
        }
        // SAFETY: live teams, a PE in range.
        let r = unsafe { ffi::shmem_team_translate_pe(self.raw, pe as i32, other.raw) };
        (r >= 0).then_some(r as usize)
    }

    /// `shmem_team_create_ctx`: a context whose PE numbers are this team's.
    pub fn create_ctx(&self, options: CtxOptions) -> Result<OwnedCtx<'a>> {
        OwnedCtx::create(self.rt, "Team::create_ctx", Some(self.raw), self.n_pes(), options)
    }

    /// `shmem_collectmem`: the first `nelems` elements of every PE's `src` (each PE its own
    /// `nelems`, zero included), one after the other in team order, into every PE's `dest`;
    /// returns how many elements `dest` received, the same on every PE. The members first sum
    /// their counts (a reduction over the team), so a `dest` too short for all of them is
    /// [`Error::Length`] on every PE before any data moves.
    pub fn collect<T: bytemuck::Pod>(
        &self,
        dest: &impl Remote<T>,
        src: &impl Remote<T>,
        nelems: usize,
    ) -> Result<usize> {
        const ROUTINE: &str = "Team::collect";
        // A count past the end of this PE's src is counted as a refusal, which every PE learns.
        let mine = if nelems > src.elements() { -1 } else { nelems as i64 };
        let [total, refused] = self
            .rt
            .over_team(self.raw, ffi::RED_I64.sum, [mine.max(0), i64::from(mine < 0)])
            .ok_or(Error::Declined { routine: ROUTINE, code: -1 })?;
        if nelems > src.elements() {
            return Err(Error::OutOfBounds {
                routine: ROUTINE,
                offset: 0,
                len: nelems,
                array_len: src.elements(),
            });
        }
        if refused > 0 {
            return Err(Error::Invalid {
                routine: ROUTINE,
                what: format!("{refused} of the team's PEs passed an nelems past the end of src"),
            });
        }
        let total = total as usize;
        if total > dest.elements() {
            return Err(Error::Length {
                routine: ROUTINE,
                what: "dest.len() (the team's nelems summed)",
                got: dest.elements(),
                want: total,
            });
        }
        Collectives::disjoint(ROUTINE, dest, src)?;
        let (d, s) = (dest.checked_range(ROUTINE, 0, 0)?, src.checked_range(ROUTINE, 0, 0)?);
        // SAFETY: live symmetric arrays, disjoint; every member's count within its src and
        // their sum within every member's dest (checked above, by every member alike).
        let rc = unsafe { ffi::shmem_collectmem(self.raw, d.cast(), s.cast(), size_of::<T>() * nelems) };
        Collectives::check(ROUTINE, rc)?;
        Ok(total)
    }
}

impl<'a> Collectives<'a> {
    fn of(raw: ffi::RawTeam) -> Collectives<'a> {
        Collectives { raw, _team: PhantomData, _not_send: PhantomData }
    }

    pub(crate) fn raw(&self) -> ffi::RawTeam {
        self.raw
    }

    /// This PE's number in the team.
    pub fn my_pe(&self) -> usize {
        // SAFETY: a live team.
        unsafe { ffi::shmem_team_my_pe(self.raw) as usize }
    }

    /// The number of PEs in the team.
    pub fn n_pes(&self) -> usize {
        // SAFETY: a live team.
        unsafe { ffi::shmem_team_n_pes(self.raw) as usize }
    }

    /// `shmem_team_sync`: every PE of the team arrives; nothing is completed.
    pub fn sync(&self) {
        // SAFETY: a live team.
        unsafe { ffi::shmem_team_sync(self.raw) };
    }

    fn check(routine: &'static str, code: i32) -> Result<()> {
        if code == 0 {
            Ok(())
        } else {
            Err(Error::Declined { routine, code })
        }
    }

    fn same_len(routine: &'static str, what: &'static str, got: usize, want: usize) -> Result<()> {
        if got == want {
            Ok(())
        } else {
            Err(Error::Length { routine, what, got, want })
        }
    }

    fn disjoint<T: bytemuck::Pod>(
        routine: &'static str,
        dest: &impl Remote<T>,
        src: &impl Remote<T>,
    ) -> Result<()> {
        let d = dest.checked_range(routine, 0, 0)? as usize;
        let s = src.checked_range(routine, 0, 0)? as usize;
        let (dl, sl) = (dest.elements() * size_of::<T>(), src.elements() * size_of::<T>());
        if d < s + sl && s < d + dl && dl > 0 && sl > 0 {
            return Err(Error::Invalid { routine, what: "dest and source overlap".into() });
        }
        Ok(())
    }

    /// `shmem_broadcastmem`: `src` of team PE `root` into `dest` of every PE of the team
    /// (the root's `dest` too). The arrays have the same length.
    pub fn broadcast<T: bytemuck::Pod>(
        &self,
        dest: &impl Remote<T>,
        src: &impl Remote<T>,
        root: usize,
    ) -> Result<()> {
        const ROUTINE: &str = "Team::broadcast";
        Self::same_len(ROUTINE, "dest.len()", dest.elements(), src.elements())?;
        Self::disjoint(ROUTINE, dest, src)?;
        if root >= self.n_pes() {
            return Err(Error::BadPe { routine: ROUTINE, pe: root, n_pes: self.n_pes() });
        }
        let (d, s) = (dest.checked_range(ROUTINE, 0, 0)?, src.checked_range(ROUTINE, 0, 0)?);
        // SAFETY: whole live symmetric arrays of equal byte length, disjoint; a root in range.
        let rc = unsafe {
            ffi::shmem_broadcastmem(
                self.raw,
                d.cast(),
                s.cast(),
                size_of::<T>() * src.elements(),
                root as i32,
            )
        };
        Self::check(ROUTINE, rc)
    }

    /// `shmem_fcollectmem`: every PE's `src`, in team order, into every PE's `dest`
    /// (`dest.elements() == src.elements() * n_pes`).
    pub fn fcollect<T: bytemuck::Pod>(&self, dest: &impl Remote<T>, src: &impl Remote<T>) -> Result<()> {
        const ROUTINE: &str = "Team::fcollect";
        Self::same_len(ROUTINE, "dest.len()", dest.elements(), src.elements() * self.n_pes())?;
        Self::disjoint(ROUTINE, dest, src)?;
        let (d, s) = (dest.checked_range(ROUTINE, 0, 0)?, src.checked_range(ROUTINE, 0, 0)?);
        // SAFETY: live symmetric arrays, dest holding n_pes sources, disjoint.
        let rc =
            unsafe { ffi::shmem_fcollectmem(self.raw, d.cast(), s.cast(), size_of::<T>() * src.elements()) };
        Self::check(ROUTINE, rc)
    }

    /// `shmem_alltoallmem`: block `j` of this PE's `src` to block `me` of PE `j`'s `dest`;
    /// both arrays are `n_pes` blocks of the same length.
    pub fn alltoall<T: bytemuck::Pod>(&self, dest: &impl Remote<T>, src: &impl Remote<T>) -> Result<()> {
        const ROUTINE: &str = "Team::alltoall";
        let n = self.n_pes();
        Self::same_len(ROUTINE, "dest.len()", dest.elements(), src.elements())?;
        if !src.elements().is_multiple_of(n) {
            return Err(Error::Invalid {
                routine: ROUTINE,
                what: format!("src.len() {} is not a multiple of the team's {n} PEs", src.elements()),
            });
        }
        Self::disjoint(ROUTINE, dest, src)?;
        let (d, s) = (dest.checked_range(ROUTINE, 0, 0)?, src.checked_range(ROUTINE, 0, 0)?);
        // SAFETY: live symmetric arrays of n equal blocks each, disjoint.
        let rc = unsafe {
            ffi::shmem_alltoallmem(self.raw, d.cast(), s.cast(), size_of::<T>() * (src.elements() / n))
        };
        Self::check(ROUTINE, rc)
    }

    /// `shmem_<type>_<op>_reduce`: `dest[k]` on every PE of the team becomes `op` over every
    /// PE's `src[k]`. `dest` and `src` have the same length; they may be the same array.
    pub fn reduce<T: Reduce>(&self, op: Op, dest: &impl Remote<T>, src: &impl Remote<T>) -> Result<()> {
        const ROUTINE: &str = "Team::reduce";
        Self::same_len(ROUTINE, "dest.len()", dest.elements(), src.elements())?;
        let f = match op {
            Op::Sum => Some(T::C.sum),
            Op::Prod => Some(T::C.prod),
            Op::Min => Some(T::C.min),
            Op::Max => Some(T::C.max),
            Op::And => T::C.and,
            Op::Or => T::C.or,
            Op::Xor => T::C.xor,
        }
        .ok_or_else(|| Error::Invalid {
            routine: ROUTINE,
            what: format!("{op:?} is for integer types, not {}", std::any::type_name::<T>()),
        })?;
        let (d, s) = (dest.checked_range(ROUTINE, 0, 0)?, src.checked_range(ROUTINE, 0, 0)?);
        if d != s {
            Self::disjoint(ROUTINE, dest, src)?;
        }
        // SAFETY: live symmetric arrays of equal length, the same or disjoint.
        let rc = unsafe { f(self.raw, d, s, src.elements()) };
        Self::check(ROUTINE, rc)
    }

    /// `shmem_<type>_sum_inscan` (`Scan::Inclusive`) or `_exscan` (`Scan::Exclusive`):
    /// `dest[k]` on the team's PE `i` becomes the sum of `src[k]` over the team's PEs `0..=i`
    /// (inclusive) or `0..i` (exclusive; PE 0's `dest` is zero). The arrays have the same
    /// length and are disjoint.
    pub fn scan<T: Reduce>(&self, kind: Scan, dest: &impl Remote<T>, src: &impl Remote<T>) -> Result<()> {
        const ROUTINE: &str = "Team::scan";
        Self::same_len(ROUTINE, "dest.len()", dest.elements(), src.elements())?;
        Self::disjoint(ROUTINE, dest, src)?;
        let f = match kind {
            Scan::Inclusive => T::C.inscan,
            Scan::Exclusive => T::C.exscan,
        };
        let (d, s) = (dest.checked_range(ROUTINE, 0, 0)?, src.checked_range(ROUTINE, 0, 0)?);
        // SAFETY: live symmetric arrays of equal length, disjoint.
        let rc = unsafe { f(self.raw, d, s, src.elements()) };
        Self::check(ROUTINE, rc)
    }

    /// `shmem_alltoalls`: for each PE `j` of the team, this PE's `nelems` elements
    /// `src[(j * nelems + m) * src_stride]` go to `dest[(me * nelems + m) * dest_stride]` on
    /// PE `j` (strides at least 1). Elements of 1, 2, 4 or 8 bytes.
    pub fn alltoalls<T: bytemuck::Pod>(
        &self,
        dest: &impl Remote<T>,
        dest_stride: usize,
        src: &impl Remote<T>,
        src_stride: usize,
        nelems: usize,
    ) -> Result<()> {
        const ROUTINE: &str = "Team::alltoalls";
        let dst = crate::ctx::stride(ROUTINE, "dest_stride", dest_stride)?;
        let sst = crate::ctx::stride(ROUTINE, "src_stride", src_stride)?;
        let all = nelems.checked_mul(self.n_pes()).ok_or_else(|| Error::Invalid {
            routine: ROUTINE,
            what: format!("nelems {nelems} times {} PEs overflows", self.n_pes()),
        })?;
        let (d, s) = (
            dest.checked_range(ROUTINE, 0, crate::ctx::block_span(ROUTINE, all, dest_stride, 1)?)?,
            src.checked_range(ROUTINE, 0, crate::ctx::block_span(ROUTINE, all, src_stride, 1)?)?,
        );
        Self::disjoint(ROUTINE, dest, src)?;
        // SAFETY: live symmetric arrays covering every element the exchange touches (checked
        // above), disjoint; strides positive.
        let rc = unsafe {
            match size_of::<T>() {
                1 => ffi::shmem_alltoallsmem(self.raw, d.cast(), s.cast(), dst, sst, nelems),
                2 => ffi::shmem_int16_alltoalls(self.raw, d.cast(), s.cast(), dst, sst, nelems),
                4 => ffi::shmem_int32_alltoalls(self.raw, d.cast(), s.cast(), dst, sst, nelems),
                8 => ffi::shmem_int64_alltoalls(self.raw, d.cast(), s.cast(), dst, sst, nelems),
                n => {
                    return Err(Error::Invalid {
                        routine: ROUTINE,
                        what: format!("elements of {n} bytes (the API has 1, 2, 4 and 8)"),
                    })
                }
            }
        };
        Self::check(ROUTINE, rc)
    }
}

/// Which scan [`Team::scan`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// Each PE's own element included.
    Inclusive,
    /// Only the PEs before it (the first PE gets zero).
    Exclusive,
}
