//! The Redis queue (`src/redis/`) against real `redis-server`s: each test
//! starts its own on a free loopback port with its own data directory
//! (`tests/support/redis_server.rs`), and stops it when done. The fault
//! tests (killed and stopped servers and consumers, lost hints, outages)
//! are in `faults.rs`; payloads and hostile ids in `payloads.rs`.

use alloc::sync::Arc;
use core::time::Duration;
use std::collections::HashMap;
use std::time::{Instant, SystemTime};

use tickwheel::persist::{MisfirePolicy, OnMissed};
use tickwheel::redis::{Acked, Cancelled, Nacked, Queue, QueueError, Scheduled, MAX_PAYLOAD};

use crate::queues;
use crate::redis_server;
use queues::{builder, take, wait_for_claim, MS};
use redis_server::RedisServer;

#[test]
fn a_job_is_delivered_once_when_due_and_never_before() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    let Scheduled::Created { due } = queue.schedule_in("a", 80 * MS, b"close a").unwrap() else {
        panic!("not created");
    };
    let jobs = take(&consumer, 1, Duration::from_secs(5));
    // The server runs on this machine: its clock is ours.
    let now = SystemTime::now();
    assert!(now >= due, "delivered {:?} early", due.duration_since(now));
    assert_eq!(jobs.len(), 1);
    assert_eq!(
        (jobs[0].id.as_str(), &jobs[0].payload[..], jobs[0].attempt),
        ("a", &b"close a"[..], 1)
    );
    assert_eq!(jobs[0].due, due);
    assert!(
        consumer.fetch(10, 200 * MS).unwrap().is_empty(),
        "delivered twice"
    );
    assert_eq!(queue.len().unwrap(), (0, 0));
}

/// A consumer that claims as often as it can, from just before jobs fall
/// due, never gets one early.
#[test]
fn eager_claims_never_deliver_early() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    let mut due = HashMap::new();
    for i in 0..40u32 {
        let Scheduled::Created { due: at } = queue
            .schedule_in(&format!("e{i}"), MS * (30 + 5 * i), b"")
            .unwrap()
        else {
            panic!("not created");
        };
        due.insert(format!("e{i}"), at);
    }
    let give_up = Instant::now() + Duration::from_secs(5);
    let mut got = 0;
    while got < 40 && Instant::now() < give_up {
        for job in consumer.fetch(40, Duration::ZERO).unwrap() {
            let now = SystemTime::now();
            assert!(
                now >= due[&job.id],
                "{} came {:?} early",
                job.id,
                due[&job.id].duration_since(now)
            );
            consumer.ack(&job).unwrap();
            got += 1;
        }
    }
    assert_eq!(got, 40);
}

#[test]
fn scheduling_an_id_twice_is_one_job() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    assert!(matches!(
        queue.schedule_in("x", 10 * MS, b"1").unwrap(),
        Scheduled::Created { .. }
    ));
    assert_eq!(
        queue.schedule_in("x", 10 * MS, b"2").unwrap(),
        Scheduled::Exists
    );
    let consumer = queue.consumer().unwrap();
    let jobs = take(&consumer, 1, Duration::from_secs(5));
    assert_eq!(jobs[0].payload, b"1");
    // Still one job after it ended, for the retention window.
    assert_eq!(
        queue.schedule_in("x", 10 * MS, b"3").unwrap(),
        Scheduled::Exists
    );
    assert!(consumer.fetch(10, 200 * MS).unwrap().is_empty());
    assert_eq!(queue.metrics().duplicates, 2);
}

#[test]
fn equal_due_times_come_out_first_in_first_out() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let due = SystemTime::now() + 100 * MS;
    let ids: Vec<String> = (0..50).map(|i| format!("job-{}", 49 - i)).collect();
    for id in &ids {
        queue.schedule(id, due, b"").unwrap();
    }
    let consumer = queue.consumer().unwrap();
    let got: Vec<String> = take(&consumer, 50, Duration::from_secs(5))
        .into_iter()
        .map(|job| job.id)
        .collect();
    assert_eq!(got, ids);
}

