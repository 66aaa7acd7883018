//! Precision on the real clock, the baseline for per-timer slack (issue 14):
//! how late timers fire, at what CPU cost and with how many driver
//! wake-ups, for tickwheel's `Timer` as it is today and for a precision
//! reference.
//!
//! ```text
//! cargo bench --bench precision
//! ```
//!
//! **Peers.**
//!
//! - `precise heap` (`peers/precise_heap.rs`): what the JDK's
//!   `ScheduledThreadPoolExecutor` does, in Rust. A `Mutex<BinaryHeap>` and
//!   a `Condvar`; one driver thread waits with `wait_timeout` until the
//!   exact earliest deadline (no tick, no spinning), pops everything due
//!   and runs the callback outside the lock. It is the precision reference.
//! - `tickwheel 1 ms`: `Timer::builder().tick(1 ms)` with the default
//!   `SystemClock` and shards.
//! - `tickwheel 1 ms + spin 200 µs`: the same with
//!   `SpinningClock::new(200 µs)` (parks until 200 µs before each deadline,
//!   then spins), as in `lateness.rs`.
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
//! - `uniform`: 100,000 timers due over 2 s.
//! - `mixed`: the same 100,000 "coarse" timers plus 1,000 "precise" ones,
//!   interleaved (every 101st timer scheduled is precise) and due over the
//!   same 2 s. Without a slack API they are just more timers; their
//!   lateness is reported apart from the coarse ones so that slack rows can
//!   be set beside these later.
//!
//! **Columns**, per run (one row per class of timer):
//!
//! - lateness p50, p99, max in ms: nearest rank over the exact per-timer
//!   samples (not histogram buckets). For tickwheel it includes rounding the
//!   deadline up to the tick.
//! - early: fires before the requested deadline. Must be 0.
//! - CPU: user + system time of the **whole process** (`/proc/self/stat`
//!   fields 14 and 15), from just before the first schedule to when the
//!   main thread sees the last fire; it covers scheduling, the driver and
//!   the callbacks. Its resolution is one clock tick (`getconf CLK_TCK`,
//!   100 Hz on Linux: 10 ms a run, 0.1 µs per timer at 100,000 timers);
//!   the output says which. Per timer = CPU ÷ all timers of the run.
//! - wake-ups: the driver's wake-ups over the same window, and per second
//!   of the run span (first schedule to last fire). tickwheel counts them
//!   in `Stats::wakeups`; the heap counts each return from a condvar wait.
//!
//! A mixed run's CPU and wake-ups belong to the whole run: they are on its
//! coarse row, and its precise row shows `—` there. "Fires outside their
//! window" needs windows, which the slack API brings; it is not a column
//! here yet.
//!
//! **Interleaved.** 3 rounds; in each, `uniform` then `mixed`, each played
//! by the three peers one after another, in an order rotated every round
//! so each peer goes first once. Every round's rows are printed (no
//! median). The machine line and the load average at start and end are
//! printed with them.
//!
//! Without `--bench` (as `cargo test --benches` runs it) it is a smoke
//! test: 2,000 coarse + 20 precise timers over 200 ms, 1 round, asserting
//! that every timer fired once and none early.

extern crate alloc;

#[allow(
    dead_code,
    reason = "this bench prints the machine line and load average only"
)]
#[path = "workloads/machine.rs"]
mod machine;
#[path = "peers/precise_heap.rs"]
mod precise_heap;
#[path = "peers/rng.rs"]
mod rng;

use rng::Rng;

use alloc::sync::Arc;
use core::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use core::time::Duration;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use tickwheel::timer::{Clock, Executor, Expired, Rejected, SpinningClock, SystemClock};
use tickwheel::Timer;

use machine::{load_average, machine_line};
use precise_heap::PreciseHeap;

/// tickwheel's tick.
const TICK: Duration = Duration::from_millis(1);
/// `SpinningClock`'s spin before each deadline.
const SPIN: Duration = Duration::from_micros(200);
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

#[derive(Clone, Copy)]
enum Peer {
    PreciseHeap,
    Tickwheel,
    TickwheelSpin,
}

impl Peer {
    const ALL: [Peer; 3] = [Peer::PreciseHeap, Peer::Tickwheel, Peer::TickwheelSpin];

    fn name(self) -> &'static str {
        match self {
            Peer::PreciseHeap => "precise heap",
            Peer::Tickwheel => "tickwheel 1 ms",
            Peer::TickwheelSpin => "tickwheel 1 ms + spin 200 µs",
        }
    }
}

/// What a run schedules: timer `id` is due at `start + offsets[id]`, and is
/// precise if `precise[id]`.
struct Plan {
    name: &'static str,
    offsets: Vec<Duration>,
    precise: Vec<bool>,
    spread: Duration,
}

/// `coarse` timers, and `precise` more spaced evenly among them, all due
/// uniformly over `spread`.
fn plan(name: &'static str, coarse: usize, precise: usize, spread: Duration) -> Plan {
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
    }
}

/// `late` slot of a timer that has not fired.
const UNFIRED: i64 = i64::MIN;

