//! Arrays in device memory through the Rust API, every result checked: the GPU heap asked for at
//! init, each PE's own elements written and read through the library, a ring of gets and puts
//! between PEs' device arrays, put-with-signal and a wait on a device signal word, `p`/`g`, a
//! fetch-add of every PE into one device word, a sum and a broadcast over the world team from
//! device array to device array, and an out-of-bounds put refused; then a GPU space of its own,
//! made and destroyed with a scope, and one of sizes that differ between PEs refused; then, at
//! `SHMEM_THREAD_MULTIPLE`, threads putting and adding into device arrays through shared views. Without a GPU
//! space it says so and exits 0, unless `RSHMEM_EXPECT_GPU=1` (tests on the stand-in driver),
//! which makes that a failure.
//!
//! `oshrun -np 2 target/release/examples/device`

use rshmem::{Cmp, Error, Op, Shmem, SignalOp, ThreadLevel};

const N: usize = 64;

fn main() -> Result<(), Error> {
    let shmem = Shmem::init_with_gpu_heap(ThreadLevel::Multiple)?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let Some(gpu) = shmem.gpu_space() else {
        assert!(std::env::var("RSHMEM_EXPECT_GPU").is_err(), "PE {me}: no GPU space");
        println!("device: PE {me}: no GPU space here (no GPU, or no GPU memheap): nothing to do");
        return Ok(());
    };
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let value = |pe: usize, i: usize| (pe * 1000 + i) as u64;
    shmem.scope(|s| {
        let x = s.alloc_device::<u64>(&gpu, N)?;
        let inbox = s.alloc_device::<u64>(&gpu, N)?;
        let sig = s.alloc_device::<u64>(&gpu, 1)?;
        let sum = s.alloc_device::<i64>(&gpu, 1)?;
        assert_eq!(x.to_vec(), vec![0; N], "PE {me}: a device array starts zeroed");

        // This PE's own elements, through the device.
        let mine: Vec<u64> = (0..N).map(|i| value(me, i)).collect();
        x.write_from(0, &mine)?;
        assert_eq!(x.to_vec(), mine, "PE {me}: own elements read back");
        shmem.barrier_all();

        // A get from the next PE's device array, and single elements both ways.
        let mut got = vec![0u64; N];
        shmem.get(&mut got, &x, 0, next)?;
        assert_eq!(got, (0..N).map(|i| value(next, i)).collect::<Vec<_>>(), "PE {me}: get from PE {next}");
        assert_eq!(shmem.g(&x, N - 1, prev)?, value(prev, N - 1), "PE {me}: g from PE {prev}");

        // A put with a signal into the next PE's inbox; wait for the previous PE's.
        shmem.put_signal(&inbox, 0, &mine, &sig, 0, 1, SignalOp::Add, next)?;
        assert_eq!(sig.signal_wait_until(0, Cmp::Ge, 1), 1, "PE {me}: one signal");
        assert_eq!(inbox.to_vec(), (0..N).map(|i| value(prev, i)).collect::<Vec<_>>(), "PE {me}: inbox");

        // Every PE adds into PE 0's word; `p` marks this PE's slot in the next PE's array.
        shmem.atomic_fetch_add(&sum, 0, me as i64 + 1, 0)?;
        shmem.p(&x, me, u64::MAX, next)?;
        shmem.barrier_all();
        if me == 0 {
            let want = (n * (n + 1) / 2) as i64;
            sum.wait_until(0, Cmp::Eq, want);
            assert_eq!(sum.to_vec(), vec![want], "PE 0: every PE's fetch-add");
        }
        assert_eq!(x.to_vec()[prev], u64::MAX, "PE {me}: PE {prev}'s p");

        // Collectives on the world team, device array to device array: a sum of every PE's
        // elements, and a broadcast of PE 0's (through the GPU space's host shadow, or device
        // to device where every PE maps every PE's device memory).
        let total = s.alloc_device::<u64>(&gpu, N)?;
        x.write_from(0, &mine)?;
        shmem.barrier_all();
        shmem.world().reduce(Op::Sum, &total, &x)?;
        let want: Vec<u64> = (0..N).map(|i| (0..n).map(|pe| value(pe, i)).sum()).collect();
        assert_eq!(total.to_vec(), want, "PE {me}: the sum of every PE's device array");
        shmem.world().broadcast(&inbox, &x, 0)?;
        assert_eq!(inbox.to_vec(), (0..N).map(|i| value(0, i)).collect::<Vec<_>>(), "PE {me}: broadcast");
        // The same on the GPU space's own team (SHMEM_DEVICE_TEAM_WORLD).
        let team = gpu.team();
        assert_eq!((team.my_pe(), team.n_pes()), (me, n), "PE {me}: the GPU space's team is every PE");
        total.write_from(0, &[0; N])?;
        team.sync();
        team.reduce(Op::Max, &total, &x)?;
        assert_eq!(
            total.to_vec(),
            (0..N).map(|i| value(n - 1, i)).collect::<Vec<_>>(),
            "PE {me}: max on the GPU team"
        );

        // Device addresses for the program's own kernels: its own copy's is the array's, and a
        // peer's, where mapped, is another.
        assert!(x.device_ptr(me)?.is_some(), "PE {me}: its own copy's device address");
        if let Some(p) = x.device_ptr(next)?.filter(|_| n > 1) {
            assert_ne!(Some(p), x.device_ptr(me)?, "PE {me}: PE {next}'s copy is elsewhere");
        }
        assert!(matches!(x.device_ptr(n), Err(Error::BadPe { .. })), "PE {me}: a PE outside the job");

        // Bounds are checked before the library is called.
        match shmem.put(&x, N - 1, &[1, 2], next) {
            Err(Error::OutOfBounds { .. }) => {}
            other => panic!("PE {me}: an out-of-bounds put gave {other:?}"),
        }
        shmem.barrier_all();
        Ok::<(), Error>(())
    })?;

    // A GPU space of its own, made and destroyed with a scope (its arrays freed first).
    shmem.scope(|s| {
        let space = s.create_gpu_space(1 << 20)?;
        let y = s.alloc_device::<u32>(&space, 256)?;
        shmem.put(&y, 0, &[me as u32 + 7; 256], next)?;
        shmem.barrier_all();
        assert_eq!(y.to_vec(), vec![prev as u32 + 7; 256], "PE {me}: a created GPU space");
        let z = s.alloc_device::<u32>(&space, 256)?;
        space.team().broadcast(&z, &y, n - 1)?;
        assert_eq!(
            z.to_vec(),
            vec![(n + n - 2) as u32 % n as u32 + 7; 256],
            "PE {me}: broadcast on the space's team"
        );
        match s.create_gpu_space(if me == 0 { 1 << 20 } else { 2 << 20 }) {
            Err(Error::Length { .. }) if n > 1 => {}
            Ok(_) if n == 1 => {}
            other => panic!("PE {me}: GPU spaces of different sizes gave {:?}", other.map(|sp| sp.caps())),
        }
        Ok::<(), Error>(())
    })?;
    // Threads (where the library provides SHMEM_THREAD_MULTIPLE): each puts into its own slot
    // of the next PE's device array and adds into PE 0's device counter through a shared view,
    // half of them on a context of their own.
    if let Ok(threads) = shmem.threads() {
        const THREADS: usize = 4;
        shmem.scope(|s| {
            let slots = s.alloc_device::<u64>(&gpu, THREADS)?;
            let count = s.alloc_device::<u64>(&gpu, 1)?;
            let (slots_v, count_v) = (threads.share_device(&slots), threads.share_device(&count));
            std::thread::scope(|ts| {
                let handles: Vec<_> = (0..THREADS)
                    .map(|t| {
                        let threads = &threads;
                        ts.spawn(move || -> Result<(), Error> {
                            let own = if t % 2 == 0 { Some(threads.ctx(Default::default())?) } else { None };
                            let put = |v: u64| match &own {
                                Some(c) => c.p(&slots_v, t, v, next),
                                None => threads.p(&slots_v, t, v, next),
                            };
                            put(value(me, t))?;
                            threads.atomic_add(&count_v, 0, 1u64, 0)?;
                            if let Some(c) = &own {
                                c.quiet();
                            }
                            Ok(())
                        })
                    })
                    .collect();
                handles.into_iter().try_for_each(|h| h.join().expect("a thread panicked"))
            })?;
            shmem.barrier_all();
            assert_eq!(
                slots.to_vec(),
                (0..THREADS).map(|t| value(prev, t)).collect::<Vec<_>>(),
                "PE {me}: threads' puts"
            );
            if me == 0 {
                count.wait_until(0, Cmp::Eq, (n * THREADS) as u64);
            }
            println!("device: PE {me}: {THREADS} threads put and added through shared views");
            Ok::<(), Error>(())
        })?;
    }
    println!("device: PE {me} ok");
    Ok(())
}
