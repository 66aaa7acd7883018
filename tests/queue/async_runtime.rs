//! `QueueBuilder::runtime`, on a real `redis-server`: the queue's I/O is a
//! task on the caller's runtime. Calls from its own worker answer, the
//! queue stops with it, and calls from its tasks that send their own script
//! calls keep their lane's limit, give slots back when dropped, find their
//! partition, and keep every answer true beside blocking callers, dropped
//! calls and a server that pauses.

use core::time::Duration;

use tickwheel::redis::{Acked, AsyncQueue, Cancelled, Queue, QueueError, Scheduled};

use crate::async_api::clients;
use crate::redis_server;
use redis_server::RedisServer;

/// Runs `f` on a thread of its own and waits at most `limit` for it: a
/// call that waits on itself fails the test instead of hanging it.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("still waiting after {limit:?}: the call waits on itself"))
}

/// `QueueBuilder::runtime`: the queue's I/O is a task on the caller's
/// runtime, here one with a single worker. Async calls, a consumer's fetch
/// and ack, and blocking calls made from that very worker (which must hand
/// the I/O to another thread while they wait, or wait forever) all answer.
#[test]
fn io_on_the_callers_runtime_serves_async_and_blocking_calls_from_its_worker() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let url = server.url();
    let before = clients(&server);
    let runtime = multi_thread(1);
    let handle = runtime.handle().clone();
    within(Duration::from_secs(20), move || {
        runtime.block_on(async move {
            let queue = Queue::builder(&url, "orders")
                .runtime(handle.clone())
                .connect_async()
                .await
                .unwrap();
            let s = queue
                .schedule_in("a", Duration::from_millis(20), b"x")
                .await;
            assert!(matches!(s.unwrap(), Scheduled::Created { .. }));
            let s = queue.schedule_in("b", Duration::from_secs(60), b"y").await;
            assert!(matches!(s.unwrap(), Scheduled::Created { .. }));
            assert_eq!(
                queue.cancel("b").await.unwrap(),
                Cancelled::Cancelled(b"y".to_vec())
            );
            let consumer = queue.consumer().unwrap();
            let jobs = consumer.fetch(10, Duration::from_secs(5)).await.unwrap();
            assert_eq!(jobs.len(), 1);
            assert_eq!(consumer.ack(&jobs[0]).await.unwrap(), Acked::Acked);
            // Blocking calls from the runtime's only worker, inside a task.
            let blocking = queue.to_blocking();
            let answer = handle
                .spawn(async move {
                    let len = blocking.len();
                    let s = blocking.schedule_in("c", Duration::from_secs(60), b"z");
                    (len, s)
                })
                .await
                .unwrap();
            assert_eq!(answer.0.unwrap(), (0, 0));
            assert!(matches!(answer.1.unwrap(), Scheduled::Created { .. }));
            assert_eq!(queue.len().await.unwrap(), (1, 0));
            assert_eq!((queue.metrics().scheduled, queue.metrics().acked), (3, 1));
            // The same connections as a queue on a thread of its own: one
            // for calls, one for hints, one for the consumer's waits.
            let now = clients(&server);
            assert!(now <= before + 3, "{now} clients, {before} before");
        })
    });
}

/// A current-thread runtime is refused: a blocking call on its only
/// thread would wait on the I/O it drives.
#[test]
fn a_current_thread_runtime_is_refused() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let err = Queue::builder("redis://127.0.0.1:1", "orders")
        .runtime(runtime.handle().clone())
        .connect()
        .unwrap_err();
    assert!(
        err.to_string().contains("multi-thread tokio runtime"),
        "{err}"
    );
}

