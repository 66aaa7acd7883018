//! Shared by the Redis queue's test files: a queue builder on a test's own
//! server, where a job's id puts it, jobs due over a window, and consumer
//! loops that ack what they take.
#![allow(dead_code)]

extern crate alloc;

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use core::time::Duration;
use std::collections::HashMap;
use std::time::{Instant, SystemTime};

use tickwheel::redis::{Acked, Consumer, Delivery, Queue, QueueBuilder};

use super::redis_server::RedisServer;

pub(crate) const MS: Duration = Duration::from_millis(1);

/// Waits (up to 10 s) until `queue` has sent a claim past the first
/// `sent` (the counter moves when a claim is sent, not when it is answered).
pub(crate) fn wait_for_claim(queue: &Queue, sent: u64) {
    let began = Instant::now();
    while queue.metrics().claims <= sent {
        assert!(began.elapsed() < Duration::from_secs(10), "no claim");
        std::thread::sleep(MS);
    }
}

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

/// Schedules `n` jobs `{prefix}-{i}`, due evenly over `over` from `start`,
/// and returns each one's due time.
pub(crate) fn spread(
    queue: &Queue,
    prefix: &str,
    n: usize,
    start: SystemTime,
    over: Duration,
) -> HashMap<String, SystemTime> {
    let mut due = HashMap::new();
    for i in 0..n {
        let id = format!("{prefix}-{i}");
        let at = start + over.mul_f64(i as f64 / n as f64);
        queue.schedule(&id, at, b"").unwrap();
        due.insert(id, at);
    }
    due
}

/// A consumer on a thread of its own, fetching up to 50 jobs at a time
/// until stopped: each job goes to `seen` with when it came, then is
/// acked. Failed fetches and acks are counted, not fatal: a shard may be
/// down.
pub(crate) struct FetchLoop {
    stop: Arc<AtomicBool>,
    fetch_errors: Arc<AtomicUsize>,
    ack_errors: Arc<AtomicUsize>,
    thread: std::thread::JoinHandle<()>,
}

impl FetchLoop {
    pub(crate) fn start(
        queue: &Queue,
        mut seen: impl FnMut(SystemTime, &Delivery) + Send + 'static,
    ) -> FetchLoop {
        let consumer = queue.consumer().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let fetch_errors = Arc::new(AtomicUsize::new(0));
        let ack_errors = Arc::new(AtomicUsize::new(0));
        let thread = std::thread::spawn({
            let (stop, fetch_errors, ack_errors) =
                (stop.clone(), fetch_errors.clone(), ack_errors.clone());
            move || {
                while !stop.load(Ordering::Relaxed) {
                    let Ok(jobs) = consumer.fetch(50, 200 * MS) else {
                        fetch_errors.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    let now = SystemTime::now();
                    for job in jobs {
                        seen(now, &job);
                        if consumer.ack(&job).is_err() {
                            ack_errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        });
        FetchLoop {
            stop,
            fetch_errors,
            ack_errors,
            thread,
        }
    }

    pub(crate) fn fetch_errors(&self) -> usize {
        self.fetch_errors.load(Ordering::Relaxed)
    }

    pub(crate) fn ack_errors(&self) -> usize {
        self.ack_errors.load(Ordering::Relaxed)
    }

    /// Stops the loop and waits for it; panics if `seen` panicked.
    pub(crate) fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
    }
}
