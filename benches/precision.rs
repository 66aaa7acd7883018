//! Precision on the real clock with per-timer slack (issue 14): how late
//! timers fire, how many fire outside their window, at what CPU cost and
//! with how many driver wake-ups, for tickwheel's `Timer` at several
//! slacks, for its old default (a 1 ms tick, no slack), and for a
//! precision reference.
//!
//! ```text
//! cargo bench --bench precision
//! cargo bench --bench precision -- --only "JDK,slack 120,slack 130" 5   # those uniform peers, 5 rounds
//! ```
//!
//! **Peers.**
//!
//! - `precise heap` (`peers/precise_heap.rs`): what the JDK's
//!   `ScheduledThreadPoolExecutor` does, in Rust. A `Mutex<BinaryHeap>` and
//!   a `Condvar`; one driver thread waits with `wait_timeout` until the
//!   exact earliest deadline (no tick, no spinning), pops everything due
//!   and runs the callback outside the lock. It is the precision reference.
//!   It has no windows.
//! - `JDK STPE` (`peers/jdk/StpePrecision.java`): the JDK's own
//!   `ScheduledThreadPoolExecutor` with one thread, in a `java` process of
//!   its own that the bench starts (compiled with `javac` into Cargo's
//!   target tmp dir on first use). It reads the same offsets, runs a
//!   warm-up of 20,000 of them first (so the JIT has compiled its paths),
//!   and reports each timer's lateness on its pool thread, the whole JVM's
//!   CPU (`getProcessCpuTime`: the pool, the JIT, the collector) over the
//!   same span, and the pool thread's voluntary context switches as its
//!   wake-ups. In `uniform` only. Without a JDK the bench says so and
//!   leaves the row out.
//! - `tickwheel slack S`, for S = 0, 50 µs, 100 µs, 120–140 µs, 1 ms (the default,
//!   `DEFAULT_SLACK`) and 10 ms: `Timer::builder().slack(S)`
//!   with the default 1 µs tick, `SystemClock` and shards. A timer may
//!   fire anywhere in `[deadline, deadline + S]`; the driver coalesces
//!   wake-ups inside the windows. 50 µs is not one of the issue's rows: it
//!   is about the precise heap's own lateness, for a comparison at equal
//!   lateness; 120–140 µs put the median lateness at about the JDK's
//!   (issue 25 compares CPU at the JDK's precision).
//! - `tickwheel 1 ms tick, slack 0 (old default)`:
//!   `.tick(1 ms).slack(Duration::ZERO)`, the `Timer` as it was before
//!   slack: every deadline rounds up to the next 1 ms tick, nothing is
//!   coalesced.
//! - `tickwheel slack 0 + spin 200 µs`: slack 0, 1 µs tick, and
//!   `SpinningClock::new(200 µs)` (parks until 200 µs before each wake-up,
//!   then spins), as in `lateness.rs`. In `uniform` only. With timers about
//!   20 µs apart it spins for the whole run; its CPU column is the price.
//! - `tickwheel slack 10 ms / 0`, in `mixed` only: ONE `Timer` (1 µs tick,
//!   built with `.slack(10 ms)`); coarse timers are scheduled through
//!   `timer.with_slack(10 ms)`, precise ones through
//!   `timer.with_slack(Duration::ZERO)`.
//!
//! Every peer runs its callback on its driver thread: a custom `Executor`
//! for tickwheel, the driver's own loop for the heap. The callback records
//! `Instant::now() − requested deadline` for its timer, into a slot per
//! timer (an atomic store, no lock), and counts the fires.
//!
//! **Workloads.** All timers are scheduled up front from the main thread,
//! due at `start + offset` where `start` is 50 ms after scheduling begins
//! and the offsets are uniform over the spread, drawn from a fixed-seed
//! splitmix64, so every peer and round gets the same offsets.
//!
//! - `uniform`: 100,000 timers due over 2 s, played by the heap and the
//!   seven tickwheel peers above that are not marked "`mixed` only".
//! - `mixed`: the same 100,000 "coarse" timers (10 ms slack) plus 1,000
//!   "precise" ones (slack 0), interleaved (every 101st timer scheduled is
//!   precise) and due over the same 2 s. Played by the heap (every timer
//!   exact) and `tickwheel slack 10 ms / 0`. Coarse and precise timers are
//!   reported on rows of their own.
//!
//! **Columns**, per run (one row per class of timer):
//!
//! - window (ms): tick + slack of the row's timers. tickwheel rounds a
//!   deadline up to the tick (by less than one tick) and the window
//!   `[deadline, deadline + slack]` starts at the rounded deadline, so a
//!   fire up to tick + slack after the *requested* deadline is inside it.
//!   That is slack + 1 µs on the 1 µs tick rows; on the old-default row
//!   the whole 1 ms is the rounding, the window that tick gave. `—` for the
//!   heap.
//! - lateness p50, p99, max in ms: nearest rank over the exact per-timer
//!   samples (not histogram buckets), from the requested deadline. For
//!   tickwheel it includes the rounding up to the tick and whatever slack
//!   the driver used to coalesce.
//! - early: fires before the requested deadline. Must be 0.
//! - outside window: fires whose lateness is over the row's window,
//!   counted on the same exact samples, and their share of the row's
//!   timers. With slack 0 that is nearly every timer: the OS wakes a
//!   thread tens of µs late, far outside a 1 µs window. `—` for the heap.
//! - CPU: user + system time of the **whole process**, every thread
//!   (`getrusage(RUSAGE_SELF)`, which Linux derives from the scheduler's
//!   nanosecond run times: microsecond resolution), from just before the
//!   first schedule to when the main thread sees the last fire; it covers
//!   scheduling, the driver and the callbacks. Per timer = CPU ÷ all
//!   timers of the run. (Run P0 used `/proc/self/stat`, whose 10 ms ticks
//!   left 0.1 µs per timer of resolution.)
//! - wake-ups: the driver's wake-ups over the same window, and per second
//!   of the run span (first schedule to last fire). tickwheel counts them
//!   in `Stats::wakeups`; the heap counts each return from a condvar wait.
//! - Stats in / over: the run's `Stats::in_window` and
//!   `Stats::overshoot.count()`, a cross-check of "outside window" (`—` for
//!   the heap). The driver measures from the *rounded* deadline when it
//!   hands the timer to the executor, a little before the callback reads
//!   the clock, so the two can differ by a few fires; on the old-default
//!   row (slack 0 after rounding to 1 ms) the driver counts nearly every
//!   fire as an overshoot, while the column above holds it to the 1 ms
//!   window.
//!
//! A mixed run's CPU, wake-ups and `Stats` belong to the whole run (its
//! `Stats` count coarse and precise timers together): they are on its
//! coarse row, and its precise row shows `—` there.
//!
//! **Interleaved.** 3 rounds; in each, `uniform` (10 peers) then `mixed`
//! (2 peers), each played by its peers one after another, in an order
//! rotated by one every round. Every round's rows are printed (no median).
//! The machine line and the load average at start and end are printed
//! with them. A full run takes about two minutes after the build:
//! 36 runs of a little over 2 s each (the JDK's also warm up).
//!
//! Without `--bench` (as `cargo test --benches` runs it) it is a smoke
//! test: 2,000 coarse + 20 precise timers over 200 ms, 1 round, asserting
//! that every timer fired exactly once, none early, and no tickwheel timer
//! later than its window + 50 ms (loose: the machine is noisy).

