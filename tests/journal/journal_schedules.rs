//! Job schedulers on a `DurableTimer` (`upsert_schedule`,
//! `remove_schedule`, `schedules`, `ScheduledRun`): each instant of the
//! timetable runs once, in order and never early; an identical upsert
//! changes nothing and a different one replaces the timetable; the
//! scheduler survives a restart, and the instants missed while the journal
//! was closed follow the timetable's `Missed` policy. The crash loop is in
//! `schedules_crash.rs`.

use alloc::sync::Arc;
use core::time::Duration;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tickwheel::persist::{DurableTimer, Recovery, ScheduledRun, SyncPolicy};
use tickwheel::schedule::{Missed, Schedule, Upserted};
use tickwheel::timer::{Clock, ManualClock, ScheduleErrorKind};

use crate::scratch;
use scratch::Scratch;

/// One run as the handler saw it: the value, the instant it was for (µs),
/// and the wall-clock time it ran at (µs).
#[derive(Debug, Clone, Copy)]
struct Seen {
    value: u64,
    instant: i64,
    at: i64,
}

type Runs = Arc<Mutex<Vec<Seen>>>;

pub(crate) fn micros(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_micros() as i64
}

/// Opens `path` on `clock`, recording every run.
fn open_on(path: &Path, clock: impl Clock + Clone) -> (DurableTimer<u64>, Recovery<u64>, Runs) {
    let runs: Runs = Arc::default();
    let sink = Arc::clone(&runs);
    let wall = clock.clone();
    let (timer, recovery) = DurableTimer::open_with_clock(
        path,
        SyncPolicy::Always,
        &Default::default(),
        clock,
        move |value| {
            let run = ScheduledRun::current().expect("a scheduler's run");
            sink.lock().unwrap().push(Seen {
                value,
                instant: micros(run.instant),
                at: micros(wall.wall_now()),
            });
        },
    )
    .unwrap();
    (timer, recovery, runs)
}

/// Waits (up to 10 s of real time) until `runs` holds `n` runs.
fn wait_runs(runs: &Runs, n: usize) -> Vec<Seen> {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = runs.lock().unwrap().clone();
        if seen.len() >= n {
            return seen;
        }
        assert!(Instant::now() < give_up, "{} of {n} runs came", seen.len());
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn each_instant_runs_once_in_order_and_never_early() {
    let dir = Scratch::new("sched-basic");
    let (timer, _, runs) = open_on(&dir.path("j"), tickwheel::timer::SystemClock);
    let every = Schedule::every(Duration::from_millis(20));
    assert_eq!(
        timer.upsert_schedule("tick", &every, 1).unwrap(),
        Upserted::Created
    );
    assert_eq!(
        timer.upsert_schedule("tick", &every, 1).unwrap(),
        Upserted::Unchanged
    );
    let seen = wait_runs(&runs, 25);
    for pair in seen.windows(2) {
        assert_eq!(
            pair[1].instant - pair[0].instant,
            20_000,
            "consecutive instants, none skipped or repeated: {pair:?}"
        );
    }
    for run in &seen {
        assert_eq!(run.instant % 20_000, 0, "on the period's grid");
        assert!(run.at >= run.instant, "early: {run:?}");
        assert_eq!(run.value, 1);
    }
    let listed = timer.schedules(None, 10);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].key, "tick");
    assert_eq!(listed[0].timetable, "every 20ms");
    let journaled = timer.journaled(None, 10);
    assert_eq!(journaled.len(), 1);
    assert!(journaled[0].recurring);
    // A keyed one-shot job may share the key: the namespaces are apart.
    timer
        .schedule_keyed("tick", Duration::from_secs(3600), 9)
        .unwrap();
    assert_eq!(timer.cancel_key("tick"), Some(9));
    assert_eq!(timer.schedules(None, 10).len(), 1);
}

