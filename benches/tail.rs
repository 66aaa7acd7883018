//! Per-operation tail latency of tickwheel and the two heaps, on the
//! reset-heavy (W3) and churn (W4) workloads of `compare.rs`.
//!
//! Criterion reports a mean per operation; a timer structure that pays in
//! bursts (a wheel cascading a slot, a lazy heap compacting its stale
//! entries) can have a fine mean and a bad tail. This bench times every
//! batch of [`BATCH`] = 64 consecutive operations with `Instant::now()` and
//! takes the batch's time ÷ 64 as the per-operation latency of that batch.
//!
//! - **What a batch holds.** The operations of the workload's timed part
//!   (W3: one reset each; W4: one insert + cancel step each) *and whatever
//!   falls between them*: the `advance` of one tick after every 1,000
//!   operations lands inside one batch in 15 or 16, so expiry, cascades and
//!   the heaps' compactions (inside `reset`/`cancel`) are in the numbers.
//!   Operations after the last full batch are not recorded.
//! - **What the clock adds.** One `Instant::now()` per batch (the end of one
//!   batch is the start of the next) and a push into a vector reserved
//!   before timing. The run measures a clock read and prints it; divided by
//!   64 it is a fraction of a nanosecond per operation. Finer than 64
//!   operations, the clock would be a large part of what it measures.
//! - **Same capacity.** Every structure is created with the workload's
//!   capacity hint (`Wheel::with_capacity`, `HeapTimers::with_capacity`,
//!   `LeanHeap::with_capacity`), as in `compare.rs`.
//! - **Interleaved, pooled.** The three peers take turns, one whole run
//!   each, for [`ROUNDS`] = 3 rounds in the rotated orders `tickwheel,
//!   binary_heap, lean_heap`, `binary_heap, lean_heap, tickwheel`,
//!   `lean_heap, tickwheel, binary_heap`, so each moves first, second and
//!   last once. The batches of a peer's three runs are **pooled** and the
//!   percentiles taken over the pool: a p99.9 of W4 (15,625 batches a run)
//!   rests on 47 batches pooled instead of 16 per run, and the max is the
//!   worst batch of any round. The last column, p99 of each round alone,
//!   shows whether one noisy round carries the pool.
//!
//! Percentiles are nearest-rank over the sorted batches. The table (ns per
//! operation) is printed and, on a full run, written with the machine line
//! to `<criterion dir>/tail.txt`, which `benches/report.py` prints.
//!
//! Run with `cargo bench --bench tail` (full sizes: W3 is 100k live timers
//! and 5M resets, W4 is 1M live timers and 1M steps). Without `--bench`
//! (e.g. `cargo test --benches`) it is a smoke test at the quick sizes
//! (every size divided by 100) and writes nothing.

extern crate alloc;

#[allow(
    dead_code,
    reason = "this bench measures tickwheel and the two heaps only"
)]
mod peers;
#[allow(
    dead_code,
    reason = "this bench plays W3 and W4 only; the module also serves compare.rs and instructions.rs"
)]
mod workloads;

use core::hint::black_box;
use std::time::Instant;

use tickwheel::Wheel;

use peers::binary_heap::HeapTimers;
use peers::lean_heap::LeanHeap;
use peers::Peer;
use workloads::machine::{criterion_dir, load_average};
use workloads::{Inputs, Outcome, Sizes, Workload, HEAP, LEAN, TURN_ORDERS, WHEEL};

/// Operations per timed batch.
const BATCH: usize = 64;
/// Rounds of the three peers taking turns.
const ROUNDS: usize = 3;
/// The peers, by their index in [`TURN_ORDERS`].
const NAMES: [&str; 3] = ["tickwheel", "binary_heap", "lean_heap"];

/// One run of `workload` on a fresh structure from `make`: appends the time
/// of every full batch of [`BATCH`] operations, in ns, to `batches`.
fn record<W: Workload, P: Peer>(
    workload: &W,
    make: impl FnOnce(usize) -> P,
    batches: &mut Vec<u64>,
) -> Outcome {
    let shape = workload.shape();
    let mut peer = make(shape.capacity);
    let mut keys = workload.setup(&mut peer);
    batches.reserve(shape.elements as usize / BATCH);
    let mut in_batch = 0;
    let mut start = Instant::now();
    let outcome = workload.play(&mut peer, &mut keys, &mut || {
        in_batch += 1;
        if in_batch == BATCH {
            let end = Instant::now();
            batches.push((end - start).as_nanos() as u64);
            start = end;
            in_batch = 0;
        }
    });
    workload.check(&outcome);
    drop(black_box((peer, keys)));
    outcome
}

