//! The per-call API held to its promises by a hostile user: careless sizes,
//! answers after the fact, counters. Each test failed before its fix.

use core::future::Future;
use core::task::{Context, Waker};
use core::time::Duration;
use std::time::Instant;

use tickwheel::redis::Acked;

use crate::queues;
use crate::redis_server;
use queues::builder;
use redis_server::RedisServer;

/// `ack_and_fetch` acks any number of deliveries.
///
/// `Consumer::ack_and_fetch`: "Acks `done` and fetches up to `max` more
/// ... One answer per ack, in order, then the jobs." A consumer that
/// fetched five batches of 1,000 and acked them in one call put all 5,000
/// acks in one script call; Lua unpacks at most about 8,000 values into a
/// command, so the script failed ("too many results to unpack"), the
/// fetch answered a `Server` error, none of the jobs was acked, and every
/// retry failed the same way: the jobs ran again once their leases ended.
#[test]
fn ack_and_fetch_acks_five_batches_at_once() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).batch(1000).connect().unwrap();
    let ids: Vec<String> = (0..5001).map(|i| format!("job-{i}")).collect();
    let jobs: Vec<(&str, Duration, &[u8])> = ids
        .iter()
        .map(|id| (id.as_str(), Duration::ZERO, &b"p"[..]))
        .collect();
    queue.schedule_many(&jobs).unwrap();
    let consumer = queue.consumer().unwrap();
    let mut got = Vec::new();
    let began = Instant::now();
    while got.len() < 5000 {
        assert!(began.elapsed() < Duration::from_secs(60), "{}", got.len());
        got.extend(
            consumer
                .fetch(5000 - got.len(), Duration::from_secs(1))
                .unwrap(),
        );
    }
    let (acked, last) = consumer
        .ack_and_fetch(&got, 1, Duration::from_secs(10))
        .unwrap();
    assert_eq!(acked, vec![Acked::Acked; 5000]);
    assert_eq!(last.len(), 1, "the 5,001st job did not come");
    assert_eq!(consumer.ack(&last[0]).unwrap(), Acked::Acked);
    assert_eq!(queue.len().unwrap(), (0, 0));
    assert_eq!(queue.metrics().acked, 5001);
}

/// A job this process scheduled, due now, is taken by a fetch that does
/// not wait.
///
/// `Consumer::fetch`: "Takes up to `max` due jobs ..., waiting up to
/// `timeout` for one to fall due; an empty vector if none did", and
/// `docs/design.md`: "`fetch(n, 0)` still takes what is due". The claim
/// loop learns of a new job from the hint the schedule script publishes,
/// which comes back over the pub/sub connection some time after the
/// schedule's answer: a `fetch(1, 0)` made right after `schedule_in(id, 0)`
/// answered `Created` found the loop still sure that nothing was due and
/// answered empty (in most of 50 tries here), though the job had been due
/// since before the fetch was made.
#[test]
fn a_fetch_that_does_not_wait_takes_a_job_just_scheduled() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    // The loop knows the queue is empty.
    assert!(consumer
        .fetch(1, Duration::from_millis(50))
        .unwrap()
        .is_empty());
    let mut missed = Vec::new();
    for i in 0..50 {
        let id = format!("now-{i}");
        queue.schedule_in(&id, Duration::ZERO, b"").unwrap();
        let got = consumer.fetch(1, Duration::ZERO).unwrap();
        if got.is_empty() {
            missed.push(i);
            // Taken by a fetch that waits, so the next try starts alike.
            let late = consumer.fetch(1, Duration::from_secs(5)).unwrap();
            assert_eq!(late.len(), 1, "job {id} never came");
            consumer.ack(&late[0]).unwrap();
        } else {
            assert_eq!(got[0].id, id);
            consumer.ack(&got[0]).unwrap();
        }
    }
    assert!(
        missed.is_empty(),
        "fetches that did not wait missed {missed:?}"
    );
}

/// A waker that does nothing.
fn noop() -> Waker {
    struct Noop;
    impl alloc::task::Wake for Noop {
        fn wake(self: alloc::sync::Arc<Self>) {}
    }
    Waker::from(alloc::sync::Arc::new(Noop))
}

/// Jobs answered to fetches dropped unread at close go back to the queue,
/// however many.
///
/// `AsyncConsumer`: "Dropping a `fetch` future gives up its place; jobs
/// claimed for it go to the next fetch, or back to the queue without
/// spending an attempt." Five fetches of 1,000, answered but not read,
/// dropped after `close` while the claim loop waited on a stalled server:
/// the loop gathered their 5,000 jobs into one release script, which
/// failed ("too many results to unpack"), so all 5,000 stayed leased to
/// nobody until their leases ran out, and then, out of attempts, went to
/// the dead letters without ever being run.
#[test]
fn jobs_of_many_fetches_dropped_at_close_all_go_back() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server)
        .batch(1000)
        .max_attempts(1)
        .lease(Duration::from_secs(600))
        .connect()
        .unwrap();
    let ids: Vec<String> = (0..5000).map(|i| format!("job-{i}")).collect();
    let jobs: Vec<(&str, Duration, &[u8])> = ids
        .iter()
        .map(|id| (id.as_str(), Duration::ZERO, &b"p"[..]))
        .collect();
    queue.schedule_many(&jobs).unwrap();
    let consumer = queue.to_async().consumer().unwrap();
    let waker = noop();
    let mut cx = Context::from_waker(&waker);
    let mut fetches: Vec<_> = (0..5)
        .map(|_| Box::pin(consumer.fetch(1000, Duration::from_secs(60))))
        .collect();
    for fetch in &mut fetches {
        assert!(fetch.as_mut().poll(&mut cx).is_pending());
    }
    let began = Instant::now();
    while queue.metrics().delivered < 5000 {
        assert!(began.elapsed() < Duration::from_secs(30), "not all claimed");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The loop waits on a stalled server (a poll for a sixth fetch) ...
    server.stop_signal();
    let mut waiting = Box::pin(consumer.fetch(1, Duration::from_secs(60)));
    assert!(waiting.as_mut().poll(&mut cx).is_pending());
    std::thread::sleep(Duration::from_millis(2500));
    // ... when it is closed and the five answered fetches go unread.
    consumer.close();
    drop(fetches);
    drop(waiting);
    server.cont_signal();
    let began = Instant::now();
    while queue.metrics().released < 5000 {
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "{} of 5,000 jobs back; in flight: {}",
            queue.metrics().released,
            queue.in_flight(1000, None).unwrap().jobs.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(queue.in_flight(1000, None).unwrap().jobs.is_empty());
    assert_eq!(queue.len().unwrap(), (5000, 0));
    assert_eq!(queue.metrics().released, 5000);
}
