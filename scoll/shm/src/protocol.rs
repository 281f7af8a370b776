//! The synchronisation of every algorithm, apart from the data it moves: which signal words a
//! member writes and waits on, in which order, around the moments it writes or reads memory
//! other members see (given to these functions as closures). `algo` runs them over the
//! peers' mappings (`Team`); `tests` runs the same functions over loom's atomics and cells,
//! against every interleaving of 2 members, so that a missing wait, a buffer reused too
//! early or a too weak ordering fails a unit test (loom reports a data race on a buffer, or a
//! member reads a wrong value).
//!
//! The rules they keep (docs/architecture.md, "Memory model"):
//! - a signal word is written by one member only, with call numbers, which only grow, so
//!   "word >= e" means "done in call e or later" and no word is ever reset;
//! - data is written before its signal (release, and a full fence where a large copy may
//!   use non-temporal stores: `publish`), and read after the wait that saw it (acquire);
//! - memory a member lent to a call (its source, its staging buffer, its `dest` chunk others
//!   copy from) is written again only after every reader said it has finished (ACK), or
//!   after a wait that needs a signal every reader sends after its reads.

use std::cell::Cell;
use std::ffi::c_int;

use crate::layout::{ACK, MID, SIG};

/// The signal words as one member sees them.
pub trait Words {
    fn n(&self) -> c_int;
    fn me(&self) -> c_int;
    /// Tell member `to` that this member reached call `e` on array `arr` (release).
    fn signal(&self, to: c_int, arr: usize, e: u64);
    /// Wait until member `from` reached `e` on `arr` (acquire).
    fn wait(&self, arr: usize, from: c_int, e: u64);
    /// `wait`, for a member that waits for no one before it signals (a pushing broadcast's
    /// root): a wait that may spin where the member runs on another CPU.
    fn wait_root(&self, arr: usize, from: c_int, e: u64) {
        self.wait(arr, from, e)
    }
    /// Wait for every other member on `arr`.
    fn wait_all(&self, arr: usize, e: u64) {
        for j in others(self.n(), self.me()) {
            self.wait(arr, j, e);
        }
    }
    /// Signal every other member on `arr`.
    fn signal_all(&self, arr: usize, e: u64) {
        for j in others(self.n(), self.me()) {
            self.signal(j, arr, e);
        }
    }
    /// Order the data stores before the signals that follow.
    fn publish(&self);
}

/// Member indices other than `me`, starting after it (so that members do not all address the
/// same peer first).
pub fn others(n: c_int, me: c_int) -> impl Iterator<Item = c_int> {
    (1..n).map(move |k| (me + k) % n)
}

/// Flat (every member signals every member) or dissemination (round k: signal the member
/// 2^k ahead, wait for the one 2^k behind; each sender writes a distinct word of the
/// receiver, so the rounds cannot be confused).
pub fn barrier(w: &impl Words, e: u64, flat: bool) {
    if flat {
        w.signal_all(SIG, e);
        w.wait_all(SIG, e);
        return;
    }
    let (n, me) = (w.n(), w.me());
    let mut d = 1;
    while d < n {
        w.signal((me + d) % n, SIG, e);
        w.wait(SIG, (me - d).rem_euclid(n), e);
        d *= 2;
    }
}

/// Broadcast. Pushed: the root writes every other member's `dest` (`send`), then signals.
/// Pulled: the root signals, the members copy from its source (`pull`) and acknowledge, and
/// the root returns (its source free again) once all have. The root's own copy (`own`) comes
/// last: its `dest` may overlap the source the members read.
pub fn broadcast(
    w: &impl Words,
    e: u64,
    root: c_int,
    push: bool,
    send: impl FnOnce(),
    own: impl FnOnce(),
    pull: impl FnOnce(),
) {
    if w.me() == root {
        if push {
            send();
            w.publish();
            w.signal_all(SIG, e);
        } else {
            w.signal_all(SIG, e);
            w.wait_all(ACK, e);
        }
        own();
    } else if push {
        w.wait_root(SIG, root, e);
    } else {
        w.wait(SIG, root, e);
        pull();
        w.signal(root, ACK, e);
    }
}

/// collect's offsets: this member writes its size into every other member's SIZE word
/// (`tell`), signals, and reads its predecessors' (`read(j)`). A member writes its SIZE words
/// again only in a later call, after this one ended, which needs this member's data signal,
/// sent after these reads.
pub fn offsets(w: &impl Words, e: u64, tell: impl FnOnce(), mut read: impl FnMut(c_int)) {
    tell();
    w.signal_all(MID, e);
    for j in 0..w.me() {
        w.wait(MID, j, e);
        read(j);
    }
}

