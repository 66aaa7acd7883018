//! Job schedulers on a `DurableTimer`, as a demanding user tries them:
//! timetables whose missed runs are costly to find.

use alloc::sync::Arc;
use core::time::Duration;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tickwheel::persist::{DurableTimer, Recovery, ScheduledRun, SyncPolicy};
use tickwheel::schedule::{Missed, Schedule};
use tickwheel::timer::ManualClock;

use crate::scratch;
use scratch::Scratch;

/// The instants (µs) of the runs the handler saw.
type Runs = Arc<Mutex<Vec<i64>>>;

fn micros(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_micros() as i64
}

/// Opens `path` on `clock`, recording the instant of every run.
fn open_on(path: &Path, clock: ManualClock) -> (DurableTimer<u64>, Recovery<u64>, Runs) {
    let runs: Runs = Arc::default();
    let sink = Arc::clone(&runs);
    let (timer, recovery) = DurableTimer::open_with_clock(
        path,
        SyncPolicy::Always,
        &Default::default(),
        clock,
        move |_| {
            let run = ScheduledRun::current().expect("a scheduler's run");
            sink.lock().unwrap().push(micros(run.instant));
        },
    )
    .unwrap();
    (timer, recovery, runs)
}

/// Waits (up to 10 s of real time) until `runs` holds `n` runs, moving
/// `clock` by `step` between looks.
fn wait_runs(clock: &ManualClock, runs: &Runs, n: usize, step: Duration) -> Vec<i64> {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = runs.lock().unwrap().clone();
        if seen.len() >= n {
            return seen;
        }
        assert!(Instant::now() < give_up, "{} of {n} runs came", seen.len());
        clock.advance(step);
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A cron scheduler that runs every second (`Missed::RunOnce`), its
/// journal closed for 30 days: the open finds the latest missed instant at
/// once. It stepped forward through the last week's 604,800 instants one
/// cron lookup at a time (seconds of CPU in `open`, and on the driver and
/// the Redis consumers' task for any such scheduler found late).
#[test]
fn the_latest_missed_instant_of_a_dense_cron_is_found_at_once() {
    let dir = Scratch::new("audit-dense-cron");
    let path = dir.path("j");
    let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let every_second = Schedule::cron("* * * * * *", "UTC")
        .unwrap()
        .missed(Missed::RunOnce);
    {
        let clock = ManualClock::with_wall_time(start);
        let (timer, _, runs) = open_on(&path, clock.clone());
        timer.upsert_schedule("tick", &every_second, 1).unwrap();
        let seen = wait_runs(&clock, &runs, 1, Duration::from_millis(200));
        assert_eq!(seen[0], micros(start) + 1_000_000);
    }
    let back = start + Duration::from_secs(30 * 86_400) + Duration::from_millis(500);
    let clock = ManualClock::with_wall_time(back);
    let began = Instant::now();
    let (timer, recovery, runs) = open_on(&path, clock.clone());
    let took = began.elapsed();
    // The latest instant more than a second past (whole seconds): the one
    // run standing for the month missed.
    let latest = UNIX_EPOCH + Duration::from_secs(1_800_000_000 + 30 * 86_400 - 1);
    assert_eq!(recovery.schedules, [("tick".to_string(), latest)]);
    assert!(took < Duration::from_secs(1), "open took {took:?}");
    let seen = wait_runs(&clock, &runs, 1, Duration::ZERO);
    assert_eq!(seen[0], micros(latest));
    drop(timer);
}

/// `Schedule::every_from`: "Runs at `start` and every `period` after it".
/// A start between two microseconds was rounded down, so the first run
/// was for an instant before `start`, and ran before it.
#[test]
fn a_start_between_microseconds_never_runs_before_it() {
    let dir = Scratch::new("audit-sub-micro");
    let whole = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let start = whole + Duration::from_nanos(1);
    let clock = ManualClock::with_wall_time(whole - Duration::from_secs(1));
    let (timer, _, runs) = open_on(&dir.path("j"), clock.clone());
    let every = Schedule::every_from(Duration::from_secs(10), start);
    timer.upsert_schedule("late-start", &every, 1).unwrap();
    let listed = timer.schedules(None, 1);
    assert!(
        listed[0].next >= start,
        "{:?} before {start:?}",
        listed[0].next
    );
    // At the whole second, a nanosecond before the start: no run.
    clock.advance(Duration::from_secs(1));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        *runs.lock().unwrap(),
        [] as [i64; 0],
        "a run before its start"
    );
    let seen = wait_runs(&clock, &runs, 1, Duration::from_millis(1));
    assert!(seen[0] >= micros(start), "{} before {start:?}", seen[0]);
    drop(timer);
}
