//! Where fired timers go: the [`Executor`] plug point and the executors
//! that run on the driver thread (the thread pool is in `pool.rs`); and what
//! becomes of a value nobody takes ([`Undelivered`]).

use alloc::boxed::Box;
use core::fmt;
use std::io;

use crossbeam_channel::{Sender, TrySendError};

use super::Expired;

/// The default timer's value: a boxed closure, run once.
///
/// ```
/// use tickwheel::timer::Task;
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
///   timer's driver thread, one fired timer at a time, and never while the
///   timer holds an internal lock. Timers come in the order they fire.
///   Each wake-up of the driver fires what is due least slack first, each
///   slack class's timers of every shard merged in deadline order, then
///   priority (first in first out on ties within a shard). So timers due at different wake-ups
///   come in the order of those wake-ups, which with slack is not always
///   deadline order: a timer may wait inside its window while one with a
///   later deadline and less slack fires (see
///   [`Timer::with_slack`](super::Timer::with_slack)). It
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
/// Implemented for [`Inline`], [`ThreadPool`](super::ThreadPool), `crossbeam_channel::Sender`
/// and any `Fn(Expired<T>) + Send + Sync + 'static`.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use tickwheel::timer::{Executor, Expired, Rejected};
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
    ///
    /// ```
    /// use std::sync::mpsc::{channel, Sender};
    /// use std::time::Duration;
    /// use tickwheel::timer::{Executor, Expired, Rejected};
    /// use tickwheel::Timer;
    ///
    /// /// Hands each value to another thread; refuses once nobody listens.
    /// struct Forward(Sender<&'static str>);
    /// impl Executor<&'static str> for Forward {
    ///     fn execute(&self, fired: Expired<&'static str>) -> Result<(), Rejected<&'static str>> {
    ///         match self.0.send(fired.value) {
    ///             Ok(()) => Ok(()),
    ///             Err(e) => Err(Rejected(Expired { value: e.0, ..fired })),
    ///         }
    ///     }
    /// }
    /// let (tx, rx) = channel();
    /// let timer = Timer::builder().executor(Forward(tx)).build()?;
    /// timer.schedule(Duration::from_millis(1), "close order 17")?;
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(5))?, "close order 17");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn execute(&self, fired: Expired<T>) -> Result<(), Rejected<T>>;

    /// Called once when the timer is built, before any `execute`: a chance
    /// to start threads. The default does nothing.
    ///
    /// # Errors
    ///
    /// Whatever stops the executor from starting; the timer build fails
    /// with it.
    ///
    /// ```
    /// use std::io;
    /// use tickwheel::timer::{Executor, Expired, Rejected};
    /// use tickwheel::Timer;
    ///
    /// /// Needs a resource it cannot get.
    /// struct NoWorkers;
    /// impl Executor<u32> for NoWorkers {
    ///     fn execute(&self, _fired: Expired<u32>) -> Result<(), Rejected<u32>> {
    ///         Ok(())
    ///     }
    ///     fn start(&self) -> io::Result<()> {
    ///         Err(io::Error::other("no worker threads allowed"))
    ///     }
    /// }
    /// assert!(Timer::builder().executor(NoWorkers).build().is_err());
    /// ```
    fn start(&self) -> io::Result<()> {
        Ok(())
    }

    /// Blocks until every fired timer handed over so far has been dealt
    /// with. Used by [`Timer::shutdown_graceful`](super::Timer::shutdown_graceful)
    /// and by the drop of a timer's last handle, which waits for the tasks
    /// still running. Either can be called from one of the executor's own
    /// tasks (a task that stops its timer or drops its last handle): then
    /// wait for the others only, as [`ThreadPool`](super::ThreadPool) does.
    /// The default returns at once (for executors that finish within
    /// `execute`).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// use tickwheel::timer::{Executor, Expired, Rejected};
    /// use tickwheel::Timer;
    ///
    /// /// Counts its flushes.
    /// struct Flushes(Arc<AtomicU32>);
    /// impl Executor<u32> for Flushes {
    ///     fn execute(&self, _fired: Expired<u32>) -> Result<(), Rejected<u32>> {
    ///         Ok(())
    ///     }
    ///     fn flush(&self) {
    ///         self.0.fetch_add(1, Ordering::SeqCst);
    ///     }
    /// }
    /// let flushes = Arc::new(AtomicU32::new(0));
    /// let timer = Timer::builder().executor(Flushes(Arc::clone(&flushes))).build()?;
    /// timer.shutdown_graceful();
    /// assert_eq!(flushes.load(Ordering::SeqCst), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn flush(&self) {}

    /// Panics the executor caught itself (in worker threads), for
    /// [`Stats::panicked`](super::Stats::panicked). The default is 0.
    ///
    /// ```
    /// use tickwheel::timer::{Executor, Expired, Rejected};
    /// use tickwheel::Timer;
    ///
    /// /// Says its workers caught two panics.
    /// struct Caught;
    /// impl Executor<u32> for Caught {
    ///     fn execute(&self, _fired: Expired<u32>) -> Result<(), Rejected<u32>> {
    ///         Ok(())
    ///     }
    ///     fn panics(&self) -> u64 {
    ///         2
    ///     }
    /// }
    /// let timer = Timer::builder().executor(Caught).build()?;
    /// assert_eq!(timer.stats().panicked, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn panics(&self) -> u64 {
        0
    }
}