extern crate alloc;

#[path = "workloads/cpu.rs"]
mod cpu;
#[path = "precision/jdk.rs"]
mod jdk;
#[allow(
    dead_code,
    reason = "this bench prints the machine line and load average only"
)]
#[path = "workloads/machine.rs"]
mod machine;
#[path = "precision/peers.rs"]
mod peers;
#[path = "peers/precise_heap.rs"]
mod precise_heap;
#[path = "precision/record.rs"]
mod record;
#[path = "peers/rng.rs"]
mod rng;
#[path = "precision/table.rs"]
mod table;

use rng::Rng;

use alloc::sync::Arc;
use core::sync::atomic::Ordering;
use core::time::Duration;
use std::time::Instant;

use tickwheel::timer::{Clock, SpinningClock, SystemClock};
use tickwheel::Timer;

use cpu::process_cpu;
use machine::{load_average, machine_line};
use peers::{Engine, Peer, Wheel, MIXED_PEERS, UNIFORM_PEERS};
use precise_heap::PreciseHeap;
use record::{Record, Recorder, UNFIRED};
use table::WindowStats;

/// From the first schedule to `start`, the origin of the offsets.
const LEAD: Duration = Duration::from_millis(50);
/// The splitmix64 seed of the offsets.
const SEED: u64 = 0x5EED_0014;
/// How long after the last deadline a run may take before it is a failure.
const GRACE: Duration = Duration::from_secs(10);

