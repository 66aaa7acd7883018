//! Found by a hostile audit: `close` does not reach a fetch whose claim is
//! stuck on a stalled server.
//!
//! `Consumer::close`: "Stops the consumer: a fetch waiting now, or made
//! later, returns `QueueError::Closed`"; `Consumer::fetch`, `# Errors`:
//! "`QueueError::Closed` once `close` was called, also for a fetch waiting
//! then". The claim loop reads its messages (`Close` among them) only
//! between rounds, so while a claim retries against a server that does not
//! answer, the waiting fetch hears nothing of the close: it answers
//! `Unavailable` once the retry window is over (9.7 s after the close
//! here, with the default 10 s window), not `Closed`.

use alloc::sync::Arc;
use core::time::Duration;
use std::time::Instant;

use tickwheel::redis::QueueError;

use crate::queues;
use crate::redis_server;
use queues::{builder, wait_for_claim};
use redis_server::RedisServer;

#[test]
fn close_answers_a_fetch_whose_claim_waits_on_a_stalled_server() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let consumer = Arc::new(queue.consumer().unwrap());
    server.stop_signal();
    // A new consumer's first fetch claims at once: the claim is sent to a
    // server that does not answer, and retries for the retry window (10 s).
    let claims = queue.metrics().claims;
    let (tx, rx) = std::sync::mpsc::channel();
    let waiting = Arc::clone(&consumer);
    std::thread::spawn(move || {
        let _ = tx.send(waiting.fetch(1, Duration::from_secs(60)));
    });
    wait_for_claim(&queue, claims);
    std::thread::sleep(Duration::from_millis(300));
    let closed = Instant::now();
    consumer.close();
    let answer = rx.recv_timeout(Duration::from_secs(40));
    let took = closed.elapsed();
    server.cont_signal();
    assert!(
        matches!(answer, Ok(Err(QueueError::Closed))),
        "a fetch waiting at close answered {answer:?} {took:?} after it"
    );
    // Far below the retry window, with room for a loaded machine.
    assert!(took < Duration::from_secs(5), "took {took:?}");
}
