//! # rshmem: OpenSHMEM for Rust programs
//!
//! The safe API of rshmem. A program initialises the library once ([`Shmem::init`]), makes
//! symmetric arrays in a collective [`Scope`], and moves data between PEs with puts, gets,
//! atomics, signals and collectives, every one checked (PE numbers, bounds, lengths) and
//! returning a [`Result`]. It runs under `oshrun`, `mpirun` or `srun` like a C program (or
//! alone, as one PE), and finds the installed plugins the same way (docs/rust.md).
//!
//! ```
//! use rshmem::{Cmp, Op, Shmem};
//!
//! fn main() -> Result<(), rshmem::Error> {
//!     let shmem = Shmem::init()?;
//!     let (me, n) = (shmem.my_pe(), shmem.n_pes());
//!     shmem.scope(|s| {
//!         let inbox = s.alloc::<u64>(1)?;
//!         let sum = s.alloc::<u64>(1)?;
//!         // Each PE gives its number plus one to the next PE around the ring.
//!         shmem.p(&inbox, 0, me as u64 + 1, (me + 1) % n)?;
//!         inbox.wait_until(0, Cmp::Ne, 0);
//!         assert_eq!(inbox.read(0), ((me + n - 1) % n) as u64 + 1);
//!         shmem.world().reduce(Op::Sum, &sum, &inbox)?;
//!         assert_eq!(sum.read(0), (n * (n + 1) / 2) as u64);
//!         Ok(())
//!     })
//! }
//! ```
//!
//! ## What the types rule out
//!
//! Each of these is a compile error (the doc tests below check that they stay one).
//!
//! Using anything after `finalize`: every handle borrows the runtime.
//! ```compile_fail,E0505
//! let shmem = rshmem::Shmem::init().unwrap();
//! let world = shmem.world();
//! shmem.finalize();
//! world.sync();
//! ```
//!
//! A symmetric array outliving its scope (it is freed, collectively, when the scope ends).
//! ```compile_fail
//! let shmem = rshmem::Shmem::init().unwrap();
//! let kept = shmem.scope(|s| s.alloc::<u64>(4).unwrap());
//! ```
//!
//! An array of a memory space outliving the scope that made the space (the space is destroyed
//! when that scope ends, after its arrays are freed), even when allocated through an outer
//! scope.
//! ```compile_fail
//! let shmem = rshmem::Shmem::init().unwrap();
//! shmem.scope(|outer| {
//!     let kept = shmem.scope(|inner| {
//!         let space = inner.create_space(1 << 20).unwrap();
//!         outer.alloc_in::<u64>(&space, 4).unwrap()
//!     });
//!     kept.read(0);
//! });
//! ```
//!
//! An allocation outliving the runtime.
//! ```compile_fail,E0505
//! let shmem = rshmem::Shmem::init().unwrap();
//! shmem.scope(|s| {
//!     let a = s.alloc::<u64>(4).unwrap();
//!     drop(shmem);
//!     a.read(0);
//! });
//! ```
//!
//! Elements that are not valid for every bit pattern (a remote PE may write any bytes).
//! ```compile_fail,E0277
//! let shmem = rshmem::Shmem::init().unwrap();
//! shmem.scope(|s| { let _ = s.alloc::<bool>(4); });
//! ```
//! ```compile_fail,E0277
//! let shmem = rshmem::Shmem::init().unwrap();
//! shmem.scope(|s| { let _ = s.alloc::<&'static str>(4); });
//! ```
//!
//! Changing the source of a non-blocking put before the context's quiet.
//! ```compile_fail,E0506
//! let shmem = rshmem::Shmem::init().unwrap();
//! shmem.scope(|s| {
//!     let dest = s.alloc::<u64>(4).unwrap();
//!     let mut src = [1u64; 4];
//!     shmem.nbi(|n| {
//!         n.put(&dest, 0, &src, 0).unwrap();
//!         src[0] = 2;
//!     });
//! });
//! ```
//!
//! Reading the destination of a non-blocking get before the quiet.
//! ```compile_fail,E0502
//! let shmem = rshmem::Shmem::init().unwrap();
//! shmem.scope(|s| {
//!     let src = s.alloc::<u64>(4).unwrap();
//!     let mut got = [0u64; 4];
//!     shmem.nbi(|n| {
//!         n.get(&mut got, &src, 0, 0).unwrap();
//!         println!("{}", got[0]);
//!     });
//! });
//! ```
//!
//! A local `&mut` to symmetric memory that other PEs can still reach: inside
//! [`Symm::exclusive`] the array cannot be named, not even to put into it.
//! ```compile_fail,E0502
//! let shmem = rshmem::Shmem::init().unwrap();
//! shmem.scope(|s| {
//!     let mut a = s.alloc::<u64>(4).unwrap();
//!     a.exclusive(|local| {
//!         local[0] = 1;
//!         shmem.put(&a, 0, &[2], 0).unwrap();
//!     }).unwrap();
//! });
//! ```
//! nor, while an epoch holds part of an array, can the whole array (which the part is in) be
//! named:
//! ```compile_fail,E0499
//! let shmem = rshmem::Shmem::init().unwrap();
//! shmem.scope(|s| {
//!     let mut a = s.alloc::<u64>(4).unwrap();
//!     let (mut low, _high) = a.split_at_mut(2);
//!     low.exclusive(|local| {
//!         local[0] = 1;
//!         let _ = a.split_at_mut(1);
//!     }).unwrap();
//! });
//! ```
//! ```compile_fail,E0502
//! let shmem = rshmem::Shmem::init().unwrap();
//! shmem.scope(|s| {
//!     let mut a = s.alloc::<u64>(4).unwrap();
//!     let (mut low, _high) = a.split_at_mut(2);
//!     low.exclusive(|local| {
//!         local[0] = 1;
//!         shmem.put(&a, 0, &[2], 0).unwrap();
//!     }).unwrap();
//! });
//! ```
//! and outside it there is no slice to hold:
//! ```compile_fail,E0599
//! let shmem = rshmem::Shmem::init().unwrap();
//! shmem.scope(|s| {
//!     let a = s.alloc::<u64>(4).unwrap();
//!     let local: &[u64] = a.as_slice();
//! });
//! ```
//!
//! A context (or the runtime, or a symmetric array) sent to another thread.
//! ```compile_fail,E0277
//! let shmem = rshmem::Shmem::init().unwrap();
//! let ctx = shmem.create_ctx(Default::default()).unwrap();
//! std::thread::scope(|t| { t.spawn(|| ctx.quiet()); });
//! ```
//! ```compile_fail,E0277
//! let shmem = rshmem::Shmem::init().unwrap();
//! std::thread::spawn(move || shmem.barrier_all());
//! ```
//!
//! Under [`ThreadLevel::Multiple`], threads share a [`Threads`] handle and [`Shared`] views,
//! nothing else. A private context stays on the thread that made it:
//! ```compile_fail,E0277
//! let shmem = rshmem::Shmem::init_thread(rshmem::ThreadLevel::Multiple).unwrap();
//! let threads = shmem.threads().unwrap();
//! let ctx = threads.private_ctx(Default::default()).unwrap();
//! std::thread::scope(|t| { t.spawn(move || ctx.quiet()); });
//! ```
//! a context handed to a thread is used by that thread alone, not by two at once:
//! ```compile_fail,E0277
//! let shmem = rshmem::Shmem::init_thread(rshmem::ThreadLevel::Multiple).unwrap();
//! let threads = shmem.threads().unwrap();
//! let ctx = threads.ctx(Default::default()).unwrap();
//! std::thread::scope(|t| {
//!     t.spawn(|| ctx.quiet());
//!     t.spawn(|| ctx.quiet());
//! });
//! ```
//! an array reaches threads only as a shared view (which has no local writes):
//! ```compile_fail,E0277
//! let shmem = rshmem::Shmem::init_thread(rshmem::ThreadLevel::Multiple).unwrap();
//! let threads = shmem.threads().unwrap();
//! shmem.scope(|s| {
//!     let a = s.alloc::<u64>(4).unwrap();
//!     std::thread::scope(|t| { t.spawn(|| a.write(0, 1)); });
//! });
//! ```
//! no exclusive epoch begins while a view of the array lives:
//! ```compile_fail,E0502
//! let shmem = rshmem::Shmem::init_thread(rshmem::ThreadLevel::Multiple).unwrap();
//! let threads = shmem.threads().unwrap();
//! shmem.scope(|s| {
//!     let mut a = s.alloc::<u64>(4).unwrap();
//!     let view = threads.share(&a);
//!     a.exclusive(|local| local[0] = 1).unwrap();
//!     view.read(0);
//! });
//! ```
//! and the threads' handle does not outlive the runtime:
//! ```compile_fail,E0505
//! let shmem = rshmem::Shmem::init_thread(rshmem::ThreadLevel::Multiple).unwrap();
//! let threads = shmem.threads().unwrap();
//! shmem.finalize();
//! threads.quiet();
//! ```
//!
//! Using a team on this thread while its collectives are lent to another, or sharing the lent
//! collectives between two threads (one thread runs a team's collectives at a time).
//! ```compile_fail,E0502
//! let shmem = rshmem::Shmem::init_thread(rshmem::ThreadLevel::Multiple).unwrap();
//! let threads = shmem.threads().unwrap();
//! shmem.scope(|s| {
//!     let mut team = s.split_strided(&shmem.world(), 0, 1, shmem.n_pes()).unwrap().unwrap();
//!     let lent = threads.collectives(&mut team).unwrap();
//!     team.sync();
//!     lent.sync();
//! });
//! ```
//! ```compile_fail,E0277
//! let shmem = rshmem::Shmem::init_thread(rshmem::ThreadLevel::Multiple).unwrap();
//! let threads = shmem.threads().unwrap();
//! shmem.scope(|s| {
//!     let mut team = s.split_strided(&shmem.world(), 0, 1, shmem.n_pes()).unwrap().unwrap();
//!     let lent = threads.collectives(&mut team).unwrap();
//!     std::thread::scope(|ts| {
//!         ts.spawn(|| lent.sync());
//!         ts.spawn(|| lent.sync());
//!     });
//! });
//! ```
//!
//! Holding a lock past the lock itself (a held lock is a guard that clears it when dropped).
//! ```compile_fail,E0597
//! let shmem = rshmem::Shmem::init().unwrap();
//! shmem.scope(|s| {
//!     let held = {
//!         let lock = s.lock().unwrap();
//!         lock.set().unwrap()
//!     };
//!     drop(held);
//! });
//! ```
//!
//! Loading or storing an element of a device array on this PE's CPU (device memory is reached
//! only through the library: [`DeviceSymm::to_vec`], [`DeviceSymm::write_from`], a context).
//! ```compile_fail,E0599
//! let shmem = rshmem::Shmem::init_with_gpu_heap(rshmem::ThreadLevel::Single).unwrap();
//! let gpu = shmem.gpu_space().unwrap();
//! shmem.scope(|s| {
//!     let x = s.alloc_device::<u64>(&gpu, 4).unwrap();
//!     x.write(0, 1);
//! });
//! ```
//! ```compile_fail,E0599
//! let shmem = rshmem::Shmem::init_with_gpu_heap(rshmem::ThreadLevel::Single).unwrap();
//! let gpu = shmem.gpu_space().unwrap();
//! shmem.scope(|s| {
//!     let mut x = s.alloc_device::<u64>(&gpu, 4).unwrap();
//!     let _ = x.exclusive(|local| local[0] = 1);
//! });
//! ```
//!
//! An array of a GPU space outliving the scope that made the space, as for host spaces.
//! ```compile_fail
//! let shmem = rshmem::Shmem::init_with_gpu_heap(rshmem::ThreadLevel::Single).unwrap();
//! shmem.scope(|outer| {
//!     let kept = shmem.scope(|inner| {
//!         let space = inner.create_gpu_space(1 << 20).unwrap();
//!         outer.alloc_device::<u64>(&space, 4).unwrap()
//!     });
//!     kept.to_vec();
//! });
//! ```
//!
//! A device array (not its view) used from another thread.
//! ```compile_fail,E0277
//! let shmem = rshmem::Shmem::init_with_gpu_heap(rshmem::ThreadLevel::Multiple).unwrap();
//! let gpu = shmem.gpu_space().unwrap();
//! shmem.scope(|s| {
//!     let x = s.alloc_device::<u64>(&gpu, 4).unwrap();
//!     std::thread::scope(|ts| {
//!         ts.spawn(|| x.len());
//!     });
//! });
//! ```
//!
//! A device array outliving the scope that made it.
//! ```compile_fail
//! let shmem = rshmem::Shmem::init_with_gpu_heap(rshmem::ThreadLevel::Single).unwrap();
//! let gpu = shmem.gpu_space().unwrap();
//! let kept = shmem.scope(|s| s.alloc_device::<u64>(&gpu, 4).unwrap());
//! ```
//!
//! A second runtime, or a team split outside a scope, is a run-time [`Error`] or not
//! expressible: `Scope::split_strided` is the only way to make a team.
//!
//! ## What is checked at run time
//!
//! PE numbers against the team of the context or team used ([`Error::BadPe`]), element ranges
//! against the array ([`Error::OutOfBounds`]), collective lengths ([`Error::Length`]), array
//! lengths across PEs at allocation, and the array of an exclusive epoch across PEs
//! ([`Error::EpochMismatch`]). What only the library can find (a transfer or an atomic the
//! transport failed) comes back from the core as [`Error::Failed`], holding its
//! [`ShmemError`]; a C program's routine would end the job there.

mod amo;
mod ctx;
mod device;
mod error;
mod ffi;
mod lock;
mod ops;
mod runtime;
mod scope;
mod space;
mod symm;
mod team;
mod threads;

pub use amo::{AtomicInt, Cmp};
pub use bytemuck::{Pod, Zeroable};
pub use ctx::{Ctx, CtxOptions, Nbi, OwnedCtx, SignalOp};
pub use device::{DeviceSymm, GpuSpace, SharedDevice};
pub use error::{Error, Result};
pub use lock::{Lock, LockGuard};
pub use runtime::{Shmem, ThreadLevel};
pub use scope::{Hints, Scope};
/// Why the library failed an operation ([`Error::Failed`]): the core's error values.
pub use shmem::error::ShmemError;
pub use space::Space;
pub use symm::{Remote, Shared, Symm};
pub use team::{Collectives, Op, Reduce, Scan, Team};
pub use threads::{TeamCollectives, ThreadCtx, Threads};
