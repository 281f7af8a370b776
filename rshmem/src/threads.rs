//! Threads under `SHMEM_THREAD_MULTIPLE`: what the threads of one PE may share.
//!
//! The runtime, its arrays and its teams stay on the thread that initialised the library (they
//! are neither `Send` nor `Sync`; collectives and allocations are that thread's). When the
//! library provides [`ThreadLevel::Multiple`], [`Shmem::threads`] gives a [`Threads`] handle
//! that is `Sync`: scoped threads borrow it to make contexts of their own, use the default
//! context, and reach symmetric arrays through [`Shared`] views.

use crate::ctx::{Ctx, CtxOptions, OwnedCtx};
use crate::device::{DeviceSymm, SharedDevice};
use crate::error::{Error, Result};
use crate::symm::{Shared, Symm};
use crate::team::Collectives;
use crate::{Shmem, ThreadLevel};

/// What the threads of one PE share when the library runs at [`ThreadLevel::Multiple`]
/// (from [`Shmem::threads`]). It borrows the runtime, so it cannot outlive it, and threads
/// that use it are scoped (`std::thread::scope`). It dereferences to the default context,
/// which every thread may use at once.
pub struct Threads<'rt> {
    rt: &'rt Shmem,
    default: Ctx,
}

// SAFETY: a `Threads` exists only when the library provides SHMEM_THREAD_MULTIPLE, at which
// the C routines it reaches (the default context's operations, context creation) may be called
// from any thread at once. Of the runtime it uses only the context registry, which is behind a
// mutex (`Shmem::contexts`); nothing else of the runtime (its cells, its arrays, its teams) is
// reachable through it.
unsafe impl Sync for Threads<'_> {}

impl Shmem {
    /// The handle threads share, when the library provides [`ThreadLevel::Multiple`] (ask for
    /// it with [`Shmem::init_thread`]); otherwise [`Error::ThreadLevel`].
    pub fn threads(&self) -> Result<Threads<'_>> {
        if self.thread_level() != ThreadLevel::Multiple {
            return Err(Error::ThreadLevel {
                requested: ThreadLevel::Multiple,
                provided: self.thread_level(),
            });
        }
        Ok(Threads { rt: self, default: Ctx::new(crate::ctx::default_raw(), self.n_pes()) })
    }
}

impl<'rt> Threads<'rt> {
    /// This PE's number in the world team.
    pub fn my_pe(&self) -> usize {
        self.rt.my_pe()
    }

    /// The number of PEs in the job.
    pub fn n_pes(&self) -> usize {
        self.rt.n_pes()
    }

    /// A view of `array` that threads may share (`Send` and `Sync`): the targets and sources of
    /// their contexts' operations, and this PE's elements to read and wait on. The array stays
    /// borrowed while the view lives.
    pub fn share<'a, T: bytemuck::Pod>(&self, array: &'a Symm<'_, T>) -> Shared<'a, T> {
        Shared::of(array)
    }

    /// A view of device array `array` that threads may share (`Send` and `Sync`): the target
    /// and source of their contexts' operations, and this PE's words to wait on, all through
    /// the library (no local access, as for the array). The array stays borrowed while the
    /// view lives.
    pub fn share_device<'a, T: bytemuck::Pod>(&self, array: &'a DeviceSymm<'_, T>) -> SharedDevice<'a, T> {
        SharedDevice::of(array)
    }

