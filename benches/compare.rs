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
//!
//! This file wires the workloads and peers into criterion and runs it all;
//! the rest is in `compare/`: `checks.rs` (the outcomes every peer must
//! agree on), `interleaved.rs` (the interleaved rounds), `fresh.rs` (the
//! fresh-process inserts) and `delay_queue_report.rs` (tokio's
//! `DelayQueue` counting its put-back items).
//!
//! [`FRESH_ROUNDS`]: fresh::FRESH_ROUNDS

extern crate alloc;

#[path = "compare/checks.rs"]
mod checks;
#[path = "compare/delay_queue_report.rs"]
mod delay_queue_report;
#[path = "compare/fresh.rs"]
mod fresh;
#[path = "compare/interleaved.rs"]
mod interleaved;
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
use peers::tokio_delay_queue::{paused_runtime, DelayQueuePeer};
use peers::{Peer, Timers};
use workloads::machine::{criterion_dir, load_average};
use workloads::server::{LoopWorkload, Tally};
use workloads::{Inputs, Outcome, Shape, Sizes, Workload};

use checks::Checks;
use delay_queue_report::DelayQueueReport;
use fresh::{fresh_insert, fresh_rounds};
use interleaved::{interleave, interleave_loop, INTERLEAVED_ROUNDS};

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
