//! Contexts and the transfers on them: put, get, single elements, put-with-signal, and
//! non-blocking transfers whose buffers stay borrowed until the context's quiet.

use std::ffi::c_int;
use std::marker::PhantomData;
use std::mem::size_of;

use crate::error::{Error, Result};
use crate::ffi;
use crate::ops;
use crate::symm::{at, Remote};
use crate::Shmem;

/// A communication context (`shmem_ctx_t`): the default one is the runtime itself (`Shmem`
/// dereferences to it); [`Shmem::create_ctx`] and [`crate::Team::create_ctx`] make more. PE
/// numbers are those of the context's team. Not `Send`: a context is used by the thread that
/// has it.
pub struct Ctx {
    raw: ffi::RawCtx,
    n_pes: usize,
    _not_send: PhantomData<*mut ()>,
}

/// The default context's handle (`SHMEM_CTX_DEFAULT`).
pub(crate) fn default_raw() -> ffi::RawCtx {
    // Only the address of the exported object is taken.
    (&raw mut ffi::rshmem_ctx_default).cast()
}

/// How a signal word is updated by [`Ctx::put_signal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalOp {
    Set,
    Add,
}

/// Options of a new context (`SHMEM_CTX_*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CtxOptions {
    /// `SHMEM_CTX_SERIALIZED`.
    pub serialized: bool,
    /// `SHMEM_CTX_PRIVATE`: only the creating thread uses it. Contexts of this crate are not
    /// `Send` anyway, except a [`crate::ThreadCtx`], which refuses this option.
    pub private: bool,
    /// `SHMEM_CTX_NOSTORE`: no stores through `shmem_ptr` ordered by this context.
    pub nostore: bool,
}

impl CtxOptions {
    fn raw(self) -> std::ffi::c_long {
        (if self.serialized { ffi::CTX_SERIALIZED } else { 0 })
            | (if self.private { ffi::CTX_PRIVATE } else { 0 })
            | (if self.nostore { ffi::CTX_NOSTORE } else { 0 })
    }
}

impl Ctx {
    pub(crate) fn new(raw: ffi::RawCtx, n_pes: usize) -> Ctx {
        Ctx { raw, n_pes, _not_send: PhantomData }
    }

    /// The number of PEs this context addresses (its team's).
    pub fn n_pes(&self) -> usize {
        self.n_pes
    }

    /// `pe` as the C API's `int`, checked against the context's team.
    #[inline]
    pub(crate) fn checked_pe(&self, routine: &'static str, pe: usize) -> Result<c_int> {
        if pe >= self.n_pes {
            return Err(Error::BadPe { routine, pe, n_pes: self.n_pes });
        }
        Ok(pe as c_int)
    }

    pub(crate) fn raw(&self) -> ffi::RawCtx {
        self.raw
    }

    /// `shmem_ctx_putmem`: copies `src` into `dest[offset..]` on `pe`. Returns when `src` may
    /// be reused; the data has arrived after [`Ctx::quiet`] (or a barrier, on the default
    /// context).
    #[inline]
    pub fn put<T: bytemuck::Pod>(
        &self,
        dest: &impl Remote<T>,
        offset: usize,
        src: &[T],
        pe: usize,
    ) -> Result<()> {
        const ROUTINE: &str = "Ctx::put";
        let d = dest.checked_range(ROUTINE, offset, src.len())?;
        let pe = self.checked_pe(ROUTINE, pe)?;
        // SAFETY: `d` is a checked range of a live symmetric array; `src` is a live slice of
        // the same byte length; `pe` is in range.
        unsafe {
            ops::rma::<false, false>(
                c"Ctx::put",
                self.raw,
                d.cast(),
                src.as_ptr().cast(),
                size_of_val(src),
                pe,
            )
        }
    }

