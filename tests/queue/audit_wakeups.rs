//! Found by a hostile audit: a nacked job is not due "after the delay" to
//! a sleeping consumer, but after its next reconciliation poll.
//!
//! `Consumer::nack` gives a job back "to be delivered again after
//! `delay`", and the module docs say a consumer "sleeps on a tickwheel
//! timer until the next job is due", learning of earlier jobs from hints;
//! `QueueBuilder::poll_interval` says the poll only covers a *lost* hint
//! ("a lost wake-up hint costs at most 1.25 of these"). `nack.lua` sends no
//! hint (schedule, reschedule, requeue and release do), so a consumer that
//! last learnt of the job's lease deadline sleeps through the retry until
//! its poll: with a 10 s poll, a 100 ms retry waits about 10 s.

use core::time::Duration;
use std::time::Instant;

use tickwheel::redis::Nacked;

use crate::queues;
use crate::redis_server;
use queues::{builder, MS};
use redis_server::RedisServer;

#[test]
fn a_nacked_job_is_delivered_again_after_its_delay_not_after_a_poll() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server)
        .poll_interval(Duration::from_secs(10))
        .connect()
        .unwrap();
    let consumer = queue.consumer().unwrap();
    // The consumer's loop and its hints subscription are running, and the
    // job's schedule hint has come and gone before the claim that takes it.
    assert!(consumer.fetch(1, 100 * MS).unwrap().is_empty());
    std::thread::sleep(300 * MS);
    queue.schedule_in("retry-me", MS, b"").unwrap();
    std::thread::sleep(300 * MS);
    let job = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!(consumer.nack(&job, 100 * MS).unwrap(), Nacked::Retrying);
    let nacked = Instant::now();
    let again = consumer.fetch(1, Duration::from_secs(6)).unwrap();
    let took = nacked.elapsed();
    assert_eq!(
        again.len(),
        1,
        "not redelivered within 6 s of a 100 ms nack"
    );
    assert_eq!(again[0].attempt, 2);
    // Far below the 10 s poll, with room for a loaded machine.
    assert!(took < Duration::from_secs(3), "took {took:?}");
}
