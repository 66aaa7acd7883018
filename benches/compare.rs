//! `Wheel<u64>` against its peers, on the same workloads, in one run.
//!
//! Each workload is one criterion group named `workload/size`; each peer is
//! one function in it, so results land in
//! `target/criterion/<workload>_<size>/<peer>/` and `benches/report.py` can
//! put them side by side. Throughput is set to the number of operations, so
//! criterion reports per-operation rates. The workloads themselves are
//! written once, in `workloads/mod.rs`, and shared with `tail.rs` and
//! `instructions.rs`.
//!
//! | group                               | per element            | timed                                              |
//! |-------------------------------------|------------------------|----------------------------------------------------|
//! | `w1_insert/1M`                      | one insert             | 1M inserts into an empty structure                 |
//! | `w1_expire/1M`                      | one fired timer        | tick-by-tick advance until all 1M have fired       |
//! | `w2_cancel_all/1M`                  | one insert + cancel    | 1M inserts, then 1M cancels in a shuffled order    |
//! | `w3_reset_heavy/100k_live_5M_resets`| one reset              | 5M resets of random live timers, a tick per 1,000  |
//! | `w4_churn/1M_live_1M_steps`         | one step               | insert + cancel a random key, a tick per 1,000     |
//! | `w1_insert_held/1M`                 | one insert             | 1M inserts, each handle kept                       |
//! | `w1_tick_by_tick/1M`                | one fired timer        | `advance(now)` once per tick to the longest delay  |
//! | `w4_server_loop/1M_live_1M_steps`   | one step               | insert + cancel per connection, fired ones re-armed |
//!
//! The last three are the server loops of `workloads/server.rs` (issue 25),
//! played by every peer and by the two whose handles cannot be copied,
//! `nexus_timer` and `bitwheel`; their tallies count early, late and zombie
//! fires, and bitwheel's, which fires early by design, is reported but not
//! required to match. Their interleaved rounds time tickwheel, `lean_heap`,
//! `nexus_timer` and `bitwheel` in turn and give each one's time over the
//! lean heap's. Last, [`FRESH_ROUNDS`] rounds of `w1_insert_held` run each
//! in a fresh child process (`--fresh-insert PEER`), where reserved memory
//! has never been touched, with the page faults the inserts took.
//!
//! Delays are uniform in `1..=65,536` ticks (1 ms ticks for the peers that
//! want durations). All inputs come from fixed-seed splitmix64 streams and
//! are generated before anything is timed; setup (pre-filling) and dropping
//! the structures are never timed.
//!
//! # Capacity
//!
//! Every structure starts empty, and every one that can reserve is created
//! with the same capacity hint: the most timers the workload holds live at
//! once (W1 and W2: `n`; W3: the live timers; W4: the live timers + 1,
//! since a step inserts before it cancels). Reserving happens outside the
//! timed part, so no peer pays for growing its tables while measured.
//!
//! | peer                | created with                                      | what the hint reserves                    |
//! |---------------------|---------------------------------------------------|-------------------------------------------|
//! | `tickwheel`         | `Wheel::with_capacity(hint)`                      | the timer arena                           |
//! | `binary_heap`       | `HeapTimers::with_capacity(hint)`                 | heap, slot table, free list               |
//! | `lean_heap`         | `LeanHeap::with_capacity(hint)`                   | heap, slot table                          |
//! | `btree_map`         | `BTreeTimers::with_capacity(hint)`                | slot table and free list only: `BTreeMap` cannot reserve (no `with_capacity`; it allocates node by node) |
//! | `tokio_delay_queue` | `DelayQueue::with_capacity(hint)`                 | the slab (the wheel's levels are fixed)   |
//! | `hhwt`              | `QuadWheelWithOverflow::new()`                    | nothing: it cannot reserve (no capacity constructor; its id map is private) |
//! | `nexus_timer`       | `BoundedWheel::bounded(hint, now)`                | its slab, written at construction         |
//! | `bitwheel`          | `BitWheel::<_, 3, 1, 65_536, 8>::boxed_with_epoch`| nothing more: its capacity is its type, all written at construction |
//!
//! Stale entries may still grow a lazy heap past the hint, up to its
//! compaction bound; that growth is part of what the heaps cost.
//!
//! Every peer must produce the same outcome (number fired, number
//! cancelled, sum of values seen) on each workload; the run prints the
//! outcomes and exits non-zero if they differ.
//!
//! After criterion, a full run also plays [`INTERLEAVED_ROUNDS`] rounds of
//! every workload in which tickwheel and the two heaps (the closest peers:
//! `binary_heap` and the 16-byte `lean_heap`) take turns, one iteration
//! each, in an order that cycles through all six orders of the three. The
//! machine is shared and its noise comes in bursts of seconds; criterion
//! measures one peer for seconds and then the next, so a burst can land on
//! one of them only. In a round all three run within seconds of each other,
//! so the per-round ratio is the robust comparison. Each workload gets two
//! lines, `heap/tickwheel` and `lean_heap/tickwheel`; they go to
//! `<criterion dir>/interleaved.txt`, and `report.py` prints them. The
//! rounds reserve the same capacity as the criterion part.
//!
//! Run with `cargo bench --bench compare`, then `python3 benches/report.py`.
//! Without `--bench` (e.g. `cargo test --benches`) every size is divided by
//! 100 and each benchmark runs once, as a smoke test.

