//! Threads of every PE at `SHMEM_THREAD_MULTIPLE`: each PE runs `THREADS` scoped threads that
//! all add to one counter on every PE (atomics), put a value each into the next PE's slots
//! with a signal, and wait for the previous PE's threads' signals. Even threads use a context
//! made by the main thread and moved to them, odd threads a private context of their own, and
//! every thread also uses the default context; on the even PEs one more thread adds through a
//! context over the team of even PEs. Every PE then checks its counter and slots.
//! Run with `oshrun -np 4 target/release/examples/threads [ROUNDS]`.

use rshmem::{Cmp, Ctx, CtxOptions, Shmem, SignalOp, ThreadLevel};

const THREADS: usize = 4;

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
        let evens = s.split_strided(&shmem.world(), 0, 2, n.div_ceil(2))?;
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
        if me == 0 {
            println!("threads: {n} PEs x {THREADS} threads, {rounds} rounds");
        }
        println!("threads: PE {me} ok");
        Ok(())
    })
}