/// fcollect, collect and alltoall: this member writes its blocks into the members' `dest`
/// (`write`), then signals; it returns once every member's blocks have arrived.
pub fn exchange(w: &impl Words, e: u64, write: impl FnOnce()) {
    write();
    w.publish();
    w.signal_all(SIG, e);
    w.wait_all(SIG, e);
}

/// Which staging buffer each call uses (alternate calls use alternate ones) and the call that
/// last filled it.
pub struct Stages([Cell<u64>; 2]);

impl Stages {
    pub const fn new() -> Stages {
        Stages([Cell::new(0), Cell::new(0)])
    }

    /// The staging buffer of call `e`, and the call that filled it before (0: none).
    pub fn take(&self, e: u64) -> (usize, u64) {
        let p = (e % 2) as usize;
        (p, self.0[p].replace(e))
    }
}

/// A small reduction or scan through staging buffers: wait until every member has finished
/// reading this member's buffer from the call that last filled it (`last`), fill it (`put`),
/// signal, combine the staged data of members `0..upto` in team order (`fold(j)`, after j's
/// signal), and acknowledge. The source is free again at once.
pub fn staged(
    w: &impl Words,
    e: u64,
    last: u64,
    upto: c_int,
    put: impl FnOnce(),
    mut fold: impl FnMut(c_int),
) {
    let (n, me) = (w.n(), w.me());
    if last > 0 {
        // Every member acknowledges after reading in a staged call, so this waits only for
        // members still reading this buffer from call `last`.
        for j in others(n, me) {
            w.wait(ACK, j, last);
        }
    }
    put();
    w.signal_all(SIG, e);
    if upto == n {
        // Every source is needed: wait for all at once (`Team::wait_all` yields to this CPU's
        // members first on a crowded node), not one at a time in team order.
        w.wait_all(SIG, e);
    }
    for j in 0..upto {
        if j != me {
            w.wait(SIG, j, e);
        }
        fold(j);
    }
    w.signal_all(ACK, e);
}

/// A large full reduction: once every member has arrived, this member combines its chunk of
/// every source into its own `dest` (`reduce_mine`), signals, copies every other member's
/// chunk from that member's `dest` (`gather(k)`, after k's signal), and returns once nobody
/// reads its chunk any more (in place, `dest` is the source the others read).
pub fn scatter_gather(w: &impl Words, e: u64, reduce_mine: impl FnOnce(), mut gather: impl FnMut(c_int)) {
    w.signal_all(SIG, e);
    w.wait_all(SIG, e);
    reduce_mine();
    w.publish();
    w.signal_all(MID, e);
    for k in others(w.n(), w.me()) {
        w.wait(MID, k, e);
        gather(k);
    }
    w.signal_all(ACK, e);
    w.wait_all(ACK, e);
}

/// A large scan: combine the sources of members `0..upto` read in place (`fold(j)`, after j
/// arrived), then write `dest` (`finish`) once every member has finished reading this
/// member's source, which `dest` may be.
pub fn in_place(w: &impl Words, e: u64, upto: c_int, mut fold: impl FnMut(c_int), finish: impl FnOnce()) {
    w.signal_all(SIG, e);
    for j in 0..upto {
        if j != w.me() {
            w.wait(SIG, j, e);
        }
        fold(j);
    }
    w.signal_all(ACK, e);
    w.wait_all(ACK, e);
    finish();
}

