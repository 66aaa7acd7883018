//! Fetches, acks and connects that answer what their docs promise: a close
//! or an outage reaches a waiting fetch, a fetch with no time left takes
//! what is due, one that takes nothing claims nothing, a nacked job comes
//! back after its delay, and a dropped connect stops dialling. Each test
//! failed before its fix.

use alloc::sync::Arc;
use core::time::Duration;
use std::time::Instant;

use tickwheel::redis::{Acked, JobState, Nacked, QueueError};

use crate::queues;
use crate::redis_server;
use queues::{builder, wait_for_claim, MS};
use redis_server::RedisServer;

/// `close` reaches a fetch whose claim is stuck on a stalled server.
///
/// `Consumer::close`: "Stops the consumer: a fetch waiting now, or made
/// later, returns `QueueError::Closed`"; `Consumer::fetch`, `# Errors`:
/// "`QueueError::Closed` once `close` was called, also for a fetch waiting
/// then". The claim loop reads its messages (`Close` among them) only
/// between rounds, so while a claim retried against a server that did not
/// answer, the waiting fetch heard nothing of the close: it answered
/// `Unavailable` once the retry window was over (9.7 s after the close
/// here, with the default 10 s window), not `Closed`.
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

/// A fetch that waits for good, made once the claim loop knows Redis is
/// gone, answers `Unavailable` a retry window later.
///
/// `Consumer::fetch` promises, under `# Errors`, "Redis unreachable for the
/// retry window" (and "Any timeout works (`Duration::MAX` waits for
/// good)"): waiting for good is for a job, not for an outage. A fetch that
/// was already waiting when the server went away does get `Unavailable`
/// after the retry window, and so does a fetch with a finite timeout (at
/// its deadline). One made after the loop saw every partition down, with
/// `Duration::MAX`, waited until the server came back, however long that
/// was: a worker loop that logs errors and fetches again hung silently.
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

/// A fetch that does not wait (`Duration::ZERO`) takes the jobs that are
/// due, also within the wake-up slack.
///
/// `Consumer::fetch`: "Takes up to `max` due jobs ..., waiting up to
/// `timeout` for one to fall due; an empty vector if none did";
/// `QueueBuilder::wake_slack`: "How late past a job's due time a
/// *sleeping* consumer may wake". The claim loop claims for a new fetch
/// only once the known job's slack window had closed (or its sleep
/// fired), and a fetch with no time left never sleeps: it was answered
/// empty while the job had been due for up to the slack (1 s at most).
/// The same fetch with any timeout at all got the job at once.
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

/// `ack_and_fetch(done, 0, _)`, which fetches nothing, claims no job. It
/// claimed one that was due (a claim asks for at least one) and handed it
/// back, so the job's fence and the delivery counters moved for a
/// delivery nobody received.
///
/// `Delivery::fence`: "how many deliveries the job has had, this one
/// included"; `Metrics::delivered`: "Deliveries, first ones and
/// redeliveries"; `Metrics::released`: "Jobs claimed for a fetch that had
/// gone". After `ack_and_fetch(&[a], 0, _)` on a consumer whose loop has
/// not claimed yet (or while jobs are due), the next real delivery of a
/// due job said fence 2 on its first attempt, `delivered` counted it
/// twice, and `released` counted a fetch that never went.
#[test]
fn acks_with_nothing_to_fetch_claim_no_job() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let first = queue.consumer().unwrap();
    queue.schedule_in("a", MS, b"").unwrap();
    let a = first.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    queue.schedule_in("b", MS, b"").unwrap();
    std::thread::sleep(20 * MS);
    // A consumer that acks `a` and takes nothing.
    let acker = queue.consumer().unwrap();
    let (acked, jobs) = acker
        .ack_and_fetch(core::slice::from_ref(&a), 0, Duration::from_secs(5))
        .unwrap();
    assert_eq!(acked, [Acked::Acked]);
    assert!(jobs.is_empty());
    let b = queue.job("b").unwrap().unwrap();
    assert_eq!(b.state, JobState::Waiting);
    assert_eq!(b.fence, 0, "a fetch of nothing leased `b`: {b:?}");
    let m = queue.metrics();
    assert_eq!((m.delivered, m.released), (1, 0), "{m:?}");
    // Its first delivery is its first.
    let b = first.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!((b.attempt, b.fence()), (1, 1));
}

/// A nacked job is delivered again after its delay to a sleeping
/// consumer, not after the consumer's next reconciliation poll.
///
/// `Consumer::nack` gives a job back "to be delivered again after
/// `delay`", and the module docs say a consumer "sleeps on a tickwheel
/// timer until the next job is due", learning of earlier jobs from hints;
/// `QueueBuilder::poll_interval` says the poll only covers a *lost* hint
/// ("a lost wake-up hint costs at most 1.25 of these"). `nack.lua` sent no
/// hint (schedule, reschedule, requeue and release do), so a consumer that
/// last learnt of the job's lease deadline slept through the retry until
/// its poll: with a 10 s poll, a 100 ms retry waited about 10 s.
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

/// Dropping a `connect_async` future that has not connected yet returns
/// at once; it blocked the thread that dropped it for the rest of the
/// retry window.
///
/// `QueueBuilder::connect_async`: "the future connects without blocking
/// the executor, under any runtime". Its first poll starts the queue's
/// I/O thread; dropping the future (a `tokio::time::timeout` that fires,
/// a `select!` that took another branch) drops the queue's shared state,
/// whose `Drop` joins that thread, which kept dialling an unreachable
/// server until its retry window was over. So a service that gave a
/// connect one second had its executor thread blocked for about the whole
/// window (default 10 s) when the timeout fired.
#[test]
fn dropping_a_pending_connect_async_does_not_block_for_the_retry_window() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    // A server that takes connections and never answers.
    server.stop_signal();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let connect = builder(&server)
        .retry(Duration::from_secs(6), Duration::from_secs(1))
        .connect_async();
    let started = Instant::now();
    let answer = runtime.block_on(async { tokio::time::timeout(100 * MS, connect).await });
    let took = started.elapsed();
    server.cont_signal();
    assert!(answer.is_err(), "connected to a stopped server");
    // The timeout fires at 100 ms; the drop should not wait out the 6 s
    // window (room left for a loaded machine).
    assert!(
        took < Duration::from_secs(2),
        "the timed-out connect took {took:?}"
    );
}