    /// `shmem_ctx_getmem`: copies `src[offset..offset + dest.len()]` of `pe` into `dest`.
    #[inline]
    pub fn get<T: bytemuck::Pod>(
        &self,
        dest: &mut [T],
        src: &impl Remote<T>,
        offset: usize,
        pe: usize,
    ) -> Result<()> {
        const ROUTINE: &str = "Ctx::get";
        let s = src.checked_range(ROUTINE, offset, dest.len())?;
        let pe = self.checked_pe(ROUTINE, pe)?;
        // SAFETY: as in `put`; `dest` is exclusively borrowed local memory, and any bytes are
        // a valid T.
        unsafe {
            ops::rma::<true, false>(
                c"Ctx::get",
                self.raw,
                dest.as_mut_ptr().cast(),
                s.cast(),
                size_of_val(dest),
                pe,
            )
        }
    }

    /// `shmem_ctx_<type>_p`: writes one element, `dest[i]` on `pe`.
    #[inline]
    pub fn p<T: bytemuck::Pod>(&self, dest: &impl Remote<T>, i: usize, value: T, pe: usize) -> Result<()> {
        const ROUTINE: &str = "Ctx::p";
        let d = at(dest, ROUTINE, i)?;
        let pe = self.checked_pe(ROUTINE, pe)?;
        // SAFETY: a checked element of a live symmetric array, a PE in range.
        unsafe { ops::p(c"Ctx::p", self.raw, d, value, pe) }
    }

    /// `shmem_ctx_<type>_g`: reads one element, `src[i]` on `pe`.
    #[inline]
    pub fn g<T: bytemuck::Pod>(&self, src: &impl Remote<T>, i: usize, pe: usize) -> Result<T> {
        const ROUTINE: &str = "Ctx::g";
        let s = at(src, ROUTINE, i)?;
        let pe = self.checked_pe(ROUTINE, pe)?;
        // SAFETY: as in `p`; any bytes read are a valid T (Pod).
        unsafe { ops::g(c"Ctx::g", self.raw, s, pe) }
    }

    /// `shmem_ctx_putmem_signal`: puts `src` into `dest[offset..]` on `pe`, then updates
    /// `signal[sig_index]` there with `value` once the data is in place.
    #[allow(clippy::too_many_arguments)]
    pub fn put_signal<T: bytemuck::Pod>(
        &self,
        dest: &impl Remote<T>,
        offset: usize,
        src: &[T],
        signal: &impl Remote<u64>,
        sig_index: usize,
        value: u64,
        op: SignalOp,
        pe: usize,
    ) -> Result<()> {
        const ROUTINE: &str = "Ctx::put_signal";
        let d = dest.checked_range(ROUTINE, offset, src.len())?;
        let sig = at(signal, ROUTINE, sig_index)?;
        let pe = self.checked_pe(ROUTINE, pe)?;
        let op = match op {
            SignalOp::Set => ffi::SIGNAL_SET,
            SignalOp::Add => ffi::SIGNAL_ADD,
        };
        // SAFETY: checked ranges of live symmetric arrays, a live source slice, `pe` in range.
        unsafe {
            ops::put_signal(
                c"Ctx::put_signal",
                self.raw,
                d.cast(),
                src.as_ptr().cast(),
                size_of_val(src),
                sig,
                (value, op),
                pe,
            )
        }
    }

    /// `shmem_ctx_iput`: `nelems` elements of `src`, every `src_stride`-th from the first, into
    /// every `dest_stride`-th element of `dest` from `offset` on `pe` (strides at least 1).
    /// Returns when `src` may be reused, as [`Ctx::put`].
    #[allow(clippy::too_many_arguments)]
    pub fn iput<T: bytemuck::Pod>(
        &self,
        dest: &impl Remote<T>,
        offset: usize,
        dest_stride: usize,
        src: &[T],
        src_stride: usize,
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        self.put_blocks(c"Ctx::iput", dest, offset, (dest_stride, src_stride), src, (1, nelems), pe)
    }

