//! The async API under two runtimes, on a real `redis-server`: a thousand
//! calls in flight from one thread share one connection and a few script
//! calls, under tokio and under smol; and a blocking call made inside a
//! runtime blocks, never panics. (The queue's I/O on the caller's runtime:
//! `async_runtime.rs`.)

use core::time::Duration;

use tickwheel::redis::{Acked, AsyncQueue, Cancelled, Queue, Scheduled};

use crate::async_runtime::multi_thread;
use crate::redis_server;
use redis_server::RedisServer;

/// Client connections the server has, this test's own raw one included.
pub(crate) fn clients(server: &RedisServer) -> usize {
    server.command(&["CLIENT", "LIST"]).matches("id=").count()
}

/// Runs `body` with the queue "orders" on `server`, under a current-thread
/// tokio runtime.
fn on_tokio<F, Fut>(server: &RedisServer, body: F)
where
    F: FnOnce(AsyncQueue) -> Fut,
    Fut: core::future::Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let queue = Queue::builder(&server.url(), "orders")
            .connect_async()
            .await
            .unwrap();
        body(queue).await;
    });
}

#[test]
fn a_thousand_schedules_in_flight_under_tokio_share_one_connection() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let server = &server;
    on_tokio(server, |queue| async move {
        let tasks: Vec<_> = (0..1000)
            .map(|i| {
                let queue = queue.clone();
                tokio::spawn(async move {
                    queue
                        .schedule_in(&format!("t{i}"), Duration::from_millis(50), b"x")
                        .await
                })
            })
            .collect();
        for task in tasks {
            assert!(matches!(
                task.await.unwrap().unwrap(),
                Scheduled::Created { .. }
            ));
        }
        // One connection (and this test's), and far fewer script calls
        // than schedules: calls in flight together share them.
        assert_eq!(clients(server), 2);
        let m = queue.metrics();
        assert_eq!(m.scheduled, 1000);
        assert!(
            m.round_trips <= 100,
            "{} round trips for 1000 schedules",
            m.round_trips
        );
        let consumer = queue.consumer().unwrap();
        let mut got = 0;
        while got < 1000 {
            let jobs = consumer.fetch(100, Duration::from_secs(5)).await.unwrap();
            assert!(!jobs.is_empty(), "stalled at {got}");
            assert!(consumer
                .ack_all(&jobs)
                .await
                .unwrap()
                .iter()
                .all(|a| *a == Acked::Acked));
            got += jobs.len();
        }
        assert_eq!(queue.len().await.unwrap(), (0, 0));
        // The consumer added its hint subscription, nothing more.
        assert_eq!(clients(server), 3);
    });
}

/// Cancels of one id in flight together (sharing script calls): exactly
/// one wins and gets the payload, every other says the job ended.
#[test]
fn concurrent_cancels_of_one_id_have_one_winner() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    on_tokio(&server, |queue| async move {
        for round in 0..20 {
            let id = format!("o{round}");
            queue
                .schedule_in(&id, Duration::from_secs(60), id.as_bytes())
                .await
                .unwrap();
            let tasks: Vec<_> = (0..50)
                .map(|_| {
                    let (queue, id) = (queue.clone(), id.clone());
                    tokio::spawn(async move { queue.cancel(&id).await.unwrap() })
                })
                .collect();
            let mut won = Vec::new();
            for task in tasks {
                match task.await.unwrap() {
                    Cancelled::Cancelled(payload) => won.push(payload),
                    Cancelled::Ended => {}
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(won, [id.into_bytes()]);
        }
        assert_eq!(queue.len().await.unwrap(), (0, 0));
        assert_eq!(queue.metrics().cancelled, 20);
    });
}

#[test]
fn the_same_calls_under_smol() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    smol::block_on(async {
        let queue = Queue::builder(&server.url(), "orders")
            .connect_async()
            .await
            .unwrap();
        let tasks: Vec<_> = (0..200)
            .map(|i| {
                let queue = queue.clone();
                smol::spawn(async move {
                    queue
                        .schedule_in(&format!("s{i}"), Duration::from_secs(60), b"p")
                        .await
                        .unwrap();
                    queue.cancel(&format!("s{i}")).await.unwrap()
                })
            })
            .collect();
        for task in tasks {
            assert_eq!(task.await, Cancelled::Cancelled(b"p".to_vec()));
        }
        assert_eq!(queue.metrics().cancelled, 200);
        assert_eq!(queue.len().await.unwrap(), (0, 0));
        let consumer = queue.consumer().unwrap();
        queue
            .schedule_in("due", Duration::from_millis(20), b"")
            .await
            .unwrap();
        let jobs = consumer.fetch(1, Duration::from_secs(5)).await.unwrap();
        assert_eq!(consumer.ack(&jobs[0]).await.unwrap(), Acked::Acked);
    });
}

