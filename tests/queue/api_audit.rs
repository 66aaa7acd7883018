//! The per-call API held to its promises by a hostile user: careless sizes,
//! answers after the fact, counters. Each test failed before its fix.

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
