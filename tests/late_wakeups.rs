//! Timers keep their windows when the OS wakes the driver late (issue
//! 25, defect 1): the driver learns how late its sleeps end and wakes
//! that much before a window closes (`src/timer/slack.rs`, the rule).
//!
//! On a clock whose every sleep ends a fixed 300 µs late, which is
//! deterministic. `tests/slack.rs` checks windows on a manual clock that
//! is never late.

extern crate alloc;

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use core::time::Duration;
use std::sync::Mutex;
use std::thread::Thread;
use std::time::Instant;

use tickwheel::timer::{Clock, Expired};
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