    /// `shmem_ctx_iget`: `nelems` elements of `src` on `pe`, every `src_stride`-th from
    /// `offset`, into every `dest_stride`-th element of `dest` (strides at least 1).
    #[allow(clippy::too_many_arguments)]
    pub fn iget<T: bytemuck::Pod>(
        &self,
        dest: &mut [T],
        dest_stride: usize,
        src: &impl Remote<T>,
        offset: usize,
        src_stride: usize,
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        self.get_blocks(c"Ctx::iget", dest, src, offset, (dest_stride, src_stride), (1, nelems), pe)
    }

    /// `shmem_ctx_ibput`: `nblocks` blocks of `bsize` elements, block `k` of `src` starting
    /// at `k * src_stride`, into `dest` from `offset + k * dest_stride` on `pe` (strides at
    /// least `bsize`, which is at least 1). Returns when `src` may be reused.
    #[allow(clippy::too_many_arguments)]
    pub fn ibput<T: bytemuck::Pod>(
        &self,
        dest: &impl Remote<T>,
        offset: usize,
        dest_stride: usize,
        src: &[T],
        src_stride: usize,
        bsize: usize,
        nblocks: usize,
        pe: usize,
    ) -> Result<()> {
        self.put_blocks(c"Ctx::ibput", dest, offset, (dest_stride, src_stride), src, (bsize, nblocks), pe)
    }

    /// `shmem_ctx_ibget`: `nblocks` blocks of `bsize` elements of `src` on `pe`, block `k`
    /// from `offset + k * src_stride`, into `dest` from `k * dest_stride` (strides at least
    /// `bsize`, which is at least 1).
    #[allow(clippy::too_many_arguments)]
    pub fn ibget<T: bytemuck::Pod>(
        &self,
        dest: &mut [T],
        dest_stride: usize,
        src: &impl Remote<T>,
        offset: usize,
        src_stride: usize,
        bsize: usize,
        nblocks: usize,
        pe: usize,
    ) -> Result<()> {
        self.get_blocks(c"Ctx::ibget", dest, src, offset, (dest_stride, src_stride), (bsize, nblocks), pe)
    }

    /// The strided puts: `(bsize, nblocks)` blocks at `(dest_stride, src_stride)`, checked,
    /// then the core's block-strided put (a block of one element is an `iput`).
    #[allow(clippy::too_many_arguments)]
    fn put_blocks<T: bytemuck::Pod>(
        &self,
        c_routine: &'static std::ffi::CStr,
        dest: &impl Remote<T>,
        offset: usize,
        (dest_stride, src_stride): (usize, usize),
        src: &[T],
        (bsize, nblocks): (usize, usize),
        pe: usize,
    ) -> Result<()> {
        let routine = c_routine.to_str().unwrap_or("Ctx");
        let (dst, sst) = block_strides(routine, dest_stride, src_stride, bsize)?;
        let d = dest.checked_range(routine, offset, block_span(routine, nblocks, dest_stride, bsize)?)?;
        let need = block_span(routine, nblocks, src_stride, bsize)?;
        if src.len() < need {
            return Err(Error::Length { routine, what: "src.len()", got: src.len(), want: need });
        }
        let pe = self.checked_pe(routine, pe)?;
        // SAFETY: both spans checked above against live memory (a symmetric array and a
        // slice); strides at least bsize and within isize; `pe` in range.
        unsafe {
            ops::blocks::<false>(
                c_routine,
                self.raw,
                d.cast(),
                src.as_ptr().cast(),
                (dst, sst),
                (bsize, nblocks),
                size_of::<T>(),
                pe,
            )
        }
    }

