//! Answers that stay true across retries: a TCP proxy in front of a real
//! `redis-server` lets each request through and loses its reply (closing
//! the connection, as a failing network does after the server acted), and
//! the queue's automatic retry must answer what the first attempt did.
//! Also a Redis stalled (SIGSTOP) past the I/O timeout while a claim waits.

use core::time::Duration;
use std::process::Command;

use tickwheel::redis::{Acked, Cancelled, Nacked, Queue, Scheduled};

use crate::redis_proxy;
use crate::redis_server;
use redis_proxy::LossyProxy;
use redis_server::RedisServer;

const MS: Duration = Duration::from_millis(1);

/// A queue that reaches `server` through a fresh lossy proxy. Each test
/// runs its call once before arming the proxy, so that the script is
/// loaded: the lost reply is then the script's, not a `NOSCRIPT`.
fn through_proxy(server: &RedisServer, attempts: u32) -> (LossyProxy, Queue) {
    let proxy = LossyProxy::start(server.addr());
    let queue = Queue::builder(&proxy.url(), "orders")
        .lease(Duration::from_secs(5))
        .max_attempts(attempts)
        .connect()
        .unwrap();
    (proxy, queue)
}

#[test]
fn a_schedule_whose_reply_was_lost_still_says_created() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (proxy, queue) = through_proxy(&server, 1);
    queue
        .schedule_in("warm-up", Duration::from_secs(60), b"")
        .unwrap();
    proxy.lose_reply_to(b"lost-schedule");
    let answer = queue
        .schedule_in("lost-schedule", Duration::from_secs(60), b"p")
        .unwrap();
    assert_eq!(proxy.lost(), 1, "the proxy lost no reply");
    assert!(matches!(answer, Scheduled::Created { .. }), "{answer:?}");
    assert_eq!(queue.metrics().scheduled, 2);
    assert_eq!(queue.metrics().duplicates, 0);
    // Another call with the same id is a duplicate, as ever.
    assert_eq!(
        queue.schedule_in("lost-schedule", MS, b"q").unwrap(),
        Scheduled::Exists
    );
    assert_eq!(queue.len().unwrap(), (2, 0));
}

#[test]
fn a_cancel_whose_reply_was_lost_still_wins_with_the_payload() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (proxy, queue) = through_proxy(&server, 1);
    queue
        .schedule_in("lost-cancel", Duration::from_secs(60), b"close 17")
        .unwrap();
    queue.cancel("warm-up").unwrap();
    proxy.lose_reply_to(b"lost-cancel");
    let answer = queue.cancel("lost-cancel").unwrap();
    assert_eq!(proxy.lost(), 1);
    assert_eq!(answer, Cancelled::Cancelled(b"close 17".to_vec()));
    assert_eq!(queue.metrics().cancelled, 1);
    // A new cancel is a new call: the job has ended.
    assert_eq!(queue.cancel("lost-cancel").unwrap(), Cancelled::Ended);
}

#[test]
fn an_ack_and_a_nack_whose_replies_were_lost_answer_as_the_first_attempt() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (proxy, queue) = through_proxy(&server, 3);
    for id in ["lost-ack", "lost-nack", "warm-ack", "warm-nack"] {
        queue.schedule_in(id, MS, b"").unwrap();
    }
    let consumer = queue.consumer().unwrap();
    let mut jobs = Vec::new();
    while jobs.len() < 4 {
        jobs.extend(consumer.fetch(4, Duration::from_secs(5)).unwrap());
    }
    jobs.sort_by(|a, b| a.id.cmp(&b.id));
    let (ack, nack) = (&jobs[0], &jobs[1]);
    assert_eq!(consumer.ack(&jobs[2]).unwrap(), Acked::Acked);
    assert_eq!(
        consumer.nack(&jobs[3], Duration::from_secs(60)).unwrap(),
        Nacked::Retrying
    );
    proxy.lose_reply_to(b"lost-ack");
    assert_eq!(consumer.ack(ack).unwrap(), Acked::Acked);
    assert_eq!(proxy.lost(), 1);
    proxy.lose_reply_to(b"lost-nack");
    assert_eq!(
        consumer.nack(nack, Duration::from_secs(60)).unwrap(),
        Nacked::Retrying
    );
    assert_eq!(proxy.lost(), 2);
    let m = queue.metrics();
    assert_eq!((m.acked, m.retried, m.lease_lost), (2, 2, 0), "{m:?}");
    assert_eq!(queue.len().unwrap(), (2, 0));
}

