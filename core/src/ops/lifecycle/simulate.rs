//! Start-up's exchanges through the bootstrap for jobs of up to 65 536 PEs, simulated in one
//! thread (issue 51, item 3): every PE publishes what start-up publishes, a stepped loopback
//! job fences, and a sample of PEs run the real reading phases (`peers::agree`, the segment
//! records `peers::read_at_start` names, `layout::publish`/`learn_local`/`learn_hosts`) against
//! it. What each
//! sampled PE sent and read is counted, so the figures say how start-up's bootstrap traffic
//! per PE grows with the job. What does not go through the bootstrap (UCX endpoints, the
//! relay's descriptors, collectives) is not in these counts.

use super::{layout, peers};
use rshmem_boot::loopback::{Counts, Loopback};
use rshmem_boot::Bootstrap;

/// The settings' fingerprint of every PE (its size is what matters here).
const AGREED: &str = "SHMEM_SYMMETRIC_SIZE=1073741824\nSHMEM_MCA_scoll_shm_bcast=auto\n";

/// One simulated start-up of a job whose PEs are on `hosts[pe]`, mapping same-host peers,
/// under a launcher that gives a map of its hosts (`map`) or not; returns each sampled PE's
/// traffic and its layout's table of hosts.
fn start_up(hosts: &[i32], sample: &[usize], map: bool) -> Vec<(Counts, Vec<i32>)> {
    let job = if map { Loopback::stepped(hosts) } else { Loopback::stepped_without_map(hosts) };
    let n = job.len() as i32;
    // What `memory::Memory::create` publishes: the heap's and the global data's records (a
    // 24-byte header, a 16-byte attach ticket, a 140-byte packed key: sizes as spml ucx's),
    // the agreed settings, and the host leader's relay ticket.
    let record = vec![7u8; 24 + 16 + 140];
    for b in &job {
        b.put("seg.0", &record).unwrap();
        b.put("seg.1", &record).unwrap();
        b.put(crate::config::agree::KEY, AGREED.as_bytes()).unwrap();
        if crate::symm::relay::leader(b, b.rank(), n) == b.rank() {
            b.put(crate::symm::relay::KEY, &[0u8; 48]).unwrap();
        }
    }
    job.iter().for_each(|b| b.fence().unwrap());
    for &pe in sample {
        let b = &job[pe];
        peers::agree(b, AGREED).unwrap();
        for p in (0..n).filter(|&p| peers::read_at_start(b, true, p)) {
            for seg in 0..2 {
                assert!(b.get(p, &format!("seg.{seg}")).unwrap().is_some());
            }
        }
    }
    let mine: Vec<layout::Mine> = job
        .iter()
        .map(|b| layout::publish(b, Vec::new(), Some(vec![0xff]), 0x7f00_0000_0000).unwrap())
        .collect();
    job.iter().for_each(|b| b.fence().unwrap());
    // The sampled PEs learn their host (and put its summary if they lead it); the other
    // hosts' lowest PEs put what `learn_local` would (running it on each would cost the
    // simulation O(N) per host: what every real PE spends once, on its own).
    let mut sample = sample.to_vec();
    sample.sort_unstable();
    sample.dedup();
    let mut locals: Vec<(usize, layout::Local)> = Vec::new();
    for &pe in &sample {
        locals.push((pe, layout::learn_local(&job[pe], &mine[pe]).unwrap()));
    }
    if layout::needs_summaries(&job[0]) {
        for b in job.iter().filter(|b| b.host_leader() == b.rank() && !sample.contains(&(b.rank() as usize)))
        {
            let s = layout::Summary::of(std::iter::once(mine[b.rank() as usize].record));
            layout::put_summary(b, s).unwrap();
        }
    }
    if layout::needs_summaries(&job[0]) {
        job.iter().for_each(|b| b.fence().unwrap());
    }
    locals
        .into_iter()
        .map(|(pe, local)| {
            let l = layout::learn_hosts(&job[pe], local).unwrap();
            (job[pe].counts(), l.of)
        })
        .collect()
}

/// `n` PEs dealt out to hosts of `per` PEs in blocks (the last host may have fewer).
fn blocks(n: usize, per: usize) -> Vec<i32> {
    (0..n).map(|pe| (pe / per) as i32).collect()
}

/// Bootstrap lookups and bytes per PE as the job grows, 64 PEs per host. With the launcher's
/// map of the hosts, the agreement (one lookup), the segment records (two per PE of the
/// host), the host's records and masks stay flat, and the other hosts' summaries grow with
/// the hosts (one each): N / 64 here. Without a map, every PE's host record is read: one
/// lookup per PE of the job, the fallback.
#[test]
fn start_ups_lookups_per_pe_grow_only_with_the_hosts() {
    let per = 64;
    let mut rows = Vec::new();
    for n in [1024usize, 4096, 16384, 65536] {
        let sample = [1, n / 2, n - 1];
        let hosts = n.div_ceil(per);
        let out = start_up(&blocks(n, per), &sample, true);
        for (c, _) in &out {
            // agreement 1 + segment records 2 per PE of the host + a host record and a CPU
            // mask per other PE of the host + a summary per other host.
            let expected = 1 + 2 * per + 2 * (per - 1) + (hosts - 1);
            assert_eq!(c.gets as usize, expected, "{n} PEs: {c:?}");
            assert_eq!(c.fences, 3);
            // This PE's own records and settings, host record and mask (and a leader's ticket
            // and summary).
            assert!(c.puts <= 7, "{c:?}");
        }
        let (without, _) = &start_up(&blocks(n, per), &[1], false)[0];
        assert_eq!(without.gets as usize, 1 + 2 * per + (n - 1) + (per - 1) + (hosts - 1), "{n} PEs");
        let (c, _) = &out[2];
        rows.push(format!(
            "| {n} | {} | {} | {:.1} | {} | {} |",
            c.gets,
            c.bytes_got,
            c.bytes_got as f64 / n as f64,
            c.puts,
            without.gets,
        ));
    }
    println!("| PEs | lookups per PE | bytes read per PE | bytes read per PE of the job | puts per PE | lookups per PE without a map |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in rows {
        println!("{r}");
    }
}

/// At awkward sizes, with hosts of uneven size and PEs interleaved over them, every sampled PE
/// learns the same table of hosts, each PE's host being the lowest PE on it.
#[test]
fn every_pe_learns_one_table_of_hosts_at_awkward_sizes() {
    for n in [1usize, 2, 3, 5, 14, 127, 128, 129, 166, 255, 256, 257, 1000, 4096] {
        for hosts in [blocks(n, 7), (0..n).map(|pe| (pe % 3) as i32).collect::<Vec<_>>(), vec![0; n]] {
            let sample: Vec<usize> = [0, n / 2, n - 1].into_iter().collect();
            let lowest = |pe: usize| (0..n).find(|&q| hosts[q] == hosts[pe]).unwrap() as i32;
            for map in [true, false] {
                for (_, of) in &start_up(&hosts, &sample, map) {
                    assert_eq!(*of, (0..n).map(lowest).collect::<Vec<_>>(), "{n} PEs on {hosts:?}");
                }
            }
        }
    }
}
