//! One call of each collective on a team of a simulated job ([`super::job`]), the world or a
//! strided one, with what every PE sent for it: how a component's messages per PE grow with the team and the
//! hosts (issue 51's simulation of collectives). Every call's result is checked too, so a
//! count comes only from a call that worked.

use super::job::{run_job_on_hosts, sent, Sent, HEAP_BYTES};
use crate::{ScollOps, TeamDesc, DT_I64, OP_SUM, RC_OK, REDUCE_ALL};
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

/// The collectives measured, in the order they run (back to back, as a program may).
pub const CALLS: [&str; 5] = ["barrier", "broadcast", "fcollect", "reduce", "alltoall"];

/// What every PE sent for one collective.
#[derive(Clone, Debug)]
pub struct Traffic {
    pub call: &'static str,
    /// By team index.
    pub per_pe: Vec<Sent>,
}

impl Traffic {
    /// The most messages any PE sent.
    pub fn max_messages(&self) -> usize {
        self.per_pe.iter().map(Sent::messages).max().unwrap_or(0)
    }

    /// The most messages any PE sent to another host.
    pub fn max_off_host(&self) -> usize {
        self.per_pe.iter().map(|s| s.off_host).max().unwrap_or(0)
    }

    /// Messages of every PE together.
    pub fn total_messages(&self) -> usize {
        self.per_pe.iter().map(Sent::messages).sum()
    }

    /// Messages to other hosts, every PE together.
    pub fn total_off_host(&self) -> usize {
        self.per_pe.iter().map(|s| s.off_host).sum()
    }
}

/// The broadcast's root: neither end of the team, so the tree is not the aligned one.
pub fn root_of(n: usize) -> c_int {
    (n / 3) as c_int
}

fn value(pe: usize) -> i64 {
    pe as i64 * 7 + 1
}

fn block(from: usize, to: usize) -> i64 {
    (from * 100_003 + to) as i64
}

/// [`team_traffic`] on the world team.
pub fn world_traffic(ops: &ScollOps, hosts: &[c_int], flags: u32) -> Result<Vec<Traffic>, String> {
    team_traffic(ops, hosts, flags, (0, 1, hosts.len() as c_int))
}

