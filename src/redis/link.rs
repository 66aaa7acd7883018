//! The queue's I/O thread, and how calls reach it.
//!
//! # One thread, one connection, many calls in flight
//!
//! Each [`Queue::connect`](super::Queue::connect) starts one thread that
//! runs a current-thread tokio runtime and owns redis-rs's multiplexed
//! connection (or its cluster connection). Every handle of the queue
//! (clones, consumers, blocking or async) hands its calls to that thread
//! over a channel and waits on a one-shot answer: a blocking call parks
//! its thread, an async call is a future that any executor can poll (the
//! answer's channel is runtime-agnostic), and no user code ever runs on
//! the I/O thread.
//!
//! With [`QueueBuilder::runtime`](super::QueueBuilder::runtime) the same
//! I/O is a task on the caller's runtime instead (the trade and the rules
//! that keep it from hanging are in that method's docs; `shared.rs` starts
//! either), and a call from one of that runtime's tasks may send its own
//! script call (`lanes.rs`).
//!
//! Calls of the three busy kinds (schedule, cancel, ack) share script calls
//! in lanes (`lanes.rs`); other calls run as tasks of their own.
//!
//! # Retries that answer the same
//!
//! A call that fails on the way (a dropped connection, a timeout, a server
//! that is loading or failing over) is sent again, with jittered backoff,
//! until the queue's retry window closes. Every attempt of a call carries
//! the same request token, and every script recognises its own earlier
//! effect by it, so a retry after a lost reply answers what the first
//! attempt did (see `scripts/common.lua`).

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::future::Future;
use core::pin::Pin;
use core::time::Duration;
use std::time::Instant;

use redis::{Cmd, ErrorKind, RedisError, RedisResult, RetryMethod, Value};
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinSet;

use super::batched::{AckJob, CancelJob, ScheduleJob};
use super::counters::{bump, Counters};
use super::keys::Keys;
use super::lanes::{Call, LaneSet};
use super::lua::Lua;
use super::options::Options;
use super::partitions::Partitions;
use super::server::{Conn, Reach};
use super::QueueError;
use crate::event::event;

/// Work for the I/O thread that is not batched: it answers its own reply.
pub(super) type Task = Box<dyn FnOnce(Io) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// What the handles send to the I/O thread.
pub(super) enum Request {
    /// Calls that arrive together stay together in their lane.
    Schedule(Vec<Call<ScheduleJob>>),
    Cancel(Call<CancelJob>),
    Ack(Vec<Call<AckJob>>),
    /// Runs as a task of its own; awaited at shutdown.
    Task(Task),
    /// Runs until the queue's last handle goes (hints, trimming).
    Daemon(Task),
}

/// A wake-up hint for sleeping consumers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hint {
    /// A job of partition `part` is due at `at` (server microseconds).
    At { part: usize, at: i64 },
    /// The same, from a call of this process (a schedule, reschedule,
    /// requeue or nack), sent before the call answers, with when the job
    /// was known to be due by this process's clock if it was due then: a
    /// fetch that does not wait, made after that answer, claims it, where
    /// the server's hint, over the pub/sub connection, may still be on its
    /// way. Not counted as a hint received.
    Local {
        part: usize,
        at: i64,
        due_by: Option<std::time::Instant>,
    },
    /// Hints may have been missed (the subscription was lost and is back).
    Resync,
}

/// This process's wall clock in microseconds: for a local hint, which a
/// skewed clock makes cost at most one claim that finds nothing.
pub(super) fn wall_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// What the I/O thread and every handle share. It holds no way to reach
/// the thread, so the thread never keeps itself alive.
pub(super) struct Ctx {
    /// The queue's name.
    pub(super) name: String,
    /// Its partitions, known once connected (the count is the queue's).
    pub(super) parts: std::sync::OnceLock<Partitions>,
    pub(super) options: Options,
    pub(super) counters: Counters,
    pub(super) reach: Reach,
    /// The queue's name and server, as a delivery remembers them.
    pub(super) identity: Arc<str>,
    pub(super) hints: broadcast::Sender<Hint>,
    /// Whether the hint subscription runs (the first consumer starts it).
    pub(super) hints_started: core::sync::atomic::AtomicBool,
    /// The server's `maxmemory-policy`, read at connect.
    pub(super) policy: std::sync::OnceLock<Option<String>>,
    /// Wakes the retention trimmers (one a partition) when this process
    /// ends a job; made with the partitions.
    pub(super) trim_wake: std::sync::OnceLock<Vec<tokio::sync::Notify>>,
    /// Whether the job schedulers' task runs (the first consumer starts
    /// it, `scheduler.rs`), and what wakes it early.
    pub(super) schedules_started: core::sync::atomic::AtomicBool,
    pub(super) schedules_wake: tokio::sync::Notify,
}