#[test]
fn an_upsert_that_changes_replaces_the_timetable_and_remove_stops_it() {
    let dir = Scratch::new("sched-change");
    let (timer, _, runs) = open_on(&dir.path("j"), tickwheel::timer::SystemClock);
    timer
        .upsert_schedule("job", &Schedule::every(Duration::from_millis(20)), 1)
        .unwrap();
    wait_runs(&runs, 3);
    let changed = Schedule::every(Duration::from_millis(30));
    assert_eq!(
        timer.upsert_schedule("job", &changed, 2).unwrap(),
        Upserted::Updated
    );
    // The value alone changing is a change too.
    assert_eq!(
        timer.upsert_schedule("job", &changed, 3).unwrap(),
        Upserted::Updated
    );
    let upserted = runs.lock().unwrap().len();
    let seen = wait_runs(&runs, upserted + 5);
    // A run of the old scheduler in flight at the upsert may finish; none
    // starts after it.
    let after: Vec<Seen> = seen[upserted..]
        .iter()
        .copied()
        .skip_while(|s| s.value != 3)
        .collect();
    assert!(after.len() >= 4, "{seen:?}");
    for run in &after {
        assert_eq!(run.value, 3, "only the new value runs: {seen:?}");
        assert_eq!(run.instant % 30_000, 0, "on the new grid: {run:?}");
    }
    assert_eq!(timer.schedules(None, 10)[0].timetable, "every 30ms");
    assert!(timer.remove_schedule("job"));
    assert!(!timer.remove_schedule("job"));
    assert!(timer.schedules(None, 10).is_empty());
    assert!(timer.journaled(None, 10).is_empty());
    // A run in flight at the remove may still finish; then nothing.
    std::thread::sleep(Duration::from_millis(50));
    let stopped = runs.lock().unwrap().len();
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(
        runs.lock().unwrap().len(),
        stopped,
        "a removed scheduler ran"
    );
    assert_eq!(timer.pending(), 0);
}

#[test]
fn bad_timetables_and_sizes_are_refused_with_the_value() {
    let dir = Scratch::new("sched-bad");
    let (timer, _, _) = open_on(&dir.path("j"), tickwheel::timer::SystemClock);
    let err = timer
        .upsert_schedule("fast", &Schedule::every(Duration::from_millis(1)), 7)
        .unwrap_err();
    assert_eq!(err.kind(), ScheduleErrorKind::OutOfRange);
    assert_eq!(err.into_inner(), 7);
    let err = timer
        .upsert_schedule("long", &Schedule::every(Duration::MAX), 8)
        .unwrap_err();
    assert_eq!(err.kind(), ScheduleErrorKind::OutOfRange);
    // A cron timetable whose every instant is past.
    let past = Schedule::cron("0 0 0 1 1 * 2001", "UTC").unwrap();
    let err = timer.upsert_schedule("past", &past, 9).unwrap_err();
    assert_eq!(err.kind(), ScheduleErrorKind::OutOfRange);
    assert_eq!(err.into_inner(), 9);
    let key = "k".repeat(5000);
    let err = timer
        .upsert_schedule(&key, &Schedule::every(Duration::from_secs(1)), 10)
        .unwrap_err();
    assert_eq!(err.kind(), ScheduleErrorKind::TooLarge);
    assert_eq!(err.into_inner(), 10);
    // None of them left anything behind.
    assert!(timer.schedules(None, 10).is_empty());
    assert!(timer.journaled(None, 10).is_empty());
    assert_eq!(timer.pending(), 0);
}

#[test]
fn a_panicking_run_does_not_stop_its_scheduler() {
    let dir = Scratch::new("sched-panic");
    let runs: Runs = Arc::default();
    let sink = Arc::clone(&runs);
    let (timer, _) = DurableTimer::open(
        dir.path("j"),
        SyncPolicy::Always,
        &Default::default(),
        move |value: u64| {
            let run = ScheduledRun::current().unwrap();
            let mut seen = sink.lock().unwrap();
            seen.push(Seen {
                value,
                instant: micros(run.instant),
                at: micros(SystemTime::now()),
            });
            let first = seen.len() == 1;
            drop(seen);
            assert!(!first, "the first run fails");
        },
    )
    .unwrap();
    timer
        .upsert_schedule("flaky", &Schedule::every(Duration::from_millis(20)), 1)
        .unwrap();
    let seen = wait_runs(&runs, 4);
    assert_eq!(seen[1].instant - seen[0].instant, 20_000, "{seen:?}");
    // The failed run did not complete: the journal still holds an instant
    // at or before the second run's (a restart would run it again), or,
    // once later runs completed, theirs.
    assert_eq!(timer.schedules(None, 1).len(), 1);
}

