//! Timers keep their windows when the OS wakes the driver late (issue
//! 25, defect 1): the driver learns how late its sleeps end and wakes
//! that much before a window closes (`src/timer/slack.rs`, the rule).
//!
//! Two tests: one on a clock whose every sleep ends a fixed 300 µs late,
//! which is deterministic; and one on the real clock, on a machine whose
//! every other core runs a busy thread while 10,000 timers with the default
//! 1 ms slack come due over 2.5 s. `tests/timer/slack.rs` checks windows on a
//! manual clock that is never late.

extern crate alloc;

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use core::time::Duration;
use std::sync::Mutex;
use std::thread::Thread;
use std::time::Instant;

use tickwheel::timer::{Clock, Expired, DEFAULT_SLACK};
use tickwheel::Timer;

const US: Duration = Duration::from_micros(1);
const MS: Duration = Duration::from_millis(1);

/// A clock that moves only when the driver sleeps, as an OS that wakes
/// it `late` after each deadline would: a sleep until `d` returns at once
/// with the time at `d + late`. Until [`open`](Self::open) it stands
/// still (a sleep parks), so a test can schedule first.
#[derive(Clone)]
struct LateClock(Arc<LateState>);

struct LateState {
    base: Instant,
    /// Nanoseconds since `base`.
    now: AtomicU64,
    late: Duration,
    open: AtomicBool,
    sleeper: Mutex<Option<Thread>>,
}

impl LateClock {
    fn new(late: Duration) -> Self {
        LateClock(Arc::new(LateState {
            base: Instant::now(),
            now: AtomicU64::new(0),
            late,
            open: AtomicBool::new(false),
            sleeper: Mutex::new(None),
        }))
    }

    fn open(&self) {
        self.0.open.store(true, Ordering::SeqCst);
        if let Some(driver) = self.0.sleeper.lock().unwrap().as_ref() {
            driver.unpark();
        }
    }
}

impl Clock for LateClock {
    fn now(&self) -> Instant {
        self.0.base + Duration::from_nanos(self.0.now.load(Ordering::SeqCst))
    }

    fn sleep_until(&self, deadline: Option<Instant>) {
        *self.0.sleeper.lock().unwrap() = Some(std::thread::current());
        match deadline {
            Some(deadline) if self.0.open.load(Ordering::SeqCst) => {
                let woke = deadline + self.0.late - self.0.base;
                self.0
                    .now
                    .fetch_max(woke.as_nanos() as u64, Ordering::SeqCst);
            }
            // Nothing pending, or not open yet: until an unpark.
            _ => std::thread::park(),
        }
    }
}

/// Lone timers with the default 1 ms slack, 5 ms apart, on a clock whose
/// sleeps all end 300 µs late. With the old fixed lead (20 µs) the driver
/// woke 20 µs before each window closed and every timer overshot it by
/// 280 µs. Now the first sleep teaches the driver the 300 µs, and every
/// later timer fires inside its window; none before its deadline.
#[test]
fn the_driver_learns_how_late_the_os_wakes_it() {
    let clock = LateClock::new(300 * US);
    let fired_at = Arc::new(Mutex::new(Vec::new()));
    let timer = {
        let (clock, fired_at) = (clock.clone(), Arc::clone(&fired_at));
        Timer::builder()
            .clock(clock.clone())
            .executor(move |fired: Expired<u32>| {
                let late = clock.now().checked_duration_since(fired.deadline);
                fired_at.lock().unwrap().push((fired.value, late));
            })
            .build()
            .unwrap()
    };
    assert_eq!(timer.slack(), MS);
    let start = clock.now();
    for i in 0..200 {
        timer.schedule_at(start + 10 * MS + 5 * MS * i, i).unwrap();
    }
    clock.open();
    let give_up = Instant::now() + Duration::from_secs(10);
    while timer.stats().fired < 200 && Instant::now() < give_up {
        std::thread::sleep(MS);
    }
    let fired = fired_at.lock().unwrap().clone();
    assert_eq!(fired.len(), 200);
    let stats = timer.stats();
    println!(
        "in window {}, overshoot {} (max {:?}), early {}",
        stats.in_window,
        stats.overshoot.count(),
        stats.overshoot.max(),
        stats.early
    );
    for &(i, late) in &fired {
        let late = late.unwrap_or_else(|| panic!("timer {i} fired early"));
        // The first may come before anything is learned.
        assert!(i == 0 || late <= MS, "timer {i}: {late:?} late");
    }
    assert_eq!(stats.early, 0);
    assert!(stats.in_window >= 199, "{stats:?}");
}

