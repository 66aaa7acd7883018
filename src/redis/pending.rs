//! A call's answer on its way back from the I/O thread: a future any
//! executor can poll, or a blocking wait that never panics.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::future::Future;
use core::pin::{pin, Pin};
use core::task::{Context, Poll, Waker};

use tokio::sync::oneshot;

use super::QueueError;

/// Where a call's answer goes.
pub(super) type Reply<A> = oneshot::Sender<Result<A, QueueError>>;

/// What to do with an answer that came but was never read (its future
/// dropped after the I/O thread sent it).
type Unread<A> = Box<dyn FnOnce(A) + Send>;

/// A call's answer, still to come: a future for async callers, or
/// [`wait`](Self::wait) for blocking ones.
pub(super) struct Pending<A> {
    rx: oneshot::Receiver<Result<A, QueueError>>,
    unread: Option<Unread<A>>,
}

impl<A> Pending<A> {
    pub(super) fn new(rx: oneshot::Receiver<Result<A, QueueError>>) -> Pending<A> {
        Pending { rx, unread: None }
    }

    /// Gives an answer that arrives but is dropped unread to `unread`
    /// (jobs a fetch leased go back, rather than wait out their lease).
    pub(super) fn on_unread(mut self, unread: impl FnOnce(A) + Send + 'static) -> Pending<A> {
        self.unread = Some(Box::new(unread));
        self
    }

    /// Blocks this thread until the answer comes. On a worker of a
    /// multi-thread tokio runtime the worker's other tasks move to another
    /// thread meanwhile, since the answer may come from one of them (the
    /// queue's I/O on that runtime).
    pub(super) fn wait(self) -> Result<A, QueueError> {
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if multi_thread {
            tokio::task::block_in_place(|| block_on(self))
        } else {
            block_on(self)
        }
    }
}

impl<A> Future for Pending<A> {
    type Output = Result<A, QueueError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|answer| answer.unwrap_or_else(|_| Err(QueueError::io_stopped())))
    }
}

impl<A> Drop for Pending<A> {
    fn drop(&mut self) {
        // Read already (or never sent), `try_recv` finds nothing.
        if let Some(unread) = self.unread.take() {
            if let Ok(Ok(answer)) = self.rx.try_recv() {
                unread(answer);
            }
        }
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
