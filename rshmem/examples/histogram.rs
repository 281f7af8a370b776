//! tests/bench/histogram.c through the Rust API: every PE makes `HIST_N` (default 200,000)
//! atomic increments of counters picked at random in a table spread over all PEs (`HIST_T`
//! counters per PE, default 1,000), then checks its own counters against the counts it expects
//! from replaying every PE's random stream. Prints the update rate of the whole job (the C
//! program's `RESULT` line) and `histogram: PE <me> ok`.

use rshmem::Shmem;
use std::time::Instant;

/// xorshift64*: the same stream as the C program's.
fn next_rand(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545F4914F6CDD1D)
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() -> Result<(), rshmem::Error> {
    let shmem = Shmem::init()?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (updates, per_pe) = (env("HIST_N", 200_000), env("HIST_T", 1000));
    let total = per_pe * n as u64;
    shmem.scope(|s| {
        let table = s.alloc::<i64>(per_pe as usize)?;
        shmem.barrier_all();
        let t0 = Instant::now();
        let mut r = 0x9E3779B97F4A7C15u64.wrapping_mul(me as u64 + 1);
        for _ in 0..updates {
            let idx = next_rand(&mut r) % total;
            shmem.atomic_inc(&table, (idx % per_pe) as usize, (idx / per_pe) as usize)?;
        }
        shmem.barrier_all();
        let us = t0.elapsed().as_secs_f64() * 1e6;
        if me == 0 {
            println!("RESULT histogram_updates_per_s {n} {:.6} M", updates as f64 * n as f64 / us);
        }
        let mut want = vec![0i64; per_pe as usize];
        for pe in 0..n as u64 {
            let mut r = 0x9E3779B97F4A7C15u64.wrapping_mul(pe + 1);
            for _ in 0..updates {
                let idx = next_rand(&mut r) % total;
                if idx / per_pe == me as u64 {
                    want[(idx % per_pe) as usize] += 1;
                }
            }
        }
        assert_eq!(table.to_vec(), want, "PE {me}: the counters differ from the replayed streams");
        println!("histogram: PE {me} ok");
        Ok(())
    })
}