const TIMERS: u32 = 10_000;

/// Spins a thread on every core but one (the other cores, as the issue's
/// test asks: the timer's own core is left to it and the OS) until
/// dropped; at least one thread.
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..cores.saturating_sub(1).max(1))
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        core::hint::spin_loop();
                    }
                })
            })
            .collect();
        Load { stop, threads }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Gaps between deadlines: 50 to 450 µs (mean 250 µs), splitmix64.
fn gaps(seed: u64) -> impl Iterator<Item = Duration> {
    let mut state = seed;
    core::iter::repeat_with(move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Duration::from_micros(50 + (z ^ (z >> 31)) % 401)
    })
}

/// 10,000 timers with the default 1 ms slack, 50 to 450 µs apart over
/// 2.5 s, while a busy thread spins on every other core: at least 99 % must
/// be handed over inside their window, and none before its deadline.
///
/// Ignored by default: what the OS does to the driver decides it. On the
/// 2-core VM with nothing else running (one busy thread), three runs gave
/// 99.21, 99.55 and 99.46 % inside (overshoot max 3.0–4.3 ms), none early.
/// With other processes' builds loading the machine too (load average
/// 1.3–6.9, a thread on every core), 21 runs gave 81–99.4 %: the driver
/// was not scheduled for 1.5–52 ms at a time, which no lead inside a 1 ms
/// window absorbs. The fixed lead before it, in 12 such runs: 68–86 %.
/// Run it with `cargo test --test late_wakeups -- --ignored` on a machine
/// of its own.
#[test]
#[ignore = "real clock: needs a machine that nothing else loads"]
fn lone_default_slack_timers_fire_inside_their_windows_under_load() {
    let load = Load::start();
    // Checked by the executor too, on the clock a user reads.
    let early = Arc::new(AtomicU64::new(0));
    let timer = {
        let early = Arc::clone(&early);
        Timer::builder()
            .executor(move |fired: Expired<u32>| {
                if Instant::now() < fired.deadline {
                    early.fetch_add(1, Ordering::Relaxed);
                }
            })
            .build()
            .unwrap()
    };
    assert_eq!(timer.slack(), DEFAULT_SLACK);
    let mut deadline = Instant::now() + Duration::from_millis(100);
    for (i, gap) in (0..TIMERS).zip(gaps(25)) {
        deadline += gap;
        timer.schedule_at(deadline, i).unwrap();
    }
    let give_up = deadline + Duration::from_secs(2);
    while timer.stats().fired < u64::from(TIMERS) && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(load);
    let stats = timer.stats();
    let early = early.load(Ordering::Relaxed);
    let percent = 100.0 * stats.in_window as f64 / f64::from(TIMERS);
    println!(
        "{TIMERS} timers, {} wake-ups: {percent:.2} % in window; overshoot {} (p99 {:?}, max {:?}); \
         lateness p50 {:?} p99 {:?} max {:?}; early {} (executor: {early})",
        stats.wakeups,
        stats.overshoot.count(),
        stats.overshoot.quantile(0.99),
        stats.overshoot.max(),
        stats.lateness.quantile(0.5),
        stats.lateness.quantile(0.99),
        stats.lateness.max(),
        stats.early,
    );
    assert_eq!(stats.fired, u64::from(TIMERS));
    assert_eq!((stats.early, early), (0, 0), "fired before the deadline");
    assert!(
        stats.in_window * 100 >= u64::from(TIMERS) * 99,
        "{percent:.2} % in window"
    );
}