/// The nearest-rank `q` quantile of sorted `values`.
fn quantile(sorted: &[u64], q: f64) -> u64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// ns per operation of a batch time (or of a sum of `batches` batch times).
fn per_op(ns: u64, batches: usize) -> f64 {
    ns as f64 / (batches * BATCH) as f64
}

/// One workload's rounds: a table row per peer; `false` if the peers'
/// outcomes differ.
fn measure<W: Workload>(workload: &W, rows: &mut Vec<String>) -> bool {
    let group = workload.shape().group;
    // `rounds[peer][round]`: that run's batch times.
    let mut rounds: [Vec<Vec<u64>>; 3] = Default::default();
    let mut outcomes = Vec::new();
    for order in &TURN_ORDERS[..ROUNDS] {
        for &peer in order {
            let mut batches = Vec::new();
            let outcome = match peer {
                WHEEL => record(workload, Wheel::<u64>::with_capacity, &mut batches),
                HEAP => record(workload, HeapTimers::<u64>::with_capacity, &mut batches),
                _ => record(workload, LeanHeap::with_capacity, &mut batches),
            };
            outcomes.push((NAMES[peer], outcome));
            rounds[peer].push(batches);
        }
    }
    for peer in [WHEEL, HEAP, LEAN] {
        let mut pooled: Vec<u64> = rounds[peer].concat();
        pooled.sort_unstable();
        let n = pooled.len();
        let by_round = rounds[peer]
            .iter_mut()
            .map(|batches| {
                batches.sort_unstable();
                format!("{:.1}", per_op(quantile(batches, 0.99), 1))
            })
            .collect::<Vec<_>>()
            .join(" / ");
        rows.push(format!(
            "| `{group}` | {} | {n} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} | {by_round} |",
            NAMES[peer],
            per_op(pooled.iter().sum(), n),
            per_op(quantile(&pooled, 0.50), 1),
            per_op(quantile(&pooled, 0.99), 1),
            per_op(quantile(&pooled, 0.999), 1),
            per_op(pooled[n - 1], 1),
        ));
    }
    let agree = outcomes.windows(2).all(|w| w[0].1 == w[1].1);
    if !agree {
        eprintln!("{group}: peers disagree: {outcomes:?}");
    }
    agree
}

/// The median cost of one `Instant::now()`, in ns.
fn clock_read_ns() -> f64 {
    const READS: u32 = 1_000;
    let mut samples: Vec<f64> = (0..101)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..READS {
                black_box(Instant::now());
            }
            start.elapsed().as_nanos() as f64 / f64::from(READS)
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let (full, machine, load_start) = workloads::machine::start();
    let sizes = if full { Sizes::FULL } else { Sizes::QUICK };
    let clock = clock_read_ns();
    println!(
        "clock: one Instant::now() takes {clock:.1} ns, once per batch of {BATCH} \
         ({:.2} ns per operation, included below)",
        clock / BATCH as f64
    );

    let inputs = Inputs::new(&sizes);
    let started = Instant::now();
    let mut rows = Vec::new();
    let w3_agree = measure(&inputs.w3(), &mut rows);
    let w4_agree = measure(&inputs.w4(), &mut rows);
    let agree = w3_agree && w4_agree;
    let elapsed = started.elapsed().as_secs();
    let load_end = load_average();

    let mut table = format!(
        "ns per operation: each batch of {BATCH} consecutive operations (ticks included) timed, \
         ÷ {BATCH}; {ROUNDS} interleaved rounds, batches pooled per peer\n\n\
         | workload | peer | batches | mean | p50 | p99 | p99.9 | max | p99 per round |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---|\n"
    );
    for row in &rows {
        table.push_str(row);
        table.push('\n');
    }
    println!("\n{table}");
    println!("load average at end: {load_end} (measuring took {elapsed} s)");

    if full {
        let record = format!(
            "machine: {machine}\nload average at start: {load_start}\nload average at end: {load_end}\n\
             clock read: {clock:.1} ns per batch\n\n{table}"
        );
        let dir = criterion_dir();
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join("tail.txt"), record));
        if let Err(err) = written {
            eprintln!("could not write tail.txt in {}: {err}", dir.display());
        }
    }
    if !agree {
        eprintln!("peers disagree on an outcome: the comparison is not like for like");
        std::process::exit(1);
    }
}