impl Ctx {
    /// The queue's partitions. Set before `connect` answers, so before
    /// any call is made.
    pub(super) fn parts(&self) -> &Partitions {
        self.parts
            .get()
            .expect("a queue's partitions are known once it is connected")
    }

    /// This process ended a job: every partition's trimmer learns that
    /// an id is due to go a retention later (a trim of a partition with
    /// nothing to trim costs two commands).
    pub(super) fn job_ended(&self) {
        for wake in self.trim_wake.get().into_iter().flatten() {
            wake.notify_one();
        }
    }

    /// Tells this process's claim loops, before a call answers, that job
    /// `id` is due at `at` (server microseconds), if it is due already
    /// (`due`; [`Hint::Local`]). A job due later is told by the server's
    /// hint, long before it is due, so a schedule-heavy process does not
    /// wake its claim loops on every call. Costs nothing without a consumer.
    pub(super) fn local_hint(&self, id: &str, at: i64, due: bool) {
        if due && self.hints.receiver_count() > 0 {
            let part = self.parts().of(id);
            let due_by = due.then(std::time::Instant::now);
            let _ = self.hints.send(Hint::Local { part, at, due_by });
        }
    }
}

/// The I/O thread's view: the connection and the shared context.
#[derive(Clone)]
pub(super) struct Io {
    pub(super) conn: Conn,
    /// The connection schedules wait for replicas on
    /// ([`QueueBuilder::replicas`](super::QueueBuilder::replicas)), if any:
    /// a `WAIT` holds its connection, and only schedules should wait.
    pub(super) replicated: Option<Conn>,
    pub(super) ctx: Arc<Ctx>,
}

impl Io {
    /// Runs `attempt` until it succeeds, fails for good, or the retry
    /// window closes. `attempt` learns whether it is a retry.
    pub(super) async fn retry<T, F, Fut>(&self, attempt: F) -> Result<T, QueueError>
    where
        F: FnMut(Conn, bool) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        self.retry_on(&self.conn, attempt).await
    }

    /// [`retry`](Self::retry) on a given connection.
    async fn retry_on<T, F, Fut>(&self, conn: &Conn, mut attempt: F) -> Result<T, QueueError>
    where
        F: FnMut(Conn, bool) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let options = &self.ctx.options;
        let started = Instant::now();
        // An attempt is a request or two (a pipeline, a NOSCRIPT reload):
        // a few I/O timeouts at most.
        let attempt_bound = options.io_timeout.saturating_mul(3);
        let mut backoff = Duration::from_millis(2);
        let mut again = false;
        loop {
            bump(&self.ctx.counters.round_trips, 1);
            // The client's own timeouts bound each request, but a call that
            // waits on a cluster's topology can outlive them: this bound
            // holds whatever the client does.
            let err = match tokio::time::timeout(attempt_bound, attempt(conn.clone(), again)).await
            {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(err)) => err,
                Err(_) => RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut)),
            };
            if !worth_retrying(&err) {
                return Err(QueueError::Server(err.to_string()));
            }
            if let Conn::Sentinel(sentinel) = conn {
                if let Some(policy) = sentinel.refused() {
                    return Err(QueueError::EvictingServer(policy));
                }
            }
            if redirected(conn, &err) {
                return Err(QueueError::Connect(alloc::format!(
                    "{err}: the server is a Redis Cluster node that does not serve \
                     this queue's keys; reach a cluster with Queue::cluster_builder"
                )));
            }
            bump(&self.ctx.counters.failures, 1);
            if started.elapsed() >= options.retry_for {
                event!(
                    error,
                    "redis unreachable for the retry window",
                    queue = self.ctx.identity,
                    error = err
                );
                return Err(QueueError::Unavailable(err.to_string()));
            }
            event!(
                warn,
                "a redis call failed; retrying",
                queue = self.ctx.identity,
                error = err
            );
            tokio::time::sleep(jitter(backoff)).await;
            backoff = (backoff * 2).min(Duration::from_millis(500));
            again = true;
        }
    }

    /// Runs one script call with retries.
    pub(super) async fn script(&self, lua: &'static Lua, cmd: &Cmd) -> Result<Value, QueueError> {
        self.retry(|conn, _| lua.run(conn, cmd)).await
    }

    /// Runs one script call with retries, then waits until the replicas
    /// asked for have its writes: [`QueueError::NotReplicated`] if fewer
    /// confirm in time. Without replicas asked for, as [`script`](Self::script).
    pub(super) async fn script_replicated(
        &self,
        lua: &'static Lua,
        cmd: &Cmd,
        keys: &Keys,
    ) -> Result<Value, QueueError> {
        let o = &self.ctx.options;
        let Some(conn) = self.replicated.as_ref().filter(|_| o.replicas > 0) else {
            return self.script(lua, cmd).await;
        };
        let wanted = o.replicas;
        let timeout_ms = u64::try_from(o.replica_timeout.as_millis()).unwrap_or(u64::MAX);
        // A retry may find the first attempt's job and write nothing, on a
        // connection that wrote nothing either (the first one dropped): a
        // write of its own first puts its offset past the job's.
        let mut touch = redis::cmd("INCRBY");
        touch.arg(&keys.fixed[4]).arg(0);
        let touch = &touch;
        let (reply, confirmed) = self
            .retry_on(conn, |conn, again| {
                lua.run_and_wait(conn, cmd, again.then_some(touch), wanted, timeout_ms)
            })
            .await?;
        if confirmed < wanted {
            bump(&self.ctx.counters.failures, 1);
            return Err(QueueError::NotReplicated { confirmed, wanted });
        }
        Ok(reply)
    }

    /// Runs one read-only command or pipeline with retries.
    pub(super) async fn query(&self, cmd: &Cmd) -> Result<Value, QueueError> {
        self.retry(|mut conn, _| async move { cmd.query_async::<Value>(&mut conn).await })
            .await
    }
}

