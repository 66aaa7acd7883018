//! The std layer on the real clock: how late timers fire, and how often an
//! idle driver wakes.
//!
//! ```text
//! cargo bench --bench lateness
//! ```
//!
//! - **Lateness**: 100 000 timers with deadlines spread uniformly over 2 s,
//!   1 ms tick, fired into an executor on the driver thread that records
//!   `now − requested deadline` (so it includes rounding up to the tick).
//!   Any fire before the requested deadline is counted as early.
//! - **Idle wake-ups**: a timer with no timers, watched for 3 s.
//!
//! Prints a markdown table; not a criterion benchmark (each run is one long
//! real-time measurement).

extern crate alloc;

use alloc::sync::Arc;
use core::time::Duration;
use std::sync::Mutex;
use std::time::Instant;

use tickwheel::timer::{Clock, Executor, Expired, Rejected, SpinningClock, SystemClock};
use tickwheel::Timer;

const TIMERS: usize = 100_000;
const SPREAD: Duration = Duration::from_secs(2);

/// Records, for each fired timer, the time since its requested deadline
/// (negative would mean early).
struct Recorder {
    samples: Arc<Mutex<Vec<i128>>>,
}

impl Executor<Instant> for Recorder {
    fn execute(&self, fired: Expired<Instant>) -> Result<(), Rejected<Instant>> {
        let now = Instant::now();
        let late = if now >= fired.value {
            now.duration_since(fired.value).as_nanos() as i128
        } else {
            -(fired.value.duration_since(now).as_nanos() as i128)
        };
        self.samples.lock().unwrap().push(late);
        Ok(())
    }
}

fn lateness(clock: impl Clock) -> (Vec<i128>, u64) {
    let samples = Arc::new(Mutex::new(Vec::with_capacity(TIMERS)));
    // Issue 3's setting, kept so its runs stay comparable: a 1 ms tick
    // and no slack (deadlines round up to the tick, nothing more).
    // `precision.rs` measures the slack.
    let timer = Timer::builder()
        .tick(Duration::from_millis(1))
        .slack(Duration::ZERO)
        .clock(clock)
        .executor(Recorder {
            samples: Arc::clone(&samples),
        })
        .build()
        .expect("timer");
    let start = Instant::now() + Duration::from_millis(50);
    let mut seed = 0x1A7Eu64;
    for _ in 0..TIMERS {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let offset = Duration::from_nanos((seed >> 11) % SPREAD.as_nanos() as u64);
        let deadline = start + offset;
        timer.schedule_at(deadline, deadline).expect("schedule");
    }
    while timer.pending() > 0 {
        std::thread::sleep(Duration::from_millis(20));
    }
    let wakeups = timer.stats().wakeups;
    drop(timer);
    let samples = core::mem::take(&mut *samples.lock().unwrap());
    (samples, wakeups)
}

/// The platform's floor: how much longer than asked `park_timeout(1 ms)`
/// sleeps (the driver sleeps the same way), as (p50, p99, max).
fn sleep_oversleep() -> (Duration, Duration, Duration) {
    let target = Duration::from_millis(1);
    let mut over: Vec<Duration> = (0..2_000)
        .map(|_| {
            let start = Instant::now();
            std::thread::park_timeout(target);
            start.elapsed().saturating_sub(target)
        })
        .collect();
    over.sort_unstable();
    (over[1_000], over[1_980], over[1_999])
}

fn idle_wakeups() -> (u64, Duration) {
    let timer = Timer::new().expect("timer");
    std::thread::sleep(Duration::from_millis(100)); // let it settle
    let before = timer.stats().wakeups;
    let watch = Duration::from_secs(3);
    std::thread::sleep(watch);
    (timer.stats().wakeups - before, watch)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not.
    if !std::env::args().any(|a| a == "--bench") {
        println!("lateness: run with `cargo bench --bench lateness`");
        return;
    }
    let uptime = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at start: {}", uptime.trim());
    let runs = [
        ("SystemClock (default)", lateness(SystemClock)),
        (
            "SpinningClock(200 µs)",
            lateness(SpinningClock::new(Duration::from_micros(200))),
        ),
    ];
    let stats: Vec<_> = runs
        .into_iter()
        .map(|(name, (mut samples, wakeups))| {
            samples.sort_unstable();
            let early = samples.iter().filter(|&&s| s < 0).count();
            let at = |q: f64| {
                let nanos = samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
                Duration::from_nanos(nanos.max(0) as u64)
            };
            let max = Duration::from_nanos((*samples.last().unwrap()).max(0) as u64);
            (
                name,
                samples.len(),
                at(0.50),
                at(0.99),
                at(0.999),
                max,
                early,
                wakeups,
            )
        })
        .collect();
    let (idle, watched) = idle_wakeups();
    let (sleep_p50, sleep_p99, sleep_max) = sleep_oversleep();
    let uptime = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at end: {}", uptime.trim());
    println!();
    println!("| clock | timers | lateness p50 | p99 | p99.9 | max | early | driver wake-ups |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (name, n, p50, p99, p999, max, early, wakeups) in &stats {
        println!("| {name} | {n} | {p50:.3?} | {p99:.3?} | {p999:.3?} | {max:.3?} | {early} | {wakeups} |");
    }
    println!();
    println!("| measurement | value |");
    println!("|---|---:|");
    println!(
        "| platform: `park_timeout(1 ms)` oversleep p50 / p99 / max | {sleep_p50:.3?} / {sleep_p99:.3?} / {sleep_max:.3?} |"
    );
    println!(
        "| idle wake-ups (0 timers, {:.0} s) | {} ({:.2}/s) |",
        watched.as_secs_f64(),
        idle,
        idle as f64 / watched.as_secs_f64()
    );
}