    /// The strided gets, as [`Ctx::put_blocks`].
    #[allow(clippy::too_many_arguments)]
    fn get_blocks<T: bytemuck::Pod>(
        &self,
        c_routine: &'static std::ffi::CStr,
        dest: &mut [T],
        src: &impl Remote<T>,
        offset: usize,
        (dest_stride, src_stride): (usize, usize),
        (bsize, nblocks): (usize, usize),
        pe: usize,
    ) -> Result<()> {
        let routine = c_routine.to_str().unwrap_or("Ctx");
        let (dst, sst) = block_strides(routine, dest_stride, src_stride, bsize)?;
        let s = src.checked_range(routine, offset, block_span(routine, nblocks, src_stride, bsize)?)?;
        let need = block_span(routine, nblocks, dest_stride, bsize)?;
        if dest.len() < need {
            return Err(Error::Length { routine, what: "dest.len()", got: dest.len(), want: need });
        }
        let pe = self.checked_pe(routine, pe)?;
        // SAFETY: as `put_blocks`; `dest` is exclusively borrowed local memory, any bytes a T.
        unsafe {
            ops::blocks::<true>(
                c_routine,
                self.raw,
                dest.as_mut_ptr().cast(),
                s.cast(),
                (dst, sst),
                (bsize, nblocks),
                size_of::<T>(),
                pe,
            )
        }
    }

    /// `shmem_ctx_quiet`: every operation issued on this context is complete.
    pub fn quiet(&self) {
        // SAFETY: a live context.
        unsafe { ffi::shmem_ctx_quiet(self.raw) }
    }

    /// `shmem_ctx_fence`: operations to each PE before it are delivered before those after.
    pub fn fence(&self) {
        // SAFETY: a live context.
        unsafe { ffi::shmem_ctx_fence(self.raw) }
    }

    /// Non-blocking transfers: `f` issues them through the [`Nbi`] it is given, and the
    /// context is quieted when `f` returns (or unwinds), so the buffers they name stay
    /// borrowed, and untouched, until the data has moved.
    pub fn nbi<'env, R>(&'env self, f: impl for<'n> FnOnce(&'n Nbi<'n, 'env>) -> R) -> R {
        struct QuietOnDrop<'a>(&'a Ctx);
        impl Drop for QuietOnDrop<'_> {
            fn drop(&mut self) {
                self.0.quiet();
            }
        }
        let _guard = QuietOnDrop(self);
        let nbi = Nbi { ctx: self, _scope: PhantomData, _env: PhantomData };
        f(&nbi)
    }
}

/// The non-blocking transfers of one [`Ctx::nbi`] region. Every buffer named here is borrowed
/// for the whole region (`'n`), which ends with the context's quiet.
pub struct Nbi<'n, 'env: 'n> {
    ctx: &'env Ctx,
    _scope: PhantomData<&'n mut &'n ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'n, 'env> Nbi<'n, 'env> {
    /// `shmem_ctx_putmem_nbi`: `src` stays borrowed until the region's quiet.
    pub fn put<T: bytemuck::Pod>(
        &self,
        dest: &'n impl Remote<T>,
        offset: usize,
        src: &'n [T],
        pe: usize,
    ) -> Result<()> {
        const ROUTINE: &str = "Nbi::put";
        let d = dest.checked_range(ROUTINE, offset, src.len())?;
        let pe = self.ctx.checked_pe(ROUTINE, pe)?;
        // SAFETY: as `Ctx::put`; `src` is borrowed until the region's end, which quiets the
        // context before the borrow ends.
        unsafe {
            ops::rma::<false, true>(
                c"Nbi::put",
                self.ctx.raw,
                d.cast(),
                src.as_ptr().cast(),
                size_of_val(src),
                pe,
            )
        }
    }

    /// `shmem_ctx_getmem_nbi`: `dest` is filled by the region's end, and borrowed until then.
    pub fn get<T: bytemuck::Pod>(
        &self,
        dest: &'n mut [T],
        src: &'n impl Remote<T>,
        offset: usize,
        pe: usize,
    ) -> Result<()> {
        const ROUTINE: &str = "Nbi::get";
        let s = src.checked_range(ROUTINE, offset, dest.len())?;
        let pe = self.ctx.checked_pe(ROUTINE, pe)?;
        // SAFETY: as `Ctx::get`; `dest` is exclusively borrowed until the region's quiet.
        unsafe {
            ops::rma::<true, true>(
                c"Nbi::get",
                self.ctx.raw,
                dest.as_mut_ptr().cast(),
                s.cast(),
                size_of_val(dest),
                pe,
            )
        }
    }
}