extern crate alloc;

mod peers;
mod workloads;

use core::cell::RefCell;
use core::time::Duration;
use std::time::Instant;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput};
use tickwheel::Wheel;

use peers::binary_heap::HeapTimers;
use peers::bitwheel::BitWheelPeer;
use peers::btree_map::BTreeTimers;
use peers::hhwt::HhwtPeer;
use peers::lean_heap::LeanHeap;
use peers::nexus_timer::NexusPeer;
use peers::tokio_delay_queue::{paused_runtime, DelayQueuePeer, DqKey};
use peers::{Peer, Timers};
use workloads::machine::{criterion_dir, load_average};
use workloads::server::{LoopWorkload, Tally};
use workloads::{Inputs, Outcome, Shape, Shaped, Sizes, Workload, HEAP, LEAN, TURN_ORDERS, WHEEL};
/// Rounds of the interleaved comparison of tickwheel and the two heaps: a
/// multiple of 6, so each of the [`TURN_ORDERS`] comes up equally often.
const INTERLEAVED_ROUNDS: usize = 12;

/// One workload's interleaved rounds: each heap's time ÷ tickwheel's time
/// per round, as two lines (`binary_heap`, then `lean_heap`).
fn interleave<W: Workload>(workload: &W, rounds: usize) -> [String; 2] {
    let Shape {
        group, elements, ..
    } = workload.shape();
    let mut ns: [Vec<f64>; 3] = core::array::from_fn(|_| Vec::with_capacity(rounds));
    let per_op = |time: Duration| time.as_nanos() as f64 / elements as f64;
    for round in 0..rounds {
        for peer in TURN_ORDERS[round % TURN_ORDERS.len()] {
            let time = match peer {
                WHEEL => workload.run(1, &mut Wheel::<u64>::with_capacity).0,
                HEAP => workload.run(1, &mut HeapTimers::<u64>::with_capacity).0,
                _ => workload.run(1, &mut LeanHeap::with_capacity).0,
            };
            ns[peer].push(per_op(time));
        }
    }
    [
        ratio_line(&group, "binary_heap", "heap", &ns[WHEEL], &ns[HEAP]),
        ratio_line(&group, "lean_heap", "lean_heap", &ns[WHEEL], &ns[LEAN]),
    ]
}

/// One line of interleaved results: `peer`'s time ÷ tickwheel's time per
/// round (`ratio` names it), with the median, the minimum and tickwheel's
/// wins.
fn ratio_line(group: &str, peer: &str, ratio: &str, wheel_ns: &[f64], peer_ns: &[f64]) -> String {
    let rounds = wheel_ns.len();
    let ratios: Vec<f64> = peer_ns.iter().zip(wheel_ns).map(|(p, w)| p / w).collect();
    let median = |values: &[f64]| {
        let mut values = values.to_vec();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let wins = ratios.iter().filter(|&&ratio| ratio > 1.0).count();
    let in_order = ratios
        .iter()
        .map(|ratio| format!("{ratio:.2}"))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "{group}: tickwheel median {:.1} ns, {peer} median {:.1} ns; {ratio}/tickwheel per round: {in_order} (median {:.2}, min {:.2}; tickwheel faster in {wins} of {rounds})",
        median(wheel_ns),
        median(peer_ns),
        median(&ratios),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
    )
}

