//! Job schedulers at their edges, each test on its own real
//! `redis-server`: a key removed and added again, runs left overdue when
//! it is removed or changed, timetables with nothing to come, and one run
//! out while consumers wait.

use core::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};

use tickwheel::redis::{QueueError, Schedule, Upserted};

use crate::queues;
use crate::redis_server;
use crate::schedules::waiting;
use queues::builder;
use redis_server::RedisServer;

/// A key removed and added again makes runs again. Its version restarted
/// at 1, so the new runs took the ids the removal had just cancelled,
/// which the queue remembers as ended: they were refused as known and
/// their instants never ran (with a daily timetable, the next day's run).
#[test]
fn a_scheduler_removed_and_added_again_runs_again() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let daily = Schedule::every(Duration::from_secs(86_400));
    assert_eq!(
        queue.upsert_schedule("k", &daily, b"a").unwrap(),
        Upserted::Created
    );
    let first = waiting(&queue);
    assert_eq!(first.len(), 1);
    assert!(queue.remove_schedule("k").unwrap());
    assert!(waiting(&queue).is_empty());
    assert_eq!(
        queue.upsert_schedule("k", &daily, b"a").unwrap(),
        Upserted::Created
    );
    let again = waiting(&queue);
    assert_eq!(again.len(), 1, "tomorrow's run was lost");
    assert_ne!(again, first);
    assert!(again[0].starts_with("schedule/k/2/"), "{}", again[0]);
    assert_eq!(queue.schedules().unwrap()[0].version, 2);
}

/// Runs left waiting past their time (no consumer ran) are cancelled by a
/// removal and replaced by a change, like those still to come. They were
/// left (only runs from a second ago on were cancelled) and delivered
/// after the removal.
#[test]
fn overdue_runs_go_with_their_scheduler() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let fast = Schedule::every(Duration::from_millis(500));
    queue.upsert_schedule("gone", &fast, b"old").unwrap();
    queue.upsert_schedule("changed", &fast, b"old").unwrap();
    // The upserts made two seconds of runs; with no consumer, nothing makes
    // more, and these fall overdue.
    std::thread::sleep(Duration::from_millis(3_500));
    let before = waiting(&queue);
    assert!(before.len() >= 6, "{before:?}");
    assert!(queue.remove_schedule("gone").unwrap());
    assert_eq!(
        queue.upsert_schedule("changed", &fast, b"new").unwrap(),
        Upserted::Updated
    );
    let after = waiting(&queue);
    assert!(
        after.iter().all(|id| id.starts_with("schedule/changed/2/")),
        "old runs still waiting: {after:?}"
    );
    let page = queue.pending(.., 1_000, None).unwrap();
    assert!(page.jobs.iter().all(|job| job.payload == b"new"));
}

/// A timetable with no instant to come, or none before the latest due
/// time, is refused and nothing is stored; a retry answers the same. Such
/// a one was stored and answered `Created` (or failed after storing it,
/// and then answered `Unchanged` to a retry).
#[test]
fn a_timetable_that_never_runs_is_refused_and_not_stored() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let february_30 = Schedule::cron("0 0 0 30 2 *", "UTC").unwrap();
    let gone = Schedule::cron("0 0 0 1 1 * 2020", "UTC").unwrap();
    for never in [&february_30, &gone] {
        for _ in 0..2 {
            let err = queue.upsert_schedule("never", never, b"").unwrap_err();
            assert!(matches!(err, QueueError::InvalidSchedule(_)), "{err:?}");
        }
    }
    let far = Schedule::every_from(
        Duration::from_secs(10),
        UNIX_EPOCH + Duration::from_secs(10_500_000_000),
    );
    for _ in 0..2 {
        let err = queue.upsert_schedule("far", &far, b"").unwrap_err();
        assert!(matches!(err, QueueError::DueOutOfRange), "{err:?}");
    }
    assert!(queue.schedules().unwrap().is_empty());
    assert!(waiting(&queue).is_empty());
}

