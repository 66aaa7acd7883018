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
//! Calls of the three busy kinds (schedule, cancel, ack) queue in a lane
//! per kind. A lane sends at most [`IN_FLIGHT`] script calls at a time,
//! each carrying every call that waited (up to [`MAX_CALLS`] calls or
//! [`MAX_BYTES`] of payload): alone, a call goes out at once; under load,
//! calls that arrive while the lane is busy share the next script call, so
//! Redis runs one script and a handful of commands for many jobs. Other
//! calls run as tasks of their own.
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
use alloc::collections::VecDeque;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::future::Future;
use core::pin::{pin, Pin};
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::thread::JoinHandle;
use std::time::Instant;

use redis::{Cmd, ErrorKind, RedisError, RedisResult, RetryMethod, ServerErrorKind, Value};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinSet;

use super::counters::{bump, Counters};
use super::keys::Keys;
use super::options::Options;
use super::server::{self, Conn, Reach};
use super::QueueError;

/// Script calls a lane keeps in flight at once.
pub(super) const IN_FLIGHT: usize = 2;
/// The most calls one script call carries.
pub(super) const MAX_CALLS: usize = 500;
/// The most payload bytes one script call carries (a larger single job
/// goes alone).
pub(super) const MAX_BYTES: usize = 1 << 20;

/// Where a call's answer goes.
pub(super) type Reply<A> = oneshot::Sender<Result<A, QueueError>>;

/// Work for the I/O thread that is not batched: it answers its own reply.
pub(super) type Task = Box<dyn FnOnce(Io) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// A call of a batched kind, waiting in its lane.
pub(super) struct Call<J: Batched> {
    pub(super) job: J,
    pub(super) reply: Reply<J::Answer>,
}

/// What the handles send to the I/O thread.
pub(super) enum Request {
    /// Calls that arrive together stay together in their lane.
    Schedule(Vec<Call<super::ops::ScheduleJob>>),
    Cancel(Call<super::ops::CancelJob>),
    Ack(Vec<Call<super::ops::AckJob>>),
    /// Runs as a task of its own; awaited at shutdown.
    Task(Task),
    /// Runs until the queue's last handle goes (hints, trimming).
    Daemon(Task),
}

/// A kind of call that many callers can share one script call for.
pub(super) trait Batched: Sized + Send + 'static {
    type Answer: Send + 'static;
    /// The script.
    fn lua() -> &'static Lua;
    /// Payload bytes this call adds to a script call.
    fn bytes(&self) -> usize;
    /// The script call for these jobs, in order.
    fn command(jobs: &[Self], ctx: &Ctx) -> Cmd;
    /// One answer per job, in order, from the script's reply; counts them.
    fn answers(reply: Value, jobs: &[Self], ctx: &Ctx) -> Result<Vec<Self::Answer>, QueueError>;
}

/// A wake-up hint for sleeping consumers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hint {
    /// A job is due at this time (server microseconds).
    At(i64),
    /// Hints may have been missed (the subscription was lost and is back).
    Resync,
}

/// What the I/O thread and every handle share. It holds no way to reach
/// the thread, so the thread never keeps itself alive.
pub(super) struct Ctx {
    pub(super) keys: Keys,
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
    /// Wakes the retention trimmer when this process ends a job.
    pub(super) trim_wake: tokio::sync::Notify,
}

/// The I/O thread's view: the connection and the shared context.
#[derive(Clone)]
pub(super) struct Io {
    pub(super) conn: Conn,
    pub(super) ctx: Arc<Ctx>,
}

/// A script, prepended with `common.lua`.
pub(super) struct Lua(redis::Script);

impl Lua {
    pub(super) fn new(body: &str) -> Lua {
        let mut source = String::from(include_str!("scripts/common.lua"));
        source.push_str(body);
        Lua(redis::Script::new(&source))
    }

