//! [`Shared`]: what every handle of a queue holds, and the start of its
//! I/O (a thread of its own, or a task on the caller's runtime; see
//! `link.rs`): dialling the server, checking it, then serving.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::Instant;

use tokio::sync::{mpsc, oneshot};

use super::counters::bump;
use super::lanes::{run_batch, Batched, Call, LaneSet};
use super::link::{jitter, refused, serve, worth_retrying, Ctx, Io, Request};
use super::pending::{Pending, Reply};
use super::server::{self, Conn};
use super::QueueError;
use crate::event::event;

/// The handles' side: the context, the way to the I/O, and its thread
/// (none when the I/O is a task on the caller's runtime).
pub(super) struct Shared {
    pub(super) ctx: Arc<Ctx>,
    tx: Option<mpsc::UnboundedSender<Request>>,
    thread: Option<JoinHandle<()>>,
    /// With the I/O on the caller's runtime: that runtime, and, once
    /// connected, what its tasks need to send their own calls.
    on_runtime: Option<(tokio::runtime::Id, Arc<OnceLock<InPlace>>)>,
}

/// What a call made from a task of the queue's runtime needs to send its
/// own script call: the I/O's connection and the lanes.
struct InPlace {
    io: Io,
    lanes: Arc<LaneSet>,
}

