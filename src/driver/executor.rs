//! Where fired timers go: the [`Executor`] plug point and the executors
//! that come with the crate.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::panic::AssertUnwindSafe;
use core::sync::atomic::{AtomicU64, Ordering};
use std::io;
use std::panic::catch_unwind;
use std::thread::{self, JoinHandle, ThreadId};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::{Condvar, Mutex};

use super::Expired;

/// The default timer's value: a boxed closure, run once.
///
/// ```
/// use tickwheel::driver::Task;
///
/// let task: Task = Box::new(|| println!("close order 1017"));
/// task();
/// ```
pub type Task = Box<dyn FnOnce() + Send + 'static>;

/// Receives every fired timer, in expiry order.
///
/// # Contract
///
/// - **Which thread.** [`execute`](Executor::execute) is called only by the
///   timer's driver thread, one fired timer at a time, in non-decreasing
///   deadline order, and never while the timer holds an internal lock. It
///   may call back into the timer (schedule, cancel, reset, even shut down).
/// - **Blocking.** Every moment `execute` spends delays every other timer.
///   It should hand the work off and return; run work inline only when it is
///   short (see [`Inline`]).
/// - **Panics.** A panic in `execute` is caught by the driver, counted in
///   [`Stats::panicked`](super::Stats::panicked), and the driver carries on;
///   the value is dropped during the unwind.
/// - **Rejection.** Returning `Err` hands the fired timer back, for example
///   because a queue is full or its consumer is gone. The driver counts it
///   in [`Stats::rejected`](super::Stats::rejected) and passes it to the
///   timer's `on_undelivered` hook (or drops it if there is none). It is
///   never retried.
///
/// Implemented for [`Inline`], [`ThreadPool`], `crossbeam_channel::Sender`
/// and any `Fn(Expired<T>) + Send + Sync + 'static`.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use tickwheel::driver::{Executor, Expired, Rejected};
///
/// /// Counts what fires and runs nothing.
/// struct Counter(Arc<AtomicUsize>);
///
/// impl<T: Send + 'static> Executor<T> for Counter {
///     fn execute(&self, _fired: Expired<T>) -> Result<(), Rejected<T>> {
///         self.0.fetch_add(1, Ordering::Relaxed);
///         Ok(())
///     }
/// }
/// # let _ = Counter(Arc::default());
/// ```
pub trait Executor<T>: Send + Sync + 'static {
    /// Takes one fired timer. See the trait docs for the contract.
    ///
    /// # Errors
    ///
    /// [`Rejected`] with the fired timer if it cannot be taken.
    fn execute(&self, fired: Expired<T>) -> Result<(), Rejected<T>>;

    /// Called once when the timer is built, before any `execute`: a chance
    /// to start threads. The default does nothing.
    ///
    /// # Errors
    ///
    /// Whatever stops the executor from starting; the timer build fails
    /// with it.
    fn start(&self) -> io::Result<()> {
        Ok(())
    }

    /// Blocks until every fired timer handed over so far has been dealt
    /// with. Used by [`Timer::shutdown_graceful`](super::Timer::shutdown_graceful).
    /// The default returns at once (for executors that finish within
    /// `execute`).
    fn flush(&self) {}

    /// Panics the executor caught itself (in worker threads), for
    /// [`Stats::panicked`](super::Stats::panicked). The default is 0.
    fn panics(&self) -> u64 {
        0
    }
}

/// A fired timer an [`Executor`] refused, handed back to the timer, which
/// counts it and passes it to its `on_undelivered` hook.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::driver::{Undelivered, Why};
/// use tickwheel::Timer;
///
/// let (queue, consumer) = crossbeam_channel::unbounded::<&str>();
/// drop(consumer); // nobody will ever receive: every hand-off is rejected
/// let (lost, lost_rx) = std::sync::mpsc::channel();
/// let lost = std::sync::Mutex::new(lost);
/// let timer = Timer::builder()
///     .executor(queue)
///     .on_undelivered(move |u: Undelivered<&str>| lost.lock().unwrap().send((u.why, u.fired.value)).unwrap())
///     .build()?;
/// timer.schedule(Duration::from_millis(1), "refund #9")?;
/// assert_eq!(lost_rx.recv_timeout(Duration::from_secs(5))?, (Why::Rejected, "refund #9"));
/// assert_eq!(timer.stats().rejected, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Rejected<T>(pub Expired<T>);

