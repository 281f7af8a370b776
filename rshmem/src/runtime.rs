//! The runtime token: [`Shmem`] is the initialised library. Everything else borrows it, so
//! nothing outlives `shmem_finalize`, and it is made and ended once per process at a time.

use std::ffi::c_int;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::ffi;

/// Thread support levels (`SHMEM_THREAD_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ThreadLevel {
    Single,
    Funneled,
    Serialized,
    Multiple,
}

impl ThreadLevel {
    fn raw(self) -> c_int {
        match self {
            ThreadLevel::Single => ffi::THREAD_SINGLE,
            ThreadLevel::Funneled => ffi::THREAD_FUNNELED,
            ThreadLevel::Serialized => ffi::THREAD_SERIALIZED,
            ThreadLevel::Multiple => ffi::THREAD_MULTIPLE,
        }
    }

    fn from_raw(v: c_int) -> ThreadLevel {
        match v {
            ffi::THREAD_MULTIPLE => ThreadLevel::Multiple,
            ffi::THREAD_SERIALIZED => ThreadLevel::Serialized,
            ffi::THREAD_FUNNELED => ThreadLevel::Funneled,
            _ => ThreadLevel::Single,
        }
    }
}

/// Whether a [`Shmem`] is live in this process: the library has one runtime per process.
static LIVE: AtomicBool = AtomicBool::new(false);

/// Words of the agreement scratch: a max-reduction over `AGREE_WORDS` values.
pub(crate) const AGREE_WORDS: usize = 8;

/// Words of the team scratch ([`Shmem::over_team`]): this many sources, then as many results.
pub(crate) const TEAM_WORDS: usize = 2;

/// The initialised library. Made by [`Shmem::init`]; dropping it (or [`Shmem::finalize`]) is
/// `shmem_finalize`, which every PE reaches. Every handle of this crate borrows it, so none can
/// be used after it. It dereferences to the default context ([`Ctx`]).
///
/// It is neither `Send` nor `Sync`: the calls this crate makes assume the thread that
/// initialised the library (thread level single or funneled).
pub struct Shmem {
    pub(crate) default: Ctx,
    me: usize,
    n_pes: usize,
    level: ThreadLevel,
    /// A private duplicate of the world team: only this crate's agreement steps (allocation
    /// sizes, exclusive epochs) run collectives on it, so no user collective can be matched
    /// with one of them.
    pub(crate) agree_team: ffi::RawTeam,
    /// Symmetric scratch for those agreements: `AGREE_WORDS` sources, then as many results.
    agree_buf: *mut i64,
    /// Symmetric scratch for the checks this crate makes over a user's team (a split's
    /// arguments, a collect's total): `TEAM_WORDS` sources, then as many results.
    team_buf: *mut i64,
    /// Contexts this runtime created and has not destroyed: quieted before an exclusive epoch
    /// and before a scope frees its memory.
    pub(crate) contexts: Mutex<Vec<ffi::RawCtx>>,
    /// Collective allocations made so far (`Scope::alloc`), the next one's number.
    pub(crate) allocations: std::cell::Cell<u64>,
    _not_send: PhantomData<*mut ()>,
}

impl Shmem {
    /// `shmem_init`: starts this PE (under `oshrun`, `mpirun` or `srun`, or alone as a single
    /// PE). Only one runtime lives in a process at a time.
    pub fn init() -> Result<Shmem> {
        Shmem::init_thread(ThreadLevel::Single)
    }

    /// `shmem_init_thread`. The runtime and its handles stay on the initialising thread; at
    /// [`ThreadLevel::Multiple`], [`Shmem::threads`] gives what other threads may share.
    pub fn init_thread(level: ThreadLevel) -> Result<Shmem> {
        Shmem::start(level, 0)
    }

    /// `shmem_init_thread` asking for the GPU heap too (the GPU auxiliary specification's
    /// `SHMEM_DEVICE_HOST_INIT`): the library then makes its GPU space, which
    /// [`Shmem::gpu_space`] gives, where this PE's GPU and memheap allow (`None` there
    /// otherwise; the library's log says why). Without a GPU this is [`Shmem::init_thread`].
    pub fn init_with_gpu_heap(level: ThreadLevel) -> Result<Shmem> {
        Shmem::start(level, ffi::DEVICE_HOST_INIT)
    }