/// The algorithms' synchronisation run by 2 members (loom threads) over every
/// interleaving (up to a preemption bound), with the memory they lend each other as loom
/// cells: loom fails a test when a member writes a cell another may still be reading or reads
/// one another may still be writing (no happens-before between them), and each member checks
/// the values it gets. Each test runs calls back to back, without barriers between them, as
/// `tests/c/coll_storm.c` does on real PEs.
#[cfg(test)]
mod tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::{fence, AtomicU64, Ordering};
    use loom::sync::Arc;
    use std::cell::Cell;

    const N: usize = 2;

    /// What member `i` lends the others: its signal words (SIG, MID, ACK, SIZE; one per
    /// sender), its staging buffers, a source/`dest` of one word per chunk, and two `dest`
    /// sets (the programs alternate them, as the spec's "dest is ready" precondition asks of
    /// calls back to back).
    struct Mem {
        words: [[AtomicU64; N]; 4],
        stage: [UnsafeCell<u64>; 2],
        buf: [UnsafeCell<u64>; N],
        dest: [[UnsafeCell<u64>; N]; 2],
    }

    // SAFETY: the cells are loom's, which check every access for races; the test is that no
    // access races.
    unsafe impl Sync for Mem {}

    impl Mem {
        fn new() -> Mem {
            fn cells<const K: usize>() -> [UnsafeCell<u64>; K] {
                std::array::from_fn(|_| UnsafeCell::new(0))
            }
            Mem {
                words: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
                stage: cells(),
                buf: cells(),
                dest: [cells(), cells()],
            }
        }
    }

    fn get(c: &UnsafeCell<u64>) -> u64 {
        // SAFETY: loom checks that no write races with this read.
        c.with(|p| unsafe { *p })
    }

    fn put(c: &UnsafeCell<u64>, v: u64) {
        // SAFETY: loom checks that no access races with this write.
        c.with_mut(|p| unsafe { *p = v })
    }

    /// One member: the shared memory, its index, its call counter and staging record, and
    /// whether its signals are (wrongly) relaxed.
    struct Member {
        all: Arc<Vec<Mem>>,
        n: c_int,
        me: c_int,
        epoch: Cell<u64>,
        stages: Stages,
        relaxed: bool,
    }

    impl Member {
        fn next(&self) -> u64 {
            self.epoch.set(self.epoch.get() + 1);
            self.epoch.get()
        }
        fn mem(&self, i: c_int) -> &Mem {
            &self.all[i as usize]
        }
        fn mine(&self) -> &Mem {
            self.mem(self.me)
        }
        fn word(&self, i: c_int, arr: usize, from: c_int) -> &AtomicU64 {
            &self.mem(i).words[arr / crate::layout::MAX_PES][from as usize]
        }
    }

    impl Words for Member {
        fn n(&self) -> c_int {
            self.n
        }
        fn me(&self) -> c_int {
            self.me
        }
        fn signal(&self, to: c_int, arr: usize, e: u64) {
            let order = if self.relaxed { Ordering::Relaxed } else { Ordering::Release };
            self.word(to, arr, self.me).store(e, order);
        }
        /// As `Team::wait`: looks until the word has grown, then an acquire fence.
        fn wait(&self, arr: usize, from: c_int, e: u64) {
            while self.word(self.me, arr, from).load(Ordering::Relaxed) < e {
                loom::thread::yield_now();
            }
            fence(Ordering::Acquire);
        }
        fn publish(&self) {
            fence(Ordering::SeqCst);
        }
    }

    /// Run `program` on `n` members over every interleaving with up to `bound` preemptions.
    fn run(n: usize, bound: usize, relaxed: bool, program: fn(&Member)) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(bound);
        // Each look of a waiting member is a branch; the default (1000) is too few for
        // several calls in a row.
        b.max_branches = 20_000;
        b.check(move || {
            let all = Arc::new((0..n).map(|_| Mem::new()).collect::<Vec<_>>());
            let member = |me: usize| Member {
                all: all.clone(),
                n: n as c_int,
                me: me as c_int,
                epoch: Cell::new(0),
                stages: Stages::new(),
                relaxed,
            };
            let others: Vec<_> = (1..n)
                .map(|me| {
                    let m = member(me);
                    loom::thread::spawn(move || program(&m))
                })
                .collect();
            program(&member(0));
            for t in others {
                t.join().unwrap();
            }
        });
    }

    /// Member j's contribution to call `e`.
    fn value(j: c_int, e: u64) -> u64 {
        (j as u64 + 1) * 100 + e
    }

    /// A staged reduction (`upto` members) of `value(me, e)`, checked.
    fn staged_call(m: &Member, upto: c_int) {
        let e = m.next();
        let (p, last) = m.stages.take(e);
        staged_as(m, e, last, p, upto);
    }

    fn staged_as(m: &Member, e: u64, last: u64, p: usize, upto: c_int) {
        let acc = Cell::new(0);
        let fill = || put(&m.mine().stage[p], value(m.me, e));
        staged(m, e, last, upto, fill, |j| acc.set(acc.get() + get(&m.mem(j).stage[p])));
        assert_eq!(
            acc.get(),
            (0..upto).map(|j| value(j, e)).sum::<u64>(),
            "staged call {e}, member {}",
            m.me
        );
    }

    /// Full reductions and scans back to back reuse each staging buffer every other call.
    fn staged_program(m: &Member) {
        staged_call(m, m.me + 1);
        staged_call(m, m.n);
        staged_call(m, m.me);
    }

    #[test]
    fn staged_reductions_and_scans_back_to_back() {
        run(2, 3, false, staged_program);
    }

    /// Without the wait for the readers of the call that last filled the buffer, a member that
    /// waits for nobody (member 0 in a scan) overwrites its staging buffer while a slow one
    /// still reads it: loom finds it.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn a_staging_buffer_refilled_before_its_readers_acknowledged_races() {
        run(2, 3, false, |m| {
            for _ in 0..3 {
                let e = m.next();
                let (p, _) = m.stages.take(e);
                staged_as(m, e, 0, p, m.me + 1);
            }
        });
    }

    /// Relaxed signals do not carry the staged data with them.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn relaxed_signals_race_with_the_data() {
        run(2, 2, true, |m| staged_call(m, m.n));
    }

    /// Broadcasts pulled and pushed, twice in a row from the same root and then from the
    /// other; between calls the root writes its source again, as a program may once the call
    /// returned, and each member reads its `dest` (two sets, alternated).
    #[test]
    fn broadcasts_back_to_back_pushed_and_pulled() {
        fn program(m: &Member) {
            for (k, (root, push)) in [(0, false), (0, false), (1, true), (1, false)].into_iter().enumerate() {
                let e = m.next();
                let set = k % 2;
                if m.me == root {
                    put(&m.mine().buf[0], value(root, e));
                }
                let send = || {
                    for j in others(m.n, m.me) {
                        put(&m.mem(j).dest[set][0], get(&m.mine().buf[0]));
                    }
                };
                let own = || put(&m.mine().dest[set][0], get(&m.mine().buf[0]));
                let pull = || put(&m.mine().dest[set][0], get(&m.mem(root).buf[0]));
                broadcast(m, e, root, push, send, own, pull);
                assert_eq!(get(&m.mine().dest[set][0]), value(root, e));
            }
        }
        run(2, 3, false, program);
    }

    /// collects (sizes first) and fcollects back to back into alternating `dest` sets: each
    /// member writes its block at its offset in every member's set.
    #[test]
    fn collects_back_to_back() {
        fn program(m: &Member) {
            for k in 0..3 {
                let e = m.next();
                let set = k % 2;
                let mut offset = m.me as usize;
                if k == 1 {
                    // A collect: every member's size is 1, read from the SIZE words.
                    let tell = || {
                        others(m.n, m.me).for_each(|j| {
                            m.word(j, 3 * crate::layout::MAX_PES, m.me).store(1, Ordering::Relaxed)
                        })
                    };
                    let mut sum = 0;
                    offsets(m, e, tell, |j| {
                        sum += m.word(m.me, 3 * crate::layout::MAX_PES, j).load(Ordering::Acquire)
                    });
                    offset = sum as usize;
                }
                exchange(m, e, || {
                    for j in 0..m.n {
                        put(&m.mem(j).dest[set][offset], value(m.me, e));
                    }
                });
                for j in 0..m.n {
                    assert_eq!(get(&m.mine().dest[set][j as usize]), value(j, e), "call {e} member {}", m.me);
                }
            }
        }
        run(2, 3, false, program);
    }

    /// Large full reductions in place: chunk k of every member's buffer is combined by member
    /// k into its own buffer, which the others then copy; between calls each member writes
    /// its buffer again.
    #[test]
    fn large_reductions_in_place_back_to_back() {
        fn program(m: &Member) {
            let n = m.n as usize;
            let contribution = |j: c_int, k: usize, e: u64| value(j, e) * 10 + k as u64;
            for _ in 0..2 {
                let e = m.next();
                for k in 0..n {
                    put(&m.mine().buf[k], contribution(m.me, k, e));
                }
                let me = m.me as usize;
                let reduce_mine = || {
                    let sum = (0..m.n).map(|j| get(&m.mem(j).buf[me])).sum();
                    put(&m.mine().buf[me], sum);
                };
                let gather = |k: c_int| put(&m.mine().buf[k as usize], get(&m.mem(k).buf[k as usize]));
                scatter_gather(m, e, reduce_mine, gather);
                for k in 0..n {
                    let due: u64 = (0..m.n).map(|j| contribution(j, k, e)).sum();
                    assert_eq!(get(&m.mine().buf[k]), due);
                }
            }
        }
        run(2, 3, false, program);
    }

    /// Large scans in place: each member reads its predecessors' sources where they lie and
    /// writes its result over its own source.
    #[test]
    fn large_scans_in_place_back_to_back() {
        fn program(m: &Member) {
            for _ in 0..2 {
                let e = m.next();
                put(&m.mine().buf[0], value(m.me, e));
                let acc = Cell::new(0);
                let upto = m.me + 1;
                in_place(
                    m,
                    e,
                    upto,
                    |j| acc.set(acc.get() + get(&m.mem(j).buf[0])),
                    || put(&m.mine().buf[0], acc.get()),
                );
                assert_eq!(get(&m.mine().buf[0]), (0..upto).map(|j| value(j, e)).sum::<u64>());
            }
        }
        run(2, 3, false, program);
    }

    /// Barriers, flat and by dissemination: what a member wrote before a barrier is seen by
    /// every member after it, and nobody writes again before everyone has read.
    #[test]
    fn barriers_order_plain_stores() {
        fn program(m: &Member, flat: bool) {
            for round in 1..=2u64 {
                put(&m.mine().buf[0], value(m.me, round));
                barrier(m, m.next(), flat);
                for j in 0..m.n {
                    assert_eq!(get(&m.mem(j).buf[0]), value(j, round));
                }
                barrier(m, m.next(), flat);
            }
        }
        run(2, 2, false, |m| program(m, true));
    }
}
