//! Async sleeps side by side (issue 12): tickwheel's `Timer::sleep`
//! (feature `async`) against tokio's `sleep`, futures-timer's `Delay` and
//! async-io's `Timer`, at 10^4, 10^5 and 10^6 concurrent sleeps, in one
//! run: create + drop per sleep, reset per sleep, and how late sleeps
//! complete.
//!
//! ```text
//! cargo bench --bench async_sleep                    # everything
//! cargo bench --bench async_sleep -- create 1e4      # a section, a size
//! ```
//!
//! Words after `--` pick sections (`create`, `reset`, `churn`, `lateness`) and
//! sizes (`1e4`, `1e5`, `1e6`); without any, all of them.
//!
//! **Peers**, and how each is driven:
//!
//! - `tickwheel`: one `Timer::new()` (1 µs tick, default slack 1 ms:
//!   a sleep completes in `[deadline, deadline + 1 ms]`), for the whole
//!   run. `Timer::sleep`, `Timer::sleep_until`, `Sleep::reset`. Its driver
//!   thread fires sleeps and wakes their tasks. Lateness has a second row,
//!   `tickwheel (slack 0)`: the same timer through
//!   `with_slack(Duration::ZERO)`.
//! - `tokio`: `tokio::time::sleep`, `sleep_until`, `Sleep::reset` on a
//!   current-thread runtime built with `enable_time`; create + drop and
//!   reset run inside its context (`Runtime::enter`) and never drive it,
//!   so nothing fires there. Its timer has a 1 ms resolution: it rounds a
//!   deadline up to the next millisecond. The crate's tokio dev-dependency
//!   has `test-util`, which adds one atomic load to tokio's
//!   `Instant::now()` while the clock was never paused.
//! - `futures-timer`: `Delay::new`, `Delay::reset`; both take a duration
//!   from now. Its global helper thread keeps the timers in a heap and
//!   wakes tasks.
//! - `async-io`: `Timer::after`, `Timer::at`, `Timer::set_at`. Nothing
//!   here calls its `block_on`, so its global reactor runs on its own
//!   `async-io` thread, which keeps the timers in a `BTreeMap` and wakes
//!   tasks. Inserts and removals go through a queue of 1,000; when it is
//!   full, the calling thread applies them itself, under the map's lock.
//!
//! **Registration.** tickwheel and futures-timer register a sleep when it
//! is made; tokio and async-io on its first poll. So in create + drop and
//! reset every sleep of every peer is polled once, with a no-op waker,
//! before anything else: each is then registered, whatever its peer. A
//! peer that hands work to its own thread (futures-timer's helper and
//! async-io's reactor take each timer from a queue; tickwheel's driver is
//! woken when the earliest deadline moves) does some of it off the timed
//! thread: the CPU column counts it.
//!
//! **Create + drop.** N sleeps of `Peer::sleep(d)`, `d` uniform over
//! 10–20 s from a fixed-seed splitmix64 (the same for every peer), are
//! made into a buffer, then each is polled once (pending), then all are
//! dropped. The futures live in a `Vec` made to size, its pages touched
//! beforehand, never grown, and are polled pinned in place (no `Box`;
//! tokio's `Sleep` is `!Unpin`). Columns, in ns per sleep: create, first
//! poll, drop, their total, on the calling thread (`Instant`); and CPU:
//! user + system time of every thread of the process
//! (`getrusage(RUSAGE_SELF)`) from the first create to when the process
//! is quiet again (a 2 ms nap with less than 200 µs of CPU in it),
//! which takes in the work other threads did for the run. The process is
//! also let go quiet before each run starts.
//!
//! **Reset.** The same N sleeps, made and polled once (untimed), then each
//! reset once, to 5 s + its `d` after the start of the resets: a later
//! deadline (the common case: an idle timeout pushed back). tickwheel,
//! tokio and async-io are given the deadline, futures-timer the duration
//! (`Delay::reset` has no other form). Columns, ns per reset: on the
//! calling thread, and CPU as above. Then every sleep is polled again and
//! must still be pending.
//!
//! **Churn.** The same N sleeps, made and polled once (untimed), then N
//! steps: each drops the sleep at a random index (splitmix64, the same for
//! every peer) in place and makes a new one of the next delay there
//! (`Pin::set`), and polls it once. Connections of a server come and go in
//! no order; create + drop above drops in creation order, which is kind to
//! timers whose entries neighbour each other in memory. Columns, ns per
//! step: on the calling thread, and CPU as above.
//!
//! Create + drop, reset and churn are each run 5 times per size (2 in the smoke
//! test), the peers interleaved in an order rotated every repetition;
//! each column is the best of its repetitions, on its own (so a total can
//! be more than the sum of the best phases above it).
//!
//! **Lateness.** N sleeps due uniformly over 2 s (offsets from the same
//! generator) after a lead of 50 ms + 2 µs × N from the first spawn. Every
//! peer runs on the same executor: a fresh current-thread tokio runtime
//! with `enable_time`, one spawned task per sleep. The spawning loop makes
//! each sleep with `Peer::sleep_until(deadline)` (futures-timer:
//! `Delay::new(deadline − now)`, due at or just after the deadline) and
//! moves it into its task, which awaits it and records `Instant::now()` −
//! the deadline asked for. So each latency includes the waking thread's
//! wake-up and the runtime's (for tokio, one thread: its runtime fires its
//! own timers as it parks; for the others, two: their driver thread wakes,
//! then wakes the runtime's thread). Columns: lead, setup (from the first
//! spawn until the last task first polled its sleep: it should be under
//! the lead, or the earliest sleeps were armed late), p50, p99 and max
//! lateness in ms (nearest rank over every sleep's sample), early (must be
//! 0), and CPU of the whole process per sleep, spawns included. One run
//! per peer and size, peers rotated by size.
//!
//! The machine line and the load average at start and end are printed
//! with the tables. A full run takes about 4 minutes after the build:
//! lateness is 15 runs of lead + 2 s (about 45 s); create + drop, reset
//! and churn 20 runs each per size, the 10^6 ones up to a few seconds.
//!
//! Without `--bench` (as `cargo test --benches` runs it) it is a smoke
//! test: N = 1,000 only, 2 repetitions, lateness over 200 ms, asserting
//! that every sleep completed exactly once and none early.

