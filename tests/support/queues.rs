//! Shared by the Redis queue's test files: a queue builder on a test's own
//! server, and a consumer loop that acks what it takes.
#![allow(dead_code)]

extern crate alloc;

use core::time::Duration;
use std::time::Instant;

use tickwheel::redis::{Acked, Consumer, Delivery, Queue, QueueBuilder};

use super::redis_server::RedisServer;

pub(crate) const MS: Duration = Duration::from_millis(1);

/// The queue "orders" on `server`.
pub(crate) fn builder(server: &RedisServer) -> QueueBuilder {
    Queue::builder(&server.url(), "orders")
}

/// Fetches until `n` jobs came or `within` passed; acks each. Each fetch
/// waits for the rest of the time, so jobs not due at its start arrive
/// only through the consumer's own wake-ups.
pub(crate) fn take(consumer: &Consumer, n: usize, within: Duration) -> Vec<Delivery> {
    let give_up = Instant::now() + within;
    let mut got = Vec::new();
    while got.len() < n && Instant::now() < give_up {
        let left = give_up.saturating_duration_since(Instant::now());
        for job in consumer.fetch(n - got.len(), left).unwrap() {
            assert_eq!(consumer.ack(&job).unwrap(), Acked::Acked);
            got.push(job);
        }
    }
    got
}
