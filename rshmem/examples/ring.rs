//! A ring: each PE passes a token to the next one, `ROUNDS` times around, with put-with-signal
//! and a wait on the signal word; every PE checks what it received, and PE 0 prints the time
//! per hop. Run with `oshrun -np 4 target/release/examples/ring [ROUNDS]`. With
//! `RSHMEM_RING_PANIC_PE=k`, PE k panics in the first round instead (the job must end, not hang).

use rshmem::{Cmp, Shmem, SignalOp};

fn main() -> Result<(), rshmem::Error> {
    let shmem = Shmem::init()?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let rounds: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let next = (me + 1) % n;
    let panic_pe: Option<usize> = std::env::var("RSHMEM_RING_PANIC_PE").ok().and_then(|v| v.parse().ok());
    shmem.scope(|s| {
        let token = s.alloc::<u64>(1)?;
        let arrived = s.alloc::<u64>(1)?;
        let start = std::time::Instant::now();
        for round in 1..=rounds {
            if me == 0 {
                shmem.put_signal(&token, 0, &[round * 1000], &arrived, 0, round, SignalOp::Set, next)?;
                arrived.signal_wait_until(0, Cmp::Eq, round);
            } else {
                if panic_pe == Some(me) {
                    panic!("PE {me} panics as asked (RSHMEM_RING_PANIC_PE)");
                }
                arrived.signal_wait_until(0, Cmp::Eq, round);
                let got = token.read(0);
                assert_eq!(got, round * 1000 + me as u64 - 1, "PE {me} round {round}");
                shmem.put_signal(&token, 0, &[got + 1], &arrived, 0, round, SignalOp::Set, next)?;
            }
        }
        if me == 0 {
            assert_eq!(token.read(0), rounds * 1000 + n as u64 - 1);
            let hop = start.elapsed().as_secs_f64() / (rounds as f64 * n as f64);
            println!("ring: {n} PEs, {rounds} rounds, {:.2} us per hop", hop * 1e6);
        }
        shmem.barrier_all();
        println!("ring: PE {me} ok");
        Ok(())
    })
}