/// The outcomes of every group, checked after the run.
#[derive(Default)]
struct Checks {
    groups: Vec<(String, Vec<(&'static str, Outcome)>)>,
    loops: Vec<(String, Vec<(&'static str, Tally)>)>,
}

impl Checks {
    /// Prints every group's outcomes; `false` if some peer disagrees.
    fn report(&self) -> bool {
        let mut agree = true;
        println!("\noutcomes (every peer must agree):");
        for (group, outcomes) in &self.groups {
            let same = outcomes.windows(2).all(|w| w[0].1 == w[1].1);
            agree &= same;
            println!("  {group}: {}", if same { "agree" } else { "DISAGREE" });
            for (peer, outcome) in outcomes {
                println!(
                    "    {peer:<18} fired {:>9}  cancelled {:>9}  value sum {:>20}",
                    outcome.fired, outcome.cancelled, outcome.value_sum
                );
            }
        }
        println!(
            "\nserver loops (exact peers must agree and fire nothing early, late or cancelled; \
             {FIRES_EARLY:?} fire early by design and are reported only):"
        );
        for (group, tallies) in &self.loops {
            let exact: Vec<_> = tallies
                .iter()
                .filter(|(peer, _)| !FIRES_EARLY.contains(peer))
                .collect();
            let same = exact.windows(2).all(|w| w[0].1.seen() == w[1].1.seen())
                && exact.iter().all(|(_, tally)| tally.exact());
            agree &= same;
            println!("  {group}: {}", if same { "agree" } else { "DISAGREE" });
            for (peer, tally) in tallies {
                println!(
                    "    {peer:<18} fired {:>9}  cancelled {:>9}  value sum {:>20}  early {:>7} (max {:>4} ticks)  late {:>5}  zombies {:>5}  lost {:>5}  page faults {:>6}",
                    tally.outcome.fired,
                    tally.outcome.cancelled,
                    tally.outcome.value_sum,
                    tally.early,
                    tally.max_early,
                    tally.late,
                    tally.zombies,
                    tally.lost,
                    tally.faults
                );
            }
        }
        agree
    }
}

fn bench_peer<W: Workload, P: Peer>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    workload: &W,
    name: &'static str,
    outcomes: &RefCell<Vec<(&'static str, Outcome)>>,
    mut make: impl FnMut(usize) -> P,
) {
    bench_one(group, name, outcomes, |iters| {
        workload.run(iters, &mut make)
    });
}

/// Benches one peer with `run` (iterations to time and what the last run
/// saw), keeping what its last run saw in `seen`.
fn bench_one<O>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &'static str,
    seen: &RefCell<Vec<(&'static str, O)>>,
    mut run: impl FnMut(u64) -> (Duration, O),
) {
    let mut last = None;
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let (time, outcome) = run(iters);
            last = Some(outcome);
            time
        });
    });
    if let Some(outcome) = last {
        seen.borrow_mut().push((name, outcome));
    }
}

/// A group of batch workloads: ten samples, one or a few iterations each
/// (each iteration is a whole batch of 10^5–10^6 operations).
fn batch_group<'a>(c: &'a mut Criterion, shape: &Shape) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(&shape.group);
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(shape.measurement_time)
        .throughput(Throughput::Elements(shape.elements));
    group
}

fn bench_workload<W: Workload>(c: &mut Criterion, workload: &W, checks: &mut Checks) {
    let shape = workload.shape();
    let mut group = batch_group(c, &shape);
    let name = shape.group;
    let outcomes = RefCell::new(Vec::new());

    bench_peer(
        &mut group,
        workload,
        "tickwheel",
        &outcomes,
        Wheel::<u64>::with_capacity,
    );
    bench_peer(
        &mut group,
        workload,
        "binary_heap",
        &outcomes,
        HeapTimers::<u64>::with_capacity,
    );
    bench_peer(
        &mut group,
        workload,
        "lean_heap",
        &outcomes,
        LeanHeap::with_capacity,
    );
    bench_peer(
        &mut group,
        workload,
        "btree_map",
        &outcomes,
        BTreeTimers::<u64>::with_capacity,
    );
    {
        let runtime = paused_runtime();
        let _context = runtime.enter();
        let reinserted = core::cell::Cell::new(0);
        bench_peer(
            &mut group,
            workload,
            "tokio_delay_queue",
            &outcomes,
            |capacity| {
                DelayQueueReport::new(
                    DelayQueuePeer::with_capacity(&runtime, capacity),
                    &reinserted,
                )
            },
        );
        if reinserted.get() > 0 {
            println!(
                "{name}/tokio_delay_queue: {} stale cancels hit a reused slab index \
                 (the item was put back), over all iterations",
                reinserted.get()
            );
        }
    }
    // hhwt cannot reserve: the hint is dropped.
    bench_peer(&mut group, workload, "hhwt", &outcomes, |_| HhwtPeer::new());

    group.finish();
    checks.groups.push((name, outcomes.into_inner()));
}