impl<T> Rejected<T> {
    /// The fired timer that was refused.
    ///
    /// ```
    /// use tickwheel::driver::{Executor, Expired, Rejected};
    ///
    /// /// Refuses everything: the timer gets each value back.
    /// struct Closed;
    /// impl Executor<u32> for Closed {
    ///     fn execute(&self, fired: Expired<u32>) -> Result<(), Rejected<u32>> {
    ///         let fired = Rejected(fired).into_inner();
    ///         Err(Rejected(fired))
    ///     }
    /// }
    /// # let _ = Closed;
    /// ```
    pub fn into_inner(self) -> Expired<T> {
        self.0
    }
}

impl<T> fmt::Debug for Rejected<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("key", &self.0.key)
            .field("deadline", &self.0.deadline)
            .finish_non_exhaustive()
    }
}

/// Runs each fired task on the driver thread itself.
///
/// The cheapest executor, and the right one for work that takes
/// microseconds: setting a flag, sending on a channel. Anything slower
/// delays every other timer; use a [`ThreadPool`] then.
///
/// ```
/// use std::sync::mpsc;
/// use std::time::Duration;
/// use tickwheel::driver::{Inline, Task};
/// use tickwheel::Timer;
///
/// let timer = Timer::builder().executor(Inline).build()?;
/// let (tx, rx) = mpsc::channel();
/// timer.schedule(Duration::from_millis(1), Box::new(move || tx.send("done").unwrap()))?;
/// assert_eq!(rx.recv_timeout(Duration::from_secs(5))?, "done");
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Inline;

impl Executor<Task> for Inline {
    #[inline]
    fn execute(&self, fired: Expired<Task>) -> Result<(), Rejected<Task>> {
        (fired.value)();
        Ok(())
    }
}

/// The pull-style delay queue: each fired value is sent down the channel
/// and whoever holds the `Receiver` takes it with `recv()`, like the JDK's
/// `DelayQueue`. See [`Timer::with_channel`](super::Timer::with_channel).
///
/// Sending never blocks the driver: a full bounded channel, or one whose
/// receivers are all gone, rejects the value (see [`Executor`]).
impl<T: Send + 'static> Executor<T> for Sender<T> {
    fn execute(&self, fired: Expired<T>) -> Result<(), Rejected<T>> {
        let Expired {
            key,
            deadline,
            value,
        } = fired;
        self.try_send(value).map_err(|err| {
            let value = match err {
                TrySendError::Full(value) | TrySendError::Disconnected(value) => value,
            };
            Rejected(Expired {
                key,
                deadline,
                value,
            })
        })
    }
}

/// Any function of a fired timer is an executor (run on the driver thread,
/// as with [`Inline`]).
///
/// ```
/// use std::time::Duration;
/// use tickwheel::driver::Expired;
/// use tickwheel::Timer;
///
/// let (tx, rx) = std::sync::mpsc::channel();
/// let tx = std::sync::Mutex::new(tx);
/// let timer = Timer::builder()
///     .executor(move |fired: Expired<u32>| tx.lock().unwrap().send(fired.value).unwrap())
///     .build()?;
/// timer.schedule(Duration::from_millis(1), 42)?;
/// assert_eq!(rx.recv_timeout(Duration::from_secs(5))?, 42);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
impl<T, F> Executor<T> for F
where
    T: Send + 'static,
    F: Fn(Expired<T>) + Send + Sync + 'static,
{
    #[inline]
    fn execute(&self, fired: Expired<T>) -> Result<(), Rejected<T>> {
        self(fired);
        Ok(())
    }
}

/// A fixed pool of worker threads that run fired [`Task`]s, fed by a
/// crossbeam channel. A slow task occupies one worker; the driver and the
/// other workers carry on, so it never delays other timers' firing.
///
/// A task that panics is caught, counted, and the worker keeps going.
/// Dropping the pool (with the timer's last handle) lets the workers finish
/// what is queued, then joins them.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::driver::ThreadPool;
/// use tickwheel::Timer;
///
/// let timer = Timer::builder().executor(ThreadPool::new(4)).build()?;
/// let (tx, rx) = std::sync::mpsc::channel();
/// timer.schedule(Duration::from_millis(1), Box::new(move || tx.send(1).unwrap()))?;
/// assert_eq!(rx.recv_timeout(Duration::from_secs(5))?, 1);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub struct ThreadPool {
    threads: usize,
    name: String,
    sender: Mutex<Option<Sender<Task>>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    state: Arc<PoolState>,
}

