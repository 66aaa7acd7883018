//! Found by a hostile audit: a fetch that waits for good, made once the
//! claim loop knows Redis is gone, never answers.
//!
//! `Consumer::fetch` promises, under `# Errors`, "Redis unreachable for the
//! retry window" (and "Any timeout works (`Duration::MAX` waits for
//! good)"): waiting for good is for a job, not for an outage. A fetch that
//! was already waiting when the server went away does get `Unavailable`
//! after the retry window, and so does a fetch with a finite timeout (at
//! its deadline). One made after the loop saw every partition down, with
//! `Duration::MAX`, waits until the server comes back, however long that
//! is: a worker loop that logs errors and fetches again hangs silently.

use alloc::sync::Arc;
use core::time::Duration;

use tickwheel::redis::QueueError;

use crate::queues;
use crate::redis_server;
use queues::{builder, MS};
use redis_server::RedisServer;

#[test]
fn a_fetch_for_good_made_after_the_server_died_answers_unavailable() {
    let Some(mut server) = RedisServer::start_or_skip() else {
        return;
    };
    // A 1 s retry window: any answer is due within a few seconds.
    let queue = builder(&server)
        .retry(Duration::from_secs(1), 200 * MS)
        .connect()
        .unwrap();
    let consumer = Arc::new(queue.consumer().unwrap());
    assert!(consumer.fetch(1, 100 * MS).unwrap().is_empty());
    server.kill9();
    // The loop learns that the server is gone.
    let first = consumer.fetch(1, Duration::from_secs(3));
    assert!(
        matches!(first, Err(QueueError::Unavailable(_))),
        "{first:?}"
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let waiting = Arc::clone(&consumer);
    std::thread::spawn(move || {
        let _ = tx.send(waiting.fetch(1, Duration::MAX));
    });
    // Fifteen times the retry window, with room for a loaded machine.
    let answer = rx.recv_timeout(Duration::from_secs(15));
    assert!(
        matches!(answer, Ok(Err(QueueError::Unavailable(_)))),
        "a fetch for good, made with Redis gone, did not answer: {answer:?}"
    );
}