/// A `DelayQueuePeer` that adds its count of put-back items to a total when
/// dropped (outside the timed region).
struct DelayQueueReport<'rt, 'c> {
    inner: DelayQueuePeer<'rt>,
    total: &'c core::cell::Cell<u64>,
}

impl<'rt, 'c> DelayQueueReport<'rt, 'c> {
    fn new(inner: DelayQueuePeer<'rt>, total: &'c core::cell::Cell<u64>) -> Self {
        DelayQueueReport { inner, total }
    }
}

impl Drop for DelayQueueReport<'_, '_> {
    fn drop(&mut self) {
        self.total.set(self.total.get() + self.inner.reinserted());
    }
}

impl Peer for DelayQueueReport<'_, '_> {
    type Key = DqKey;

    #[inline]
    fn insert(&mut self, deadline: u64, value: u64) -> DqKey {
        self.inner.insert(deadline, value)
    }

    #[inline]
    fn cancel(&mut self, key: DqKey) -> Option<u64> {
        self.inner.cancel(key)
    }

    #[inline]
    fn reset(&mut self, key: DqKey, deadline: u64) -> bool {
        self.inner.reset(key, deadline)
    }

    fn advance(&mut self, now: u64, fired: impl FnMut(u64)) {
        self.inner.advance(now, fired);
    }
}

/// The peers of the server-loop rounds, in the order of their columns.
const LOOP_PEERS: [&str; 4] = ["tickwheel", "lean_heap", "nexus_timer", "bitwheel"];

