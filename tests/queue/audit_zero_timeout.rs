//! Found by a hostile audit: a fetch that does not wait
//! (`Duration::ZERO`) misses jobs that are due, for as long as the wake-up
//! slack.
//!
//! `Consumer::fetch`: "Takes up to `max` due jobs ..., waiting up to
//! `timeout` for one to fall due; an empty vector if none did";
//! `QueueBuilder::wake_slack`: "How late past a job's due time a
//! *sleeping* consumer may wake". The claim loop claims for a new fetch
//! only once the known job's slack window has closed (or its sleep
//! fired), and a fetch with no time left never sleeps: it is answered
//! empty while the job has been due for up to the slack (1 s at most).
//! The same fetch with any timeout at all gets the job at once.

use core::time::Duration;

use crate::queues;
use crate::redis_server;
use queues::{builder, MS};
use redis_server::RedisServer;

#[test]
fn a_fetch_that_does_not_wait_takes_a_job_already_due() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server)
        .wake_slack(Duration::from_secs(1))
        .connect()
        .unwrap();
    let consumer = queue.consumer().unwrap();
    // The loop knows the queue is empty, then hears of the job by a hint.
    assert!(consumer.fetch(1, 50 * MS).unwrap().is_empty());
    std::thread::sleep(300 * MS);
    queue.schedule_in("due", 100 * MS, b"").unwrap();
    std::thread::sleep(400 * MS);
    // Due for about 300 ms now (its slack window is open until 1.1 s).
    let now = consumer.fetch(1, Duration::ZERO).unwrap();
    assert_eq!(now.len(), 1, "a job due for 300 ms was not taken");
}