/// Whether an error may go away by itself: a lost or slow connection, a
/// server loading or failing over, a cluster moving slots. A script error,
/// a refused command or a missing permission is final.
pub(super) fn worth_retrying(err: &RedisError) -> bool {
    if err.is_timeout()
        || err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
    {
        return true;
    }
    // A script over `busy-reply-threshold` elsewhere: it ends, or is killed.
    if err.code() == Some("BUSY") {
        return true;
    }
    !matches!(err.retry_method(), RetryMethod::NoRetry)
}

/// Whether `err` redirects a call on a connection that cannot follow it: a
/// cluster node's `MOVED` or `ASK` to a client built for one server (it
/// was retried as if the server were down, for the whole retry window).
fn redirected(conn: &Conn, err: &RedisError) -> bool {
    use redis::ServerErrorKind::{Ask, Moved};
    !matches!(conn, Conn::Cluster(_)) && matches!(err.kind(), ErrorKind::Server(Moved | Ask))
}

/// Whether an error says the credentials are wrong or missing: a refused
/// password or user, or a TLS handshake that failed on a certificate
/// (rustls says so in its message; redis-rs keeps the error as I/O).
pub(super) fn refused(err: &RedisError) -> bool {
    const TLS: [&str; 4] = [
        "invalid peer certificate",
        "received fatal alert",
        "peer is incompatible",
        "peer misbehaved",
    ];
    err.kind() == ErrorKind::AuthenticationFailed
        || matches!(err.code(), Some("NOAUTH" | "WRONGPASS" | "NOPERM"))
        || (err.is_io_error() && TLS.iter().any(|m| err.to_string().contains(m)))
}

/// `base` scaled by a random factor in [0.5, 1.5).
pub(super) fn jitter(base: Duration) -> Duration {
    use core::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let factor = 0.5 + (random >> 11) as f64 / (1u64 << 53) as f64;
    base.mul_f64(factor)
}

/// The serve loop: lanes for the batched kinds, tasks for the rest.
pub(super) async fn serve(io: Io, lanes: Arc<LaneSet>, mut rx: mpsc::UnboundedReceiver<Request>) {
    let mut tasks = JoinSet::new();
    let mut daemons = JoinSet::new();
    // A retention trimmer for each partition; none on a handle that only
    // looks into an existing queue, whose retention (the default, say) may
    // be shorter than its processes' own.
    for part in (0..io.ctx.parts().len()).filter(|_| !io.ctx.options.existing) {
        daemons.spawn(super::retention::trimmer(io.clone(), part));
    }
    loop {
        let request = tokio::select! {
            biased;
            () = lanes.freed() => None,
            request = rx.recv() => match request {
                Some(request) => Some(request),
                None => break,
            },
        };
        // Take every call already waiting, so that calls made together
        // share script calls.
        let mut next = request;
        while let Some(request) = next.take().or_else(|| rx.try_recv().ok()) {
            match request {
                Request::Schedule(calls) => lanes.lock().add(&io.ctx, calls),
                Request::Cancel(call) => lanes.lock().add(&io.ctx, [call]),
                Request::Ack(calls) => lanes.lock().add(&io.ctx, calls),
                Request::Task(task) => {
                    tasks.spawn(task(io.clone()));
                }
                Request::Daemon(task) => {
                    daemons.spawn(task(io.clone()));
                }
            }
        }
        lanes.launch(&io, &mut tasks);
        while tasks.try_join_next().is_some() {}
    }
    // Every handle is gone: let what is in flight finish, briefly.
    let grace = io.ctx.options.io_timeout;
    let _ = tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    daemons.shutdown().await;
    tasks.shutdown().await;
}
