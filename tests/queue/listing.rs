//! Listing a queue a page at a time (`Queue::pending`, `in_flight`,
//! `dead`), each test on its own real `redis-server`: every job exactly
//! once in order, ranges that keep their bounds, cursors that survive the
//! removal or move of the job they stopped at, and each kind listing only
//! its own jobs.

use core::time::Duration;
use std::collections::HashSet;
use std::time::SystemTime;

use tickwheel::redis::{Cursor, Listed, Queue, QueueError, MAX_DUE_MICROS, MAX_PAGE};

use crate::queues;
use crate::redis_server;
use queues::{builder, MS};
use redis_server::RedisServer;

/// Every page of `list`, from the start.
fn walk(list: impl Fn(Option<&Cursor>) -> tickwheel::redis::Page) -> Vec<Listed> {
    let mut all = Vec::new();
    let mut page = list(None);
    loop {
        all.append(&mut page.jobs);
        let Some(next) = page.next else { return all };
        page = list(Some(&next));
    }
}

fn at(micros: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_micros(micros)
}

/// 2,500 jobs, 500 of them due at one instant (equal scores, ordered by
/// the sequence number): pages of 97 show each once, in due order, then
/// schedule order.
#[test]
fn pages_show_every_waiting_job_once_in_order() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let base = 4_000_000_000_000_000u64;
    let mut expected = Vec::new();
    for i in 0..2_500u64 {
        let due = if i % 5 == 0 {
            base
        } else {
            base + (i * 7919) % 1_000_000
        };
        queue.schedule(&format!("j{i}"), at(due), b"p").unwrap();
        expected.push((due, i));
    }
    expected.sort();
    let listed = walk(|after| queue.pending(.., 97, after).unwrap());
    let ids: Vec<String> = listed.iter().map(|j| j.id.clone()).collect();
    let want: Vec<String> = expected.iter().map(|(_, i)| format!("j{i}")).collect();
    assert_eq!(ids, want);
    assert!(listed
        .iter()
        .all(|j| j.payload == b"p" && j.attempts == 0 && j.due == j.at));
}

/// A range keeps its bounds to the microsecond, included or excluded.
#[test]
fn a_range_keeps_its_bounds() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let base = 4_000_000_000_000_000u64;
    for i in 0..10u64 {
        queue.schedule(&format!("j{i}"), at(base + i), b"").unwrap();
    }
    let ids = |page: Vec<Listed>| page.into_iter().map(|j| j.id).collect::<Vec<_>>();
    let list = |r: (core::ops::Bound<SystemTime>, core::ops::Bound<SystemTime>)| {
        ids(walk(|after| queue.pending(r, 3, after).unwrap()))
    };
    use core::ops::Bound::{Excluded, Included, Unbounded};
    assert_eq!(
        list((Included(at(base + 2)), Excluded(at(base + 5)))),
        ["j2", "j3", "j4"]
    );
    assert_eq!(
        list((Excluded(at(base + 2)), Included(at(base + 5)))),
        ["j3", "j4", "j5"]
    );
    assert_eq!(list((Unbounded, Excluded(at(base + 1)))), ["j0"]);
    assert_eq!(list((Included(at(base + 9)), Unbounded)), ["j9"]);
    assert!(list((Included(at(base + 20)), Unbounded)).is_empty());
    // A bound past the latest due time means what it says, whichever side
    // and kind it is (before, `..far` and `far..` were refused where
    // `..=far` worked).
    let far = at(MAX_DUE_MICROS) + Duration::from_secs(300 * 365 * 86_400);
    assert_eq!(list((Unbounded, Excluded(far))).len(), 10);
    assert_eq!(list((Unbounded, Included(far))).len(), 10);
    assert!(list((Included(far), Unbounded)).is_empty());
    assert!(list((Excluded(far), Unbounded)).is_empty());
    assert!(matches!(
        queue.pending(SystemTime::UNIX_EPOCH - MS.., 3, None),
        Err(QueueError::DueOutOfRange)
    ));
}

/// A nacked job is due again when its delay ends, and a requeued one when
/// it is requeued: the job, its listing and its next delivery say so (they
/// once kept the first due time, so the lateness metric, measured from a
/// delivery's due time, counted the delay).
#[test]
fn a_retried_job_is_due_when_it_waits_again() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).max_attempts(2).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    let due = SystemTime::now();
    queue.schedule("r", due, b"").unwrap();
    let first = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    let nacked = SystemTime::now();
    consumer.nack(&first, 300 * MS).unwrap();
    let waiting = queue.job("r").unwrap().unwrap();
    assert_eq!(waiting.at, Some(waiting.due));
    assert!(waiting.due >= nacked + 300 * MS - MS, "{:?}", waiting.due);
    assert!(waiting.due <= SystemTime::now() + 300 * MS + MS);
    let second = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!((second.attempt, second.due), (2, waiting.due));
    consumer.nack(&second, MS).unwrap(); // out of attempts: dead
    let requeued = SystemTime::now();
    assert!(queue.requeue("r").unwrap());
    let back = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert!(
        back.due >= requeued - MS && back.due > second.due,
        "{:?}",
        back.due
    );
}

