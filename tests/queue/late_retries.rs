//! Answers that stay true when the retry after a lost reply comes late:
//! the lossy proxy (`tests/support/redis_proxy.rs`) loses a reply after
//! Redis acted, then keeps the client's new connections waiting, so the
//! retry reaches Redis seconds later, well inside the retry window but
//! after what the first attempt did has had time to run out; and a claim
//! given up on that runs once its frozen server resumes. Each test failed
//! before its fix.

use core::time::Duration;
use std::time::Instant;

use tickwheel::redis::{Acked, Cancelled, Queue};

use crate::redis_proxy;
use crate::redis_server;
use redis_proxy::LossyProxy;
use redis_server::RedisServer;

const MS: Duration = Duration::from_millis(1);

/// A claim whose reply was lost, retried after its jobs' lease would have
/// run out, still gets the same jobs at attempt 1, leased anew.
///
/// Module docs, "Answers that stay true": "a claim's retry gets the same
/// jobs back, without spending an attempt", within the retry window. The
/// claim's replay record lived only as long as a lease (1 s here), so a
/// retry 2.5 s later (a slow reconnect, inside the 10 s window) found no
/// record and claimed afresh: the jobs its first attempt leased were taken
/// for leases that ran out, and under `max_attempts(1)` all three were
/// dead-lettered though nobody had received them; the fetch got nothing.
#[test]
fn a_claim_retried_after_a_lease_still_gets_its_jobs_at_attempt_one() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let proxy = LossyProxy::start(server.addr());
    let lease = Duration::from_secs(1);
    let options = |url: &str| {
        Queue::builder(url, "orders")
            .lease(lease)
            .max_attempts(1)
            .retry(Duration::from_secs(10), 500 * MS)
    };
    let queue = options(&proxy.url()).connect().unwrap();
    // Another process, straight to Redis: a rival consumer, and the
    // dead letters.
    let direct = options(&server.url()).connect().unwrap();
    let rival = direct.consumer().unwrap();
    let consumer = queue.consumer().unwrap();
    // Loads the claim script: nothing is due yet.
    assert!(consumer.fetch(1, Duration::ZERO).unwrap().is_empty());
    for i in 0..3 {
        queue.schedule_in(&format!("j{i}"), MS, b"").unwrap();
    }
    std::thread::sleep(10 * MS);
    // The claim runs, its reply is lost, and the retry reaches Redis 2.5 s
    // later: after the first attempt's lease of 1 s.
    proxy.hold_after_loss(2500 * MS);
    proxy.lose_reply_to(b":claim:");
    let mut jobs = consumer.fetch(3, Duration::from_secs(6)).unwrap();
    assert_eq!(proxy.lost(), 1, "no claim reply was lost");
    let dead = dead_ids(&direct);
    assert!(
        dead.is_empty(),
        "dead-lettered though nobody received them: {dead:?}"
    );
    jobs.sort_by(|a, b| a.id.cmp(&b.id));
    let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["j0", "j1", "j2"], "the retry did not get its jobs");
    assert!(jobs.iter().all(|j| j.attempt == 1), "{jobs:?}");
    // Leased anew by the retry: a rival's claim now takes none of them
    // (their first lease ran out long ago).
    let taken = rival.fetch(3, Duration::ZERO).unwrap();
    assert!(taken.is_empty(), "a rival took {taken:?}");
    assert_eq!(consumer.ack_all(&jobs).unwrap(), [Acked::Acked; 3]);
    assert!(direct.dead_letters(10).unwrap().is_empty());
    assert_eq!(direct.len().unwrap(), (0, 0));
}

/// A claim that dead-letters a job, whose reply was lost, still counts the
/// dead letter after its retry.
///
/// `Metrics::dead_lettered`: "Jobs dead-lettered by this process's claims
/// and nacks". The count comes in the claim's reply; a retry after a lost
/// reply replays only the jobs the first attempt delivered (and a claim
/// that delivered none keeps no replay: the retry claimed afresh and found
/// nothing), so the dead letter the first attempt made was never counted
/// (0, with the job in the dead letters), nor its warning logged.
#[test]
fn a_claim_retried_after_a_lost_reply_counts_its_dead_letters() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let proxy = LossyProxy::start(server.addr());
    let options = |url: &str| {
        Queue::builder(url, "orders")
            .lease(Duration::from_secs(1))
            .max_attempts(1)
    };
    let queue = options(&proxy.url()).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    // Another process, straight to Redis, takes the job and never acks it.
    let direct = options(&server.url()).connect().unwrap();
    let taker = direct.consumer().unwrap();
    // Loads the claim script: nothing is due yet.
    assert!(consumer.fetch(1, Duration::ZERO).unwrap().is_empty());
    direct.schedule_in("j", MS, b"").unwrap();
    std::thread::sleep(10 * MS);
    assert_eq!(taker.fetch(1, Duration::from_secs(5)).unwrap().len(), 1);
    // Learns that the next thing due is the lease's end.
    assert!(consumer.fetch(1, Duration::ZERO).unwrap().is_empty());
    // At the lease's end, this consumer's claim dead-letters the job (its
    // one attempt spent), and the reply is lost.
    proxy.lose_reply_to(b":claim:");
    assert!(consumer
        .fetch(1, Duration::from_secs(4))
        .unwrap()
        .is_empty());
    assert_eq!(proxy.lost(), 1, "no claim reply was lost");
    let dead = dead_ids(&direct);
    assert_eq!(dead, ["j"]);
    assert_eq!(queue.metrics().dead_lettered, 1, "{:?}", queue.metrics());
}