/// All jobs of one `schedule_many` share one script call: an id named twice
/// in it is created once, a delay counts from the server's now, and a due
/// time is kept to the microsecond.
#[test]
fn one_call_naming_an_id_twice_creates_it_once_at_the_right_time() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let (minute, half) = (Duration::from_secs(60), Duration::from_secs(30));
    let before = SystemTime::now();
    let done = queue
        .schedule_many(&[
            ("d", minute, b"1"),
            ("e", half, b"2"),
            ("d", minute, b"3"),
            ("e", MS, b"4"),
        ])
        .unwrap();
    let after = SystemTime::now();
    let [Scheduled::Created { due: d }, Scheduled::Created { due: e }, Scheduled::Exists, Scheduled::Exists] =
        done[..]
    else {
        panic!("{done:?}");
    };
    // The server runs on this machine: its clock is ours.
    for (due, delay) in [(d, minute), (e, half)] {
        assert!(
            due >= before + delay && due <= after + delay + MS,
            "{due:?}"
        );
    }
    let micros = before
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    let at = SystemTime::UNIX_EPOCH + Duration::from_micros(micros + 45_000_000);
    let done = queue
        .schedule_many_at(&[("f", at, b"5"), ("f", at, b"6"), ("d", at, b"7")])
        .unwrap();
    assert_eq!(
        done,
        [
            Scheduled::Created { due: at },
            Scheduled::Exists,
            Scheduled::Exists
        ]
    );
    assert_eq!(queue.len().unwrap(), (3, 0));
    assert_eq!(queue.metrics().duplicates, 4);
    assert_eq!(
        queue.cancel("d").unwrap(),
        Cancelled::Cancelled(b"1".to_vec())
    );
    assert_eq!(
        queue.cancel("f").unwrap(),
        Cancelled::Cancelled(b"5".to_vec())
    );
}

/// A dead letter can be cancelled, once, and hands its payload back.
#[test]
fn a_dead_letter_is_cancelled_once_with_its_payload() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).max_attempts(1).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    queue.schedule_in("poison", MS, b"p").unwrap();
    let job = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!(consumer.nack(&job, MS).unwrap(), Nacked::DeadLettered);
    assert_eq!(queue.len().unwrap(), (0, 1));
    assert_eq!(
        queue.cancel("poison").unwrap(),
        Cancelled::Cancelled(b"p".to_vec())
    );
    assert_eq!(queue.cancel("poison").unwrap(), Cancelled::Ended);
    assert_eq!(queue.len().unwrap(), (0, 0));
    assert!(queue.dead_letters(10).unwrap().is_empty());
    assert!(!queue.requeue("poison").unwrap());
}

#[test]
fn cancel_says_who_won() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    queue
        .schedule_in("waiting", Duration::from_secs(60), b"w")
        .unwrap();
    queue.schedule_in("taken", MS, b"t").unwrap();
    assert_eq!(
        queue.cancel("waiting").unwrap(),
        Cancelled::Cancelled(b"w".to_vec())
    );
    assert_eq!(queue.cancel("waiting").unwrap(), Cancelled::Ended);
    let jobs = consumer.fetch(1, Duration::from_secs(5)).unwrap();
    assert_eq!(jobs[0].id, "taken");
    assert_eq!(queue.cancel("taken").unwrap(), Cancelled::InFlight);
    assert_eq!(consumer.ack(&jobs[0]).unwrap(), Acked::Acked);
    assert_eq!(queue.cancel("taken").unwrap(), Cancelled::Delivered);
    assert_eq!(queue.cancel("never").unwrap(), Cancelled::Unknown);
    assert_eq!(queue.len().unwrap(), (0, 0));
}

#[test]
fn reschedule_moves_a_waiting_job_only() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    queue
        .schedule_in("late", Duration::from_secs(3600), b"")
        .unwrap();
    queue
        .schedule_in("soon", Duration::from_secs(3600), b"")
        .unwrap();
    assert!(queue.reschedule_in("soon", 20 * MS).unwrap());
    let jobs = consumer.fetch(10, Duration::from_secs(5)).unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].id, "soon");
    assert!(
        !queue.reschedule_in("soon", MS).unwrap(),
        "moved a job in flight"
    );
    assert!(!queue.reschedule_in("nobody", MS).unwrap());
}

#[test]
fn a_lease_that_runs_out_delivers_the_job_again() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).lease(150 * MS).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    queue.schedule_in("j", MS, b"").unwrap();
    // Read before the claim: its lease starts later, so a stall between
    // the fetch's return and this line cannot shorten what is measured.
    let taken = Instant::now();
    let first = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!(first.attempt, 1);
    // Not acked: it comes back once the lease has run out, not before.
    let again = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert!(
        taken.elapsed() >= 100 * MS,
        "redelivered after {:?}",
        taken.elapsed()
    );
    assert_eq!((again.id.as_str(), again.attempt), ("j", 2));
    assert_eq!(consumer.ack(&first).unwrap(), Acked::LeaseLost);
    assert_eq!(consumer.ack(&again).unwrap(), Acked::Acked);
    assert_eq!(queue.metrics().redelivered, 1);
}