/// The sizes of a whole bench run.
struct Sizes {
    /// Timers of `uniform`, and coarse timers of `mixed`.
    coarse: usize,
    /// Precise timers added in `mixed`.
    precise: usize,
    /// Offsets are uniform over `0..spread`.
    spread: Duration,
    rounds: usize,
}

const FULL: Sizes = Sizes {
    coarse: 100_000,
    precise: 1_000,
    spread: Duration::from_secs(2),
    rounds: 3,
};

const SMOKE: Sizes = Sizes {
    coarse: 2_000,
    precise: 20,
    spread: Duration::from_millis(200),
    rounds: 1,
};

/// What a run schedules: timer `id` is due at `start + offsets[id]`, and is
/// precise if `precise[id]`.
struct Plan {
    name: &'static str,
    offsets: Vec<Duration>,
    precise: Vec<bool>,
    spread: Duration,
    peers: &'static [Peer],
}

/// `coarse` timers, and `precise` more spaced evenly among them, all due
/// uniformly over `spread`.
fn plan(
    name: &'static str,
    coarse: usize,
    precise: usize,
    spread: Duration,
    peers: &'static [Peer],
) -> Plan {
    let total = coarse + precise;
    // `None` without precise timers.
    let stride = total.checked_div(precise);
    let spread_ns = u64::try_from(spread.as_nanos()).expect("spread fits in u64 ns");
    let mut rng = Rng::new(SEED);
    let offsets = (0..total)
        .map(|_| Duration::from_nanos(rng.below(spread_ns)))
        .collect();
    let precise = (1..=total)
        .map(|i| stride.is_some_and(|stride| i % stride == 0 && i / stride <= precise))
        .collect::<Vec<_>>();
    Plan {
        name,
        offsets,
        precise,
        spread,
        peers,
    }
}

/// One run of one plan on one peer.
struct Run {
    /// Per timer, ns after its requested deadline.
    late: Vec<i64>,
    cpu: Duration,
    wakeups: u64,
    /// First schedule to last fire.
    span: Duration,
    /// tickwheel's window counters; `None` for the heap.
    stats: Option<WindowStats>,
}

/// Schedules every timer of `plan` with `schedule(deadline, id, precise)`,
/// waits for the last fire and collects the samples. `wakeups` reads the
/// driver's wake-up counter.
fn measure(
    record: &Record,
    plan: &Plan,
    schedule: impl Fn(Instant, u32, bool),
    wakeups: impl Fn() -> u64,
) -> Run {
    let cpu_before = process_cpu();
    let wakeups_before = wakeups();
    let begin = Instant::now();
    let start = begin + LEAD;
    for (id, (offset, &precise)) in plan.offsets.iter().zip(&plan.precise).enumerate() {
        schedule(start + *offset, id as u32, precise);
    }
    let last = record.wait(LEAD + plan.spread + GRACE);
    let cpu = process_cpu() - cpu_before;
    let wakeups = wakeups() - wakeups_before;
    let fired = record.fired.load(Ordering::Acquire);
    let Some(last) = last else {
        panic!(
            "{}: only {fired} of {} timers fired within {:?} of the last deadline",
            plan.name,
            plan.offsets.len(),
            GRACE
        );
    };
    let twice = record.twice.load(Ordering::Relaxed);
    assert_eq!(twice, 0, "{}: {twice} timers fired twice", plan.name);
    let late: Vec<i64> = record
        .late
        .iter()
        .map(|late| late.load(Ordering::Relaxed))
        .collect();
    assert!(
        !late.contains(&UNFIRED),
        "{}: a timer never fired",
        plan.name
    );
    Run {
        late,
        cpu,
        wakeups,
        span: last - begin,
        stats: None,
    }
}