/// The job a page stopped at is cancelled, or delivered (its score moves
/// to the lease's end), before the next page: the next page starts right
/// after its old place, with nothing shown twice or skipped.
#[test]
fn a_cursor_survives_its_job_going_or_moving() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let base = 4_000_000_000_000_000u64;
    // Three groups of equal due times, so the cursor's score is shared.
    for i in 0..30u64 {
        queue
            .schedule(&format!("j{i:02}"), at(base + i / 10), b"")
            .unwrap();
    }
    let first = queue.pending(.., 5, None).unwrap();
    assert_eq!(first.jobs.last().unwrap().id, "j04");
    queue.cancel("j04").unwrap();
    queue.cancel("j06").unwrap();
    let second = queue.pending(.., 5, first.next.as_ref()).unwrap();
    let ids: Vec<&str> = second.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(
        ids,
        ["j05", "j07", "j08", "j09", "j10"],
        "j06 was cancelled"
    );
    assert_eq!(
        second.next.as_ref().map(|c| c.to_string().is_empty()),
        Some(false)
    );

    // A job due now, delivered between pages: its member moves.
    let moving = builder(&server).connect().unwrap();
    let past = SystemTime::now() - Duration::from_secs(1);
    for i in 0..6 {
        moving
            .schedule(&format!("m{i}"), past + Duration::from_micros(i), b"")
            .unwrap();
    }
    let shared = Queue::builder(&server.url(), "orders").connect().unwrap();
    let page = shared.pending(..SystemTime::now(), 3, None).unwrap();
    assert_eq!(page.jobs.last().unwrap().id, "m2");
    let consumer = shared.consumer().unwrap();
    let got = consumer.fetch(3, Duration::from_secs(2)).unwrap();
    assert_eq!(
        got.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(),
        ["m0", "m1", "m2"]
    );
    let rest = walk(|after| {
        let after = after.or(page.next.as_ref());
        shared.pending(..SystemTime::now(), 3, after).unwrap()
    });
    let ids: Vec<&str> = rest.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["m3", "m4", "m5"]);
}

/// Waiting, in-flight and dead jobs each list as their own kind only.
#[test]
fn each_kind_lists_only_its_own_jobs() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server)
        .max_attempts(1)
        .lease(200 * MS)
        .connect()
        .unwrap();
    let past = SystemTime::now() - Duration::from_secs(1);
    for i in 0..6 {
        queue.schedule(&format!("d{i}"), past, b"due").unwrap();
    }
    queue
        .schedule_in("later", Duration::from_secs(3600), b"later")
        .unwrap();
    let consumer = queue.consumer().unwrap();
    let held = consumer.fetch(2, Duration::from_secs(2)).unwrap();
    assert_eq!(held.len(), 2);
    let ids = |jobs: Vec<Listed>| jobs.into_iter().map(|j| j.id).collect::<HashSet<_>>();
    let in_flight = ids(walk(|after| queue.in_flight(2, after).unwrap()));
    assert_eq!(in_flight, held.iter().map(|d| d.id.clone()).collect());
    let waiting = ids(walk(|after| queue.pending(.., 2, after).unwrap()));
    assert_eq!(waiting.len(), 5, "{waiting:?}");
    assert!(waiting.contains("later") && in_flight.is_disjoint(&waiting));
    assert!(walk(|after| queue.dead(10, after).unwrap()).is_empty());

    // Their leases run out with max_attempts(1): the next claim
    // dead-letters them.
    std::thread::sleep(400 * MS);
    let _ = consumer.fetch(10, Duration::from_millis(500)).unwrap();
    let dead = walk(|after| queue.dead(1, after).unwrap());
    assert_eq!(ids(dead.clone()), in_flight);
    assert!(dead.iter().all(|j| j.attempts == 1 && j.payload == b"due"));
}