#[test]
fn failed_attempts_end_in_the_dead_letters_which_can_be_requeued() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).max_attempts(2).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    queue.schedule_in("poison", MS, b"p").unwrap();
    let first = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!(consumer.nack(&first, 30 * MS).unwrap(), Nacked::Retrying);
    assert_eq!(consumer.nack(&first, MS).unwrap(), Nacked::LeaseLost);
    let second = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!(second.attempt, 2);
    assert_eq!(consumer.nack(&second, MS).unwrap(), Nacked::DeadLettered);
    assert!(consumer.fetch(1, 200 * MS).unwrap().is_empty());
    let dead = queue.dead_letters(10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (dead[0].id.as_str(), &dead[0].payload[..], dead[0].attempts),
        ("poison", &b"p"[..], 2)
    );
    assert_eq!(queue.len().unwrap(), (0, 1));
    assert!(queue.requeue("poison").unwrap());
    assert!(!queue.requeue("poison").unwrap());
    let back = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!((back.id.as_str(), back.attempt), ("poison", 1));
    assert_eq!(consumer.ack(&back).unwrap(), Acked::Acked);
    assert!(queue.dead_letters(10).unwrap().is_empty());
}

#[test]
fn bad_input_is_refused_before_anything_is_sent() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let err = queue.schedule_in("", MS, b"").unwrap_err();
    assert!(matches!(err, QueueError::InvalidId(_)), "{err}");
    let long = "x".repeat(513);
    assert!(matches!(
        queue.cancel(&long).unwrap_err(),
        QueueError::InvalidId(_)
    ));
    let big = vec![0; MAX_PAYLOAD + 1];
    let err = queue.schedule_in("big", MS, &big).unwrap_err();
    assert!(
        matches!(err, QueueError::PayloadTooLarge { len } if len == MAX_PAYLOAD + 1),
        "{err}"
    );
    let before_epoch = SystemTime::UNIX_EPOCH - Duration::from_secs(1);
    assert!(matches!(
        queue.schedule("e", before_epoch, b"").unwrap_err(),
        QueueError::DueOutOfRange
    ));
    let too_late = SystemTime::UNIX_EPOCH + Duration::from_micros((1 << 53) + 1);
    assert!(matches!(
        queue.schedule("l", too_late, b"").unwrap_err(),
        QueueError::DueOutOfRange
    ));
    assert!(matches!(
        queue.schedule_in("d", Duration::MAX, b"").unwrap_err(),
        QueueError::DueOutOfRange
    ));
    let pick = Arc::new(|_: &tickwheel::persist::PendingJob<()>, now: SystemTime| now);
    let err = builder(&server)
        .misfire(&MisfirePolicy::default().on_missed(OnMissed::Reschedule(pick)))
        .unwrap_err();
    assert!(matches!(err, QueueError::Config(_)), "{err}");
    assert_eq!(queue.len().unwrap(), (0, 0), "bad input stored something");
    assert_eq!(queue.metrics().scheduled, 0);
}

/// With a 10 s poll, only the wake-up timer and the hints can deliver on
/// time: jobs due over half a second each arrive well before a poll would
/// (within 2 s of due, a bound a loaded machine's stalls cannot break; the
/// benchmark measures the real lateness).
#[test]
fn consumers_wake_when_jobs_fall_due_not_at_the_next_poll() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let producer = builder(&server).connect().unwrap();
    let queue = builder(&server)
        .poll_interval(Duration::from_secs(10))
        .connect()
        .unwrap();
    let consumer = queue.consumer().unwrap();
    // Let the consumer sleep first: nothing is pending yet.
    assert!(consumer.fetch(1, 50 * MS).unwrap().is_empty());
    for i in 0..40u32 {
        producer
            .schedule_in(&format!("j{i}"), (20 + 12 * i) * MS, b"")
            .unwrap();
    }
    let got = take(&consumer, 40, Duration::from_secs(5));
    assert_eq!(got.len(), 40);
    let late = queue.metrics().lateness;
    assert!(late.max() < 2000 * MS, "max lateness {:?}", late.max());
    assert_eq!(queue.metrics().polls, 0, "a poll delivered");
}

