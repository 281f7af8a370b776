//! Threads of every PE at `SHMEM_THREAD_MULTIPLE`: each PE runs `THREADS` scoped threads that
//! all add to one counter on every PE (atomics), put a value each into the next PE's slots
//! with a signal, and wait for the previous PE's threads' signals. Even threads use a context
//! made by the main thread and moved to them, odd threads a private context of their own, and
//! every thread also uses the default context; on the even PEs one more thread adds through a
//! context over the team of even PEs. Every PE then checks its counter and slots.
//! Then collectives from three threads at once, on three teams: a team of every PE lent to one
//! thread (reductions, broadcasts, fcollects), the team of even PEs lent to another on its
//! members (max reductions and inclusive scans), and the world's barrier and reductions on the
//! main thread; every result is checked, every round.
//! Run with `oshrun -np 4 target/release/examples/threads [ROUNDS]`.

use rshmem::{Cmp, Ctx, CtxOptions, Shmem, SignalOp, ThreadLevel};

const THREADS: usize = 4;
/// Rounds of the collectives that run from three threads at once.
const COLL_ROUNDS: u64 = 100;

fn main() -> Result<(), rshmem::Error> {
    let shmem = Shmem::init_thread(ThreadLevel::Multiple)?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let rounds: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let threads = shmem.threads()?;
    // A private context cannot be handed to threads.
    let refused = threads.ctx(CtxOptions { private: true, ..Default::default() });
    assert!(matches!(refused, Err(rshmem::Error::Invalid { .. })), "{:?}", refused.err());
    shmem.scope(|s| {
        let count = s.alloc::<u64>(1)?;
        let slots = s.alloc::<u64>(THREADS)?;
        let arrived = s.alloc::<u64>(1)?;
        let (count_v, slots_v, arrived_v) =
            (threads.share(&count), threads.share(&slots), threads.share(&arrived));
        // Contexts for the even threads, made here and moved to them.
        let mut moved: Vec<_> = (0..THREADS)
            .map(|t| (t % 2 == 0).then(|| threads.ctx(CtxOptions::default())).transpose())
            .collect::<Result<_, _>>()?;
        // A context over a team of every other PE (team numbers), for one more thread.
        let mut evens = s.split_strided(&shmem.world(), 0, 2, n.div_ceil(2))?;
        let team_ctx = evens.as_ref().map(|t| threads.team_ctx(t, CtxOptions::default())).transpose()?;
        let evens_n = evens.as_ref().map_or(0, |t| t.n_pes());
        std::thread::scope(|ts| -> Result<(), rshmem::Error> {
            // Every even PE adds one to each even PE's counter, through team numbers.
            let team_thread = team_ctx.map(|ctx| {
                ts.spawn(move || -> Result<(), rshmem::Error> {
                    for pe in 0..evens_n {
                        ctx.atomic_add(&count_v, 0, 1, pe)?;
                    }
                    ctx.quiet();
                    Ok(())
                })
            });
            let handles: Vec<_> = moved
                .iter_mut()
                .enumerate()
                .map(|(t, given)| {
                    let given = given.take();
                    let threads = &threads;
                    ts.spawn(move || -> Result<(), rshmem::Error> {
                        let own;
                        let ctx: &Ctx = match &given {
                            Some(c) => c,
                            None => {
                                own = threads.private_ctx(CtxOptions::default())?;
                                &own
                            }
                        };
                        for _ in 0..rounds {
                            for pe in 0..n {
                                ctx.atomic_add(&count_v, 0, 1, pe)?;
                            }
                        }
                        // One more on the default context, which every thread shares.
                        threads.atomic_add(&count_v, 0, 1, next)?;
                        let value = (me * 1000 + t) as u64;
                        ctx.put_signal(&slots_v, t, &[value], &arrived_v, 0, 1, SignalOp::Add, next)?;
                        ctx.quiet();
                        threads.quiet();
                        // Every thread waits until all threads of the previous PE have put.
                        arrived_v.signal_wait_until(0, Cmp::Ge, THREADS as u64);
                        Ok(())
                    })
                })
                .collect();
            for h in handles.into_iter().chain(team_thread) {
                h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
            }
            Ok(())
        })?;
        shmem.barrier_all();
        let from_evens = if me % 2 == 0 { n.div_ceil(2) as u64 } else { 0 };
        let want = THREADS as u64 * (rounds * n as u64 + 1) + from_evens;
        assert_eq!(count.read(0), want, "PE {me}: the counter");
        for t in 0..THREADS {
            assert_eq!(slots.read(t), (prev * 1000 + t) as u64, "PE {me}: slot {t}");
        }
        assert_eq!(arrived.read(0), THREADS as u64, "PE {me}: the signal");
        // Collectives from other threads. The world team stays on this thread.
        let mut world = shmem.world();
        let refused = threads.collectives(&mut world);
        assert!(matches!(refused, Err(rshmem::Error::Invalid { .. })), "{:?}", refused.err());
        let mut all = s.split_strided(&shmem.world(), 0, 1, n)?.expect("every PE is in the team of all");
        let (pair, sum, bcast) = (s.alloc::<u64>(2)?, s.alloc::<u64>(2)?, s.alloc::<u64>(2)?);
        let (one, every) = (s.alloc::<u64>(1)?, s.alloc::<u64>(n)?);
        let (mine, max, scanned) = (s.alloc::<i64>(1)?, s.alloc::<i64>(1)?, s.alloc::<i64>(1)?);
        let (w_src, w_dest) = (s.alloc::<u64>(1)?, s.alloc::<u64>(1)?);
        let (pair_v, sum_v, bcast_v) = (threads.share(&pair), threads.share(&sum), threads.share(&bcast));
        let (one_v, every_v) = (threads.share(&one), threads.share(&every));
        let (mine_v, max_v, scanned_v) = (threads.share(&mine), threads.share(&max), threads.share(&scanned));
        let lent_all = threads.collectives(&mut all)?;
        let lent_evens = evens.as_mut().map(|t| threads.collectives(t)).transpose()?;
        let threads = &threads;
        std::thread::scope(|ts| -> Result<(), rshmem::Error> {
            let on_all = ts.spawn(move || -> Result<(), rshmem::Error> {
                // A view has no local writes: this PE's sources are put to itself.
                let ctx = threads.private_ctx(CtxOptions::default())?;
                let nn = n as u64;
                for r in 0..COLL_ROUNDS {
                    ctx.put(&pair_v, 0, &[me as u64 + r, 1], me)?;
                    ctx.put(&one_v, 0, &[me as u64 * 1000 + r], me)?;
                    ctx.quiet();
                    lent_all.reduce(rshmem::Op::Sum, &sum_v, &pair_v)?;
                    assert_eq!(
                        sum_v.to_vec(),
                        vec![nn * (nn - 1) / 2 + nn * r, nn],
                        "PE {me}: round {r}: sum"
                    );
                    let root = (r as usize) % n;
                    lent_all.broadcast(&bcast_v, &pair_v, root)?;
                    assert_eq!(bcast_v.to_vec(), vec![root as u64 + r, 1], "PE {me}: round {r}: broadcast");
                    lent_all.fcollect(&every_v, &one_v)?;
                    for k in 0..n {
                        assert_eq!(every_v.read(k), k as u64 * 1000 + r, "PE {me}: round {r}: fcollect {k}");
                    }
                    // No PE's next round may write into another's results before it read them.
                    lent_all.sync();
                }
                Ok(())
            });
            let on_evens = lent_evens.map(|lent| {
                ts.spawn(move || -> Result<(), rshmem::Error> {
                    let ctx = threads.private_ctx(CtxOptions::default())?;
                    let (tn, tme) = (lent.n_pes() as i64, lent.my_pe() as i64);
                    for r in 0..COLL_ROUNDS as i64 {
                        ctx.put(&mine_v, 0, &[tme + r], me)?;
                        ctx.quiet();
                        lent.reduce(rshmem::Op::Max, &max_v, &mine_v)?;
                        assert_eq!(max_v.read(0), tn - 1 + r, "PE {me}: round {r}: max over the evens");
                        lent.scan(rshmem::Scan::Inclusive, &scanned_v, &mine_v)?;
                        assert_eq!(
                            scanned_v.read(0),
                            tme * (tme + 1) / 2 + (tme + 1) * r,
                            "PE {me}: round {r}: scan"
                        );
                        lent.sync();
                    }
                    Ok(())
                })
            });
            for r in 0..COLL_ROUNDS {
                w_src.write(0, me as u64 + 2 * r);
                shmem.barrier_all();
                world.reduce(rshmem::Op::Sum, &w_dest, &w_src)?;
                let nn = n as u64;
                assert_eq!(w_dest.read(0), nn * (nn - 1) / 2 + 2 * r * nn, "PE {me}: round {r}: world sum");
            }
            on_all.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
            if let Some(h) = on_evens {
                h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
            }
            Ok(())
        })?;
        shmem.barrier_all();
        if me == 0 {
            println!("threads: {n} PEs x {THREADS} threads, {rounds} rounds");
            println!("threads: collectives from 3 threads on 3 teams, {COLL_ROUNDS} rounds");
        }
        println!("threads: PE {me} ok");
        Ok(())
    })
}