/// What the callbacks write: one lateness slot per timer, and the instant
/// the last one fired.
struct Record {
    /// ns after the requested deadline (negative: early), or `UNFIRED`.
    late: Vec<AtomicI64>,
    fired: AtomicUsize,
    /// Fires of a timer that had fired already.
    twice: AtomicUsize,
    /// When the last timer fired; signalled by `all_fired`.
    last: Mutex<Option<Instant>>,
    all_fired: Condvar,
}

impl Record {
    fn new(timers: usize) -> Self {
        Record {
            late: (0..timers).map(|_| AtomicI64::new(UNFIRED)).collect(),
            fired: AtomicUsize::new(0),
            twice: AtomicUsize::new(0),
            last: Mutex::new(None),
            all_fired: Condvar::new(),
        }
    }

    /// The callback: timer `id`, due at `deadline`, fires now.
    fn fire(&self, deadline: Instant, id: u32) {
        let now = Instant::now();
        let late = match now.checked_duration_since(deadline) {
            Some(after) => after.as_nanos() as i64,
            None => -(deadline.duration_since(now).as_nanos() as i64),
        };
        if self.late[id as usize].swap(late, Ordering::Relaxed) != UNFIRED {
            self.twice.fetch_add(1, Ordering::Relaxed);
        }
        if self.fired.fetch_add(1, Ordering::AcqRel) + 1 == self.late.len() {
            *self.last.lock().unwrap() = Some(now);
            self.all_fired.notify_all();
        }
    }

    /// Waits until every timer has fired, or `limit`; returns when the last
    /// one fired.
    fn wait(&self, limit: Duration) -> Option<Instant> {
        let last = self.last.lock().unwrap();
        let (last, _) = self
            .all_fired
            .wait_timeout_while(last, limit, |last| last.is_none())
            .unwrap();
        *last
    }
}

/// tickwheel's executor: records on the driver thread.
struct Recorder(Arc<Record>);

impl Executor<(Instant, u32)> for Recorder {
    fn execute(&self, fired: Expired<(Instant, u32)>) -> Result<(), Rejected<(Instant, u32)>> {
        let (deadline, id) = fired.value;
        self.0.fire(deadline, id);
        Ok(())
    }
}

/// CPU time of the whole process so far (utime + stime), in clock ticks.
fn process_cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat");
    // Field 2, the command, is in parentheses and may hold spaces: count
    // fields after the last ')'. The rest starts at field 3, so utime (14)
    // and stime (15) are its 12th and 13th.
    let rest = &stat[stat.rfind(')').expect("/proc/self/stat has a command") + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let mut next = || -> u64 {
        fields
            .next()
            .and_then(|field| field.parse().ok())
            .expect("/proc/self/stat has utime and stime")
    };
    next() + next()
}

/// Clock ticks per second of `/proc/self/stat`, and whether it was assumed.
fn clock_ticks_per_second() -> (u64, bool) {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| String::from_utf8_lossy(&output.stdout).trim().parse().ok())
        .map_or((100, true), |hz| (hz, false))
}

/// One run of one plan on one peer.
struct Run {
    /// Per timer, ns after its requested deadline.
    late: Vec<i64>,
    cpu_ticks: u64,
    wakeups: u64,
    /// First schedule to last fire.
    span: Duration,
}

/// Schedules every timer of `plan` with `schedule(deadline, id)`, waits for
/// the last fire and collects the samples. `wakeups` reads the driver's
/// wake-up counter.
fn measure(
    record: &Record,
    plan: &Plan,
    schedule: impl Fn(Instant, u32),
    wakeups: impl Fn() -> u64,
) -> Run {
    let cpu_before = process_cpu_ticks();
    let wakeups_before = wakeups();
    let begin = Instant::now();
    let start = begin + LEAD;
    for (id, offset) in plan.offsets.iter().enumerate() {
        schedule(start + *offset, id as u32);
    }
    let last = record.wait(LEAD + plan.spread + GRACE);
    let cpu_ticks = process_cpu_ticks() - cpu_before;
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
        cpu_ticks,
        wakeups,
        span: last - begin,
    }
}

fn run(peer: Peer, plan: &Plan) -> Run {
    let record = Arc::new(Record::new(plan.offsets.len()));
    match peer {
        Peer::PreciseHeap => {
            let heap = PreciseHeap::new({
                let record = Arc::clone(&record);
                move |deadline, id| record.fire(deadline, id)
            });
            measure(
                &record,
                plan,
                |deadline, id| heap.schedule_at(deadline, id),
                || heap.wakeups(),
            )
        }
        Peer::Tickwheel => run_tickwheel(SystemClock, &record, plan),
        Peer::TickwheelSpin => run_tickwheel(SpinningClock::new(SPIN), &record, plan),
    }
}

fn run_tickwheel(clock: impl Clock, record: &Arc<Record>, plan: &Plan) -> Run {
    let timer = Timer::builder()
        .tick(TICK)
        .clock(clock)
        .executor(Recorder(Arc::clone(record)))
        .build()
        .expect("build the timer");
    measure(
        record,
        plan,
        |deadline, id| {
            timer
                .schedule_at(deadline, (deadline, id))
                .expect("schedule");
        },
        || timer.stats().wakeups,
    )
}