extern crate alloc;

#[path = "workloads/cpu.rs"]
mod cpu;
#[path = "async_sleep/lateness.rs"]
mod lateness;
#[allow(
    dead_code,
    reason = "this bench prints the machine line and load average only"
)]
#[path = "workloads/machine.rs"]
mod machine;
#[path = "async_sleep/ops.rs"]
mod ops;
#[path = "async_sleep/peers.rs"]
mod peers;
#[allow(
    dead_code,
    reason = "this bench uses the lateness record and the CPU clock only"
)]
#[path = "precision/record.rs"]
mod record;
#[path = "peers/rng.rs"]
mod rng;

use core::time::Duration;

use machine::{load_average, machine_line};
use ops::{CreateDrop, PerOp};
use peers::{on_peer, Kind, Peers, LATENESS_PEERS, OPS_PEERS};
use rng::Rng;

/// The splitmix64 seed of the delays and offsets.
const SEED: u64 = 0x5EED_0012;
/// Sleeps of create + drop and reset are due this far out, or up to
/// twice as far.
const DELAY: Duration = Duration::from_secs(10);

struct Sizes {
    ns: &'static [usize],
    reps: usize,
    /// Lateness: sleeps are due uniformly over this.
    spread: Duration,
}

const FULL: Sizes = Sizes {
    ns: &[10_000, 100_000, 1_000_000],
    reps: 5,
    spread: Duration::from_secs(2),
};

const SMOKE: Sizes = Sizes {
    ns: &[1_000],
    reps: 2,
    spread: Duration::from_millis(200),
};

/// `n` durations uniform over `from..from + width`.
fn uniform(n: usize, from: Duration, width: Duration) -> Vec<Duration> {
    let width = u64::try_from(width.as_nanos()).expect("fits in u64 ns");
    let mut rng = Rng::new(SEED);
    (0..n)
        .map(|_| from + Duration::from_nanos(rng.below(width)))
        .collect()
}

fn ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// Create + drop at each size: best of the repetitions, per column.
fn create_drop(peers: &Peers, sizes: &Sizes, ns: &[usize]) {
    println!("### Create + drop (ns per sleep; best of {})", sizes.reps);
    println!();
    println!(
        "| N | peer | future (bytes) | create | first poll | drop | total | CPU, all threads |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for &n in ns {
        let delays = uniform(n, DELAY, DELAY);
        let mut best: [Option<CreateDrop>; OPS_PEERS.len()] = [None; OPS_PEERS.len()];
        for rep in 0..sizes.reps {
            for turn in 0..OPS_PEERS.len() {
                let index = (rep + turn) % OPS_PEERS.len();
                let run = on_peer!(peers, OPS_PEERS[index], |peer| ops::create_drop(
                    peer, &delays
                ));
                best[index] = Some(best[index].map_or(run, |best| CreateDrop {
                    create: best.create.min(run.create),
                    poll: best.poll.min(run.poll),
                    drop: best.drop.min(run.drop),
                    total: best.total.min(run.total),
                    cpu: best.cpu.min(run.cpu),
                }));
            }
        }
        for (kind, best) in OPS_PEERS.iter().zip(best) {
            let best = best.expect("at least one repetition");
            println!(
                "| {n} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                kind.name(),
                kind.future_size(),
                best.create,
                best.poll,
                best.drop,
                best.total,
                best.cpu
            );
        }
    }
    println!();
}

/// Reset at each size: best of the repetitions, per column.
fn reset(peers: &Peers, sizes: &Sizes, ns: &[usize]) {
    println!("### Reset (ns per reset; best of {})", sizes.reps);
    println!();
    println!("| N | peer | reset | CPU, all threads |");
    println!("|---:|---|---:|---:|");
    for &n in ns {
        let delays = uniform(n, DELAY, DELAY);
        best_per_op(n, sizes.reps, |kind| {
            on_peer!(peers, kind, |peer| ops::reset(peer, &delays))
        });
    }
    println!();
}

