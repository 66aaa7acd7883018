//! Claiming ahead (`QueueBuilder::claim_ahead`), against real
//! `redis-server`s: a consumer takes what falls due soon in one claim and
//! hands each job over at its due time, never before; a job it holds
//! answers a cancel with `InFlight` and still runs; a consumer that closes
//! hands what it holds back at once.

extern crate alloc;

use core::time::Duration;
use std::time::{Instant, SystemTime};

use tickwheel::redis::{Acked, Cancelled, QueueError, Scheduled};

#[path = "support/redis_server.rs"]
mod redis_server;
use redis_server::RedisServer;
#[path = "support/queues.rs"]
mod queues;
use queues::{builder, MS};

/// 50 jobs 10 ms apart: each is handed over at its due time or up to
/// 50 ms after (never before), and the consumer claims them in a handful
/// of claims, where claiming at each due time takes about one a job.
#[test]
fn jobs_claimed_ahead_are_handed_over_on_time_in_few_claims() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    assert!(matches!(
        builder(&server)
            .lease(Duration::from_millis(100))
            .claim_ahead(Duration::from_millis(60))
            .connect()
            .unwrap_err(),
        QueueError::Config(_)
    ));
    let queue = builder(&server)
        .claim_ahead(Duration::from_millis(100))
        .connect()
        .unwrap();
    let consumer = queue.consumer().unwrap();
    let start = SystemTime::now() + Duration::from_millis(300);
    let ids: Vec<String> = (0..50).map(|i| format!("j{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let due = start + 10 * MS * i as u32;
        assert!(matches!(
            queue.schedule(id, due, b"").unwrap(),
            Scheduled::Created { .. }
        ));
    }
    let claims_before = queue.metrics().claims;
    let give_up = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while got.len() < ids.len() && Instant::now() < give_up {
        for job in consumer.fetch(100, Duration::from_secs(1)).unwrap() {
            // The server runs on this machine: its clock is ours.
            let now = SystemTime::now();
            assert!(
                now >= job.due,
                "{} handed over {:?} early",
                job.id,
                job.due.duration_since(now)
            );
            let late = now.duration_since(job.due).unwrap();
            assert!(
                late <= Duration::from_millis(50),
                "{} handed over {late:?} late",
                job.id
            );
            assert_eq!(consumer.ack(&job).unwrap(), Acked::Acked);
            got.push(job.id);
        }
    }
    assert_eq!(got, ids);
    let claims = queue.metrics().claims - claims_before;
    assert!(claims <= 20, "{claims} claims for 50 jobs");
    assert_eq!(queue.len().unwrap(), (0, 0));
}

/// A job a consumer holds ahead of its due time is in flight: a cancel
/// says so, and the job still runs, on time.
#[test]
fn a_job_held_ahead_answers_in_flight_and_still_runs() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server)
        .claim_ahead(Duration::from_millis(400))
        .connect()
        .unwrap();
    let consumer = queue.consumer().unwrap();
    let due = SystemTime::now() + Duration::from_millis(700);
    queue.schedule("order-1", due, b"close").unwrap();
    let fetching = std::thread::spawn(move || {
        let jobs = consumer.fetch(1, Duration::from_secs(5)).unwrap();
        let at = SystemTime::now();
        (consumer, jobs, at)
    });
    // Claimed half the reach before it is due, so by 600 ms at the latest.
    let give_up = Instant::now() + Duration::from_secs(2);
    while queue.in_flight(10, None).unwrap().jobs.is_empty() {
        assert!(Instant::now() < give_up, "never claimed");
        std::thread::sleep(5 * MS);
    }
    assert!(SystemTime::now() < due, "claimed only when due");
    assert_eq!(queue.cancel("order-1").unwrap(), Cancelled::InFlight);
    let (consumer, jobs, at) = fetching.join().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(
        (jobs[0].id.as_str(), &jobs[0].payload[..]),
        ("order-1", &b"close"[..])
    );
    assert!(at >= due, "handed over {:?} early", due.duration_since(at));
    assert_eq!(consumer.ack(&jobs[0]).unwrap(), Acked::Acked);
    assert_eq!(queue.cancel("order-1").unwrap(), Cancelled::Delivered);
}

/// A consumer that closes hands what it holds ahead back at once: another
/// consumer gets it when due, as its first attempt, not a lease later.
#[test]
fn a_closed_consumer_hands_held_jobs_back_at_once() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server)
        .lease(Duration::from_secs(20))
        .claim_ahead(Duration::from_millis(800))
        .connect()
        .unwrap();
    let first = queue.consumer().unwrap();
    let due = SystemTime::now() + Duration::from_millis(1000);
    queue.schedule("order-2", due, b"refund").unwrap();
    // Claims it about 400 ms before it is due, holds it, and gives up.
    assert!(first
        .fetch(1, Duration::from_millis(800))
        .unwrap()
        .is_empty());
    assert_eq!(queue.in_flight(10, None).unwrap().jobs.len(), 1, "not held");
    first.close();
    drop(first);
    let second = queue.consumer().unwrap();
    let jobs = second.fetch(1, Duration::from_secs(5)).unwrap();
    let at = SystemTime::now();
    assert_eq!(jobs.len(), 1);
    assert_eq!((jobs[0].id.as_str(), jobs[0].attempt), ("order-2", 1));
    assert!(at >= due, "handed over {:?} early", due.duration_since(at));
    assert!(
        at.duration_since(due).unwrap() < Duration::from_secs(2),
        "only after the lease ran out"
    );
    assert_eq!(second.ack(&jobs[0]).unwrap(), Acked::Acked);
}