    /// `shmem_ctx_create` for a thread: a context over the world team that may move to another
    /// thread (it is `Send`), used by one thread at a time. `options.private` is refused
    /// ([`Error::Invalid`]): a private context is [`Threads::private_ctx`], made on the thread
    /// that uses it.
    pub fn ctx(&self, options: CtxOptions) -> Result<ThreadCtx<'rt>> {
        let private_one = "Threads::private_ctx";
        self.movable("Threads::ctx", None, self.n_pes(), options, private_one)
    }

    /// `shmem_team_create_ctx` for a thread: as [`Threads::ctx`], over `team` (its PE
    /// numbers are the team's). Made on the thread that has the team, then moved; it cannot
    /// outlive the team's scope.
    pub fn team_ctx<'t>(&self, team: &crate::Team<'t>, options: CtxOptions) -> Result<ThreadCtx<'t>>
    where
        'rt: 't,
    {
        let private_one = "Team::create_ctx there";
        self.movable("Threads::team_ctx", Some(team.raw()), team.n_pes(), options, private_one)
    }

    /// A context that may move between threads (not private; `instead` says where a private
    /// one is made).
    fn movable<'t>(
        &self,
        routine: &'static str,
        team: Option<crate::ffi::RawTeam>,
        n_pes: usize,
        options: CtxOptions,
        instead: &str,
    ) -> Result<ThreadCtx<'t>>
    where
        'rt: 't,
    {
        if options.private {
            return Err(Error::Invalid {
                routine,
                what: format!("options.private: a private context stays on its thread ({instead})"),
            });
        }
        Ok(ThreadCtx { ctx: OwnedCtx::create(self.rt, routine, team, n_pes, options)? })
    }

    /// A team's collectives, lent to one thread: the returned value is `Send` (move it to the
    /// thread that will run them) and holds `team` borrowed mutably, so nothing else on this
    /// PE runs a collective on the team meanwhile (OpenSHMEM leaves concurrent collectives on
    /// one team undefined; on different teams they may run at once). Only a team a scope split
    /// can be lent: of the world and shared teams any number of handles exist, and
    /// `barrier_all` and the scopes' allocations run on the world, so they stay the
    /// initialising thread's ([`Error::Invalid`]); split a team of every PE
    /// (`s.split_strided(&shmem.world(), 0, 1, n)`) for a thread instead.
    pub fn collectives<'t>(&self, team: &'t mut crate::Team<'_>) -> Result<TeamCollectives<'t>>
    where
        'rt: 't,
    {
        if !team.is_split() {
            return Err(Error::Invalid {
                routine: "Threads::collectives",
                what:
                    "the world and shared teams stay on the initialising thread: lend a team split in a scope"
                        .into(),
            });
        }
        Ok(TeamCollectives { coll: team.lend(), _lent: std::marker::PhantomData })
    }

    /// `shmem_ctx_create` with `SHMEM_CTX_PRIVATE`, for the calling thread only: the context is
    /// not `Send`, so no other thread can use it.
    pub fn private_ctx(&self, options: CtxOptions) -> Result<OwnedCtx<'rt>> {
        OwnedCtx::create(
            self.rt,
            "Threads::private_ctx",
            None,
            self.n_pes(),
            CtxOptions { private: true, ..options },
        )
    }
}

impl std::ops::Deref for Threads<'_> {
    type Target = Ctx;

    fn deref(&self) -> &Ctx {
        &self.default
    }
}

/// A context made by [`Threads::ctx`]: `Send`, so a thread can be handed one, and destroyed
/// (after a quiet) when dropped. Dereferences to [`Ctx`].
pub struct ThreadCtx<'rt> {
    ctx: OwnedCtx<'rt>,
}

// SAFETY: the context was made without SHMEM_CTX_PRIVATE at SHMEM_THREAD_MULTIPLE, so any
// thread may use it, and it is not `Sync`, so one thread at a time does (which a
// SHMEM_CTX_SERIALIZED context needs). Its drop destroys it and takes it out of the runtime's
// registry, which is behind a mutex.
unsafe impl Send for ThreadCtx<'_> {}

impl std::ops::Deref for ThreadCtx<'_> {
    type Target = Ctx;

    fn deref(&self) -> &Ctx {
        &self.ctx
    }
}

/// A team's collectives lent to one thread ([`Threads::collectives`]): it dereferences to the
/// team's [`Collectives`] (sync, broadcast, fcollect, all-to-all, strided too, reductions and
/// scans, over [`Shared`] views or, on the thread that has them, arrays), with the same checks.
/// `Send`, not `Sync`: one thread runs the team's collectives at a time. `Team::collect`, whose
/// count is summed through the runtime's scratch (shared by every team), stays the initialising
/// thread's.
pub struct TeamCollectives<'t> {
    coll: Collectives<'t>,
    /// The team is borrowed mutably for as long as this lives.
    _lent: std::marker::PhantomData<&'t mut ()>,
}

// SAFETY: made only at SHMEM_THREAD_MULTIPLE (from a `Threads`), at which any thread may call
// the C collectives; the team is a scope's split team borrowed mutably by this value, so no
// other handle to it can run a collective meanwhile, and the value is not `Sync` (nor is the
// `Collectives` it dereferences to), so one thread at a time uses it. `Collectives` holds only
// the team's C handle: nothing of the runtime (its cells, its scratch) is reachable through it.
unsafe impl Send for TeamCollectives<'_> {}

impl<'t> std::ops::Deref for TeamCollectives<'t> {
    type Target = Collectives<'t>;

    fn deref(&self) -> &Collectives<'t> {
        &self.coll
    }
}