/// A wall-clock time on a whole minute, for manual clocks.
fn minute() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000 / 60 * 60)
}

/// Drives a manual clock until `runs` has `n` runs, moving it to each
/// wake-up of the driver but never past `limit`.
fn drive(clock: &ManualClock, runs: &Runs, n: usize, limit: SystemTime) -> Vec<Seen> {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = runs.lock().unwrap().clone();
        if seen.len() >= n {
            return seen;
        }
        assert!(
            Instant::now() < give_up,
            "{} of {n} runs came: {seen:?}",
            seen.len()
        );
        if clock.wall_now() < limit {
            let until = limit.duration_since(clock.wall_now()).unwrap();
            clock.advance(until.min(Duration::from_millis(500)));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_scheduler_survives_a_restart_on_its_grid() {
    let dir = Scratch::new("sched-restart");
    let path = dir.path("j");
    let start = minute();
    let every = Schedule::every(Duration::from_secs(10));
    {
        let clock = ManualClock::with_wall_time(start);
        let (timer, _, runs) = open_on(&path, clock.clone());
        timer.upsert_schedule("report", &every, 5).unwrap();
        let seen = drive(&clock, &runs, 3, start + Duration::from_secs(30));
        let instants: Vec<i64> = seen.iter().map(|s| s.instant).collect();
        let s0 = micros(start);
        assert_eq!(
            instants,
            [s0 + 10_000_000, s0 + 20_000_000, s0 + 30_000_000]
        );
    }
    // Back 4 s after the third run: nothing was missed.
    let clock = ManualClock::with_wall_time(start + Duration::from_secs(34));
    let (timer, recovery, runs) = open_on(&path, clock.clone());
    assert_eq!(
        recovery.schedules,
        [("report".to_string(), start + Duration::from_secs(40))]
    );
    assert!(
        recovery.outcomes.is_empty(),
        "a scheduler is not a one-shot job"
    );
    // A service upserts its schedulers at every start: nothing changes.
    assert_eq!(
        timer.upsert_schedule("report", &every, 5).unwrap(),
        Upserted::Unchanged
    );
    let seen = drive(&clock, &runs, 2, start + Duration::from_secs(50));
    let s0 = micros(start);
    assert_eq!(seen[0].instant, s0 + 40_000_000);
    assert_eq!(seen[1].instant, s0 + 50_000_000);
    assert!(seen.iter().all(|s| s.at >= s.instant && s.value == 5));
}

/// A scheduler every 10 s made at a whole minute `start`, its journal
/// closed after the first run (for `start + 10 s`), and reopened 5
/// minutes and 5 s later: what the reopened one runs, with no time
/// passing, then up to the next instant.
fn missed_after_five_minutes(missed: Missed) -> (Recovery<u64>, Vec<Seen>, Vec<Seen>) {
    let dir = Scratch::new("sched-missed");
    let path = dir.path("j");
    let start = minute();
    {
        let clock = ManualClock::with_wall_time(start);
        let (timer, _, runs) = open_on(&path, clock.clone());
        let every = Schedule::every(Duration::from_secs(10)).missed(missed);
        timer.upsert_schedule("report", &every, 1).unwrap();
        drive(&clock, &runs, 1, start + Duration::from_secs(10));
    }
    let back = start + Duration::from_secs(305);
    let clock = ManualClock::with_wall_time(back);
    let (timer, recovery, runs) = open_on(&path, clock.clone());
    // What runs at once (within the tick a deadline rounds up to): wait
    // for the driver to settle on the next instant, which lies ahead.
    let give_up = Instant::now() + Duration::from_secs(10);
    let at_once = loop {
        let next = timer.schedules(None, 1)[0].next;
        if next > back {
            break runs.lock().unwrap().clone();
        }
        assert!(Instant::now() < give_up, "the missed runs never ran");
        clock.advance(Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(2));
    };
    let then = drive(
        &clock,
        &runs,
        at_once.len() + 1,
        back + Duration::from_secs(5),
    );
    let after = then[at_once.len()..].to_vec();
    (recovery, at_once, after)
}

#[test]
fn runs_missed_while_closed_follow_the_missed_policy() {
    let s0 = micros(minute());
    let sec = 1_000_000;
    // Skip: none of the 29 missed instants (20 s … 300 s) runs.
    let (recovery, at_once, next) = missed_after_five_minutes(Missed::Skip);
    assert_eq!(recovery.schedules[0].1, minute() + Duration::from_secs(310));
    assert!(at_once.is_empty(), "{at_once:?}");
    assert_eq!(next[0].instant, s0 + 310 * sec);
    // RunOnce: one run, for the latest missed instant, at once.
    let (recovery, at_once, next) = missed_after_five_minutes(Missed::RunOnce);
    assert_eq!(recovery.schedules[0].1, minute() + Duration::from_secs(300));
    let instants: Vec<i64> = at_once.iter().map(|s| s.instant).collect();
    assert_eq!(instants, [s0 + 300 * sec]);
    assert_eq!(next[0].instant, s0 + 310 * sec);
    // RunAll: every missed instant, oldest first, at once.
    let (_, at_once, next) = missed_after_five_minutes(Missed::RunAll);
    let instants: Vec<i64> = at_once.iter().map(|s| s.instant).collect();
    let expected: Vec<i64> = (2..=30).map(|k| s0 + k * 10 * sec).collect();
    assert_eq!(instants, expected);
    assert_eq!(next[0].instant, s0 + 310 * sec);
}

/// The admin tool lists a journal's schedulers (every page) and removes
/// one, as a process whose output is parsed.
#[test]
fn the_admin_tool_lists_and_removes_a_journals_schedulers() {
    let dir = Scratch::new("sched-admin");
    let path = dir.path("j");
    {
        let (timer, _) =
            DurableTimer::<Vec<u8>>::open(&path, SyncPolicy::Always, &Default::default(), |_| {})
                .unwrap();
        for i in 0..1005 {
            let every = Schedule::every(Duration::from_secs(3600 + i));
            timer
                .upsert_schedule(&format!("s{i:04}"), &every, b"x".to_vec())
                .unwrap();
        }
        let nightly = Schedule::cron("0 0 2 * * *", "Europe/Paris").unwrap();
        timer
            .upsert_schedule("nightly", &nightly, b"vacuum".to_vec())
            .unwrap();
    }
    let admin = |args: &[&str]| -> Vec<serde_json::Value> {
        let output = Command::new(env!("CARGO_BIN_EXE_tickwheel-admin"))
            .args(["--journal", path.to_str().unwrap(), "--json"])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{args:?}: {stderr}");
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    let listed = admin(&["schedules"]);
    assert_eq!(listed.len(), 1006);
    assert_eq!(listed[0]["key"], "nightly");
    assert_eq!(listed[0]["timetable"], "cron \"0 0 2 * * *\" Europe/Paris");
    assert_eq!(listed[1]["key"], "s0000");
    assert_eq!(listed[1]["timetable"], "every 3600s");
    assert_eq!(listed[1005]["key"], "s1004");
    let removed = admin(&["unschedule", "s0001"]);
    assert_eq!(removed[0]["removed"], true);
    assert_eq!(admin(&["unschedule", "s0001"])[0]["removed"], false);
    let page = admin(&["ls", "pending", "--limit", "3"]);
    let rows: Vec<_> = page.iter().filter(|r| r["type"] == "job").collect();
    assert!(rows.iter().all(|r| r["recurring"] == true), "{rows:?}");
    // Opening it to look ran nothing and lost nothing: 1,005 are left,
    // and the cron scheduler kept its timetable.
    let (timer, recovery) =
        DurableTimer::<Vec<u8>>::open(&path, SyncPolicy::Always, &Default::default(), |_| {})
            .unwrap();
    assert_eq!(recovery.schedules.len(), 1005);
    assert!(recovery.schedules.iter().all(|(key, _)| key != "s0001"));
    assert_eq!(
        timer.schedules(None, 1)[0].timetable,
        listed[0]["timetable"]
    );
}