/// `None` when the peer cannot run here (no JDK; `jdk::Jdk::build` said so).
fn run(peer: Peer, plan: &Plan, jdk: Option<&jdk::Jdk>) -> Option<Run> {
    let record = Arc::new(Record::new(plan.offsets.len()));
    let run = match peer.engine {
        Engine::Jdk => return jdk.map(|jdk| jdk.run(&plan.offsets, LEAD)),
        Engine::PreciseHeap => {
            let heap = PreciseHeap::new({
                let record = Arc::clone(&record);
                move |deadline, id| record.fire(deadline, id)
            });
            measure(
                &record,
                plan,
                |deadline, id, _| heap.schedule_at(deadline, id),
                || heap.wakeups(),
            )
        }
        Engine::Tickwheel(wheel) => match wheel.spin {
            None => run_tickwheel(wheel, SystemClock, &record, plan),
            Some(spin) => run_tickwheel(wheel, SpinningClock::new(spin), &record, plan),
        },
    };
    Some(run)
}

fn run_tickwheel(wheel: Wheel, clock: impl Clock, record: &Arc<Record>, plan: &Plan) -> Run {
    let timer = Timer::builder()
        .tick(wheel.tick)
        .slack(wheel.coarse)
        .clock(clock)
        .executor(Recorder(Arc::clone(record)))
        .build()
        .expect("build the timer");
    let coarse = timer.with_slack(wheel.coarse);
    let precise = timer.with_slack(wheel.precise);
    let mut run = measure(
        record,
        plan,
        |deadline, id, is_precise| {
            let handle = if is_precise { &precise } else { &coarse };
            handle
                .schedule_at(deadline, (deadline, id))
                .expect("schedule");
        },
        || timer.stats().wakeups,
    );
    let stats = timer.stats();
    run.stats = Some(WindowStats {
        in_window: stats.in_window,
        overshoot: stats.overshoot.count(),
    });
    run
}

/// `--only 'JDK,slack 130' 5`: the `uniform` peers whose names contain
/// one of the comma-separated words, for that many rounds (3 if not
/// given), the order rotating as in a full run.
fn only() -> Option<(&'static [Peer], usize)> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--only")?;
    let words: Vec<&str> = args.get(at + 1)?.split(',').collect();
    let rounds = args.get(at + 2).and_then(|r| r.parse().ok()).unwrap_or(3);
    let peers: Vec<Peer> = UNIFORM_PEERS
        .iter()
        .copied()
        .filter(|peer| words.iter().any(|w| peer.name.contains(w)))
        .collect();
    Some((Vec::leak(peers), rounds))
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not.
    let full = std::env::args().any(|arg| arg == "--bench");
    let sizes = if full { FULL } else { SMOKE };
    println!("machine: {}", machine_line());
    println!("load average at start: {}", load_average());
    if !full {
        println!("precision: smoke test; run with `cargo bench --bench precision` for the bench");
    }

    let (plans, rounds) = match only() {
        // A focused run: `uniform` only, the peers named.
        Some((peers, rounds)) => (
            vec![plan("uniform", sizes.coarse, 0, sizes.spread, peers)],
            rounds,
        ),
        None => (
            vec![
                plan("uniform", sizes.coarse, 0, sizes.spread, &UNIFORM_PEERS),
                plan(
                    "mixed",
                    sizes.coarse,
                    sizes.precise,
                    sizes.spread,
                    &MIXED_PEERS,
                ),
            ],
            sizes.rounds,
        ),
    };
    let jdk = jdk::Jdk::build();
    let mut table = Vec::new();
    for round in 0..rounds {
        for plan in &plans {
            for turn in 0..plan.peers.len() {
                let peer = plan.peers[(round + turn) % plan.peers.len()];
                if let Some(run) = run(peer, plan, jdk.as_ref()) {
                    table.extend(table::rows(round + 1, peer, plan, run));
                }
            }
        }
    }
    println!("load average at end: {}", load_average());
    println!();
    println!(
        "uniform: {} timers; mixed: {} coarse (slack 10 ms) + {} precise (slack 0) on one \
         Timer; due over {:?} from {:?} after the first schedule; tick 1 µs (1 ms on the old \
         default's row); {} round(s), each printed; lateness nearest-rank over \
         per-timer samples; window = tick + slack from the requested deadline; CPU / timer \
         over all timers of the run",
        sizes.coarse, sizes.coarse, sizes.precise, sizes.spread, LEAD, rounds
    );
    println!(
        "CPU: whole process, every thread, user + system, from getrusage(RUSAGE_SELF) \
         (microsecond resolution)"
    );
    println!();
    table::print(&table);

    if !full {
        table::check_smoke(&table);
    }
}
