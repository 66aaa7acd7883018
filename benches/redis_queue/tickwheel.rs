//! tickwheel's side: `redis::AsyncQueue` and `AsyncConsumer`, with the
//! queue's default options, driven from the bench's tokio runtime, the
//! queue's I/O a task on that runtime (or, with `--io-thread`, a thread of
//! its own).

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::time::{Instant, SystemTime};

use tickwheel::redis::{
    AsyncConsumer, AsyncQueue, Cancelled, NewJob, Queue, QueueError, Scheduled,
};
use tokio::task::JoinSet;

use crate::common::{
    blocking, in_task, lanes, micros, until_delivered, victims, Plan, Run, Tally, CONSUMERS,
    IN_FLIGHT, PAYLOAD,
};
use crate::redis_server::RedisServer;
use crate::stats::{command_counts, reset_counts, Snapshot, Usage};

const NAME: &str = "bench";
/// A consumer task's `fetch`: at most this many jobs (the default batch).
const FETCH: usize = 100;

/// Where the queue's I/O runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Io {
    /// A task on the bench's runtime (`QueueBuilder::runtime`), as a tokio
    /// service would run it: the default.
    Runtime,
    /// A thread of the queue's own (`--io-thread` makes it the default).
    Thread,
}

impl Io {
    /// The mode the sections use: `--io-thread` on the command line, or
    /// the runtime's.
    pub(crate) fn chosen() -> Io {
        if std::env::args().any(|a| a == "--io-thread") {
            Io::Thread
        } else {
            Io::Runtime
        }
    }
}

/// Default options, the I/O as `Io::chosen`.
async fn connect(server: &RedisServer) -> AsyncQueue {
    connect_with(server, Io::chosen()).await
}

/// Default options, the I/O as `io`; `--wake-slack-ms N` on the command
/// line sets the consumers' wake-up slack, to measure its trade (claims per
/// job against lateness).
async fn connect_with(server: &RedisServer, io: Io) -> AsyncQueue {
    let mut builder = Queue::builder(&server.url(), NAME);
    if io == Io::Runtime {
        builder = builder.runtime(tokio::runtime::Handle::current());
    }
    let args: Vec<String> = std::env::args().collect();
    if let Some(ms) = args
        .iter()
        .position(|a| a == "--wake-slack-ms")
        .and_then(|at| args.get(at + 1)?.parse::<u64>().ok())
    {
        builder = builder.wake_slack(Duration::from_millis(ms));
    }
    builder.connect_async().await.expect("connect")
}

