//! Priorities among jobs due at the same time (`NewJob::priority`), each
//! test on its own real `redis-server`: 10,000 jobs due at one instant
//! come out by priority, first in, first out within one; jobs due at
//! different times keep their time order whatever their priority; a
//! reschedule keeps a job's priority; and the async queue carries it too.

use core::time::Duration;
use std::time::SystemTime;

use tickwheel::redis::{Consumer, NewJob, Scheduled};

use crate::queues;
use crate::redis_server;
use queues::{builder, MS};
use redis_server::RedisServer;

/// Fetches (and acks) until `n` jobs came; their ids in delivery order.
fn drain(consumer: &Consumer, n: usize) -> Vec<String> {
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let jobs = consumer.fetch(100, Duration::from_secs(5)).unwrap();
        assert!(!jobs.is_empty(), "{} of {n} delivered", order.len());
        order.extend(jobs.iter().map(|job| job.id.clone()));
        consumer.ack_all(&jobs).unwrap();
    }
    order
}

/// Job `i`'s priority: 0 to 9, scattered over the schedule order.
fn priority_of(i: usize) -> u8 {
    ((i * 7919) % 10) as u8
}

/// 10,000 jobs due at one microsecond, priorities 0 to 9 scattered over
/// the schedule order, scheduled in calls of 1,000: they are delivered
/// highest priority first and, within a priority, in schedule order.
#[test]
fn ten_thousand_jobs_due_at_one_instant_come_out_by_priority() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let instant = SystemTime::now();
    let ids: Vec<String> = (0..10_000).map(|i| format!("j{i:05}")).collect();
    for chunk in (0..ids.len()).collect::<Vec<_>>().chunks(1_000) {
        let jobs: Vec<NewJob<'_>> = chunk
            .iter()
            .map(|&i| NewJob::at(&ids[i], instant, b"x").priority(priority_of(i)))
            .collect();
        let answers = queue.schedule_jobs(&jobs).unwrap();
        assert!(answers
            .iter()
            .all(|a| matches!(a, Scheduled::Created { .. })));
    }
    let order = drain(&queue.consumer().unwrap(), ids.len());
    let mut expected: Vec<usize> = (0..ids.len()).collect();
    expected.sort_by_key(|&i| (core::cmp::Reverse(priority_of(i)), i));
    let expected: Vec<&str> = expected.iter().map(|&i| ids[i].as_str()).collect();
    let first_wrong = order.iter().zip(&expected).position(|(a, b)| a != b);
    assert_eq!(first_wrong, None, "delivered out of order");
    assert_eq!(order.len(), expected.len());
}

/// A high priority does not jump ahead of an earlier due time; and a
/// priority stays with its job when the job is rescheduled.
#[test]
fn priority_orders_ties_only_and_survives_a_reschedule() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    let now = SystemTime::now();
    queue
        .schedule_job(NewJob::at("later-but-urgent", now, b"").priority(255))
        .unwrap();
    queue
        .schedule_job(NewJob::at("earlier", now - MS, b""))
        .unwrap();
    assert_eq!(drain(&consumer, 2), ["earlier", "later-but-urgent"]);

    let far = now + Duration::from_secs(3600);
    queue
        .schedule_job(NewJob::at("urgent", far, b"").priority(9))
        .unwrap();
    queue.schedule_job(NewJob::at("plain", far, b"")).unwrap();
    // Both moved to one instant, the plain one first: the priority holds.
    let tie = SystemTime::now() + 20 * MS;
    assert!(queue.reschedule("plain", tie).unwrap());
    assert!(queue.reschedule("urgent", tie).unwrap());
    assert_eq!(drain(&consumer, 2), ["urgent", "plain"]);
}

/// The async queue carries priorities as the blocking one does; a job
/// without one (`schedule_in`) ranks below every prioritised job due then.
#[test]
fn the_async_queue_schedules_priorities_too() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let instant = SystemTime::now() + 50 * MS;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let q = queue.to_async();
        q.schedule("none", instant, b"").await.unwrap();
        q.schedule_job(NewJob::at("one", instant, b"").priority(1))
            .await
            .unwrap();
        q.schedule_jobs(&[
            NewJob::at("three", instant, b"").priority(3),
            NewJob::at("two", instant, b"").priority(2),
        ])
        .await
        .unwrap();
    });
    let order = drain(&queue.consumer().unwrap(), 4);
    assert_eq!(order, ["three", "two", "one", "none"]);
}
