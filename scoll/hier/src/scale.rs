//! How many messages cross hosts per collective as the hosts grow, on simulated jobs with
//! uneven and interleaved hosts (issue 51): one leader per host talks to other hosts, in
//! ceil(log2 hosts) steps for barrier and broadcast and about as many for reductions, one
//! message per other host (per run of consecutive members) for fcollect, and one per member
//! of the other hosts (per run) for alltoall, whose data needs that; every
//! member decides alike whether the component serves the team.

use crate::tests::ops;
use crate::{MAX_HOSTS, MAX_LOCAL};
use rshmem_plugin_api::testing::traffic::{log2_ceil, team_traffic, world_traffic, Traffic};
use rshmem_plugin_api::TEAM_HOSTS_MAPPED;
use std::ffi::c_int;

/// Hosts of `sizes[h]` PEs each, PEs numbered host by host.
fn blocks(sizes: &[usize]) -> Vec<c_int> {
    sizes.iter().enumerate().flat_map(|(h, &k)| std::iter::repeat_n(h as c_int, k)).collect()
}

/// `n` PEs dealt round-robin over `hosts` hosts.
fn dealt(n: usize, hosts: usize) -> Vec<c_int> {
    (0..n).map(|i| (i % hosts) as c_int).collect()
}

/// Runs of consecutive PEs on host `h`.
fn runs_on(layout: &[c_int], h: c_int) -> usize {
    (0..layout.len()).filter(|&i| layout[i] == h && (i == 0 || layout[i - 1] != h)).count()
}

/// Every bound the algorithms promise on `layout`.
fn check(layout: &[c_int], calls: &[Traffic]) -> Vec<String> {
    let hosts = {
        let mut h = layout.to_vec();
        h.sort_unstable();
        h.dedup();
        h.len()
    };
    let lh = log2_ceil(hosts);
    let leader = |pe: usize| layout.iter().position(|h| *h == layout[pe]) == Some(pe);
    let mut bad = Vec::new();
    for c in calls {
        for (pe, s) in c.per_pe.iter().enumerate() {
            let name = format!("{hosts} hosts, {} PEs, {} PE {pe}: {s:?}", layout.len(), c.call);
            if !leader(pe) {
                // Members only load and store on their host.
                if s.messages() != 0 {
                    bad.push(name);
                }
                continue;
            }
            // What one leader may send to other hosts: every run of its host's members goes
            // to every other host in fcollect, and to every member of the other hosts in
            // alltoall (one put per run and receiving member, the leader's with the signal).
            let group = layout.iter().filter(|h| **h == layout[pe]).count();
            let runs = runs_on(layout, layout[pe]);
            let most = match c.call {
                "barrier" | "broadcast" => lh,
                "reduce" => lh + 2,
                "fcollect" => (hosts - 1) * runs,
                _ => (layout.len() - group) * runs,
            };
            let exact = c.call == "barrier" && s.off_host != lh;
            if s.off_host > most || exact || s.messages() != s.off_host {
                bad.push(format!("{name} (at most {most} to other hosts, and nothing else)"));
            }
        }
    }
    bad
}

#[test]
fn leaders_send_log2_hosts_messages_on_uneven_and_interleaved_hosts() {
    let mut uneven = vec![1, 5, 3, 1, 8, 2, 1, 14, 1, 2, 7, 1, 1, 3];
    let layouts = vec![
        blocks(&[1, 1]),
        blocks(&[5, 1, 8]),
        blocks(&uneven),
        blocks(&[2; 64]),
        blocks(&(0..64).map(|h| 1 + h % 4).collect::<Vec<_>>()),
        blocks(&[64, 1, 64]),
        dealt(127, 5),
        dealt(166, 14),
        dealt(257, 64),
        // At the limits: a host of MAX_LOCAL PEs beside a small one, and MAX_HOSTS hosts.
        blocks(&[MAX_LOCAL, 2]),
        blocks(&[1; MAX_HOSTS]),
        dealt(3 * MAX_HOSTS, MAX_HOSTS),
    ];
    let mut bad = Vec::new();
    for layout in &layouts {
        match world_traffic(ops(), layout, TEAM_HOSTS_MAPPED) {
            Ok(calls) => bad.extend(check(layout, &calls)),
            Err(e) => bad.push(format!("{} PEs: {e}", layout.len())),
        }
    }
    // Beyond its limits the component declines, on every member alike (basic serves).
    uneven.push(MAX_LOCAL + 1);
    for layout in [blocks(&uneven), blocks(&[1; MAX_HOSTS + 1]), dealt(300, MAX_HOSTS + 1)] {
        match world_traffic(ops(), &layout, TEAM_HOSTS_MAPPED) {
            Ok(_) => bad.push(format!("{} PEs: served beyond the limits", layout.len())),
            Err(e) => {
                let declined = e.split("; ").filter(|m| m.ends_with("declined the team")).count();
                if declined != layout.len() {
                    bad.push(format!("{} PEs: not every PE declined: {e}", layout.len()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Teams split with odd and negative strides from jobs on uneven and interleaved hosts: the
/// same bounds over the team's own hosts (`check` takes the host of each team index).
#[test]
fn strided_teams_across_hosts_keep_the_bounds() {
    let mut bad = Vec::new();
    let jobs = [blocks(&[5, 1, 8, 3, 14, 2, 7, 9]), dealt(256, 6), blocks(&[1; 64])];
    for job in &jobs {
        let n = job.len() as c_int;
        for (start, stride) in [(1, 3), (n - 1, -5), (0, 7), (2, 2)] {
            let size = if stride > 0 { (n - 1 - start) / stride + 1 } else { start / -stride + 1 };
            let team: Vec<c_int> = (0..size).map(|i| job[(start + i * stride) as usize]).collect();
            let hosts = {
                let mut h = team.clone();
                h.sort_unstable();
                h.dedup();
                h.len()
            };
            let served = hosts >= 2 && size >= 2;
            match team_traffic(ops(), job, TEAM_HOSTS_MAPPED, (start, stride, size)) {
                Ok(calls) if served => bad.extend(check(&team, &calls)),
                Ok(_) => bad.push(format!("team ({start}, {stride}, {size}) on one host was served")),
                Err(e) if served => bad.push(format!("team ({start}, {stride}, {size}): {e}")),
                Err(_) => {}
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The figures of docs/performance.md ("Collectives' messages per PE, by simulation"): run
/// with `cargo test -p rshmem-scoll-hier -- --ignored --nocapture table`.
#[test]
#[ignore = "prints the table for the docs"]
fn table_of_messages_across_hosts() {
    let names = rshmem_plugin_api::testing::traffic::CALLS;
    println!("| hosts x PEs | {} |", names.join(" | "));
    for (hosts, per) in [(2, 8), (4, 8), (8, 8), (16, 8), (32, 8), (64, 8), (64, 64)] {
        let layout = blocks(&vec![per; hosts]);
        let calls = world_traffic(ops(), &layout, TEAM_HOSTS_MAPPED).expect("the collectives work");
        let bad = check(&layout, &calls);
        assert!(bad.is_empty(), "{bad:#?}");
        let cells: Vec<String> =
            calls.iter().map(|c| format!("{} ({})", c.max_off_host(), c.total_off_host())).collect();
        println!("| {hosts} x {per} | {} |", cells.join(" | "));
    }
}