/// `S M H D Mo * Y`: a cron expression for the one UTC second at `t`.
fn cron_for_second(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since the epoch to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rest / 3_600, rest / 60 % 60, rest % 60);
    format!("{s} {m} {h} {day} {month} * {year}")
}

/// A timetable that runs out (a cron one for a single second) runs that
/// second, then costs consumers nothing: it once made every consumer
/// process look at it again at once, for good (thousands of commands a
/// second against Redis).
#[test]
fn a_timetable_that_ran_out_leaves_consumers_idle() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let once = Schedule::cron(
        &cron_for_second(SystemTime::now() + Duration::from_secs(2)),
        "UTC",
    )
    .unwrap();
    queue.upsert_schedule("once", &once, b"").unwrap();
    let consumer = queue.consumer().unwrap();
    let run = consumer.fetch(1, Duration::from_secs(10)).unwrap();
    assert_eq!(run.len(), 1);
    consumer.ack(&run[0]).unwrap();
    std::thread::sleep(Duration::from_millis(1_500));
    let before = server.commands_processed();
    std::thread::sleep(Duration::from_secs(2));
    let spent = server.commands_processed() - before;
    assert!(spent < 40, "{spent} commands in 2 s with nothing to do");
    assert_eq!(queue.schedules().unwrap().len(), 1, "the scheduler stays");
}

/// The bug: a user's job could take a run's id (`schedule/<key>/…`), and
/// `Delivery::schedule` then named a scheduler for an ordinary job; taken
/// first, it made the scheduler's own run `Exists`, so the user's payload
/// ran in its place. New jobs may not start with `schedule/`.
#[test]
fn a_new_job_may_not_take_a_run_id() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let hour = Duration::from_secs(3600);
    let refused = |err: QueueError| matches!(err, QueueError::InvalidId(_));
    assert!(refused(
        queue.schedule_in("schedule/k/1/5", hour, b"").unwrap_err()
    ));
    let batch = [("fine", hour, &b""[..]), ("schedule/k/1/6", hour, &b""[..])];
    assert!(refused(queue.schedule_many(&batch).unwrap_err()));
    // Nothing of the refused batch was stored.
    assert_eq!(queue.len().unwrap(), (0, 0));
    // Other ids with the word are fine, and so is cancelling a run's id.
    queue.schedule_in("schedules/k", hour, b"").unwrap();
    queue.schedule_in("my/schedule/k", hour, b"").unwrap();
    queue.cancel("schedule/k/1/5").unwrap();
}

/// A build that cannot read a scheduler's timetable (a cron one, in a
/// build without feature `cron`; here a kind no build reads) cannot
/// cancel the runs made for it. Removing it answered `true` and left its
/// runs to fire after the removal; changing it did the same. Both are now
/// refused, and the scheduler and its runs stay as they were.
#[test]
fn a_timetable_this_build_cannot_read_is_neither_removed_nor_changed() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let fast = Schedule::every(Duration::from_millis(500));
    queue.upsert_schedule("k", &fast, b"old").unwrap();
    let runs = waiting(&queue);
    assert!(!runs.is_empty());
    let hash = "tw:{orders}:schedules";
    let record = server.command(&["HGET", hash, "k"]);
    let record = record
        .split_once("\r\n")
        .unwrap()
        .1
        .trim_end_matches("\r\n");
    assert!(record.contains("\nevery\n"), "{record:?}");
    let foreign = record.replacen("\nevery\n", "\nlunar\n", 1);
    server.command(&["HSET", hash, "k", &foreign]);
    let removed = queue.remove_schedule("k");
    assert!(
        matches!(removed, Err(QueueError::InvalidSchedule(ref why)) if why.contains("cannot read")),
        "{removed:?}"
    );
    let changed = queue.upsert_schedule("k", &fast, b"new");
    assert!(
        matches!(changed, Err(QueueError::InvalidSchedule(_))),
        "{changed:?}"
    );
    assert_eq!(waiting(&queue), runs, "the runs changed");
    let all = queue.schedules().unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].timetable, "(a timetable this build cannot read)");
}
