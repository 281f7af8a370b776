//! tests/bench/hot_ops.c through the safe API, to show what the checks and types cost: 8-byte
//! `put`, `get`, `p` and `atomic_fetch_add` from PE 0 to PE 1, `HOT_N` calls each (default
//! 2,000,000), and `barrier_all` on every PE (`HOT_N / 20` calls), the second of two rounds
//! reported in nanoseconds per call, in the C program's `RESULT` lines.

use rshmem::Shmem;
use std::time::Instant;

fn main() -> Result<(), rshmem::Error> {
    let shmem = Shmem::init()?;
    let n: u64 = std::env::var("HOT_N").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000_000);
    let me = shmem.my_pe();
    shmem.scope(|s| {
        let sym = s.alloc::<i64>(8)?;
        let mut local = [42i64];
        shmem.barrier_all();
        let mut ns = [0f64; 5];
        for _round in 0..2 {
            if me == 0 && shmem.n_pes() > 1 {
                let t0 = Instant::now();
                for _ in 0..n {
                    shmem.put(&sym, 0, &local, 1)?;
                }
                let t1 = Instant::now();
                for _ in 0..n {
                    shmem.get(&mut local, &sym, 0, 1)?;
                }
                let t2 = Instant::now();
                for i in 0..n {
                    shmem.p(&sym, 1, i as i64, 1)?;
                }
                let t3 = Instant::now();
                for _ in 0..n {
                    local[0] += shmem.atomic_fetch_add(&sym, 2, 1, 1)?;
                }
                let t4 = Instant::now();
                for (k, (a, b)) in [(t0, t1), (t1, t2), (t2, t3), (t3, t4)].into_iter().enumerate() {
                    ns[k] = (b - a).as_secs_f64() * 1e9 / n as f64;
                }
            }
            shmem.barrier_all();
            let nb = (n / 20).max(1);
            let t = Instant::now();
            for _ in 0..nb {
                shmem.barrier_all();
            }
            ns[4] = t.elapsed().as_secs_f64() * 1e9 / nb as f64;
        }
        if me == 0 {
            for (name, v) in
                ["hot_put", "hot_get", "hot_p", "hot_fetch_add", "hot_barrier_all"].iter().zip(ns)
            {
                println!("RESULT {name} 8 {v:.6} ns");
            }
        }
        std::hint::black_box(local);
        Ok(())
    })
}