/// A queue whose I/O runs on a runtime stops with it: every later call
/// answers an error at once, blocking or async, and nothing hangs.
#[test]
fn a_queue_stops_with_its_runtime() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let runtime = multi_thread(1);
    // A blocking connect from a plain thread.
    let queue = Queue::builder(&server.url(), "orders")
        .runtime(runtime.handle().clone())
        .connect()
        .unwrap();
    queue
        .schedule_in("a", Duration::from_secs(60), b"")
        .unwrap();
    let consumer = queue.consumer().unwrap();
    drop(runtime);
    let stopped = |err: QueueError| {
        assert!(
            matches!(&err, QueueError::Unavailable(why) if why.contains("I/O stopped")),
            "{err:?}"
        );
    };
    // A consumer from before answers `Unavailable`, not `Closed` (nobody
    // closed it), and a new one is refused rather than made dead.
    stopped(
        within(Duration::from_secs(10), move || {
            consumer.fetch(1, Duration::from_millis(1))
        })
        .unwrap_err(),
    );
    let again = queue.clone();
    stopped(within(Duration::from_secs(10), move || again.consumer().map(drop)).unwrap_err());
    stopped(within(Duration::from_secs(10), move || queue.len()).unwrap_err());
}

/// Tasks whose drop makes a blocking call, dropped while their runtime
/// shuts down: each call answers (`Unavailable` once the I/O is no longer
/// run) instead of waiting forever on the I/O task, which the same
/// shutdown drops later or has stopped running. Sixteen tasks, so that
/// some are dropped before the I/O task and some after.
#[test]
fn blocking_calls_from_tasks_dropped_at_shutdown_answer() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    struct Guard(
        Queue,
        std::sync::mpsc::Sender<Result<Scheduled, QueueError>>,
    );
    impl Drop for Guard {
        fn drop(&mut self) {
            let answer = self.0.schedule_in("g", Duration::from_secs(60), b"");
            let _ = self.1.send(answer);
        }
    }
    let runtime = multi_thread(1);
    let queue = Queue::builder(&server.url(), "orders")
        .runtime(runtime.handle().clone())
        .connect()
        .unwrap();
    let (tx, answers) = std::sync::mpsc::channel();
    for _ in 0..16 {
        let guard = Guard(queue.clone(), tx.clone());
        runtime.spawn(async move {
            let _guard = guard;
            core::future::pending::<()>().await;
        });
    }
    drop((tx, queue));
    // Every task started (and so holds its guard) before the shutdown.
    runtime.block_on(tokio::task::yield_now());
    within(Duration::from_secs(20), move || drop(runtime));
    let answers: Vec<_> = answers.iter().collect();
    assert_eq!(answers.len(), 16, "every guard answered");
    for answer in answers {
        match answer {
            Ok(_) => {}
            Err(QueueError::Unavailable(why)) => assert!(why.contains("I/O stopped"), "{why}"),
            Err(other) => panic!("{other:?}"),
        }
    }
}

/// A runtime built without its I/O and time drivers cannot run the queue:
/// the connect answers an error, it does not hang or panic the caller.
#[test]
fn a_runtime_without_drivers_fails_the_connect() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let handle = runtime.handle().clone();
    let err = within(Duration::from_secs(10), move || {
        Queue::builder("redis://127.0.0.1:1", "orders")
            .runtime(handle)
            .connect()
    })
    .unwrap_err();
    assert!(err.to_string().contains("I/O stopped"), "{err}");
}