#[derive(Default)]
struct PoolState {
    /// Tasks sent and not yet finished, for `flush`.
    outstanding: Mutex<usize>,
    idle: Condvar,
    panicked: AtomicU64,
    worker_ids: Mutex<Vec<ThreadId>>,
}

impl ThreadPool {
    /// A pool of `threads` workers (at least one), started when the timer is
    /// built.
    ///
    /// ```
    /// let pool = tickwheel::driver::ThreadPool::new(2);
    /// # drop(pool);
    /// ```
    pub fn new(threads: usize) -> Self {
        ThreadPool {
            threads: threads.max(1),
            name: String::from("tickwheel-worker"),
            sender: Mutex::new(None),
            workers: Mutex::new(Vec::new()),
            state: Arc::default(),
        }
    }

    /// Names the worker threads `{name}-{i}`.
    ///
    /// ```
    /// let pool = tickwheel::driver::ThreadPool::new(2).name("orders");
    /// # drop(pool);
    /// ```
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    fn spawn(&self, receiver: &Receiver<Task>) -> io::Result<Vec<JoinHandle<()>>> {
        (0..self.threads)
            .map(|i| {
                let receiver = receiver.clone();
                let state = Arc::clone(&self.state);
                thread::Builder::new()
                    .name(format!("{}-{i}", self.name))
                    .spawn(move || work(&receiver, &state))
            })
            .collect()
    }
}

fn work(receiver: &Receiver<Task>, state: &PoolState) {
    state.worker_ids.lock().push(thread::current().id());
    for task in receiver.iter() {
        if catch_unwind(AssertUnwindSafe(task)).is_err() {
            state.panicked.fetch_add(1, Ordering::Relaxed);
        }
        let mut outstanding = state.outstanding.lock();
        *outstanding -= 1;
        if *outstanding == 0 {
            state.idle.notify_all();
        }
    }
}

impl Default for ThreadPool {
    /// Two workers: enough that one slow task does not stall the rest.
    fn default() -> Self {
        ThreadPool::new(2)
    }
}

impl Executor<Task> for ThreadPool {
    fn start(&self) -> io::Result<()> {
        let mut sender = self.sender.lock();
        if sender.is_some() {
            return Ok(());
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        *self.workers.lock() = self.spawn(&rx)?;
        *sender = Some(tx);
        Ok(())
    }

    fn execute(&self, fired: Expired<Task>) -> Result<(), Rejected<Task>> {
        let sender = self.sender.lock();
        let Some(sender) = sender.as_ref() else {
            return Err(Rejected(fired));
        };
        *self.state.outstanding.lock() += 1;
        let Expired {
            key,
            deadline,
            value,
        } = fired;
        sender.send(value).map_err(|err| {
            *self.state.outstanding.lock() -= 1;
            Rejected(Expired {
                key,
                deadline,
                value: err.into_inner(),
            })
        })
    }

    fn flush(&self) {
        let mut outstanding = self.state.outstanding.lock();
        while *outstanding > 0 {
            self.state.idle.wait(&mut outstanding);
        }
    }

    fn panics(&self) -> u64 {
        self.state.panicked.load(Ordering::Relaxed)
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        // Closing the channel lets the workers drain it and exit.
        drop(self.sender.lock().take());
        let me = thread::current().id();
        let on_worker = self.state.worker_ids.lock().contains(&me);
        for worker in self.workers.lock().drain(..) {
            // A task that drops the last timer handle runs on a worker; that
            // worker cannot join itself and exits on its own.
            if on_worker && worker.thread().id() == me {
                continue;
            }
            let _ = worker.join();
        }
    }
}

impl fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPool")
            .field("threads", &self.threads)
            .field("name", &self.name)
            .field("outstanding", &*self.state.outstanding.lock())
            .finish()
    }
}