/// Lateness of one class of timers, in ns.
struct Lateness {
    timers: usize,
    p50: i64,
    p99: i64,
    max: i64,
    early: usize,
}

/// Nearest-rank percentiles of `samples`.
fn lateness(mut samples: Vec<i64>) -> Lateness {
    samples.sort_unstable();
    let rank = |q: f64| samples[((samples.len() as f64 * q).ceil() as usize).max(1) - 1];
    Lateness {
        timers: samples.len(),
        p50: rank(0.50),
        p99: rank(0.99),
        max: samples[samples.len() - 1],
        early: samples.iter().filter(|&&late| late < 0).count(),
    }
}

fn ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// A printed row.
struct Row {
    round: usize,
    workload: &'static str,
    peer: &'static str,
    class: &'static str,
    lateness: Lateness,
    /// Whole-run figures; `None` on a mixed run's precise row.
    run: Option<RunCost>,
}

struct RunCost {
    timers: usize,
    cpu_ticks: u64,
    wakeups: u64,
    span: Duration,
}

fn rows(round: usize, peer: Peer, plan: &Plan, run: Run) -> Vec<Row> {
    let cost = RunCost {
        timers: run.late.len(),
        cpu_ticks: run.cpu_ticks,
        wakeups: run.wakeups,
        span: run.span,
    };
    let row = |class, lateness, run| Row {
        round,
        workload: plan.name,
        peer: peer.name(),
        class,
        lateness,
        run,
    };
    if !plan.precise.contains(&true) {
        return vec![row("all", lateness(run.late), Some(cost))];
    }
    let (precise, coarse): (Vec<_>, Vec<_>) = run
        .late
        .iter()
        .zip(&plan.precise)
        .partition(|(_, &precise)| precise);
    let samples = |class: Vec<(&i64, &bool)>| class.into_iter().map(|(&late, _)| late).collect();
    vec![
        row("coarse", lateness(samples(coarse)), Some(cost)),
        row("precise", lateness(samples(precise)), None),
    ]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not.
    let full = std::env::args().any(|arg| arg == "--bench");
    let sizes = if full { FULL } else { SMOKE };
    let (hz, assumed) = clock_ticks_per_second();
    println!("machine: {}", machine_line());
    println!("load average at start: {}", load_average());
    if !full {
        println!("precision: smoke test; run with `cargo bench --bench precision` for the bench");
    }

    let plans = [
        plan("uniform", sizes.coarse, 0, sizes.spread),
        plan("mixed", sizes.coarse, sizes.precise, sizes.spread),
    ];
    let mut table = Vec::new();
    for round in 0..sizes.rounds {
        for plan in &plans {
            for turn in 0..Peer::ALL.len() {
                let peer = Peer::ALL[(round + turn) % Peer::ALL.len()];
                let run = run(peer, plan);
                table.extend(rows(round + 1, peer, plan, run));
            }
        }
    }
    println!("load average at end: {}", load_average());
    println!();
    println!(
        "uniform: {} timers; mixed: {} coarse + {} precise; due over {:?} from {:?} after the \
         first schedule; tick {:?}; {} round(s), each printed; lateness nearest-rank over \
         per-timer samples; CPU / timer over all timers of the run",
        sizes.coarse, sizes.coarse, sizes.precise, sizes.spread, LEAD, TICK, sizes.rounds
    );
    println!(
        "CPU: whole process, /proc/self/stat utime + stime at {hz} ticks/s{}: resolution {:.0} ms a run",
        if assumed { " (assumed; getconf failed)" } else { "" },
        1e3 / hz as f64
    );
    println!();
    println!(
        "| round | workload | peer | timers | lateness p50 (ms) | p99 (ms) | max (ms) | early \
         | CPU (ms) | CPU / timer (µs) | wake-ups | wake-ups / s |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in &table {
        let late = &row.lateness;
        let workload = if row.workload == "uniform" {
            row.workload.to_owned()
        } else {
            format!("{}: {}", row.workload, row.class)
        };
        let cost = row.run.as_ref().map_or_else(
            || "— | — | — | —".to_owned(),
            |run| {
                let cpu_ms = run.cpu_ticks as f64 * 1e3 / hz as f64;
                format!(
                    "{cpu_ms:.0} | {:.2} | {} | {:.0}",
                    cpu_ms * 1e3 / run.timers as f64,
                    run.wakeups,
                    run.wakeups as f64 / run.span.as_secs_f64()
                )
            },
        );
        println!(
            "| {} | {workload} | {} | {} | {} | {} | {} | {} | {cost} |",
            row.round,
            row.peer,
            late.timers,
            ms(late.p50),
            ms(late.p99),
            ms(late.max),
            late.early,
        );
    }

    if !full {
        for row in &table {
            assert_eq!(
                row.lateness.early, 0,
                "{} {} {}: timers fired early",
                row.workload, row.class, row.peer
            );
        }
    }
}