impl Shared {
    /// Starts the I/O, on a thread of its own or as a task on `runtime`;
    /// the answer says whether it connected.
    pub(super) fn start(
        ctx: Ctx,
        runtime: Option<tokio::runtime::Handle>,
    ) -> Result<(Arc<Shared>, Pending<()>), QueueError> {
        let ctx = Arc::new(ctx);
        let (tx, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = oneshot::channel();
        let io_ctx = Arc::clone(&ctx);
        let (thread, on_runtime) = match runtime {
            Some(runtime) => {
                let in_place = Arc::new(OnceLock::new());
                // The task ends when every handle is gone, or with the
                // runtime; nothing waits for it.
                let io = run_io(io_ctx, rx, ready_tx, Some(Arc::clone(&in_place)));
                drop(runtime.spawn(io));
                (None, Some((runtime.id(), in_place)))
            }
            None => {
                let thread = std::thread::Builder::new()
                    .name(String::from("tickwheel-redis-io"))
                    .spawn(move || io_thread(io_ctx, rx, ready_tx))
                    .map_err(|e| {
                        QueueError::Connect(alloc::format!("cannot start the I/O thread: {e}"))
                    })?;
                (Some(thread), None)
            }
        };
        let shared = Shared {
            ctx,
            tx: Some(tx),
            thread,
            on_runtime,
        };
        let ready = shared.pending(ready_rx);
        Ok((Arc::new(shared), ready))
    }

    /// Hands `request` to the I/O; `false` if the I/O has stopped.
    pub(super) fn send(&self, request: Request) -> bool {
        // The I/O outlives every handle, unless its runtime shut down or it
        // panicked; then the dropped reply tells the caller.
        self.tx.as_ref().is_some_and(|tx| tx.send(request).is_ok())
    }

    /// A call whose answer comes back on a fresh channel.
    pub(super) fn call<A>(&self, request: impl FnOnce(Reply<A>) -> Request) -> Pending<A> {
        let (tx, rx) = oneshot::channel();
        self.send(request(tx));
        self.pending(rx)
    }

    /// The answer to come on `rx`, knowing where the I/O that sends it
    /// runs (a blocking wait on that runtime's worker must hand the
    /// worker's tasks on).
    pub(super) fn pending<A>(&self, rx: oneshot::Receiver<Result<A, QueueError>>) -> Pending<A> {
        Pending::new(rx).io_on(self.on_runtime.as_ref().map(|(id, _)| *id))
    }

    /// Runs one call of a lane's kind and answers it. From a task of the
    /// queue's runtime, when the call's lane has a free slot and no call
    /// waits in it, this task sends the script call itself; otherwise the
    /// call waits in its lane (`lanes.rs`).
    pub(super) async fn lane_call<J: Batched>(&self, job: J) -> Result<J::Answer, QueueError> {
        let (reply, rx) = oneshot::channel();
        let call = Call { job, reply };
        match self.in_place() {
            Some(here) => {
                let part = self.ctx.parts().of(call.job.id());
                match here.lanes.claim::<J>(part) {
                    Some(slot) => {
                        let io = here.io.clone();
                        Finish::new(async move {
                            run_batch(&io, part, alloc::vec![call]).await;
                            drop(slot);
                        })
                        .await;
                    }
                    None => _ = self.send(J::request(call)),
                }
            }
            // If the I/O has stopped, the dropped reply says so.
            None => _ = self.send(J::request(call)),
        }
        Pending::new(rx).await
    }

    /// What a call needs to send itself, if it is made from a task of the
    /// runtime the queue's I/O runs on (only there do the connection and
    /// its timers work for it).
    fn in_place(&self) -> Option<&InPlace> {
        let (runtime, in_place) = self.on_runtime.as_ref()?;
        let here = tokio::runtime::Handle::try_current().ok()?;
        if here.id() != *runtime {
            return None;
        }
        in_place.get()
    }

    /// Runs `task` on the I/O; it answers on the reply.
    pub(super) fn task<A, F, Fut>(&self, task: F) -> Pending<A>
    where
        A: Send + 'static,
        F: FnOnce(Io, Reply<A>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.call(|reply| Request::Task(Box::new(move |io| Box::pin(task(io, reply)))))
    }
}

/// A call a caller's task sends itself (on the queue's runtime): if the
/// caller's future is dropped before the call is done, the rest of it is
/// spawned on that runtime, so a call once sent finishes (and is counted)
/// whatever becomes of its caller, as on the I/O's own tasks.
struct Finish {
    call: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// The queue's runtime, where this is made (`in_place`).
    runtime: Option<tokio::runtime::Handle>,
}

impl Finish {
    fn new(call: impl Future<Output = ()> + Send + 'static) -> Finish {
        Finish {
            call: Some(Box::pin(call)),
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }
}

impl Future for Finish {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(call) = self.call.as_mut() else {
            return Poll::Ready(());
        };
        let done = call.as_mut().poll(cx);
        if done.is_ready() {
            self.call = None;
        }
        done
    }
}

impl Drop for Finish {
    fn drop(&mut self) {
        if let (Some(call), Some(runtime)) = (self.call.take(), self.runtime.take()) {
            runtime.spawn(call);
        }
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
    runtime.block_on(run_io(ctx, rx, ready, None));
}

/// Connects, answers `ready`, and serves until every handle is gone.
/// `in_place` learns the connection and the lanes before `ready`. A
/// caller that stops waiting for `ready` (a dropped `connect_async`) ends
/// the dialling at once: nothing would use the queue, and the drop of its
/// handle would otherwise wait for the rest of the retry window.
async fn run_io(
    ctx: Arc<Ctx>,
    rx: mpsc::UnboundedReceiver<Request>,
    mut ready: Reply<()>,
    in_place: Option<Arc<OnceLock<InPlace>>>,
) {
    let io = tokio::select! {
        io = set_up(ctx) => io,
        () = ready.closed() => return,
    };
    let io = match io {
        Ok(io) => io,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let lanes = LaneSet::new(io.ctx.parts().len());
    if let Some(in_place) = in_place {
        let _ = in_place.set(InPlace {
            io: io.clone(),
            lanes: Arc::clone(&lanes),
        });
    }
    if ready.send(Ok(())).is_err() {
        return;
    }
    serve(io, lanes, rx).await;
}

/// The connections and the partitions a queue's I/O starts with.
async fn set_up(ctx: Arc<Ctx>) -> Result<Io, QueueError> {
    let conn = connect(&ctx).await?;
    super::partitions::set_partitions(&ctx, &conn).await?;
    // Schedules that wait for replicas wait on a connection of their own.
    let replicated = if ctx.options.replicas > 0 {
        Some(connect(&ctx).await?)
    } else {
        None
    };
    Ok(Io {
        conn,
        replicated,
        ctx,
    })
}

/// Dials the server within the retry window, and checks its eviction
/// policy.
async fn connect(ctx: &Arc<Ctx>) -> Result<Conn, QueueError> {
    let started = Instant::now();
    let mut backoff = Duration::from_millis(10);
    let mut conn = loop {
        bump(&ctx.counters.dials, 1);
        // A PING proves the credentials: without them the connection
        // opens, and only the first command is refused.
        let attempt = match ctx.reach.connect(ctx).await {
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
                    event!(
                        error,
                        "redis unreachable for the retry window",
                        queue = ctx.identity,
                        error = e
                    );
                    return Err(QueueError::Unavailable(e.to_string()));
                }
                event!(
                    warn,
                    "cannot reach redis; dialling again",
                    queue = ctx.identity,
                    error = e
                );
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