/// A fired timer an [`Executor`] refused, handed back to the timer, which
/// counts it and passes it to its `on_undelivered` hook.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::timer::{Undelivered, Why};
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
    /// use tickwheel::timer::{Executor, Expired, Rejected};
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

/// ```
/// # use std::time::Instant;
/// # use tickwheel::timer::{Expired, Rejected};
/// # fn fired<T>(value: T) -> Expired<T> { unimplemented!() }
/// fn report<T>(err: Rejected<T>) -> String {
///     err.to_string() // "executor refused a fired timer"
/// }
/// # let _ = report::<()>;
/// ```
impl<T> fmt::Display for Rejected<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("executor refused a fired timer")
    }
}

impl<T> core::error::Error for Rejected<T> {}

/// Runs each fired task on the driver thread itself.
///
/// The cheapest executor, and the right one for work that takes
/// microseconds: setting a flag, sending on a channel. Anything slower
/// delays every other timer; use a [`ThreadPool`](super::ThreadPool) then.
///
/// ```
/// use std::sync::mpsc;
/// use std::time::Duration;
/// use tickwheel::timer::{Inline, Task};
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
/// use tickwheel::timer::Expired;
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

pub(super) type UndeliveredHook<T> = Box<dyn Fn(Undelivered<T>) + Send + Sync>;

/// A value the timer could not deliver, passed to the
/// [`on_undelivered`](super::Builder::on_undelivered) hook instead of being
/// dropped silently.
///
/// ```
/// use tickwheel::timer::{Undelivered, Why};
///
/// fn log(lost: Undelivered<String>) {
///     match lost.why {
///         Why::Rejected => eprintln!("executor refused {}", lost.fired.value),
///         Why::Dropped => eprintln!("timer dropped before {} fired", lost.fired.value),
///         _ => eprintln!("not delivered: {}", lost.fired.value),
///     }
/// }
/// # let _ = log;
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Undelivered<T> {
    /// The timer, with its deadline and value.
    pub fired: Expired<T>,
    /// Why it was not delivered.
    pub why: Why,
}

/// Why a value was [`Undelivered`].
///
/// ```
/// assert_ne!(tickwheel::timer::Why::Rejected, tickwheel::timer::Why::Dropped);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Why {
    /// The executor refused it ([`Executor::execute`] returned `Err`).
    Rejected,
    /// The timer's last handle was dropped while it was pending (call
    /// [`Timer::shutdown`](super::Timer::shutdown) to get pending values back instead).
    Dropped,
    /// Due and about to be handed over when a task or value factory the
    /// driver ran inline stopped the timer (`shutdown`, or dropping its
    /// last handle): the stop had already returned what it held, and
    /// nothing is handed over after such a stop returns.
    Stopped,
}