/// The ids of the first 10 dead letters.
fn dead_ids(queue: &tickwheel::redis::Queue) -> Vec<String> {
    let dead = queue.dead_letters(10).unwrap();
    dead.into_iter().map(|d| d.id).collect()
}

/// Waits (up to 10 s) until `proxy` has lost `n` replies.
fn wait_for_losses(proxy: &LossyProxy, n: usize) {
    let began = Instant::now();
    while proxy.lost() < n {
        assert!(began.elapsed() < Duration::from_secs(10), "no reply lost");
        std::thread::sleep(MS);
    }
}

/// Two cancels sharing a script call whose reply is lost twice, where the
/// first retry also cancels a job that was in flight at the first attempt,
/// still answer each winner's payload.
///
/// `Queue::cancel`: "Cancelled with the payload if it will never be
/// delivered; a retry after a lost reply says the same". A call keeps its
/// winners' payloads in one string for its retries; a retry that cancelled
/// a job of its own replaced that string with its own winners, so a second
/// retry found nothing kept for the first attempt's winner and answered
/// `Cancelled` with an empty payload.
#[test]
fn cancels_retried_twice_keep_every_winners_payload() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let proxy = LossyProxy::start(server.addr());
    let queue = Queue::builder(&proxy.url(), "orders")
        .retry(Duration::from_secs(30), 500 * MS)
        .connect()
        .unwrap();
    // Another process, straight to Redis: the producer, and a consumer
    // that holds `pay-b` at first and gives it back later.
    let direct = Queue::connect(&server.url(), "orders").unwrap();
    let consumer = direct.consumer().unwrap();
    let hour = Duration::from_secs(3600);
    for id in ["block-1", "block-2", "pay-a"] {
        direct.schedule_in(id, hour, id.as_bytes()).unwrap();
    }
    direct.schedule_in("pay-b", MS, b"pay-b").unwrap();
    let held = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!(held.id, "pay-b");
    // Loads the cancel script.
    queue.cancel("warm-up").unwrap();
    // Each lost reply keeps the retry waiting 2 s.
    proxy.hold_after_loss(2000 * MS);
    proxy.lose_reply_to(b"block-1");
    proxy.lose_reply_to(b"pay-b");
    proxy.lose_reply_to(b"pay-b");
    let cancel = |id: &'static str| {
        let queue = queue.clone();
        std::thread::spawn(move || queue.cancel(id))
    };
    // The lane's two script calls wait out the first hold, so the cancels
    // of `pay-a` and `pay-b` wait in the lane and go in one script call.
    let block_1 = cancel("block-1");
    wait_for_losses(&proxy, 1);
    let block_2 = cancel("block-2");
    std::thread::sleep(200 * MS);
    let (a, b) = (cancel("pay-a"), cancel("pay-b"));
    // Their call's first attempt cancels `pay-a` (`pay-b` is in flight),
    // and its reply is lost; meanwhile `pay-b` is given back, so the retry
    // cancels it too, and that reply is lost as well.
    wait_for_losses(&proxy, 2);
    assert_eq!(
        consumer.nack(&held, Duration::ZERO).unwrap(),
        tickwheel::redis::Nacked::Retrying
    );
    wait_for_losses(&proxy, 3);
    for (id, blocker) in [("block-1", block_1), ("block-2", block_2)] {
        let answer = blocker.join().unwrap().unwrap();
        assert_eq!(answer, Cancelled::Cancelled(id.as_bytes().to_vec()));
    }
    assert_eq!(
        a.join().unwrap().unwrap(),
        Cancelled::Cancelled(b"pay-a".to_vec()),
        "the first attempt's winner"
    );
    assert_eq!(
        b.join().unwrap().unwrap(),
        Cancelled::Cancelled(b"pay-b".to_vec())
    );
    assert_eq!(proxy.lost(), 3);
    assert_eq!(direct.len().unwrap(), (0, 0));
}

/// A claim given up on (its server frozen past the retry window) that
/// runs once the server resumes does its work in Redis, and its answer
/// is never read. It dead-lettered a job whose one attempt had run out,
/// and `Metrics::dead_lettered` ("jobs dead-lettered by this process's
/// claims") stayed 0: the release that hands back such a claim's jobs
/// read only its jobs from its replay record, not its counts.
#[test]
fn a_claim_given_up_on_that_dead_letters_later_is_counted() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let options = || {
        Queue::builder(&server.url(), "orders")
            .lease(300 * MS)
            .max_attempts(1)
            .retry(500 * MS, 100 * MS)
    };
    let crashed = options().connect().unwrap();
    let queue = options().connect().unwrap();
    queue.schedule_in("j", Duration::ZERO, b"").unwrap();
    let taken = crashed.consumer().unwrap().fetch(1, Duration::from_secs(2));
    assert_eq!(taken.unwrap().len(), 1, "the first consumer got no job");
    let consumer = queue.consumer().unwrap();
    assert!(consumer.fetch(1, Duration::ZERO).unwrap().is_empty());
    std::thread::sleep(400 * MS); // the first consumer's lease ran out
    server.stop_signal();
    // The claim waits in the frozen server's socket past the retry window.
    let given_up = consumer.fetch(1, Duration::from_secs(2));
    std::thread::sleep(Duration::from_secs(1));
    server.cont_signal();
    assert!(given_up.is_err(), "the fetch did not give up: {given_up:?}");
    // The next round runs, and hands back what the late claim leased.
    let started = Instant::now();
    while queue.metrics().dead_lettered == 0 && started.elapsed() < Duration::from_secs(5) {
        let _ = consumer.fetch(1, 100 * MS);
    }
    assert_eq!(dead_ids(&queue), ["j"], "not the scenario: j not dead");
    assert_eq!(queue.metrics().dead_lettered, 1, "{:?}", queue.metrics());
}