/// Idle, a consumer sends about one command per poll interval.
#[test]
fn an_idle_consumer_costs_about_one_command_a_second() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    let waiter = std::thread::spawn(move || consumer.fetch(1, Duration::from_secs(6)).unwrap());
    // Connect, subscribe, first claim: counted from the claim on (a
    // loaded machine may run it late), plus time to subscribe.
    wait_for_claim(&queue, 0);
    std::thread::sleep(Duration::from_millis(300));
    let before = server.commands_processed();
    std::thread::sleep(Duration::from_secs(5));
    let after = server.commands_processed();
    assert!(waiter.join().unwrap().is_empty());
    // INFO itself counts once; the rest is the consumer's polls (each one
    // ZRANGE), about 5 in 5 s, at most 10 with the jitter.
    let per_second = (after - before - 1) as f64 / 5.0;
    assert!(per_second <= 2.0, "{per_second} commands/s idle");
}

/// The queue's round trips once its background calls at connect (the
/// retention trimmer's first sweep) have gone out: unchanged for 500 ms
/// (a loaded machine may send the sweep late).
fn settled_round_trips(queue: &Queue) -> u64 {
    let (mut last, mut still) = (queue.metrics().round_trips, 0);
    while still < 5 {
        std::thread::sleep(Duration::from_millis(100));
        let now = queue.metrics().round_trips;
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    last
}

/// Batches: one script call per 500 schedules, and one for many acks; each
/// job gets its own answer.
#[test]
fn batches_schedule_and_ack_in_one_round_trip_each() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).batch(500).connect().unwrap();
    let ids: Vec<String> = (0..500).map(|i| format!("b{i}")).collect();
    let mut jobs: Vec<(&str, Duration, &[u8])> = ids
        .iter()
        .map(|id| (id.as_str(), 20 * MS, &b"x"[..]))
        .collect();
    jobs.push(("b7", 20 * MS, b"again"));
    // The retention trimmer's first sweep is a round trip too: let it pass.
    let before = settled_round_trips(&queue);
    let done = queue.schedule_many(&jobs).unwrap();
    assert_eq!(queue.metrics().round_trips - before, 2);
    assert_eq!(done.len(), 501);
    assert!(done[..500]
        .iter()
        .all(|s| matches!(s, Scheduled::Created { .. })));
    assert_eq!(done[500], Scheduled::Exists);
    let empty: [(&str, Duration, &[u8]); 1] = [("", MS, b"")];
    assert!(matches!(
        queue.schedule_many(&empty).unwrap_err(),
        QueueError::InvalidId(_)
    ));
    let consumer = queue.consumer().unwrap();
    let mut got = Vec::new();
    let give_up = Instant::now() + Duration::from_secs(5);
    while got.len() < 500 && Instant::now() < give_up {
        got.extend(consumer.fetch(500, Duration::from_secs(1)).unwrap());
    }
    assert_eq!(got.len(), 500);
    let before = queue.metrics().round_trips;
    let acks = consumer.ack_all(&got).unwrap();
    assert_eq!(queue.metrics().round_trips - before, 1);
    assert!(acks.iter().all(|a| *a == Acked::Acked));
    assert_eq!(queue.metrics().acked, 500);
    assert_eq!(queue.len().unwrap(), (0, 0));
}

/// A long job extends its lease and is not delivered again meanwhile; an
/// extension after the lease ran out says so.
#[test]
fn extending_a_lease_keeps_a_long_job_from_redelivery() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    // Extended every 400 ms for a lease of a second: a loaded machine's
    // stall of half a second does not let it run out.
    let lease = 1000 * MS;
    let queue = builder(&server).lease(lease).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    queue.schedule_in("long", MS, b"").unwrap();
    let job = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    for _ in 0..5 {
        std::thread::sleep(400 * MS);
        assert!(consumer.extend(&job, lease).unwrap());
    }
    // 2 s in, twice the lease: not delivered again.
    assert!(consumer.fetch(1, 50 * MS).unwrap().is_empty());
    assert_eq!(consumer.ack(&job).unwrap(), Acked::Acked);
    queue.schedule_in("short", MS, b"").unwrap();
    let short = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    let again = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!(again.attempt, 2);
    assert!(!consumer.extend(&short, Duration::from_secs(60)).unwrap());
}
