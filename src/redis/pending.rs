//! A call's answer on its way back from the I/O thread: a future any
//! executor can poll, or a blocking wait that never panics.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::future::Future;
use core::panic::AssertUnwindSafe;
use core::pin::{pin, Pin};
use core::task::{Context, Poll, Waker};
use std::panic::{catch_unwind, resume_unwind};

use tokio::sync::{oneshot, watch};

use super::QueueError;

/// Where a call's answer goes.
pub(super) type Reply<A> = oneshot::Sender<Result<A, QueueError>>;

/// What to do with an answer that came but was never read (its future
/// dropped after the I/O thread sent it).
type Unread<A> = Box<dyn FnOnce(A) + Send>;

/// Ends when the consumer a fetch waits on is closed.
type Closing = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A call's answer, still to come: a future for async callers, or
/// [`wait`](Self::wait) for blocking ones.
pub(super) struct Pending<A> {
    rx: oneshot::Receiver<Result<A, QueueError>>,
    unread: Option<Unread<A>>,
    /// The runtime the answering I/O runs on (`QueueBuilder::runtime`), if
    /// any; otherwise it has a thread of its own.
    io_runtime: Option<tokio::runtime::Id>,
    /// A fetch's: answers `Closed` once it ends (see `until_closed`).
    closing: Option<Closing>,
}

impl<A> Pending<A> {
    pub(super) fn new(rx: oneshot::Receiver<Result<A, QueueError>>) -> Pending<A> {
        Pending {
            rx,
            unread: None,
            io_runtime: None,
            closing: None,
        }
    }

    /// Answers `Closed` once `closed` turns `true`, if no answer came
    /// first: a close reaches a fetch whose loop is busy in a round (one
    /// that retries against a stalled server, say). An answer sent after
    /// that is refused to its sender, or handed to `on_unread`.
    pub(super) fn until_closed(mut self, mut closed: watch::Receiver<bool>) -> Pending<A> {
        self.closing = Some(Box::pin(async move {
            // An error: the sender went with its consumer, which closes it.
            let _ = closed.wait_for(|closed| *closed).await;
        }));
        self
    }

    /// Says which runtime the answering I/O runs on.
    pub(super) fn io_on(mut self, runtime: Option<tokio::runtime::Id>) -> Pending<A> {
        self.io_runtime = runtime;
        self
    }

    /// Gives an answer that arrives but is dropped unread to `unread`
    /// (jobs a fetch leased go back, rather than wait out their lease).
    pub(super) fn on_unread(mut self, unread: impl FnOnce(A) + Send + 'static) -> Pending<A> {
        self.unread = Some(Box::new(unread));
        self
    }

    /// Blocks this thread until the answer comes. Inside the runtime the
    /// queue's I/O runs on, the worker's other tasks move to another thread
    /// meanwhile (`block_in_place`), since the answer comes from one of
    /// them. Anywhere else (an I/O thread of its own answers) it just
    /// blocks: `block_in_place` would panic inside a `LocalSet`.
    pub(super) fn wait(self) -> Result<A, QueueError> {
        let here = tokio::runtime::Handle::try_current()
            .ok()
            .filter(|here| Some(here.id()) == self.io_runtime);
        // A task's drop while that runtime shuts down (its tasks dropped
        // one by one on this thread): the I/O task will not run again,
        // and may be dropped only after this wait, so it would never end.
        if here.as_ref().is_some_and(shutting_down) {
            return Err(QueueError::io_stopped());
        }
        // Outside a task (a runtime's `block_on`, a `LocalSet`'s
        // `run_until`) this is no worker: blocking keeps the I/O free.
        let on_io_runtime = here.is_some() && tokio::task::try_id().is_some();
        if !on_io_runtime {
            return block_on(self);
        }
        // A task of a `LocalSet` on that runtime is refused
        // `block_in_place` (tokio panics before running anything): a
        // `LocalSet` never runs on a worker, so blocking there keeps the
        // I/O free. (Under `panic = "abort"` that refusal aborts: use the
        // async calls in a `LocalSet`'s tasks.)
        let mut me = Some(self);
        match catch_unwind(AssertUnwindSafe(|| {
            tokio::task::block_in_place(|| me.take().map(block_on))
        })) {
            Ok(Some(answer)) => answer,
            Ok(None) => unreachable!("the wait ran without its answer"),
            Err(panic) => match me.take() {
                Some(me) => block_on(me),
                None => resume_unwind(panic),
            },
        }
    }
}

impl<A> Future for Pending<A> {
    type Output = Result<A, QueueError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(answer) = Pin::new(&mut self.rx).poll(cx) {
            return Poll::Ready(answer.unwrap_or_else(|_| Err(QueueError::io_stopped())));
        }
        match self
            .closing
            .as_mut()
            .map(|closing| closing.as_mut().poll(cx))
        {
            Some(Poll::Ready(())) => {
                self.closing = None;
                Poll::Ready(Err(QueueError::Closed))
            }
            _ => Poll::Pending,
        }
    }
}

impl<A> Drop for Pending<A> {
    fn drop(&mut self) {
        // Closed first, so that an answer is either here now or refused
        // to its sender (which then keeps it): none lands unseen. Read
        // already (or never sent), `try_recv` finds nothing.
        if let Some(unread) = self.unread.take() {
            self.rx.close();
            if let Ok(Ok(answer)) = self.rx.try_recv() {
                unread(answer);
            }
        }
    }
}

/// Whether `runtime` is shutting down. Its first step closes the runtime's
/// task list, after which a task spawned on it is cancelled at once; a
/// task that never finishes by itself is finished only then.
fn shutting_down(runtime: &tokio::runtime::Handle) -> bool {
    let probe = runtime.spawn(core::future::pending::<()>());
    let closed = probe.is_finished();
    probe.abort();
    closed
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