/// A page of 0 or more than `MAX_PAGE` is refused before anything is sent.
#[test]
fn a_page_size_out_of_range_is_refused() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    for limit in [0, MAX_PAGE + 1] {
        match queue.pending(.., limit, None) {
            // The message says the limit (it once said "MAX_PAGE").
            Err(err @ QueueError::Argument(_)) => {
                assert!(err.to_string().contains("1 to 1,000 jobs"), "{err}")
            }
            other => panic!("{limit}: {other:?}"),
        }
    }
    assert!("nonsense".parse::<Cursor>().is_err());
    // A cursor of a queue with more partitions names none of this one's:
    // refused, where it once gave an empty last page.
    let elsewhere: Cursor = "5:0-".parse().unwrap();
    assert!(matches!(
        queue.pending(.., 10, Some(&elsewhere)),
        Err(QueueError::Argument(_))
    ));
}

/// `Queue::job` reads one record: waiting (with its due time as its
/// place), in flight (the lease's end), dead (when it was dead-lettered),
/// cancelled (payload gone, no place), and unknown.
#[test]
fn a_job_is_shown_in_each_state() {
    use tickwheel::redis::JobState;
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server)
        .max_attempts(1)
        .lease(Duration::from_secs(60))
        .connect()
        .unwrap();
    let due = at(4_000_000_000_000_000);
    queue.schedule("later", due, b"close 1").unwrap();
    let job = queue.job("later").unwrap().unwrap();
    assert_eq!(
        (job.id.as_str(), job.state, job.due, job.attempts, job.at),
        ("later", JobState::Waiting, due, 0, Some(due))
    );
    assert_eq!(job.payload, b"close 1");

    queue
        .schedule_in("now", Duration::ZERO, b"close 2")
        .unwrap();
    let consumer = queue.consumer().unwrap();
    let got = consumer.fetch(1, Duration::from_secs(5)).unwrap();
    assert_eq!(got.len(), 1);
    let held = queue.job("now").unwrap().unwrap();
    assert_eq!(
        (held.state, held.attempts, held.fence),
        (JobState::InFlight, 1, 1)
    );
    let lease_end = held.at.unwrap();
    assert!(lease_end > SystemTime::now() + Duration::from_secs(50));

    consumer.nack(&got[0], Duration::ZERO).unwrap();
    let dead = queue.job("now").unwrap().unwrap();
    assert_eq!(dead.state, JobState::Dead);
    assert!(dead.at.unwrap() <= SystemTime::now() + Duration::from_secs(1));
    assert_eq!(dead.payload, b"close 2");

    queue.cancel("later").unwrap();
    let ended = queue.job("later").unwrap().unwrap();
    assert_eq!((ended.state, ended.at), (JobState::Cancelled, None));
    assert!(ended.payload.is_empty() && ended.state.is_ended());

    assert_eq!(queue.job("never").unwrap(), None);
    assert!(matches!(queue.job(""), Err(QueueError::InvalidId(_))));
}

/// `Queue::purge_dead` removes dead letters in bounded batches, oldest
/// first, and ends each as a cancel would: gone from the listing, shown as
/// cancelled, its id still known for the retention; live jobs untouched.
#[test]
fn purging_dead_letters_goes_in_bounded_batches() {
    use tickwheel::redis::{JobState, Scheduled};
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).max_attempts(1).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    for i in 0..25 {
        queue
            .schedule_in(&format!("d{i}"), Duration::ZERO, b"x")
            .unwrap();
    }
    queue
        .schedule_in("live", Duration::from_secs(900), b"y")
        .unwrap();
    let mut dead = 0;
    while dead < 25 {
        for job in consumer.fetch(25, Duration::from_secs(5)).unwrap() {
            consumer.nack(&job, Duration::ZERO).unwrap();
            dead += 1;
        }
    }
    assert_eq!(queue.len().unwrap(), (1, 25));
    assert!(matches!(queue.purge_dead(0), Err(QueueError::Argument(_))));
    assert!(matches!(
        queue.purge_dead(MAX_PAGE + 1),
        Err(QueueError::Argument(_))
    ));
    assert_eq!(queue.purge_dead(10).unwrap(), 10);
    assert_eq!(queue.len().unwrap(), (1, 15));
    assert_eq!(queue.purge_dead(10).unwrap(), 10);
    assert_eq!(queue.purge_dead(10).unwrap(), 5);
    assert_eq!(queue.purge_dead(10).unwrap(), 0);
    assert_eq!(queue.len().unwrap(), (1, 0));
    assert!(queue.dead(100, None).unwrap().jobs.is_empty());
    let purged = queue.job("d0").unwrap().unwrap();
    assert_eq!(purged.state, JobState::Cancelled);
    assert!(purged.payload.is_empty());
    assert_eq!(
        queue.schedule_in("d0", Duration::ZERO, b"again").unwrap(),
        Scheduled::Exists
    );
    assert!(!queue.requeue("d0").unwrap());
    assert_eq!(queue.job("live").unwrap().unwrap().state, JobState::Waiting);
}