#[test]
fn a_blocking_call_inside_a_runtime_blocks_and_does_not_panic() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = Queue::connect(&server.url(), "orders").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answer =
        runtime.block_on(async { queue.schedule_in("inside", Duration::from_secs(60), b"") });
    assert!(matches!(answer.unwrap(), Scheduled::Created { .. }));
    let blocking = queue.to_async().to_blocking();
    assert_eq!(blocking.len().unwrap(), (1, 0));
}

#[test]
fn reschedule_to_a_wall_clock_time_moves_a_waiting_job_only() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    on_tokio(&server, |queue| async move {
        let hour = Duration::from_secs(3600);
        queue.schedule_in("later", hour, b"x").await.unwrap();
        // Whole microseconds, as the queue keeps due times.
        let micros = std::time::UNIX_EPOCH.elapsed().unwrap().as_micros() as u64 + 200_000;
        let soon = std::time::UNIX_EPOCH + Duration::from_micros(micros);
        assert!(queue.reschedule("later", soon).await.unwrap());
        assert!(!queue.reschedule("nobody", soon).await.unwrap());
        let consumer = queue.consumer().unwrap();
        let jobs = consumer.fetch(10, Duration::from_secs(5)).await.unwrap();
        assert_eq!(jobs.len(), 1, "the job was not moved from an hour away");
        assert_eq!(jobs[0].due, soon);
        // In flight now: no longer waiting, so it does not move.
        assert!(!queue.reschedule("later", soon + hour).await.unwrap());
        assert_eq!(consumer.ack(&jobs[0]).await.unwrap(), Acked::Acked);
    });
}

/// Today's bug: a blocking call inside a tokio `LocalSet` on a
/// multi-thread runtime panicked ("can call blocking only when running on
/// the multi-threaded runtime"), whether the queue's I/O ran on a thread
/// of its own or on that runtime.
#[test]
fn a_blocking_call_inside_a_local_set_answers() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let runtime = multi_thread(2);
    let own_thread = Queue::connect(&server.url(), "orders").unwrap();
    let on_runtime = runtime
        .block_on(
            Queue::builder(&server.url(), "orders")
                .runtime(runtime.handle().clone())
                .connect_async(),
        )
        .unwrap()
        .to_blocking();
    for (name, queue) in [("own thread", own_thread), ("runtime", on_runtime)] {
        let local = tokio::task::LocalSet::new();
        let id = format!("local {name}");
        let answer = runtime.block_on(
            local.run_until(async { queue.schedule_in(&id, Duration::from_secs(60), b"") }),
        );
        assert!(
            matches!(answer, Ok(Scheduled::Created { .. })),
            "{name}: {answer:?}"
        );
        let spawned = runtime.block_on(local.run_until(async {
            let queue = queue.clone();
            tokio::task::spawn_local(async move { queue.cancel(&format!("local {name}")) })
                .await
                .unwrap()
        }));
        assert_eq!(spawned.unwrap(), Cancelled::Cancelled(Vec::new()), "{name}");
    }
}
