//! Durable job schedulers where a run meets a stop or a removal: a clean
//! drop during a run does not run that instant again at the next open, and
//! a run taken out of the timer just before its scheduler's removal does
//! not run after `remove_schedule` answered.

use alloc::sync::Arc;
use core::time::Duration;
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tickwheel::persist::{DurableTimer, ScheduledRun, SyncPolicy};
use tickwheel::schedule::Schedule;
use tickwheel::timer::ManualClock;

use crate::scratch;
use scratch::Scratch;

/// What each run saw: its value, and the scheduler run it was in (if any).
type Seen = Arc<Mutex<Vec<(u64, Option<ScheduledRun>)>>>;

/// Opens `path`, recording every run; each run's handler takes `slow`.
fn open(path: &std::path::Path, slow: Duration) -> (DurableTimer<u64>, Seen) {
    let seen: Seen = Arc::default();
    let sink = Arc::clone(&seen);
    let (timer, _) = DurableTimer::open(path, SyncPolicy::Always, &Default::default(), move |v| {
        sink.lock().unwrap().push((v, ScheduledRun::current()));
        std::thread::sleep(slow);
    })
    .unwrap();
    (timer, seen)
}

/// The timer dropped (a clean stop) while a scheduler's run runs: the run
/// completes, and the journal moves past its instant. It once kept the
/// instant (the next run is scheduled by the timer, already taken), so
/// every restart that landed during a run ran that instant twice.
#[test]
fn a_clean_drop_during_a_run_does_not_run_its_instant_again() {
    let dir = Scratch::new("sched-drop");
    let path = dir.path("j");
    let (timer, seen) = open(&path, Duration::from_millis(300));
    timer
        .upsert_schedule("tick", &Schedule::every(Duration::from_secs(2)), 7)
        .unwrap();
    let began = Instant::now();
    while seen.lock().unwrap().is_empty() {
        assert!(began.elapsed() < Duration::from_secs(5), "no run");
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(timer); // lets the running handler finish
    let first = seen.lock().unwrap()[0].1.clone().unwrap().instant;
    let (_timer, again) = open(&path, Duration::ZERO);
    std::thread::sleep(Duration::from_millis(400));
    let repeated: Vec<SystemTime> = again
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(_, run)| run.as_ref().map(|run| run.instant))
        .filter(|&at| at <= first)
        .collect();
    assert!(repeated.is_empty(), "ran {first:?} again: {repeated:?}");
}

/// A scheduler's run taken out of the timer in the same pass as a slow
/// job, removed while it waits its turn: it does not run after
/// `remove_schedule` answered `true` (it once did, outside any
/// `ScheduledRun`, so a handler that expects one panicked).
#[test]
fn a_run_waiting_its_turn_when_its_scheduler_is_removed_does_not_run() {
    for one_shot_first in [true, false] {
        let dir = Scratch::new("sched-remove");
        let clock = ManualClock::with_wall_time(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        let seen: Seen = Arc::default();
        let sink = Arc::clone(&seen);
        let (timer, _) = DurableTimer::open_with_clock(
            dir.path("j"),
            SyncPolicy::Never,
            &Default::default(),
            clock.clone(),
            move |v: u64| {
                sink.lock().unwrap().push((v, ScheduledRun::current()));
                if v == 99 {
                    std::thread::sleep(Duration::from_millis(300));
                }
            },
        )
        .unwrap();
        let every = Schedule::every(Duration::from_secs(10));
        if one_shot_first {
            timer.schedule(Duration::from_secs(10), 99).unwrap();
            timer.upsert_schedule("b", &every, 1).unwrap();
        } else {
            timer.upsert_schedule("b", &every, 1).unwrap();
            timer.schedule(Duration::from_secs(10), 99).unwrap();
        }
        // Past both windows: with the default 1 ms of slack a timer may
        // be filed up to 1 ms after its deadline, so a clock stopped at
        // the deadline itself fired nothing in about 2 runs of 5.
        clock.advance(Duration::from_secs(10) + Duration::from_millis(1));
        let began = Instant::now();
        while !seen.lock().unwrap().iter().any(|(v, _)| *v == 99) {
            assert!(
                began.elapsed() < Duration::from_secs(5),
                "the job never ran"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let before = seen.lock().unwrap().len();
        assert!(timer.remove_schedule("b"));
        std::thread::sleep(Duration::from_millis(600));
        let seen = seen.lock().unwrap();
        assert!(
            seen[before..].iter().all(|(v, _)| *v != 1),
            "{one_shot_first}: the removed scheduler ran: {seen:?}"
        );
        assert!(
            seen.iter()
                .filter(|(v, _)| *v == 1)
                .all(|(_, run)| run.is_some()),
            "{one_shot_first}: a scheduler's run outside a ScheduledRun: {seen:?}"
        );
    }
}