/// Run [`CALLS`] once each on the team `(start, stride, size)` (world PEs `start + i * stride`;
/// any stride but 0) of a job whose PE `i` is on host `hosts[i]`, through `ops`, whose team
/// description gets `flags`. Returns the traffic of each call by team index, or what went
/// wrong (a component that declined or failed, a wrong result), by PE.
pub fn team_traffic(
    ops: &ScollOps,
    hosts: &[c_int],
    flags: u32,
    (start, stride, size): (c_int, c_int, c_int),
) -> Result<Vec<Traffic>, String> {
    let n = size as usize;
    let index_of = |pe: c_int| {
        let off = pe - start;
        (off % stride == 0 && (0..size).contains(&(off / stride))).then_some(off / stride)
    };
    if (0..size).any(|i| !(0..hosts.len() as c_int).contains(&(start + i * stride))) {
        return Err(format!("team ({start}, {stride}, {size}) is not inside {} PEs", hosts.len()));
    }
    let scratch = ops.scratch_needed.div_ceil(64) * 64;
    // The buffers after the scratch: the broadcast's, the fcollect's (n blocks), the
    // reduction's source and result, the alltoall's source and result (n blocks each).
    let bcast = scratch;
    let fcollect = bcast + 64;
    let reduce = fcollect + (n * 8).div_ceil(64) * 64;
    let a2a_src = reduce + 64;
    let a2a_dest = a2a_src + (n * 8).div_ceil(64) * 64;
    if a2a_dest + n * 8 > HEAP_BYTES {
        return Err(format!("{n} PEs do not fit the simulated heap"));
    }
    let table: Mutex<Vec<Vec<Sent>>> = Mutex::new(vec![vec![Sent::default(); n]; CALLS.len()]);
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    run_job_on_hosts(hosts, |pe, heap| {
        let Some(index) = index_of(pe) else { return };
        let me = index as usize;
        let fail =
            |what: String| errors.lock().unwrap_or_else(|e| e.into_inner()).push(format!("PE {pe}: {what}"));
        let at = |off: usize| heap.wrapping_add(off);
        let desc = TeamDesc {
            id: 0,
            size,
            my_index: index,
            start,
            stride,
            scratch: heap.cast(),
            scratch_len: scratch,
            flags,
        };
        // SAFETY: a valid description; enable copies it.
        let t = unsafe { (ops.enable)(&desc) };
        if t.is_null() {
            // Every PE must decide alike; the caller compares the errors.
            return fail("the component declined the team".into());
        }
        // SAFETY: our own heap: the sources, each within the heap (checked above).
        unsafe {
            *(at(bcast) as *mut i64) = if index == root_of(n) { value(me) } else { -1 };
            *(at(reduce) as *mut i64) = value(me);
            for j in 0..n {
                *(at(a2a_src) as *mut i64).add(j) = block(me, j);
            }
        }
        let mut counts = [Sent::default(); CALLS.len()];
        for (k, call) in CALLS.iter().enumerate() {
            let before = sent();
            // SAFETY: the state from enable; symmetric buffers of the sizes laid out above.
            let rc = unsafe {
                match *call {
                    "barrier" => (ops.barrier.unwrap())(t),
                    "broadcast" => {
                        (ops.broadcast.unwrap())(t, at(bcast).cast(), at(bcast).cast(), 8, root_of(n))
                    }
                    "fcollect" => (ops.collect.unwrap())(t, at(fcollect).cast(), at(reduce).cast(), 8, 1),
                    "reduce" => (ops.reduce.unwrap())(
                        t,
                        at(reduce + 8).cast(),
                        at(reduce).cast::<c_void>(),
                        1,
                        DT_I64,
                        OP_SUM,
                        REDUCE_ALL,
                    ),
                    _ => (ops.alltoall.unwrap())(t, at(a2a_dest).cast(), at(a2a_src).cast(), 8, 1, 1, 1),
                }
            };
            counts[k] = sent().since(&before);
            if rc != RC_OK {
                fail(format!("{call} returned {rc}"));
            }
        }
        // SAFETY: every call has returned here, so this PE's results are complete.
        unsafe {
            let got = |off: usize, j: usize| *(at(off) as *const i64).add(j);
            if got(bcast, 0) != value(root_of(n) as usize) {
                fail(format!("broadcast gave {}", got(bcast, 0)));
            }
            if let Some(j) = (0..n).find(|&j| got(fcollect, j) != value(j)) {
                fail(format!("fcollect block {j} is {}", got(fcollect, j)));
            }
            let sum: i64 = (0..n).map(value).sum();
            if got(reduce, 1) != sum {
                fail(format!("the sum is {}, not {sum}", got(reduce, 1)));
            }
            if let Some(j) = (0..n).find(|&j| got(a2a_dest, j) != block(j, me)) {
                fail(format!("alltoall block from {j} is {}", got(a2a_dest, j)));
            }
        }
        // The next job reuses nothing of this one, but the component's state goes.
        // SAFETY: the state from enable, not used after this.
        unsafe { (ops.disable)(t) };
        let mut table = table.lock().unwrap_or_else(|e| e.into_inner());
        for (k, c) in counts.into_iter().enumerate() {
            table[k][me] = c;
        }
    });
    let errors = errors.into_inner().unwrap_or_else(|e| e.into_inner());
    if !errors.is_empty() {
        return Err(errors.join("; "));
    }
    let table = table.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(CALLS.iter().zip(table).map(|(call, per_pe)| Traffic { call, per_pe }).collect())
}

/// ceil(log2 n): the rounds of a dissemination over `n` (0 for 1).
pub fn log2_ceil(n: usize) -> usize {
    (usize::BITS - n.saturating_sub(1).leading_zeros()) as usize
}