/// A context this runtime created: destroyed (after a quiet) when dropped. Dereferences to
/// [`Ctx`].
pub struct OwnedCtx<'rt> {
    ctx: Ctx,
    rt: &'rt Shmem,
}

impl<'rt> OwnedCtx<'rt> {
    pub(crate) fn create(
        rt: &'rt Shmem,
        routine: &'static str,
        team: Option<ffi::RawTeam>,
        n_pes: usize,
        options: CtxOptions,
    ) -> Result<OwnedCtx<'rt>> {
        let mut raw: ffi::RawCtx = std::ptr::null_mut();
        // SAFETY: a live team (when given) and a valid out-pointer.
        let rc = unsafe {
            match team {
                Some(t) => ffi::shmem_team_create_ctx(t, options.raw(), &mut raw),
                None => ffi::shmem_ctx_create(options.raw(), &mut raw),
            }
        };
        if rc != 0 || raw.is_null() {
            return Err(Error::Declined { routine, code: rc });
        }
        rt.contexts().push(raw);
        Ok(OwnedCtx { ctx: Ctx::new(raw, n_pes), rt })
    }
}

impl Drop for OwnedCtx<'_> {
    fn drop(&mut self) {
        self.rt.contexts().retain(|&c| c != self.ctx.raw);
        // SAFETY: a context this handle created, destroyed once (shmem_ctx_destroy quiets it).
        unsafe { ffi::shmem_ctx_destroy(self.ctx.raw) };
    }
}

impl std::ops::Deref for OwnedCtx<'_> {
    type Target = Ctx;

    fn deref(&self) -> &Ctx {
        &self.ctx
    }
}

impl Shmem {
    /// `shmem_ctx_create`: a new context over the world team.
    pub fn create_ctx(&self, options: CtxOptions) -> Result<OwnedCtx<'_>> {
        OwnedCtx::create(self, "Shmem::create_ctx", None, self.n_pes(), options)
    }
}

/// A stride as the C API's `ptrdiff_t`: at least 1 (the spec's rule) and within `isize`.
pub(crate) fn stride(routine: &'static str, what: &str, stride: usize) -> Result<isize> {
    isize::try_from(stride).ok().filter(|s| *s >= 1).ok_or_else(|| Error::Invalid {
        routine,
        what: format!("{what} {stride} must be at least 1 (and fit an isize)"),
    })
}

/// The strides of a block-strided transfer, checked: `bsize` at least 1, each stride at least
/// `bsize` (the spec's rule: blocks do not overlap) and within `isize`.
fn block_strides(
    routine: &'static str,
    dest_stride: usize,
    src_stride: usize,
    bsize: usize,
) -> Result<(isize, isize)> {
    if bsize == 0 || dest_stride < bsize || src_stride < bsize {
        return Err(Error::Invalid {
            routine,
            what: format!(
                "bsize {bsize} must be at least 1 and at most each stride ({dest_stride}, {src_stride})"
            ),
        });
    }
    Ok((stride(routine, "dest_stride", dest_stride)?, stride(routine, "src_stride", src_stride)?))
}

/// The elements `nblocks` blocks of `bsize` at `stride` cover: 0 for none.
pub(crate) fn block_span(
    routine: &'static str,
    nblocks: usize,
    stride: usize,
    bsize: usize,
) -> Result<usize> {
    if nblocks == 0 {
        return Ok(0);
    }
    (nblocks - 1).checked_mul(stride).and_then(|x| x.checked_add(bsize)).ok_or_else(|| Error::Invalid {
        routine,
        what: format!("{nblocks} blocks of {bsize} at stride {stride} overflow"),
    })
}