#[test]
fn a_claim_whose_reply_was_lost_gets_the_same_jobs_without_spending_an_attempt() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (proxy, queue) = through_proxy(&server, 1);
    let consumer = queue.consumer().unwrap();
    // Loads the claim script: nothing is due yet.
    assert!(consumer.fetch(1, Duration::ZERO).unwrap().is_empty());
    for i in 0..5 {
        queue.schedule_in(&format!("c{i}"), MS, b"").unwrap();
    }
    std::thread::sleep(10 * MS);
    proxy.lose_reply_to(b":claim:");
    let mut jobs = consumer.fetch(5, Duration::from_secs(5)).unwrap();
    assert_eq!(proxy.lost(), 1, "no claim reply was lost");
    jobs.sort_by(|a, b| a.id.cmp(&b.id));
    let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["c0", "c1", "c2", "c3", "c4"]);
    assert!(jobs.iter().all(|j| j.attempt == 1), "{jobs:?}");
    // Again with acks riding in the claim: the retry answers them as the
    // first attempt did, and gets the same new jobs.
    for i in 5..8 {
        queue.schedule_in(&format!("c{i}"), MS, b"").unwrap();
    }
    std::thread::sleep(10 * MS);
    proxy.lose_reply_to(b":claim:");
    let (acked, mut next) = consumer
        .ack_and_fetch(&jobs, 5, Duration::from_secs(5))
        .unwrap();
    assert_eq!(proxy.lost(), 2, "no claim reply was lost");
    assert_eq!(acked, [Acked::Acked; 5]);
    next.sort_by(|a, b| a.id.cmp(&b.id));
    let ids: Vec<&str> = next.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["c5", "c6", "c7"]);
    assert!(next.iter().all(|j| j.attempt == 1), "{next:?}");
    assert!(consumer
        .ack_all(&next)
        .unwrap()
        .iter()
        .all(|a| *a == Acked::Acked));
    assert_eq!(queue.metrics().acked, 8);
    assert_eq!(queue.len().unwrap(), (0, 0));
    assert!(queue.dead_letters(10).unwrap().is_empty());
}

/// A queue of one attempt, leases of `lease`, calls retried for `retry`
/// with a 300 ms I/O timeout, twenty jobs due, and then Redis stalled
/// (SIGSTOP) before any consumer claimed them.
fn twenty_due_then_stalled(
    server: &RedisServer,
    lease: Duration,
    retry: Duration,
) -> (Queue, tickwheel::redis::Consumer) {
    let queue = Queue::builder(&server.url(), "orders")
        .lease(lease)
        .max_attempts(1)
        .retry(retry, 300 * MS)
        .connect()
        .unwrap();
    let consumer = queue.consumer().unwrap();
    // Loads the claim script: nothing is due yet.
    assert!(consumer.fetch(1, Duration::ZERO).unwrap().is_empty());
    for i in 0..20 {
        queue.schedule_in(&format!("s{i}"), MS, b"").unwrap();
    }
    std::thread::sleep(10 * MS);
    server.stop_signal();
    (queue, consumer)
}

/// Redis frozen for 3 s while a claim waits for it, with a 300 ms I/O
/// timeout (so the claim is sent again and again) and `max_attempts(1)`:
/// when Redis wakes, the first claim leases the jobs and every retry gets
/// the same ones; nothing is dead-lettered for a delivery nobody received.
#[test]
fn a_stalled_redis_does_not_dead_letter_jobs_nobody_received() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (queue, consumer) = twenty_due_then_stalled(&server, 1500 * MS, Duration::from_secs(10));
    let resume = std::thread::spawn({
        let pid = server.pid();
        move || {
            std::thread::sleep(Duration::from_secs(3));
            Command::new("kill")
                .args(["-CONT", &pid.to_string()])
                .status()
                .unwrap();
        }
    });
    let mut got = Vec::new();
    let give_up = std::time::Instant::now() + Duration::from_secs(15);
    while got.len() < 20 && std::time::Instant::now() < give_up {
        let jobs = consumer.fetch(20, Duration::from_secs(1)).unwrap();
        assert!(consumer
            .ack_all(&jobs)
            .unwrap()
            .iter()
            .all(|a| *a == Acked::Acked));
        got.extend(jobs);
    }
    resume.join().unwrap();
    assert_eq!(got.len(), 20, "got {got:?}");
    assert!(queue.metrics().failures > 0, "the stall caused no retry");
    assert!(queue.dead_letters(100).unwrap().is_empty());
    assert_eq!(queue.len().unwrap(), (0, 0));
}

/// The bug: Redis stalled past the retry window, so the consumer gave its
/// claim up; the claim still ran when Redis resumed and leased every due
/// job to nobody. They waited out the whole lease, and each lost an
/// attempt (with one attempt, dead-lettered unseen). The jobs a claim
/// given up on leased are now handed back once the shard answers.
#[test]
fn a_claim_given_up_on_hands_its_jobs_back_when_redis_resumes() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (queue, consumer) =
        twenty_due_then_stalled(&server, Duration::from_secs(60), Duration::from_secs(1));
    // The claim this fetch sends waits in the stalled server's socket.
    assert!(consumer.fetch(20, Duration::from_secs(2)).is_err());
    std::thread::sleep(Duration::from_secs(1));
    server.cont_signal();
    let resumed = std::time::Instant::now();
    let mut got = Vec::new();
    while got.len() < 20 && resumed.elapsed() < Duration::from_secs(10) {
        let jobs = consumer
            .fetch(20, Duration::from_millis(500))
            .unwrap_or_default();
        consumer.ack_all(&jobs).unwrap();
        got.extend(jobs);
    }
    assert_eq!(got.len(), 20, "{} jobs came back within 10 s", got.len());
    assert!(got.iter().all(|job| job.attempt == 1));
    assert!(queue.dead_letters(100).unwrap().is_empty());
    assert_eq!(queue.len().unwrap(), (0, 0));
}