/// Churn at each size: best of the repetitions, per column.
fn churn(peers: &Peers, sizes: &Sizes, ns: &[usize]) {
    println!(
        "### Churn (ns per step: drop a sleep at a random index, make and poll a new one there; best of {})",
        sizes.reps
    );
    println!();
    println!("| N | peer | step | CPU, all threads |");
    println!("|---:|---|---:|---:|");
    for &n in ns {
        let delays = uniform(n, DELAY, DELAY);
        let mut rng = Rng::new(SEED ^ 0xC4C4);
        let picks: Vec<usize> = (0..n).map(|_| rng.below(n as u64) as usize).collect();
        best_per_op(n, sizes.reps, |kind| {
            on_peer!(peers, kind, |peer| ops::churn(peer, &delays, &picks))
        });
    }
    println!();
}

/// Runs `run` `reps` times for each peer of `OPS_PEERS`, interleaved in an
/// order rotated every repetition, and prints each peer's best, column by
/// column, as a row of size `n`.
fn best_per_op(n: usize, reps: usize, mut run: impl FnMut(Kind) -> PerOp) {
    let mut best: [Option<PerOp>; OPS_PEERS.len()] = [None; OPS_PEERS.len()];
    for rep in 0..reps {
        for turn in 0..OPS_PEERS.len() {
            let index = (rep + turn) % OPS_PEERS.len();
            let this = run(OPS_PEERS[index]);
            best[index] = Some(best[index].map_or(this, |best| best.min(this)));
        }
    }
    for (kind, best) in OPS_PEERS.iter().zip(best) {
        let best = best.expect("at least one repetition");
        println!(
            "| {n} | {} | {:.1} | {:.1} |",
            kind.name(),
            best.ns,
            best.cpu
        );
    }
}

/// Lateness at each size, one run per peer; in the smoke test, asserts
/// that none was early.
fn lateness(peers: &Peers, sizes: &Sizes, ns: &[usize], smoke: bool) {
    println!(
        "### Lateness (N sleeps due uniformly over {:?}; ms after the deadline asked for)",
        sizes.spread
    );
    println!();
    println!("| N | peer | lead | setup | p50 | p99 | max | early | CPU ns/sleep |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut late_setup = false;
    for (size, &n) in ns.iter().enumerate() {
        let offsets = uniform(n, Duration::ZERO, sizes.spread);
        for turn in 0..LATENESS_PEERS.len() {
            let kind: Kind = LATENESS_PEERS[(size + turn) % LATENESS_PEERS.len()];
            let run = on_peer!(peers, kind, |peer| lateness::lateness(
                peer,
                &offsets,
                sizes.spread
            ));
            let overran = run.setup > run.lead;
            late_setup |= overran;
            println!(
                "| {n} | {} | {:.0} | {:.0}{} | {} | {} | {} | {} | {:.0} |",
                kind.name(),
                run.lead.as_secs_f64() * 1e3,
                run.setup.as_secs_f64() * 1e3,
                if overran { " (!)" } else { "" },
                ms(run.p50),
                ms(run.p99),
                ms(run.max),
                run.early,
                run.cpu
            );
            if smoke {
                assert_eq!(run.early, 0, "{}: sleeps completed early", kind.name());
            }
        }
    }
    if late_setup {
        println!();
        println!("(!): setup took longer than the lead: the earliest sleeps were armed late");
    }
    println!();
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let full = args.iter().any(|arg| arg == "--bench");
    let sizes = if full { FULL } else { SMOKE };
    let words: Vec<&str> = args
        .iter()
        .filter(|arg| !arg.starts_with('-'))
        .map(String::as_str)
        .collect();
    let picked: Vec<usize> = words
        .iter()
        .filter_map(|word| word.parse::<f64>().ok())
        .map(|n| n as usize)
        .collect();
    let ns: Vec<usize> = sizes
        .ns
        .iter()
        .copied()
        .filter(|n| picked.is_empty() || picked.contains(n))
        .collect();
    let sections = ["create", "reset", "churn", "lateness"];
    let section =
        |name: &str| !words.iter().any(|word| sections.contains(word)) || words.contains(&name);

    println!("machine: {}", machine_line());
    println!("load average at start: {}", load_average());
    if !full {
        println!(
            "async_sleep: smoke test; run with `cargo bench --bench async_sleep` for the bench"
        );
    }
    println!();
    let peers = Peers::new();
    if section("create") {
        create_drop(&peers, &sizes, &ns);
    }
    if section("reset") {
        reset(&peers, &sizes, &ns);
    }
    if section("churn") {
        churn(&peers, &sizes, &ns);
    }
    if section("lateness") {
        lateness(&peers, &sizes, &ns, !full);
    }
    println!("load average at end: {}", load_average());
}