/// One server-loop workload's interleaved rounds: tickwheel, the lean heap,
/// nexus-timer and bitwheel take turns, one iteration each, the first mover
/// rotating round by round. One line per peer but tickwheel: its time ÷ the
/// lean heap's per round (< 1: faster than the lean heap), and tickwheel's
/// line the same way, so every peer's ratio to the lean heap is there.
fn interleave_loop<W: LoopWorkload>(workload: &W, rounds: usize) -> Vec<String> {
    let Shape {
        group, elements, ..
    } = workload.shape();
    let mut ns: [Vec<f64>; 4] = core::array::from_fn(|_| Vec::with_capacity(rounds));
    let per_op = |time: Duration| time.as_nanos() as f64 / elements as f64;
    for round in 0..rounds {
        for turn in 0..LOOP_PEERS.len() {
            let peer = (round + turn) % LOOP_PEERS.len();
            let time = match peer {
                0 => workload.run(1, &mut Wheel::<u64>::with_capacity).0,
                1 => workload.run(1, &mut LeanHeap::with_capacity).0,
                2 => workload.run(1, &mut NexusPeer::with_capacity).0,
                _ => workload.run(1, &mut |_| BitWheelPeer::new()).0,
            };
            ns[peer].push(per_op(time));
        }
    }
    let median = |values: &[f64]| {
        let mut values = values.to_vec();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    LOOP_PEERS
        .iter()
        .enumerate()
        .filter(|&(peer, _)| peer != 1)
        .map(|(peer, name)| {
            let ratios: Vec<f64> = ns[peer].iter().zip(&ns[1]).map(|(p, l)| p / l).collect();
            let in_order = ratios
                .iter()
                .map(|ratio| format!("{ratio:.2}"))
                .collect::<Vec<_>>()
                .join(" ");
            let faster = ratios.iter().filter(|&&ratio| ratio < 1.0).count();
            format!(
                "{group}: {name} median {:.1} ns, lean_heap median {:.1} ns; {name}/lean_heap per round: {in_order} (median {:.2}; faster than lean_heap in {faster} of {rounds})",
                median(&ns[peer]),
                median(&ns[1]),
                median(&ratios),
            )
        })
        .collect()
}

fn bench_loop_peer<W: LoopWorkload, T: Timers>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    workload: &W,
    name: &'static str,
    tallies: &RefCell<Vec<(&'static str, Tally)>>,
    mut make: impl FnMut(usize) -> T,
) {
    bench_one(group, name, tallies, |iters| workload.run(iters, &mut make));
}

/// One server-loop workload, every peer; their tallies go to `checks`.
fn bench_loop<W: LoopWorkload>(c: &mut Criterion, workload: &W, checks: &mut Checks) {
    let shape = workload.shape();
    let mut group = batch_group(c, &shape);
    let name = shape.group;
    let tallies = RefCell::new(Vec::new());
    bench_loop_peer(
        &mut group,
        workload,
        "tickwheel",
        &tallies,
        Wheel::<u64>::with_capacity,
    );
    bench_loop_peer(
        &mut group,
        workload,
        "binary_heap",
        &tallies,
        HeapTimers::<u64>::with_capacity,
    );
    bench_loop_peer(
        &mut group,
        workload,
        "lean_heap",
        &tallies,
        LeanHeap::with_capacity,
    );
    bench_loop_peer(
        &mut group,
        workload,
        "btree_map",
        &tallies,
        BTreeTimers::<u64>::with_capacity,
    );
    {
        let runtime = paused_runtime();
        let _context = runtime.enter();
        bench_loop_peer(
            &mut group,
            workload,
            "tokio_delay_queue",
            &tallies,
            |capacity| DelayQueuePeer::with_capacity(&runtime, capacity),
        );
    }
    bench_loop_peer(&mut group, workload, "hhwt", &tallies, |_| HhwtPeer::new());
    bench_loop_peer(
        &mut group,
        workload,
        "nexus_timer",
        &tallies,
        NexusPeer::with_capacity,
    );
    // Its capacity is its type (see peers/bitwheel.rs).
    bench_loop_peer(&mut group, workload, "bitwheel", &tallies, |_| {
        BitWheelPeer::new()
    });
    group.finish();
    checks.loops.push((name, tallies.into_inner()));
}

/// Peers documented to fire early (`peers/bitwheel.rs`): their outcome is
/// printed with its counts but not required to match the exact peers'.
const FIRES_EARLY: [&str; 1] = ["bitwheel"];

/// Rounds of `w1_insert_held` in fresh processes, each peer once a round.
const FRESH_ROUNDS: usize = 6;

/// `--fresh-insert PEER`: one iteration of `w1_insert_held` for `PEER` in
/// this (fresh) process, printed as `fresh PEER NS FAULTS`: ns per insert
/// and minor page faults during the inserts. Memory a process has never
/// used must be faulted in; in the criterion loop the allocator hands back
/// memory an earlier iteration touched, so only a fresh process shows what
/// a first insert into reserved room costs.
fn fresh_insert(peer: &str, sizes: &Sizes) {
    let inputs = Inputs::new(sizes);
    let workload = inputs.w1_insert_held();
    let (time, tally) = match peer {
        "tickwheel" => workload.run(1, &mut Wheel::<u64>::with_capacity),
        "lean_heap" => workload.run(1, &mut LeanHeap::with_capacity),
        "nexus_timer" => workload.run(1, &mut NexusPeer::with_capacity),
        "bitwheel" => workload.run(1, &mut |_| BitWheelPeer::new()),
        _ => panic!("--fresh-insert: unknown peer {peer}"),
    };
    let ns = time.as_nanos() as f64 / workload.shape().elements as f64;
    println!("fresh {peer} {ns:.2} {}", tally.faults);
}

/// Runs [`fresh_insert`] in child processes, [`FRESH_ROUNDS`] rounds of
/// every peer of [`LOOP_PEERS`], the first mover rotating; one line per
/// peer with the median ns per insert and page faults per round.
fn fresh_rounds(full: bool) -> Vec<String> {
    let Ok(exe) = std::env::current_exe() else {
        return Vec::new();
    };
    let mut seen: [Vec<(f64, u64)>; 4] = Default::default();
    for round in 0..FRESH_ROUNDS {
        for turn in 0..LOOP_PEERS.len() {
            let peer = (round + turn) % LOOP_PEERS.len();
            let mut command = std::process::Command::new(&exe);
            command.args(["--fresh-insert", LOOP_PEERS[peer]]);
            if full {
                command.arg("--bench");
            }
            let Ok(output) = command.output() else {
                return Vec::new();
            };
            let line = String::from_utf8_lossy(&output.stdout);
            let fields: Vec<&str> = line
                .lines()
                .find_map(|line| line.strip_prefix("fresh "))
                .map(|rest| rest.split_whitespace().collect())
                .unwrap_or_default();
            if let [_, ns, faults] = fields[..] {
                seen[peer].push((ns.parse().unwrap_or(f64::NAN), faults.parse().unwrap_or(0)));
            }
        }
    }
    LOOP_PEERS
        .iter()
        .zip(&seen)
        .map(|(name, rounds)| {
            let mut ns: Vec<f64> = rounds.iter().map(|&(ns, _)| ns).collect();
            ns.sort_by(f64::total_cmp);
            let median = ns.get(ns.len() / 2).copied().unwrap_or(f64::NAN);
            let per_round = rounds
                .iter()
                .map(|(ns, faults)| format!("{ns:.1} ns/{faults}"))
                .collect::<Vec<_>>()
                .join(", ");
            format!("w1_insert_held, fresh process: {name} median {median:.1} ns per insert; per round (ns per insert/page faults): {per_round}")
        })
        .collect()
}

fn main() {
    // bitwheel builds each 2 MiB slot array on the stack before boxing it;
    // unoptimised (`cargo test --benches`), that overflows the main
    // thread's 8 MiB. The whole run goes on a thread with room for it.
    let run = std::thread::Builder::new()
        .name("compare".to_owned())
        .stack_size(256 << 20)
        .spawn(run)
        .expect("spawn the bench thread");
    if run.join().is_err() {
        std::process::exit(101);
    }
}

fn run() {
    let mut args = std::env::args().skip_while(|arg| arg != "--fresh-insert");
    if let (Some(_), Some(peer)) = (args.next(), args.next()) {
        let full = std::env::args().any(|arg| arg == "--bench");
        fresh_insert(&peer, if full { &Sizes::FULL } else { &Sizes::QUICK });
        return;
    }
    let (full, machine, load_start) = workloads::machine::start();
    let sizes = if full { Sizes::FULL } else { Sizes::QUICK };

    peers::binary_heap::self_check();
    peers::lean_heap::self_check();
    let inputs = Inputs::new(&sizes);
    let (w1_insert, w1_expire) = (inputs.w1_insert(), inputs.w1_expire());
    let (w2, w3, w4) = (inputs.w2(), inputs.w3(), inputs.w4());
    let (w1_held, w1_ticks) = (inputs.w1_insert_held(), inputs.w1_tick_by_tick());
    let w4_server = inputs.w4_server_loop();

    let started = Instant::now();
    let mut c = Criterion::default().configure_from_args();
    let mut checks = Checks::default();
    bench_workload(&mut c, &w1_insert, &mut checks);
    bench_workload(&mut c, &w1_expire, &mut checks);
    bench_workload(&mut c, &w2, &mut checks);
    bench_workload(&mut c, &w3, &mut checks);
    bench_workload(&mut c, &w4, &mut checks);
    bench_loop(&mut c, &w1_held, &mut checks);
    bench_loop(&mut c, &w1_ticks, &mut checks);
    bench_loop(&mut c, &w4_server, &mut checks);
    c.final_summary();

    // A filtered run (`cargo bench --bench compare -- w2`) is for one
    // workload's numbers; the interleaved rounds belong to a full run.
    let filtered = std::env::args().skip(1).any(|arg| !arg.starts_with('-'));
    let rounds = if full { INTERLEAVED_ROUNDS } else { 2 };
    let interleaved = if filtered {
        Vec::new()
    } else {
        println!("\ninterleaved rounds, tickwheel vs binary_heap and lean_heap:");
        let mut lines = [
            interleave(&w1_insert, rounds),
            interleave(&w1_expire, rounds),
            interleave(&w2, rounds),
            interleave(&w3, rounds),
            interleave(&w4, rounds),
        ]
        .concat();
        lines.extend(interleave_loop(&w1_held, rounds));
        lines.extend(interleave_loop(&w1_ticks, rounds));
        lines.extend(interleave_loop(&w4_server, rounds));
        lines.extend(fresh_rounds(full));
        for line in &lines {
            println!("  {line}");
        }
        lines
    };

    let load_end = load_average();
    let elapsed = started.elapsed().as_secs();
    println!("load average at end: {load_end} (benchmarks took {elapsed} s)");
    if full {
        let record = format!(
            "machine: {machine}\nload average at start: {load_start}\nload average at end: {load_end}\nduration: {elapsed} s\n"
        );
        let dir = criterion_dir();
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join("machine.txt"), record))
            .and_then(|()| {
                if interleaved.is_empty() {
                    return Ok(());
                }
                let mut text = interleaved.join("\n");
                text.push('\n');
                std::fs::write(dir.join("interleaved.txt"), text)
            });
        if let Err(err) = written {
            eprintln!(
                "could not record the machine line in {}: {err}",
                dir.display()
            );
        }
    }
    if !checks.report() {
        eprintln!("peers disagree on an outcome: the comparison is not like for like");
        std::process::exit(1);
    }
}