/// A multi-thread runtime of `workers` workers.
pub(crate) fn multi_thread(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

/// A multi-thread runtime of two workers and a queue of `partitions`
/// whose I/O runs on it, with `n` jobs waiting ("j0", "j1", ...), made
/// under a watchdog.
fn queue_on_runtime(
    server: &RedisServer,
    partitions: u16,
    n: usize,
) -> (tokio::runtime::Runtime, AsyncQueue) {
    let url = server.url();
    within(Duration::from_secs(20), move || {
        let runtime = multi_thread(2);
        let handle = runtime.handle().clone();
        let queue = runtime.block_on(async move {
            let queue = Queue::builder(&url, "orders")
                .partitions(partitions)
                .runtime(handle)
                .connect_async()
                .await
                .unwrap();
            for i in 0..n {
                let id = format!("j{i}");
                let s = queue.schedule_in(&id, Duration::from_secs(60), b"p").await;
                assert!(matches!(s.unwrap(), Scheduled::Created { .. }));
            }
            queue
        });
        (runtime, queue)
    })
}

/// Calls made from the runtime's own tasks send their script calls
/// themselves while their lane has room (two at a time); the rest wait in
/// the lane and go out together as slots come back. With the server
/// paused, 60 cancels pile up: when it resumes, every one answers, in a
/// handful of script calls, not 60 (a caller that took a slot past the
/// lane's limit would make one each, and a slot given back without
/// waking the lane would leave the waiting ones unanswered).
#[test]
fn calls_from_the_runtimes_tasks_keep_the_lane_limit_and_wake_the_waiting() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (runtime, queue) = queue_on_runtime(&server, 1, 60);
    let before = queue.metrics().round_trips;
    server.stop_signal();
    let tasks: Vec<_> = (0..60)
        .map(|i| {
            let queue = queue.clone();
            runtime.spawn(async move { queue.cancel(&format!("j{i}")).await })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    server.cont_signal();
    let answers = within(Duration::from_secs(20), move || {
        runtime.block_on(async move {
            let mut answers = Vec::new();
            for task in tasks {
                answers.push(task.await.unwrap());
            }
            answers
        })
    });
    for answer in answers {
        assert_eq!(answer.unwrap(), Cancelled::Cancelled(b"p".to_vec()));
    }
    let trips = queue.metrics().round_trips - before;
    assert!(trips <= 8, "{trips} round trips for 60 cancels");
}

/// A call dropped while its script call is out (its caller timed out)
/// gives its lane's slot back: with both slots of the cancel lane taken
/// by calls that were then dropped, a later cancel still answers.
#[test]
fn a_call_dropped_in_flight_gives_its_slot_back() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (runtime, queue) = queue_on_runtime(&server, 1, 3);
    server.stop_signal();
    let q = queue.clone();
    let timed_out = runtime.block_on(async move {
        let first = tokio::time::timeout(Duration::from_millis(100), q.cancel("j0"));
        let second = tokio::time::timeout(Duration::from_millis(100), q.cancel("j1"));
        let (first, second) = tokio::join!(first, second);
        first.is_err() && second.is_err()
    });
    assert!(timed_out, "the paused server answered");
    server.cont_signal();
    let answer = within(Duration::from_secs(20), move || {
        runtime.block_on(async move { queue.cancel("j2").await })
    });
    assert_eq!(answer.unwrap(), Cancelled::Cancelled(b"p".to_vec()));
}

/// Calls sent from the runtime's tasks find their job's partition: 40
/// jobs scheduled from a task land in all four partitions of the queue,
/// and each is then cancelled (with its payload, once), fetched and acked
/// from tasks, by id wherever it lives.
#[test]
fn calls_from_the_runtimes_tasks_find_their_partition() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (runtime, queue) = queue_on_runtime(&server, 4, 0);
    let q = queue.clone();
    let work = runtime.spawn(async move {
        for i in 0..40 {
            let id = format!("job-{i}");
            let delay = Duration::from_millis(if i < 20 { 3_600_000 } else { 10 });
            let s = q.schedule_in(&id, delay, id.as_bytes()).await;
            assert!(matches!(s.unwrap(), Scheduled::Created { .. }), "{id}");
        }
        for i in 0..20 {
            let id = format!("job-{i}");
            let c = q.cancel(&id).await.unwrap();
            assert_eq!(c, Cancelled::Cancelled(id.clone().into_bytes()));
            assert_eq!(q.cancel(&id).await.unwrap(), Cancelled::Ended);
        }
        let consumer = q.consumer().unwrap();
        let mut acked = 0;
        while acked < 20 {
            for job in consumer.fetch(20, Duration::from_secs(5)).await.unwrap() {
                assert_eq!(consumer.ack(&job).await.unwrap(), Acked::Acked);
                acked += 1;
            }
        }
        q.len().await
    });
    let len = within(Duration::from_secs(20), move || runtime.block_on(work));
    assert_eq!(len.unwrap().unwrap(), (0, 0));
    let records = server.command(&["KEYS", "tw:{orders:*}:jobs"]);
    assert_eq!(records.matches("tw:").count(), 4, "{records}");
    assert_eq!(queue.metrics().acked, 20);
}

/// What a caller knows of one job after its calls.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Known {
    /// Scheduled, never cancelled.
    Waiting,
    /// A cancel answered that it won.
    Cancelled,
    /// A cancel was dropped before its answer: it may or may not have run.
    Unsure,
}