/// Schedules `n` jobs due in 1 h, `IN_FLIGHT` calls at a time; then
/// cancels `cancels` of them one at a time (µs per cancel) and `cancels`
/// others with `IN_FLIGHT` in flight (cancels a second). Answers the
/// schedules' usage, µs per cancel one at a time, cancels a second in
/// flight, their usage, and the usage of the cancels one at a time.
pub(crate) async fn schedule_and_cancel(
    server: &RedisServer,
    n: usize,
    cancels: usize,
    io: Io,
) -> (Usage, f64, f64, Usage, Usage) {
    let queue = connect_with(server, io).await;
    let before = blocking(|| Snapshot::take(server));
    let q = queue.clone();
    lanes(n, IN_FLIGHT, move |i| {
        let q = q.clone();
        async move {
            let id = format!("j{i}");
            let s = q.schedule_in(&id, Duration::from_secs(3600), PAYLOAD).await;
            assert!(matches!(s.expect("schedule"), Scheduled::Created { .. }));
        }
    })
    .await;
    let usage = blocking(|| before.usage(server));

    let before_one = blocking(|| Snapshot::take(server));
    let ids = victims(n, cancels, 0);
    let q = queue.clone();
    let one = in_task(async move {
        let started = Instant::now();
        for i in ids {
            let c = q.cancel(&format!("j{i}")).await.expect("cancel");
            assert!(matches!(c, Cancelled::Cancelled(_)));
        }
        started.elapsed().as_secs_f64() * 1e6 / cancels as f64
    })
    .await;
    let one_usage = blocking(|| before_one.usage(server));
    let others = Arc::new(victims(n, cancels, (n / cancels / 2).max(1)));
    let before = blocking(|| Snapshot::take(server));
    let started = Instant::now();
    let q = queue.clone();
    lanes(cancels, IN_FLIGHT, move |k| {
        let (q, id) = (q.clone(), format!("j{}", others[k]));
        async move {
            let c = q.cancel(&id).await.expect("cancel");
            assert!(matches!(c, Cancelled::Cancelled(_)));
        }
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

/// One call at a time, `n` times each, in µs per call: `len()` (a
/// pipeline of two `ZCARD`s, no script: the client's path alone), and a
/// cancel of an id that was never scheduled (the cancel script with
/// nothing to change).
pub(crate) async fn round_trips(server: &RedisServer, n: usize, io: Io) -> (f64, f64) {
    let queue = connect_with(server, io).await;
    in_task(async move {
        let started = Instant::now();
        for _ in 0..n {
            queue.len().await.expect("len");
        }
        let len = started.elapsed().as_secs_f64() * 1e6 / n as f64;
        let started = Instant::now();
        for i in 0..n {
            let c = queue.cancel(&format!("none{i}")).await.expect("cancel");
            assert_eq!(c, Cancelled::Unknown);
        }
        (len, started.elapsed().as_secs_f64() * 1e6 / n as f64)
    })
    .await
}

/// Schedules `n` jobs all due at one instant an hour ahead, `IN_FLIGHT`
/// calls at a time, each with a priority (0 to 9) or none: what a
/// priority costs a schedule.
pub(crate) async fn schedule_ranked(server: &RedisServer, n: usize, ranked: bool) -> Usage {
    let queue = connect(server).await;
    let due = SystemTime::now() + Duration::from_secs(3600);
    let before = blocking(|| Snapshot::take(server));
    let q = queue.clone();
    lanes(n, IN_FLIGHT, move |i| {
        let q = q.clone();
        async move {
            let id = format!("j{i}");
            let job = NewJob::at(&id, due, PAYLOAD);
            let job = if ranked {
                job.priority((i % 10) as u8)
            } else {
                job
            };
            let s = q.schedule_job(job).await;
            assert!(matches!(s.expect("schedule"), Scheduled::Created { .. }));
        }
    })
    .await;
    blocking(|| before.usage(server))
}

/// `CONSUMERS` tasks sharing one consumer, each fetching up to `FETCH`
/// jobs, recording them, and acking them with its next fetch
/// (`ack_and_fetch`: the acks ride in the next claim's script call, as a
/// BullMQ worker completes a job and takes the next in one call), until
/// `stop`; the last batch is acked alone.
pub(crate) fn consume(
    consumer: &Arc<AsyncConsumer>,
    tally: &Arc<Tally>,
    stop: &Arc<AtomicBool>,
) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    for _ in 0..CONSUMERS {
        let (consumer, tally, stop) = (Arc::clone(consumer), Arc::clone(tally), Arc::clone(stop));
        tasks.spawn(async move {
            let mut done = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let (_, jobs) = consumer
                    .ack_and_fetch(&done, FETCH, Duration::from_millis(200))
                    .await
                    .expect("fetch");
                let at = micros(SystemTime::now());
                for job in &jobs {
                    tally.record(&job.id, at);
                }
                done = jobs;
            }
            consumer.ack_all(&done).await.expect("ack");
        });
    }
    tasks
}

/// A lateness (or burst) run: `n` jobs due uniformly over `window`, the
/// first `lead` after scheduling starts; the consumers run from before the
/// first schedule. Redis's counters are reset before the queue connects.
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
    let queue = connect(server).await;
    let consumer = Arc::new(queue.consumer().expect("consumer"));
    let tally = Arc::new(Tally::new(n));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = consume(&consumer, &tally, &stop);

    let plan = Arc::new(Plan::new(n, window, lead));
    let started = Instant::now();
    schedule_plan(&queue, &plan).await;
    let scheduled_in = started.elapsed().as_secs_f64();
    until_delivered(&tally, &plan).await;
    stop.store(true, Ordering::Relaxed);
    while let Some(done) = tasks.join_next().await {
        done.expect("a consumer task panicked");
    }
    let calls = blocking(|| command_counts(server));
    let usage = blocking(|| before.usage(server));
    let m = queue.metrics();
    let note = format!(
        "`Queue::metrics`: {} round trips ({:.2} a job), {} claims, {} polls, {} hints, \
         {} delivered, {} redelivered, {} acked",
        m.round_trips,
        m.round_trips as f64 / n as f64,
        m.claims,
        m.polls,
        m.hints,
        m.delivered,
        m.redelivered,
        m.acked
    );
    let summary = tally.summary(&plan);
    Run {
        burst: summary.burst(&plan),
        summary,
        usage,
        calls,
        scheduled_in,
        lead: lead.as_secs_f64(),
        note: Some(note),
    }
}

/// Schedules every job of `plan` (`j<i>` at its due time), `IN_FLIGHT`
/// calls at a time.
pub(crate) async fn schedule_plan(queue: &AsyncQueue, plan: &Arc<Plan>) {
    let (q, p) = (queue.clone(), Arc::clone(plan));
    lanes(plan.jobs(), IN_FLIGHT, move |i| {
        let (q, due) = (q.clone(), p.due[i]);
        async move {
            let s = q.schedule(&format!("j{i}"), due, PAYLOAD).await;
            assert!(matches!(s.expect("schedule"), Scheduled::Created { .. }));
        }
    })
    .await;
}

/// Redis commands by name over `span`, with nothing pending and one
/// consumer whose `CONSUMERS` tasks each wait in `fetch` (5 s timeout).
pub(crate) async fn idle(server: &RedisServer, span: Duration) -> BTreeMap<String, u64> {
    let queue = connect(server).await;
    let consumer = Arc::new(queue.consumer().expect("consumer"));
    let mut tasks = JoinSet::new();
    for _ in 0..CONSUMERS {
        let consumer = Arc::clone(&consumer);
        tasks.spawn(async move {
            loop {
                match consumer.fetch(FETCH, Duration::from_secs(5)).await {
                    Ok(jobs) => assert!(jobs.is_empty(), "a job in the idle run"),
                    Err(QueueError::Closed) => break,
                    Err(e) => panic!("fetch: {e}"),
                }
            }
        });
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    blocking(|| reset_counts(server));
    tokio::time::sleep(span).await;
    let calls = blocking(|| command_counts(server));
    consumer.close();
    while let Some(done) = tasks.join_next().await {
        done.expect("an idle consumer task panicked");
    }
    calls
}
