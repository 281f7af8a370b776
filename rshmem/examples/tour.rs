//! Every part of the safe API on every PE, self-checking: transfers of several element types,
//! atomics, signals, non-blocking transfers, contexts, teams and their collectives, exclusive
//! epochs, collect with a count per PE, 2-D team splits, hinted allocations, memory spaces, and
//! the errors of bad arguments. Prints `tour: PE <me> ok` per PE.

use rshmem::{Cmp, CtxOptions, Error, Hints, Op, Pod, Scan, Shmem, SignalOp, Zeroable};

/// A cache line of counters, aligned to one.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C, align(64))]
struct Line([u64; 8]);

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

        // Strided transfers: every other element of a local array into every third element of
        // the next PE's copy, of a 4-byte type and of a 16-byte user type (the sized entry
        // points), and of a 12-byte one (element by element).
        let column = s.alloc::<u32>(12)?;
        let src: Vec<u32> = (0..8).map(|i| (me * 100 + i) as u32).collect();
        shmem.iput(&column, 1, 3, &src, 2, 4, next)?;
        let wide = s.alloc::<Particle>(6)?;
        let parts_src: Vec<Particle> =
            (0..3).map(|i| Particle { pos: [me as f32, 0.0, 1.0], id: i }).collect();
        shmem.iput(&wide, 0, 2, &parts_src, 1, 3, next)?;
        let odd = s.alloc::<[u32; 3]>(4)?;
        shmem.iput(&odd, 0, 2, &[[me as u32; 3], [me as u32 + 1; 3]], 1, 2, next)?;
        shmem.barrier_all();
        let col = column.to_vec();
        for (k, want) in [(1, 0), (4, 2), (7, 4), (10, 6)] {
            assert_eq!(col[k], (prev * 100 + want) as u32, "column {k}");
        }
        assert_eq!((col[0], col[2], col[11]), (0, 0, 0));
        assert_eq!(wide.read(4), Particle { pos: [prev as f32, 0.0, 1.0], id: 2 });
        assert_eq!((odd.read(0), odd.read(2), odd.read(1)), ([prev as u32; 3], [prev as u32 + 1; 3], [0; 3]));
        let mut every = [0u32; 7];
        shmem.iget(&mut every, 3, &column, 1, 3, 3, next)?;
        assert_eq!(
            (every[0], every[3], every[6]),
            ((me * 100) as u32, (me * 100 + 2) as u32, (me * 100 + 4) as u32)
        );
        assert!(matches!(shmem.iput(&column, 0, 0, &src, 1, 1, next), Err(Error::Invalid { .. })));
        assert!(matches!(shmem.iput(&column, 1, 3, &src, 2, 5, next), Err(Error::OutOfBounds { .. })));
        assert!(matches!(shmem.iget(&mut every, 4, &column, 0, 1, 3, next), Err(Error::Length { .. })));
        // Block-strided: blocks of 2 elements, at stride 3 in the source and 4 in the
        // destination (sized entry points), and of a 12-byte type (a put per block).
        let blocks = s.alloc::<u16>(12)?;
        let bsrc: Vec<u16> = (0..9).map(|i| (me * 10 + i) as u16).collect();
        shmem.ibput(&blocks, 1, 4, &bsrc, 3, 2, 3, next)?;
        shmem.ibput(&odd, 1, 2, &[[me as u32 + 7; 3]; 3], 2, 1, 2, next)?;
        shmem.barrier_all();
        let want: Vec<u16> = [0, 0, 1, 0, 0, 3, 4, 0, 0, 6, 7, 0]
            .iter()
            .enumerate()
            .map(|(i, &v)| if [1, 2, 5, 6, 9, 10].contains(&i) { (prev * 10) as u16 + v } else { 0 })
            .collect();
        assert_eq!(blocks.to_vec(), want);
        assert_eq!((odd.read(1), odd.read(3)), ([prev as u32 + 7; 3], [prev as u32 + 7; 3]));
        let mut got = [0u16; 5];
        shmem.ibget(&mut got, 3, &blocks, 5, 4, 2, 2, next)?;
        assert_eq!(
            got,
            [(me * 10 + 3) as u16, (me * 10 + 4) as u16, 0, (me * 10 + 6) as u16, (me * 10 + 7) as u16]
        );
        assert!(matches!(shmem.ibput(&blocks, 0, 1, &bsrc, 3, 2, 2, next), Err(Error::Invalid { .. })));
        assert!(matches!(shmem.ibput(&blocks, 1, 4, &bsrc, 3, 2, 4, next), Err(Error::OutOfBounds { .. })));
        shmem.barrier_all();

        // Scans over the world: inclusive and exclusive sums.
        let vals = s.alloc::<i64>(2)?;
        let sums = s.alloc::<i64>(2)?;
        vals.write_from(0, &[me as i64 + 1, 10])?;
        shmem.barrier_all();
        shmem.world().scan(Scan::Inclusive, &sums, &vals)?;
        assert_eq!(sums.to_vec(), vec![((me + 1) * (me + 2) / 2) as i64, 10 * (me as i64 + 1)]);
        shmem.world().scan(Scan::Exclusive, &sums, &vals)?;
        if me > 0 {
            assert_eq!(sums.to_vec(), vec![(me * (me + 1) / 2) as i64, 10 * me as i64]);
        }
        // A strided all-to-all: 2 elements for each PE, every other element of the source,
        // into every third of the destination.
        let a_src = s.alloc::<u64>(4 * n)?;
        let a_dst = s.alloc::<u64>(6 * n)?;
        for j in 0..n {
            for m in 0..2 {
                a_src.write((j * 2 + m) * 2, (me * 1000 + j * 10 + m) as u64);
            }
        }
        shmem.barrier_all();
        shmem.world().alltoalls(&a_dst, 3, &a_src, 2, 2)?;
        for j in 0..n {
            for m in 0..2 {
                assert_eq!(
                    a_dst.read((j * 2 + m) * 3),
                    (j * 1000 + me * 10 + m) as u64,
                    "from PE {j}, element {m}"
                );
            }
        }
        assert!(matches!(shmem.world().alltoalls(&a_dst, 6, &a_src, 2, 2), Err(Error::OutOfBounds { .. })));
        shmem.barrier_all();

        // Collect with a count of its own per PE: PE j gives j + 1 elements (PE 1 none), and
        // every PE receives them all, in order.
        let counts: Vec<usize> = (0..n).map(|j| if j == 1 { 0 } else { j + 1 }).collect();
        let total: usize = counts.iter().sum();
        let c_src = s.alloc::<i32>(n + 1)?;
        let c_dst = s.alloc::<i32>(total + 1)?;
        c_src.write_from(0, &(0..=n).map(|k| (me * 100 + k) as i32).collect::<Vec<_>>())?;
        c_dst.fill(-1);
        shmem.barrier_all();
        assert_eq!(shmem.world().collect(&c_dst, &c_src, counts[me])?, total);
        let want: Vec<i32> = (0..n).flat_map(|j| (0..counts[j]).map(move |k| (j * 100 + k) as i32)).collect();
        assert_eq!(c_dst.to_vec()[..total], want[..]);
        assert_eq!(c_dst.read(total), -1, "nothing past the collected elements");
        // Too much for dest on every PE (each gives all n + 1: more than total + 1 when n > 1),
        // and a count past the end of src: errors, named, on every PE.
        let r = shmem.world().collect(&c_dst, &c_src, n + 1);
        assert_eq!(r.is_err(), n > 1, "{r:?}");
        if n > 1 {
            assert!(matches!(r, Err(Error::Length { routine: "Team::collect", .. })), "{r:?}");
        }
        let r = shmem.world().collect(&c_dst, &c_src, if me == 0 { n + 2 } else { 0 });
        let bad = if me == 0 {
            matches!(r, Err(Error::OutOfBounds { .. }))
        } else {
            matches!(r, Err(Error::Invalid { .. }))
        };
        assert!(bad, "{r:?}");
        shmem.barrier_all();

        // A 2-D split of the world in rows of 2: a PE's number in its row is its column, in
        // its column its row; a sum over each shows who is in it.
        let (row, col) = s.split_2d(&shmem.world(), 2)?;
        assert_eq!((row.my_pe(), col.my_pe()), (me % 2, me / 2));
        assert_eq!(row.n_pes(), if me / 2 == (n - 1) / 2 { n - me / 2 * 2 } else { 2 });
        assert_eq!(col.n_pes(), (n - me % 2).div_ceil(2));
        let (who, sum) = (s.alloc::<u64>(1)?, s.alloc::<u64>(1)?);
        who.write(0, me as u64);
        shmem.barrier_all();
        row.reduce(Op::Sum, &sum, &who)?;
        let row_pes = (me / 2 * 2..(me / 2 * 2 + 2).min(n)).map(|p| p as u64);
        assert_eq!(sum.read(0), row_pes.sum::<u64>());
        col.reduce(Op::Sum, &sum, &who)?;
        assert_eq!(sum.read(0), (me % 2..n).step_by(2).map(|p| p as u64).sum::<u64>());
        // An xrange above the world's size is its size: one row of everybody, columns of one.
        let (all, alone) = s.split_2d(&shmem.world(), n + 5)?;
        assert_eq!((all.n_pes(), all.my_pe(), alone.n_pes()), (n, me, 1));
        assert!(matches!(s.split_2d(&shmem.world(), 0), Err(Error::Invalid { .. })));
        let r = s.split_2d(&shmem.world(), if me == 0 { 1 } else { 2 });
        assert_eq!(r.is_err(), n > 1, "PEs that disagree on xrange all get an error");

        // Hinted allocations: words that remote PEs hit with atomics and signals, on cache
        // lines of their own.
        let hot = s.alloc_with_hints::<u64>(3, Hints { atomics_remote: true, signal_remote: true })?;
        assert_eq!(hot.read(2), 0, "zeroed like any allocation");
        shmem.atomic_add(&hot, 1, me as u64 + 1, 0)?;
        shmem.barrier_all();
        if me == 0 {
            assert_eq!(hot.read(1), (n * (n + 1) / 2) as u64);
        }
        let plain = s.alloc_with_hints::<u32>(4, Hints::default())?; // as alloc
        assert_eq!(plain.len(), 4);
        let r = s.alloc_with_hints::<u8>(8, Hints { atomics_remote: me == 0, signal_remote: false });
        assert_eq!(r.is_err(), n > 1, "PEs that disagree on the hints all get an error");
        shmem.barrier_all();

        // A memory space of our own: arrays in it are reached like any other, collectives
        // over the world run on them, and they are freed before the space is destroyed.
        let space = s.create_space(1 << 20)?;
        assert_ne!(space.caps() & 0x1, 0, "SHMEM_SPACE_CAP_RMA");
        let (in_sp, sp_sum) = (s.alloc_in::<u64>(&space, 4)?, s.alloc_in::<u64>(&space, 4)?);
        assert_eq!(sp_sum.to_vec(), vec![0; 4], "zeroed like any allocation (nobody writes it yet)");
        shmem.put(&in_sp, 0, &[me as u64, 1, 2, 3], next)?;
        shmem.barrier_all();
        assert_eq!(in_sp.to_vec(), vec![prev as u64, 1, 2, 3]);
        shmem.world().reduce(Op::Sum, &sp_sum, &in_sp)?;
        assert_eq!(sp_sum.read(0), (n * (n - 1) / 2) as u64);
        assert!(matches!(s.alloc_in::<u64>(&space, 1 << 20), Err(Error::NoMemory { .. })));
        // A type aligned beyond a space's blocks (16 bytes) is refused there, not elsewhere.
        assert!(matches!(s.alloc_in::<Line>(&space, 1), Err(Error::Invalid { .. })));
        let lines = s.alloc::<Line>(2)?;
        lines.write(1, Line([me as u64; 8]));
        assert_eq!(shmem.g(&lines, 1, me)?, Line([me as u64; 8]));
        let r = s.create_space(if me == 0 { 1 << 20 } else { 1 << 21 });
        assert_eq!(r.is_err(), n > 1, "PEs that disagree on a space's size all get an error");
        // The predefined CPU space.
        if let Some(cpu) = shmem.cpu_space() {
            let c = s.alloc_in::<i32>(&cpu, 2)?;
            shmem.p(&c, 1, me as i32 + 1, next)?;
            shmem.barrier_all();
            assert_eq!(c.read(1), prev as i32 + 1);
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

        // An epoch over part of an array: this PE updates its interior (elements 0..12) as a
        // &mut [T] while its neighbour puts into its halo (12..16), which stays reachable.
        {
            let (mut interior, halo) = grid.split_at_mut(12);
            interior.exclusive(|local| {
                local.iter_mut().for_each(|x| *x += 1);
                shmem.put(&halo, 0, &[me as u32; 4], next)
            })??;
            shmem.barrier_all();
            assert_eq!(halo.to_vec(), vec![prev as u32; 4]);
            assert_eq!(shmem.g(&interior, 0, next)?, (next * 16 + 15) as u32 + 1);
            // The parts of a part, and PEs that name different parts all get an error.
            let (mut low, mut high) = interior.split_at_mut(6);
            assert_eq!(low.len() + high.len(), 12);
            let r = if me % 2 == 0 { low.exclusive(|_| ()) } else { high.exclusive(|_| ()) };
            assert_eq!(r.is_err(), n > 1, "{r:?}");
            assert!(matches!(
                shmem.put(&high, 5, &[0u32; 2], next),
                Err(Error::OutOfBounds { offset: 5, len: 2, array_len: 6, .. })
            ));
        }
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
