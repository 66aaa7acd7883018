//! The seeds' ZSET + 100 ms poller (`benches/peers/zset_poller.rs`) on
//! redis-rs: one multiplexed connection shared by the producers, the
//! cancels, the mover and the acks; one connection more per consumer, for
//! its `BRPOP`.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::time::{Instant, SystemTime};

use redis::aio::MultiplexedConnection;
use tokio::task::JoinSet;

use crate::common::{
    blocking, in_task, lanes, micros, until_delivered, victims, Plan, Run, Tally, CONSUMERS,
    IN_FLIGHT, PAYLOAD,
};
use crate::redis_server::RedisServer;
use crate::stats::{command_counts, reset_counts, Snapshot, Usage};
use crate::zset_poller;

/// As `tickwheel::schedule_and_cancel`: schedules `n` jobs due in 1 h,
/// `IN_FLIGHT` pipelined HSET + ZADD calls at a time on the one
/// connection; cancels `cancels` one at a time, then `cancels` others
/// with `IN_FLIGHT` in flight.
pub(crate) async fn schedule_and_cancel(
    server: &RedisServer,
    n: usize,
    cancels: usize,
) -> (Usage, f64, f64, Usage, Usage) {
    let conn = zset_poller::connect(&server.url()).await;
    let due = micros(SystemTime::now() + Duration::from_secs(3600));
    let before = blocking(|| Snapshot::take(server));
    let c = conn.clone();
    lanes(n, IN_FLIGHT, move |i| {
        let mut c = c.clone();
        async move { zset_poller::schedule(&mut c, &format!("j{i}"), due, PAYLOAD).await }
    })
    .await;
    let usage = blocking(|| before.usage(server));

    let before_one = blocking(|| Snapshot::take(server));
    let ids = victims(n, cancels, 0);
    let mut c = conn.clone();
    let one = in_task(async move {
        let started = Instant::now();
        for i in ids {
            assert!(zset_poller::cancel(&mut c, &format!("j{i}")).await);
        }
        started.elapsed().as_secs_f64() * 1e6 / cancels as f64
    })
    .await;
    let one_usage = blocking(|| before_one.usage(server));
    let others = Arc::new(victims(n, cancels, (n / cancels / 2).max(1)));
    let before = blocking(|| Snapshot::take(server));
    let started = Instant::now();
    let c = conn.clone();
    lanes(cancels, IN_FLIGHT, move |k| {
        let (mut c, id) = (c.clone(), format!("j{}", others[k]));
        async move { assert!(zset_poller::cancel(&mut c, &id).await) }
    })
    .await;
    let parallel = cancels as f64 / started.elapsed().as_secs_f64();
    (
        usage,
        one,
        parallel,
        blocking(|| before.usage(server)),
        one_usage,
    )
}

/// One call at a time on the poller's multiplexed connection, `n` times
/// each, in µs per call: `PING`, a pipeline of two `ZCARD`s (what
/// tickwheel's `len()` sends), and a cancel of an id never scheduled.
pub(crate) async fn round_trips(server: &RedisServer, n: usize) -> (f64, f64, f64) {
    let mut conn = zset_poller::connect(&server.url()).await;
    in_task(async move {
        let started = Instant::now();
        for _ in 0..n {
            let _: String = redis::cmd("PING")
                .query_async(&mut conn)
                .await
                .expect("ping");
        }
        let ping = started.elapsed().as_secs_f64() * 1e6 / n as f64;
        let started = Instant::now();
        for _ in 0..n {
            let _: (u64, u64) = redis::pipe()
                .zcard("a")
                .zcard("b")
                .query_async(&mut conn)
                .await
                .expect("zcard");
        }
        let zcards = started.elapsed().as_secs_f64() * 1e6 / n as f64;
        let started = Instant::now();
        for i in 0..n {
            assert!(!zset_poller::cancel(&mut conn, &format!("none{i}")).await);
        }
        (
            ping,
            zcards,
            started.elapsed().as_secs_f64() * 1e6 / n as f64,
        )
    })
    .await
}

/// The mover and `CONSUMERS` consumer tasks, each on its own `BRPOP`
/// connection, until `stop`; a consumer records each job it takes.
async fn consume(
    server: &RedisServer,
    conn: &MultiplexedConnection,
    tally: Option<Arc<Tally>>,
    stop: &Arc<AtomicBool>,
) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let mover = zset_poller::spawn_mover(conn.clone(), Arc::clone(stop));
    tasks.spawn(async move { mover.await.expect("the mover panicked") });
    for _ in 0..CONSUMERS {
        let mut blocking = zset_poller::connect_blocking(&server.url()).await;
        let (mut conn, tally, stop) = (conn.clone(), tally.clone(), Arc::clone(stop));
        tasks.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Some((id, _)) = zset_poller::take(&mut blocking, &mut conn).await {
                    let at = micros(SystemTime::now());
                    tally
                        .as_ref()
                        .expect("a job in the idle run")
                        .record(&id, at);
                }
            }
        });
    }
    tasks
}

/// As `tickwheel::deliveries`.
pub(crate) async fn deliveries(
    server: &RedisServer,
    n: usize,
    window: Duration,
    lead: Duration,
) -> Run {
    let before = blocking(|| {
        let before = Snapshot::take(server);
        reset_counts(server);
        before
    });
    let conn = zset_poller::connect(&server.url()).await;
    let tally = Arc::new(Tally::new(n));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = consume(server, &conn, Some(Arc::clone(&tally)), &stop).await;

    let plan = Arc::new(Plan::new(n, window, lead));
    let started = Instant::now();
    let (c, p) = (conn.clone(), Arc::clone(&plan));
    lanes(n, IN_FLIGHT, move |i| {
        let (mut c, due) = (c.clone(), micros(p.due[i]));
        async move { zset_poller::schedule(&mut c, &format!("j{i}"), due, PAYLOAD).await }
    })
    .await;
    let scheduled_in = started.elapsed().as_secs_f64();
    until_delivered(&tally, &plan).await;
    stop.store(true, Ordering::Relaxed);
    while let Some(done) = tasks.join_next().await {
        done.expect("a consumer task panicked");
    }
    let calls = blocking(|| command_counts(server));
    let usage = blocking(|| before.usage(server));
    let summary = tally.summary(&plan);
    Run {
        burst: summary.burst(&plan),
        summary,
        usage,
        calls,
        scheduled_in,
        lead: lead.as_secs_f64(),
        note: None,
    }
}

/// As `tickwheel::idle`: the mover and `CONSUMERS` consumers, nothing
/// pending.
pub(crate) async fn idle(server: &RedisServer, span: Duration) -> BTreeMap<String, u64> {
    let conn = zset_poller::connect(&server.url()).await;
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = consume(server, &conn, None, &stop).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    blocking(|| reset_counts(server));
    tokio::time::sleep(span).await;
    let calls = blocking(|| command_counts(server));
    stop.store(true, Ordering::Relaxed);
    while let Some(done) = tasks.join_next().await {
        done.expect("an idle task panicked");
    }
    calls
}