/// The lanes under every kind of caller at once: eight tasks of the
/// runtime (which send their own script calls when a lane has room),
/// some of their cancels dropped after 0–3 ms, and two plain threads
/// making blocking calls (which go through the serve loop), while the
/// server is paused three times. Every answer that came is right, and
/// afterwards a cancel of every job finds what the answers said: a waiting
/// job is cancelled with its payload, a cancelled one has ended, an
/// unsure one is either; nothing is left, and no call hangs (a slot lost
/// to a dropped call would leave later calls waiting for ever).
#[test]
fn mixed_callers_drops_and_pauses_keep_every_answer_true() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (runtime, queue) = queue_on_runtime(&server, 2, 0);
    // Plain threads and `kill`, not the server's own methods: a call that
    // never answers then fails the watchdog below instead of hanging the
    // test in a join.
    let pid = server.pid().to_string();
    let pauser = std::thread::spawn(move || {
        let signal = |sig: &str| {
            let status = std::process::Command::new("kill")
                .args([sig, &pid])
                .status();
            assert!(status.unwrap().success());
        };
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(150));
            signal("-STOP");
            std::thread::sleep(Duration::from_millis(80));
            signal("-CONT");
        }
    });
    let (tx, rx) = std::sync::mpsc::channel();
    for t in 0..2 {
        let (blocking, tx) = (queue.to_blocking(), tx.clone());
        std::thread::spawn(move || {
            let mut known = Vec::new();
            for k in 0..100 {
                let id = format!("b{t}-{k}");
                let s = blocking.schedule_in(&id, Duration::from_secs(60), id.as_bytes());
                assert!(matches!(s.unwrap(), Scheduled::Created { .. }), "{id}");
                if k % 2 == 0 {
                    let c = blocking.cancel(&id).unwrap();
                    assert_eq!(c, Cancelled::Cancelled(id.clone().into_bytes()));
                    known.push((id, Known::Cancelled));
                } else {
                    known.push((id, Known::Waiting));
                }
            }
            tx.send(known).unwrap();
        });
    }
    for t in 0..8u64 {
        let (queue, tx) = (queue.clone(), tx.clone());
        runtime.spawn(async move {
            let mut known = Vec::new();
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
            for k in 0..150 {
                let id = format!("a{t}-{k}");
                let s = queue.schedule_in(&id, Duration::from_secs(60), id.as_bytes());
                assert!(
                    matches!(s.await.unwrap(), Scheduled::Created { .. }),
                    "{id}"
                );
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let state = match k % 3 {
                    0 => {
                        let wait = Duration::from_micros(x % 3_000);
                        match tokio::time::timeout(wait, queue.cancel(&id)).await {
                            Ok(c) => {
                                let won = Cancelled::Cancelled(id.clone().into_bytes());
                                assert_eq!(c.unwrap(), won);
                                Known::Cancelled
                            }
                            Err(_) => Known::Unsure,
                        }
                    }
                    1 => {
                        let c = queue.cancel(&id).await.unwrap();
                        assert_eq!(c, Cancelled::Cancelled(id.clone().into_bytes()));
                        Known::Cancelled
                    }
                    _ => Known::Waiting,
                };
                known.push((id, state));
            }
            tx.send(known).unwrap();
        });
    }
    drop(tx);
    let mut known: Vec<(String, Known)> = Vec::new();
    for _ in 0..10 {
        let part = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("a caller panicked, or never finished: a call waits for ever");
        known.extend(part);
    }
    pauser.join().unwrap();
    assert_eq!(known.len(), 1_400);
    assert!(
        known.iter().any(|(_, k)| *k == Known::Unsure),
        "no cancel was dropped"
    );
    let q = queue.clone();
    let checked = within(Duration::from_secs(60), move || {
        runtime.block_on(async move {
            for (id, state) in &known {
                let c = q.cancel(id).await.unwrap();
                let won = Cancelled::Cancelled(id.clone().into_bytes());
                match state {
                    Known::Waiting => assert_eq!(c, won, "{id}"),
                    Known::Cancelled => assert_eq!(c, Cancelled::Ended, "{id}"),
                    Known::Unsure => assert!(c == won || c == Cancelled::Ended, "{id}: {c:?}"),
                }
            }
            q.len().await.unwrap()
        })
    });
    assert_eq!(checked, (0, 0));
}