    /// `EVALSHA` of this script with `keys`; the caller adds the arguments.
    pub(super) fn command<K: AsRef<str>>(&self, keys: &[K]) -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.0.get_hash()).arg(keys.len());
        for key in keys {
            cmd.arg(key.as_ref());
        }
        cmd
    }

    /// Runs `cmd`; loads the script first if the server lost it.
    pub(super) async fn run(&self, mut conn: Conn, cmd: &Cmd) -> RedisResult<Value> {
        match cmd.query_async::<Value>(&mut conn).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                self.0.load_async(&mut conn).await?;
                cmd.query_async(&mut conn).await
            }
            other => other,
        }
    }
}

/// Declares a script read from `scripts/`.
macro_rules! lua {
    ($name:ident, $file:literal) => {
        pub(super) static $name: std::sync::LazyLock<$crate::redis::link::Lua> =
            std::sync::LazyLock::new(|| {
                $crate::redis::link::Lua::new(include_str!(concat!("scripts/", $file)))
            });
    };
}
pub(super) use lua;

impl Io {
    /// Runs `attempt` until it succeeds, fails for good, or the retry
    /// window closes. `attempt` learns whether it is a retry.
    pub(super) async fn retry<T, F, Fut>(&self, mut attempt: F) -> Result<T, QueueError>
    where
        F: FnMut(Conn, bool) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let options = &self.ctx.options;
        let started = Instant::now();
        let mut backoff = Duration::from_millis(2);
        let mut again = false;
        loop {
            bump(&self.ctx.counters.round_trips, 1);
            let err = match attempt(self.conn.clone(), again).await {
                Ok(value) => return Ok(value),
                Err(err) => err,
            };
            if !worth_retrying(&err) {
                return Err(QueueError::Server(err.to_string()));
            }
            bump(&self.ctx.counters.failures, 1);
            if started.elapsed() >= options.retry_for {
                return Err(QueueError::Unavailable(err.to_string()));
            }
            tokio::time::sleep(jitter(backoff)).await;
            backoff = (backoff * 2).min(Duration::from_millis(500));
            again = true;
        }
    }

    /// Runs one script call with retries.
    pub(super) async fn script(&self, lua: &'static Lua, cmd: &Cmd) -> Result<Value, QueueError> {
        self.retry(|conn, _| lua.run(conn, cmd)).await
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
fn worth_retrying(err: &RedisError) -> bool {
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

/// Whether an error says the credentials are wrong or missing: a refused
/// password or user, or a TLS handshake that failed on a certificate
/// (rustls says so in its message; redis-rs keeps the error as I/O).
fn refused(err: &RedisError) -> bool {
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

/// The handles' side: the context, the way to the thread, and the thread.
pub(super) struct Shared {
    pub(super) ctx: Arc<Ctx>,
    tx: Option<mpsc::UnboundedSender<Request>>,
    thread: Option<JoinHandle<()>>,
}

impl Shared {
    /// Starts the I/O thread; the answer says whether it connected.
    pub(super) fn start(ctx: Ctx) -> Result<(Arc<Shared>, Pending<()>), QueueError> {
        let ctx = Arc::new(ctx);
        let (tx, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = oneshot::channel();
        let thread_ctx = Arc::clone(&ctx);
        let thread = std::thread::Builder::new()
            .name(String::from("tickwheel-redis-io"))
            .spawn(move || io_thread(thread_ctx, rx, ready_tx))
            .map_err(|e| QueueError::Connect(alloc::format!("cannot start the I/O thread: {e}")))?;
        let shared = Shared {
            ctx,
            tx: Some(tx),
            thread: Some(thread),
        };
        Ok((Arc::new(shared), Pending::new(ready_rx)))
    }

    /// Hands `request` to the I/O thread.
    pub(super) fn send(&self, request: Request) {
        // The thread outlives every handle; if it died, the dropped reply
        // tells the caller.
        if let Some(tx) = &self.tx {
            let _ = tx.send(request);
        }
    }

    /// A call whose answer comes back on a fresh channel.
    pub(super) fn call<A>(&self, request: impl FnOnce(Reply<A>) -> Request) -> Pending<A> {
        let (tx, rx) = oneshot::channel();
        self.send(request(tx));
        Pending::new(rx)
    }

    /// Runs `task` on the I/O thread; it answers on the reply.
    pub(super) fn task<A, F, Fut>(&self, task: F) -> Pending<A>
    where
        A: Send + 'static,
        F: FnOnce(Io, Reply<A>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.call(|reply| Request::Task(Box::new(move |io| Box::pin(task(io, reply)))))
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Closing the channel ends the serve loop; it finishes what is in
        // flight (bounded by the I/O timeout) and the thread exits.
        drop(self.tx.take());
        if let Some(thread) = self.thread.take() {
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

fn io_thread(ctx: Arc<Ctx>, rx: mpsc::UnboundedReceiver<Request>, ready: Reply<()>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(Err(QueueError::Connect(alloc::format!(
                "cannot start a runtime: {e}"
            ))));
            return;
        }
    };
    runtime.block_on(async move {
        let conn = match connect(&ctx).await {
            Ok(conn) => conn,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        if ready.send(Ok(())).is_err() {
            return;
        }
        serve(Io { conn, ctx }, rx).await;
    });
}

/// Dials the server within the retry window, and checks its eviction
/// policy.
async fn connect(ctx: &Ctx) -> Result<Conn, QueueError> {
    let started = Instant::now();
    let mut backoff = Duration::from_millis(10);
    let mut conn = loop {
        bump(&ctx.counters.dials, 1);
        // A PING proves the credentials: without them the connection
        // opens, and only the first command is refused.
        let attempt = match ctx.reach.connect().await {
            Ok(mut conn) => redis::cmd("PING")
                .query_async::<()>(&mut conn)
                .await
                .map(|()| conn),
            Err(e) => Err(e),
        };
        match attempt {
            Ok(conn) => break conn,
            Err(e) if refused(&e) || !worth_retrying(&e) => {
                return Err(QueueError::Connect(e.to_string()));
            }
            Err(e) => {
                bump(&ctx.counters.failures, 1);
                if started.elapsed() >= ctx.options.retry_for {
                    return Err(QueueError::Unavailable(e.to_string()));
                }
            }
        }
        tokio::time::sleep(jitter(backoff)).await;
        backoff = (backoff * 2).min(Duration::from_millis(500));
    };
    let policy = server::eviction_policy(&mut conn).await;
    if let Some(policy) = &policy {
        if server::evicts_queue_keys(policy) && !ctx.options.allow_eviction {
            return Err(QueueError::EvictingServer(policy.clone()));
        }
    }
    let _ = ctx.policy.set(policy);
    Ok(conn)
}

/// The serve loop: lanes for the batched kinds, tasks for the rest.
async fn serve(io: Io, mut rx: mpsc::UnboundedReceiver<Request>) {
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<LaneId>();
    let mut lanes = Lanes::default();
    let mut tasks = JoinSet::new();
    let mut daemons = JoinSet::new();
    loop {
        let request = tokio::select! {
            biased;
            Some(lane) = done_rx.recv() => {
                lanes.done(lane);
                None
            }
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
                Request::Schedule(calls) => lanes.schedule.waiting.extend(calls),
                Request::Cancel(call) => lanes.cancel.waiting.push_back(call),
                Request::Ack(calls) => lanes.ack.waiting.extend(calls),
                Request::Task(task) => {
                    tasks.spawn(task(io.clone()));
                }
                Request::Daemon(task) => {
                    daemons.spawn(task(io.clone()));
                }
            }
        }
        lanes.launch(&io, &done_tx, &mut tasks);
        while tasks.try_join_next().is_some() {}
    }
    // Every handle is gone: let what is in flight finish, briefly.
    let grace = io.ctx.options.io_timeout;
    let _ = tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    daemons.shutdown().await;
    tasks.shutdown().await;
}

#[derive(Clone, Copy, Debug)]
pub(super) enum LaneId {
    Schedule,
    Cancel,
    Ack,
}

#[derive(Default)]
struct Lanes {
    schedule: Lane<super::ops::ScheduleJob>,
    cancel: Lane<super::ops::CancelJob>,
    ack: Lane<super::ops::AckJob>,
}

impl Lanes {
    fn done(&mut self, lane: LaneId) {
        let in_flight = match lane {
            LaneId::Schedule => &mut self.schedule.in_flight,
            LaneId::Cancel => &mut self.cancel.in_flight,
            LaneId::Ack => &mut self.ack.in_flight,
        };
        *in_flight = in_flight.saturating_sub(1);
    }

    fn launch(&mut self, io: &Io, done: &mpsc::UnboundedSender<LaneId>, tasks: &mut JoinSet<()>) {
        self.schedule.launch(LaneId::Schedule, io, done, tasks);
        self.cancel.launch(LaneId::Cancel, io, done, tasks);
        self.ack.launch(LaneId::Ack, io, done, tasks);
    }
}

struct Lane<J: Batched> {
    waiting: VecDeque<Call<J>>,
    in_flight: usize,
}

impl<J: Batched> Default for Lane<J> {
    fn default() -> Self {
        Lane {
            waiting: VecDeque::new(),
            in_flight: 0,
        }
    }
}

impl<J: Batched> Lane<J> {
    fn launch(
        &mut self,
        id: LaneId,
        io: &Io,
        done: &mpsc::UnboundedSender<LaneId>,
        tasks: &mut JoinSet<()>,
    ) {
        while self.in_flight < IN_FLIGHT {
            let mut calls = Vec::new();
            let mut bytes = 0;
            while let Some(call) = self.waiting.pop_front() {
                // A call whose caller has gone was never sent: skip it.
                if call.reply.is_closed() {
                    continue;
                }
                let size = call.job.bytes();
                if !calls.is_empty() && (calls.len() >= MAX_CALLS || bytes + size > MAX_BYTES) {
                    self.waiting.push_front(call);
                    break;
                }
                bytes += size;
                calls.push(call);
            }
            if calls.is_empty() {
                return;
            }
            self.in_flight += 1;
            let (io, done) = (io.clone(), done.clone());
            tasks.spawn(async move {
                run_batch(&io, calls).await;
                let _ = done.send(id);
            });
        }
    }
}

async fn run_batch<J: Batched>(io: &Io, calls: Vec<Call<J>>) {
    let (jobs, replies): (Vec<J>, Vec<Reply<J::Answer>>) =
        calls.into_iter().map(|c| (c.job, c.reply)).unzip();
    let cmd = J::command(&jobs, &io.ctx);
    let answers = io
        .script(J::lua(), &cmd)
        .await
        .and_then(|reply| J::answers(reply, &jobs, &io.ctx));
    match answers {
        Ok(answers) => {
            for (reply, answer) in replies.into_iter().zip(answers) {
                let _ = reply.send(Ok(answer));
            }
        }
        Err(err) => {
            for reply in replies {
                let _ = reply.send(Err(err.clone()));
            }
        }
    }
}

/// A call's answer, still to come: a future for async callers, or
/// [`wait`](Self::wait) for blocking ones.
pub(super) struct Pending<A>(oneshot::Receiver<Result<A, QueueError>>);

impl<A> Pending<A> {
    pub(super) fn new(rx: oneshot::Receiver<Result<A, QueueError>>) -> Pending<A> {
        Pending(rx)
    }

    /// Blocks this thread until the answer comes.
    pub(super) fn wait(self) -> Result<A, QueueError> {
        block_on(self)
    }
}

impl<A> Future for Pending<A> {
    type Output = Result<A, QueueError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|answer| {
            answer.unwrap_or_else(|_| {
                Err(QueueError::Unavailable(
                    "the queue's I/O thread stopped".to_string(),
                ))
            })
        })
    }
}

/// Runs `future` on this thread, parking it between polls. Unlike a
/// runtime's `block_on`, it works (blocking the caller) even inside a
/// runtime's worker, so a blocking call never panics.
pub(super) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl alloc::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}
