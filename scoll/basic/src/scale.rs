//! How many messages each member sends per collective as the team grows, on simulated jobs
//! of awkward sizes (issue 51): barrier, broadcast, fcollect and reduction in O(log2 n)
//! messages per member, and alltoall in the n - 1 puts its data needs. The algorithms of the
//! job's default tuning, which every member chooses alike (it depends only on the call).

use crate::tests::ops;
use rshmem_plugin_api::testing::job::Sent;
use rshmem_plugin_api::testing::traffic::{log2_ceil, root_of, team_traffic, world_traffic, Traffic};

/// Every bound the algorithms promise, for a team of `n` on one host.
fn check(n: usize, calls: &[Traffic]) -> Vec<String> {
    let l = log2_ceil(n);
    let mut bad = Vec::new();
    let mut expect = |ok: bool, what: String| {
        if !ok {
            bad.push(format!("n = {n}: {what}"));
        }
    };
    for c in calls {
        for (pe, s) in c.per_pe.iter().enumerate() {
            let Sent { signals, puts, gets, bytes, .. } = *s;
            match c.call {
                // One signal per round, nothing else.
                "barrier" => {
                    expect(*s == Sent { signals: l, ..Sent::default() }, format!("barrier PE {pe}: {s:?}"))
                }
                // A put and a signal per child; at most ceil(log2 n) children (the root's).
                "broadcast" => {
                    let kids = puts;
                    expect(signals == kids && gets == 0 && kids <= l, format!("broadcast PE {pe}: {s:?}"));
                    if pe as i32 == root_of(n) {
                        expect(kids == l, format!("broadcast root {pe} has {kids} children, not {l}"));
                    }
                }
                // Bruck: a signal per round, one or two puts per round (two where the run
                // wraps), n - 1 blocks in all.
                "fcollect" => expect(
                    signals == l && puts >= l && puts <= 2 * l && gets == 0 && bytes == (n - 1) * 8,
                    format!("fcollect PE {pe}: {s:?}"),
                ),
                // Tree: a get per child, a signal to the parent, then the broadcast's puts and
                // signals from member 0.
                "reduce" => {
                    expect(gets <= l && puts <= l && signals <= l + 1, format!("reduce PE {pe}: {s:?}"))
                }
                // A put to every other member, then the barrier's rounds.
                _ => expect(
                    puts == n - 1 && gets == 0 && signals == l && bytes == (n - 1) * 8,
                    format!("alltoall PE {pe}: {s:?}"),
                ),
            }
        }
    }
    // The broadcast reaches everyone once.
    if let Some(b) = calls.iter().find(|c| c.call == "broadcast") {
        let puts: usize = b.per_pe.iter().map(|s| s.puts).sum();
        if puts != n - 1 {
            bad.push(format!("n = {n}: the broadcast made {puts} puts, not {}", n - 1));
        }
    }
    bad
}

#[test]
fn messages_per_member_grow_as_log2_n_at_awkward_sizes() {
    let mut bad = Vec::new();
    for n in [1, 2, 3, 5, 14, 127, 128, 129, 166, 255, 256, 257, 1000] {
        match world_traffic(ops(), &vec![0; n], 0) {
            Ok(calls) => bad.extend(check(n, &calls)),
            Err(e) => bad.push(format!("n = {n}: {e}")),
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Teams split from a job of 1 000 PEs with odd and negative strides, of awkward sizes: the
/// same bounds, by team index.
#[test]
fn strided_teams_keep_the_bounds() {
    let mut bad = Vec::new();
    for team in [(1, 3, 333), (999, -7, 143), (4, 2, 166), (0, 997, 2), (500, 1, 1), (2, 5, 129)] {
        match team_traffic(ops(), &[0; 1000], 0, team) {
            Ok(calls) => bad.extend(check(team.2 as usize, &calls)),
            Err(e) => bad.push(format!("team {team:?}: {e}")),
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The figures of docs/performance.md ("Collectives' messages per PE, by simulation"): run
/// with `cargo test -p rshmem-scoll-basic -- --ignored --nocapture table`.
#[test]
#[ignore = "prints the table for the docs (thousands of threads; about 90 s)"]
fn table_of_messages_per_member() {
    println!("| PEs | {} |", rshmem_plugin_api::testing::traffic::CALLS.join(" | "));
    for n in [16, 64, 256, 1024, 2048, 4096] {
        let calls = world_traffic(ops(), &vec![0; n], 0).expect("the collectives work");
        let bad = check(n, &calls);
        assert!(bad.is_empty(), "{bad:#?}");
        let cells: Vec<String> = calls.iter().map(|c| format!("{}", c.max_messages())).collect();
        println!("| {n} | {} |", cells.join(" | "));
    }
}