    fn start(level: ThreadLevel, device_bits: c_int) -> Result<Shmem> {
        if LIVE.swap(true, Ordering::AcqRel) {
            return Err(Error::AlreadyInitialized);
        }
        let mut provided: c_int = 0;
        // SAFETY: plain C call; `provided` is a valid out-pointer.
        let rc = unsafe { ffi::shmem_init_thread(level.raw() | device_bits, &mut provided) };
        if rc != 0 {
            LIVE.store(false, Ordering::Release);
            return Err(Error::Declined { routine: "Shmem::init_thread", code: rc });
        }
        // The device bits ride above the thread level in `provided`.
        let provided = ThreadLevel::from_raw(provided & !ffi::DEVICE_BITS);
        // SAFETY: plain C calls on an initialised library.
        let (me, n_pes) = unsafe { (ffi::shmem_my_pe() as usize, ffi::shmem_n_pes() as usize) };
        let mut agree_team: ffi::RawTeam = std::ptr::null_mut();
        // SAFETY: the world team of an initialised library; a valid out-pointer. Every PE
        // calls it, in the same place (here).
        let rc = unsafe {
            ffi::shmem_team_split_strided(
                crate::team::world_raw(),
                0,
                1,
                n_pes as c_int,
                std::ptr::null(),
                0,
                &mut agree_team,
            )
        };
        // SAFETY: collective allocation, made by every PE here.
        let agree_buf = unsafe { ffi::shmem_malloc(2 * AGREE_WORDS * 8) }.cast::<i64>();
        // SAFETY: as above.
        let team_buf = unsafe { ffi::shmem_malloc(2 * TEAM_WORDS * 8) }.cast::<i64>();
        let rt = Shmem {
            default: Ctx::new(crate::ctx::default_raw(), n_pes),
            me,
            n_pes,
            level: provided,
            agree_team,
            agree_buf,
            team_buf,
            contexts: Mutex::new(Vec::new()),
            allocations: std::cell::Cell::new(0),
            _not_send: PhantomData,
        };
        if rc != 0 || agree_team.is_null() || agree_buf.is_null() || team_buf.is_null() {
            return Err(Error::Declined { routine: "Shmem::init_thread", code: rc });
        }
        if provided < level {
            return Err(Error::ThreadLevel { requested: level, provided });
        }
        Ok(rt)
    }

    /// This PE's number in the world team.
    pub fn my_pe(&self) -> usize {
        self.me
    }

    /// The number of PEs in the job.
    pub fn n_pes(&self) -> usize {
        self.n_pes
    }

    /// The thread level the library provided.
    pub fn thread_level(&self) -> ThreadLevel {
        self.level
    }

    /// `shmem_barrier_all`: every PE arrives, and this PE's operations on the default context
    /// are complete.
    pub fn barrier_all(&self) {
        // SAFETY: plain C call on an initialised library.
        unsafe { ffi::shmem_barrier_all() }
    }

    /// `shmem_sync_all`: every PE arrives; nothing is completed.
    pub fn sync_all(&self) {
        // SAFETY: plain C call on an initialised library.
        unsafe { ffi::shmem_sync_all() }
    }

    /// `shmem_global_exit`: ends every PE of the job with `status`.
    pub fn global_exit(&self, status: i32) -> ! {
        // SAFETY: plain C call; it does not return.
        unsafe { ffi::shmem_global_exit(status) }
    }

    /// `shmem_finalize`, the same as dropping the runtime; every PE must reach it.
    pub fn finalize(self) {}

    /// The contexts this runtime made and has not destroyed. A mutex, not a cell: under
    /// [`crate::Threads`] other threads make and destroy contexts (never on the hot path).
    pub(crate) fn contexts(&self) -> MutexGuard<'_, Vec<ffi::RawCtx>> {
        self.contexts.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Completes every operation this PE issued, on the default context and on every context
    /// this runtime created.
    pub(crate) fn quiet_all(&self) {
        self.default.quiet();
        for &c in self.contexts().iter() {
            // SAFETY: a live context of this runtime (removed from the list before destroy).
            unsafe { ffi::shmem_ctx_quiet(c) };
        }
    }

