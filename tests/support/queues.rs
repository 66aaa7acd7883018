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

/// The partition of job `id` in a queue of `n`, as the queue computes it
/// (`Partitions::of` in `src/redis/partitions.rs`: FNV-1a 64 of the id's
/// bytes, modulo the count): part of the data format.
pub(crate) fn partition_of(id: &str, n: u64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash % n
}

/// An id `{prefix}-{i}` (the first such `i`) of partition `part` of `n`.
pub(crate) fn id_in(prefix: &str, part: u64, n: u64) -> String {
    (0..)
        .map(|i| format!("{prefix}-{i}"))
        .find(|id| partition_of(id, n) == part)
        .expect("some id falls in every partition")
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
