//! Every part of the safe API on every PE, self-checking: transfers of several element types,
//! atomics, signals, non-blocking transfers, contexts, teams and their collectives, exclusive
//! epochs, and the errors of bad arguments. Prints `tour: PE <me> ok` per PE.

use rshmem::{Cmp, CtxOptions, Error, Op, Pod, Shmem, SignalOp, Zeroable};

/// A user's own element type: plain data, valid for every bit pattern.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
struct Particle {
    pos: [f32; 3],
    id: u32,
}

fn main() -> Result<(), Error> {
    let shmem = Shmem::init()?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    shmem.scope(|s| {
        // Put and get of a user type, a whole array and single elements.
        let parts = s.alloc::<Particle>(8)?;
        let mine: Vec<Particle> =
            (0..8).map(|i| Particle { pos: [me as f32, i as f32, 0.5], id: i }).collect();
        shmem.put(&parts, 0, &mine, next)?;
        shmem.barrier_all();
        assert_eq!(parts.read(3), Particle { pos: [prev as f32, 3.0, 0.5], id: 3 });
        let mut back = vec![Particle::zeroed(); 2];
        shmem.get(&mut back, &parts, 6, next)?;
        assert_eq!(back[1], Particle { pos: [me as f32, 7.0, 0.5], id: 7 });
        shmem.barrier_all();

        // Single elements of every width.
        let b = s.alloc::<u8>(4)?;
        let h = s.alloc::<i16>(4)?;
        let f = s.alloc::<f32>(4)?;
        let d = s.alloc::<f64>(4)?;
        shmem.p(&b, 1, me as u8 + 1, next)?;
        shmem.p(&h, 2, -(me as i16), next)?;
        shmem.p(&f, 3, me as f32 * 0.25, next)?;
        shmem.p(&d, 0, me as f64 * 1e9, next)?;
        shmem.barrier_all();
        assert_eq!(
            (b.read(1), h.read(2), f.read(3), d.read(0)),
            (prev as u8 + 1, -(prev as i16), prev as f32 * 0.25, prev as f64 * 1e9)
        );
        assert_eq!(shmem.g(&d, 0, next)?, me as f64 * 1e9);

        // Atomics: everybody adds to PE 0's counter, swaps, and sets bits.
        let counter = s.alloc::<i64>(1)?;
        let bits = s.alloc::<u64>(1)?;
        let slot = s.alloc::<u32>(1)?;
        for _ in 0..10 {
            shmem.atomic_fetch_add(&counter, 0, 3, 0)?;
        }
        shmem.atomic_inc(&counter, 0, 0)?;
        shmem.atomic_fetch_or(&bits, 0, 1 << me, 0)?;
        let won = shmem.atomic_compare_swap(&slot, 0, 0, me as u32 + 1, 0)? == 0;
        shmem.barrier_all();
        if me == 0 {
            assert_eq!(counter.read(0), 31 * n as i64);
            assert_eq!(bits.read(0), (1u64 << n) - 1);
        }
        let winners = s.alloc::<i32>(1)?;
        let won_sum = s.alloc::<i32>(1)?;
        winners.write(0, won as i32);
        shmem.world().reduce(Op::Sum, &won_sum, &winners)?;
        assert_eq!(won_sum.read(0), 1, "exactly one compare-and-swap wins");
        assert_eq!(shmem.atomic_fetch(&counter, 0, 0)?, 31 * n as i64);
        shmem.barrier_all();
        let old = shmem.atomic_swap(&counter, 0, -1, me)?;
        assert_eq!(old, if me == 0 { 31 * n as i64 } else { 0 });
        shmem.barrier_all();

        // Signals: every PE adds one to the next PE's signal after its data; the receiver waits.
        let data = s.alloc::<u32>(n)?;
        let sig = s.alloc::<u64>(1)?;
        shmem.put_signal(&data, me, &[me as u32 * 7], &sig, 0, 1, SignalOp::Add, next)?;
        assert_eq!(sig.signal_wait_until(0, Cmp::Ge, 1), 1);
        assert_eq!(data.read(prev), prev as u32 * 7);
        assert_eq!(sig.signal_fetch(0), 1);

        // Non-blocking transfers on a context of our own: buffers held until its quiet.
        let ctx = shmem.create_ctx(CtxOptions { private: true, ..Default::default() })?;
        let wide = s.alloc::<u64>(1024)?;
        let src: Vec<u64> = (0..1024).map(|i| (me * 10_000 + i) as u64).collect();
        ctx.nbi(|nb| nb.put(&wide, 0, &src, next))?;
        shmem.barrier_all();
        let mut got = vec![0u64; 1024];
        ctx.nbi(|nb| nb.get(&mut got, &wide, 0, next))?;
        assert_eq!(got, src);
        drop(ctx);

        // Teams: the even PEs, with collectives and a context numbered in the team.
        let evens = s.split_strided(&shmem.world(), 0, 2, n.div_ceil(2))?;
        // Symmetric arrays are allocated by every PE (they are collective over the world).
        let tn = n.div_ceil(2);
        let (v, r) = (s.alloc::<f64>(2)?, s.alloc::<f64>(2)?);
        let (one, all) = (s.alloc::<u16>(3)?, s.alloc::<u16>(3 * tn)?);
        let (bsrc, bdst) = (s.alloc::<i32>(2)?, s.alloc::<i32>(2)?);
        let (a_src, a_dst) = (s.alloc::<u64>(tn)?, s.alloc::<u64>(tn)?);
        let inbox = s.alloc::<u64>(1)?;
        assert_eq!(evens.is_some(), me % 2 == 0);
        if let Some(t) = &evens {
            let tm = t.my_pe();
            assert_eq!(t.n_pes(), tn);
            assert_eq!(tm, me / 2);
            assert_eq!(t.translate_pe(tm, &shmem.world()), Some(me));
            v.write_from(0, &[me as f64, 1.0])?;
            t.reduce(Op::Max, &r, &v)?;
            assert_eq!(r.to_vec(), vec![(2 * (tn - 1)) as f64, 1.0]);
            t.reduce(Op::Sum, &v, &v)?; // in place
            assert_eq!(v.read(1), tn as f64);
            one.write_from(0, &[tm as u16; 3])?;
            t.fcollect(&all, &one)?;
            assert_eq!(all.to_vec(), (0..tn).flat_map(|p| [p as u16; 3]).collect::<Vec<_>>());
            bsrc.write_from(0, &[tm as i32 + 100, 5])?;
            t.broadcast(&bdst, &bsrc, tn - 1)?;
            assert_eq!(bdst.to_vec(), vec![tn as i32 + 99, 5]);
            a_src.write_from(0, &(0..tn).map(|j| (tm * 100 + j) as u64).collect::<Vec<_>>())?;
            t.alltoall(&a_dst, &a_src)?;
            assert_eq!(a_dst.to_vec(), (0..tn).map(|j| (j * 100 + tm) as u64).collect::<Vec<_>>());
            // A team context: PE numbers are the team's.
            let tctx = t.create_ctx(CtxOptions::default())?;
            tctx.p(&inbox, 0, me as u64 + 1, (tm + 1) % tn)?;
            tctx.quiet();
            t.sync();
            assert_eq!(inbox.read(0), (2 * ((tm + tn - 1) % tn)) as u64 + 1);
            assert!(matches!(tctx.p(&inbox, 0, 0, tn), Err(Error::BadPe { pe, .. }) if pe == tn));
            assert!(matches!(t.reduce(Op::Xor, &r, &v), Err(Error::Invalid { .. })));
        }
        shmem.barrier_all();

        // An exclusive epoch: a local &mut [T], then the neighbours read the result.
        let mut grid = s.alloc::<u32>(16)?;
        grid.exclusive(|local| {
            for (i, x) in local.iter_mut().enumerate() {
                *x = (me * 16 + i) as u32;
            }
            local.reverse();
        })?;
        assert_eq!(shmem.g(&grid, 0, next)?, (next * 16 + 15) as u32);
        shmem.barrier_all();

        // A lock: a get, an increment and a put of PE 0's counter are one step only under it.
        let lock = s.lock()?;
        let count = s.alloc::<u64>(1)?;
        for k in 0..50 {
            let held = if k % 2 == 0 {
                lock.set()?
            } else {
                loop {
                    if let Some(g) = lock.try_set()? {
                        break g;
                    }
                }
            };
            // Not reentrant: asking again while holding it is an error, not a hang.
            assert!(matches!(lock.set(), Err(Error::Invalid { routine: "Lock::set", .. })));
            let c = shmem.g(&count, 0, 0)?;
            shmem.p(&count, 0, c + 1, 0)?;
            drop(held);
        }
        shmem.barrier_all();
        if me == 0 {
            assert_eq!(count.read(0), 50 * n as u64);
        }

        // Bad arguments are errors, named, and nothing moved.
        assert_eq!(shmem.p(&grid, 0, 1, n), Err(Error::BadPe { routine: "Ctx::p", pe: n, n_pes: n }));
        assert!(matches!(
            shmem.put(&grid, 10, &[0u32; 7], next),
            Err(Error::OutOfBounds { offset: 10, len: 7, .. })
        ));
        let e = shmem.world().fcollect(&grid, &grid).unwrap_err();
        assert!(matches!(e, Error::Length { .. } if n > 1) || matches!(e, Error::Invalid { .. }), "{e}");
        let e = shmem.get(&mut [0u32; 1], &grid, 16, 0).unwrap_err();
        assert_eq!(e.to_string(), "Ctx::get: elements 16..17 are past the end of a symmetric array of 16");
        // PEs that disagree on an allocation's length, or an epoch's array, all get an error.
        let lens = s.alloc::<u8>(if me == 0 && n > 1 { 5 } else { 4 });
        assert_eq!(lens.is_err(), n > 1);
        let mut other = s.alloc::<u32>(16)?;
        let r = if me % 2 == 0 { grid.exclusive(|_| ()) } else { other.exclusive(|_| ()) };
        assert_eq!(r.is_err(), n > 1, "{r:?}");
        shmem.barrier_all();
        println!("tour: PE {me} ok");
        Ok(())
    })
}