    /// A collective agreement on `values`: every PE passes its own, and every PE learns whether
    /// all passed the same. Runs on the private team, so it can only meet another agreement.
    pub(crate) fn agree<const N: usize>(&self, values: [i64; N]) -> bool {
        const { assert!(N <= AGREE_WORDS / 2) };
        let src = self.agree_buf;
        // SAFETY: the scratch has 2 * AGREE_WORDS words; the sources are written only here,
        // between agreements, and the results only by the reduction below.
        let dest = unsafe { src.add(AGREE_WORDS) };
        // Every agreement reduces every word, whatever its N: the words past N are zero.
        let padded = (0..AGREE_WORDS / 2).map(|i| values.get(i).copied().unwrap_or(0));
        for (i, v) in padded.enumerate() {
            // SAFETY: within the scratch (i < AGREE_WORDS / 2); volatile, as other PEs read it.
            unsafe {
                src.add(2 * i).write_volatile(v);
                src.add(2 * i + 1).write_volatile(v.wrapping_neg());
            }
        }
        // SAFETY: symmetric source and result arrays of AGREE_WORDS words, disjoint; the
        // private team of this runtime.
        unsafe { (ffi::RED_I64.max)(self.agree_team, dest, src, AGREE_WORDS) };
        values.iter().enumerate().all(|(i, v)| {
            // SAFETY: within the scratch; the reduction is complete.
            let (max, neg_min) =
                unsafe { (dest.add(2 * i).read_volatile(), dest.add(2 * i + 1).read_volatile()) };
            max == *v && neg_min == v.wrapping_neg()
        })
    }

    /// `reduce` (an `i64` reduction of the C API) of every member's `values` over `team`, which
    /// every member calls at the same point. The team's own collective, unlike [`Shmem::agree`]
    /// (over the world): for checks among a team's members. The scratch is shared by every
    /// team, so the members sync before any leaves: by then every member has returned from the
    /// reduction (no source is read any more) and read its result (no result is needed any
    /// more), so the next call, on whichever team, finds the scratch free.
    pub(crate) fn over_team(
        &self,
        team: ffi::RawTeam,
        reduce: ffi::ReduceFn<i64>,
        values: [i64; TEAM_WORDS],
    ) -> Option<[i64; TEAM_WORDS]> {
        let src = self.team_buf;
        // SAFETY: the scratch has 2 * TEAM_WORDS words.
        let dest = unsafe { src.add(TEAM_WORDS) };
        for (i, v) in values.iter().enumerate() {
            // SAFETY: within the scratch; volatile, as other PEs read it.
            unsafe { src.add(i).write_volatile(*v) };
        }
        // SAFETY: symmetric source and result arrays of TEAM_WORDS words, disjoint; a live team
        // of which this PE is a member.
        let rc = unsafe { reduce(team, dest, src, TEAM_WORDS) };
        // SAFETY: within the scratch; the reduction is complete.
        let out = std::array::from_fn(|i| unsafe { dest.add(i).read_volatile() });
        // SAFETY: a live team; collective over it, called by every member after the reduction.
        unsafe { ffi::shmem_team_sync(team) };
        (rc == 0).then_some(out)
    }

    /// Whether every member of `team` passed the same `value` (collective over the team).
    pub(crate) fn team_agrees(&self, team: ffi::RawTeam, value: i64) -> Option<bool> {
        let [max, neg_min] = self.over_team(team, ffi::RED_I64.max, [value, value.wrapping_neg()])?;
        Some(max == value && neg_min == value.wrapping_neg())
    }
}

impl Drop for Shmem {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // The other PEs would wait for this one in finalize's barrier for ever: end the
            // job (the panic message is already printed).
            // SAFETY: plain C call; it does not return.
            unsafe { ffi::shmem_global_exit(101) }
        }
        // SAFETY: every PE runs this in the same place (dropping its runtime): the private
        // team and the scratch are released collectively, then the library is finalized.
        unsafe {
            if !self.agree_team.is_null() {
                ffi::shmem_team_destroy(self.agree_team);
            }
            if !self.agree_buf.is_null() {
                ffi::shmem_free(self.agree_buf.cast());
            }
            if !self.team_buf.is_null() {
                ffi::shmem_free(self.team_buf.cast());
            }
            ffi::shmem_finalize();
        }
        LIVE.store(false, Ordering::Release);
    }
}

impl std::ops::Deref for Shmem {
    type Target = Ctx;

    fn deref(&self) -> &Ctx {
        &self.default
    }
}
