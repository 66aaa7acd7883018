//! [`Timer`]: the handle users hold. Scheduling, cancel and reset, queries
//! on a handle, stats, and shutdown. (Repeating timers are in
//! `periodic.rs`; `Timer::new`, `builder` and `with_channel` in
//! `builder.rs`.)

use super::unwind::catch_unwind;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;
use core::panic::AssertUnwindSafe;
use core::time::Duration;
use std::time::Instant;

use super::executor::{Executor, Task};
use super::job::{Job, Unfired};
use super::owner::Owner;
use super::pool::ThreadPool;
use super::shard::{FINISHING, RUNNING, STOPPING};
use super::sync::{Arc, Ordering};
use super::{ScheduleError, TimerHandle};
use crate::Tick;

/// A timer service: a driver thread, a clock and an executor over sharded
/// timing wheels. Cloneable, `Send + Sync`; schedule, cancel and reset from
/// any thread.
///
/// `T` is the value each timer carries and `E` the [`Executor`] that
/// receives it when it fires. The default, from [`Timer::new`], runs boxed
/// closures ([`Task`]) on a small [`ThreadPool`]. [`Timer::with_channel`]
/// makes a pull-style delay queue. See the [module docs](super) for how it
/// works.
///
/// # Stopping
///
/// [`shutdown`](Self::shutdown) stops the driver at once and returns every
/// timer that has not fired. Dropping the last clone does the same, but
/// the unfired values go to the [`on_undelivered`](super::Builder::on_undelivered)
/// hook, or, without one, are dropped (counted in [`Stats::dropped`](super::Stats::dropped), which
/// nobody can read any more: set the hook or call `shutdown` if they
/// matter). Dropping also drops the executor, and a [`ThreadPool`] then
/// finishes the tasks it was handed and joins its workers, so the drop
/// waits for tasks still running; `shutdown` does not wait for them. A
/// clone held by a pending task (one that reschedules itself, say) is a
/// clone like any other: the driver runs until that task has run too, or
/// until `shutdown`.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::Timer;
///
/// let timer = Timer::new()?;
/// let (done, finished) = std::sync::mpsc::channel();
///
/// // A connection timeout, pushed back on activity.
/// let idle = timer.run_after(Duration::from_secs(30), || println!("idle: close"))?;
/// timer.reset(idle, Duration::from_secs(30));
///
/// // A delayed job.
/// timer.run_after(Duration::from_millis(5), move || done.send(()).unwrap())?;
/// finished.recv_timeout(Duration::from_secs(5))?;
///
/// // Stop, and get back what never fired.
/// let unfired = timer.shutdown();
/// assert_eq!(unfired.len(), 1);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub struct Timer<T: Send + 'static = Task, E: Executor<T> = ThreadPool> {
    pub(super) owner: Arc<Owner<T, E>>,
    /// The slack class of timers scheduled through this handle
    /// (`slack.rs`).
    pub(super) class: u16,
    /// Their priority among timers due at the same tick (`priority.rs`).
    pub(super) priority: u8,
}

impl<T: Send + 'static, E: Executor<T>> Timer<T, E> {
    /// Schedules `value` to fire after `delay`. The deadline rounds up to
    /// the tick, so it never fires early. A timer counts time from its
    /// start in `u64` nanoseconds: a deadline more than 584 years ahead
    /// (`Duration::MAX`, say) is held at that horizon and never fires, but
    /// stays pending, to be cancelled or handed back at shutdown.
    ///
    /// # Errors
    ///
    /// [`ScheduleError`] of kind `Full` over `max_pending`, `Shutdown`
    /// after shutdown; both hand `value` back.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let (timer, expired) = tickwheel::Timer::with_channel()?;
    /// let handle = timer.schedule(Duration::from_secs(900), "close order 17")?;
    /// # let _ = (handle, expired);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn schedule(&self, delay: Duration, value: T) -> Result<TimerHandle, ScheduleError<T>> {
        let shared = &self.owner.shared;
        let deadline = shared.time.deadline_after(delay);
        shared
            .insert(deadline, self.class, self.priority, Job::Once(value))
            .map_err(|err| err.map(Job::into_once))
    }

    /// Schedules `value` to fire at `deadline` (an instant of this timer's
    /// clock; one in the past fires at once).
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule).
    ///
    /// ```
    /// # use std::time::{Duration, Instant};
    /// let (timer, expired) = tickwheel::Timer::with_channel()?;
    /// timer.schedule_at(Instant::now() + Duration::from_millis(1), 42)?;
    /// assert_eq!(expired.recv()?, 42);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn schedule_at(
        &self,
        deadline: Instant,
        value: T,
    ) -> Result<TimerHandle, ScheduleError<T>> {
        let shared = &self.owner.shared;
        let deadline = shared.time.tick_at(deadline);
        shared
            .insert(deadline, self.class, self.priority, Job::Once(value))
            .map_err(|err| err.map(Job::into_once))
    }

    /// Cancels a timer. Returns its value if it will never fire (for a
    /// repeating timer: no future run will; the value comes from its
    /// factory, outside the lock; a run the driver has taken but not begun
    /// to hand over never starts, one already being handed over finishes),
    /// or `None` if it has fired or is firing (a one-shot), or the handle
    /// is stale. Fire and cancel never both win.
    /// A repeating timer whose factory panics making that value is
    /// cancelled all the same and answers `None`; the panic is caught and
    /// counted ([`Stats::panicked`](super::Stats::panicked) and `dropped`).
    /// A factory whose `Drop` panics as the cancel drops it is counted in
    /// `panicked` too, and the value made is still returned.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// let refund = timer.run_after(Duration::from_secs(60), || println!("refund"))?;
    /// assert!(timer.cancel(refund).is_some()); // paid: no refund
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn cancel(&self, handle: TimerHandle) -> Option<T> {
        match self.owner.shared.cancel_job(handle)? {
            Job::Once(value) => Some(value),
            Job::Repeat(repeat) => {
                let made = catch_unwind(AssertUnwindSafe(|| (repeat.make)(None)));
                let counters = &self.owner.shared.counters;
                // The factory and what it captured go here: their `Drop`
                // is user code, and a panic in it must not lose the value
                // just made (it unwound through this call and dropped it).
                if catch_unwind(AssertUnwindSafe(move || drop(repeat))).is_err() {
                    counters.panicked();
                }
                if made.is_err() {
                    counters.panicked();
                    counters.dropped();
                }
                made.ok()
            }
            // Not reachable through a sleep's own handle, which it keeps;
            // complete the sleep rather than leave it waiting.
            #[cfg(feature = "async")]
            Job::Wake(waker) => {
                waker.wake();
                None
            }
        }
    }

    /// Moves a pending timer's next run to `delay` from now (for a
    /// fixed-rate timer, its schedule restarts there; for a fixed-delay
    /// timer whose run is in progress, the run after it moves, see
    /// [`with_fixed_delay`](Self::with_fixed_delay)). Returns `false` if the
    /// handle is stale (fired, cancelled, or never valid here).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// let idle = timer.run_after(Duration::from_secs(30), || ())?;
    /// assert!(timer.reset(idle, Duration::from_secs(30))); // a packet arrived
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn reset(&self, handle: TimerHandle, delay: Duration) -> bool {
        let deadline = self.owner.shared.time.deadline_after(delay);
        self.reset_to(handle, deadline)
    }

    /// Like [`reset`](Self::reset), to an instant of this timer's clock
    /// (one in the past makes the timer due at once). Deadlines count in
    /// ticks from when the timer was built, so an instant before that
    /// counts as that moment: a fixed-rate timer's schedule restarts there,
    /// not on the earlier instant's grid.
    ///
    /// ```
    /// # use std::time::{Duration, Instant};
    /// let timer = tickwheel::Timer::new()?;
    /// let order = timer.run_after(Duration::from_secs(900), || ())?;
    /// let extended = Instant::now() + Duration::from_secs(1_800);
    /// assert!(timer.reset_at(order, extended));
    /// assert!(timer.deadline(order).unwrap() >= extended);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn reset_at(&self, handle: TimerHandle, deadline: Instant) -> bool {
        let deadline = self.owner.shared.time.tick_at(deadline);
        self.reset_to(handle, deadline)
    }

    fn reset_to(&self, handle: TimerHandle, deadline: Tick) -> bool {
        self.owner.shared.reset_to(handle, deadline)
    }

    /// Stops the driver and returns every timer that has not fired, as
    /// `(deadline, value)`, deadline rounded up to the tick. (A repeating
    /// timer appears once, with its next run's deadline and a value from
    /// its factory.) The driver stops between two hand-offs: a backlog it
    /// was handing over comes back here, not to the executor, and the
    /// call waits at most for the one hand-off in progress. Runs already
    /// handed to the executor are not waited for. Later schedules fail
    /// with a `Shutdown` [`ScheduleError`]; a second `shutdown` returns
    /// nothing.
    ///
    /// Called from a task the driver runs inline ([`Inline`](super::Inline)
    /// or a closure executor), it cannot wait for its own hand-off: it
    /// returns what is still in the wheels, and the timers handed over with
    /// that task never run; they go to the
    /// [`on_undelivered`](super::Builder::on_undelivered) hook as
    /// [`Why::Stopped`](super::Why::Stopped).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// timer.run_after(Duration::from_secs(60), || ())?;
    /// let unfired = timer.shutdown();
    /// assert_eq!(unfired.len(), 1);
    /// assert!(timer.run_after(Duration::ZERO, || ()).unwrap_err().is_shutdown());
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn shutdown(&self) -> Vec<(Instant, T)> {
        pairs(self.owner.stop(STOPPING))
    }

    /// Like [`shutdown`](Self::shutdown), but first fires everything already
    /// due and waits until the executor has finished all it was handed
    /// ([`Executor::flush`]). Returns the timers still in the future.
    ///
    /// "Due" is judged as always: by the tick that has fully passed. A timer
    /// whose deadline (rounded up to the tick) lies in the current tick is
    /// not due yet and comes back in the returned list, not fired.
    ///
    /// Called from a task the driver runs inline ([`Inline`](super::Inline)
    /// or a closure executor), it cannot fire anything before it returns:
    /// the driver is busy running that very task. The timers handed over
    /// with the task still run, after the call returns, and every timer
    /// still in the wheels comes back, due or not, as with `shutdown`.
    ///
    /// ```
    /// # use std::time::{Duration, Instant};
    /// let timer = tickwheel::Timer::new()?;
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let past = Instant::now() - Duration::from_millis(5);
    /// timer.run_at(past, move || tx.send("ran").unwrap())?;
    /// timer.run_after(Duration::from_secs(60), || ())?;
    /// let future = timer.shutdown_graceful();
    /// assert_eq!(future.len(), 1);
    /// assert_eq!(rx.try_recv()?, "ran");
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn shutdown_graceful(&self) -> Vec<(Instant, T)> {
        pairs(self.owner.stop(FINISHING))
    }
}

impl<E: Executor<Task>> Timer<Task, E> {
    /// Runs `task` after `delay`: [`schedule`](Self::schedule) for a
    /// closure, boxing it for you.
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule), handing the boxed task back.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// let order = 17;
    /// timer.run_after(Duration::from_secs(900), move || println!("close unpaid order {order}"))?;
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn run_after(
        &self,
        delay: Duration,
        task: impl FnOnce() + Send + 'static,
    ) -> Result<TimerHandle, ScheduleError<Task>> {
        self.schedule(delay, Box::new(task))
    }

    /// Runs `task` at `deadline`: [`schedule_at`](Self::schedule_at) for a
    /// closure.
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule), handing the boxed task back.
    ///
    /// ```
    /// # use std::time::{Duration, Instant};
    /// let timer = tickwheel::Timer::new()?;
    /// timer.run_at(Instant::now() + Duration::from_secs(1), || println!("tick"))?;
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn run_at(
        &self,
        deadline: Instant,
        task: impl FnOnce() + Send + 'static,
    ) -> Result<TimerHandle, ScheduleError<Task>> {
        self.schedule_at(deadline, Box::new(task))
    }
}

impl<T: Send + 'static, E: Executor<T>> Clone for Timer<T, E> {
    fn clone(&self) -> Self {
        Timer {
            owner: Arc::clone(&self.owner),
            class: self.class,
            priority: self.priority,
        }
    }
}

impl<T: Send + 'static, E: Executor<T>> fmt::Debug for Timer<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shared = &self.owner.shared;
        f.debug_struct("Timer")
            .field("tick", &shared.time.tick())
            .field("shards", &shared.shards.len())
            .field("slack", &self.slack())
            .field("pending", &self.pending())
            .field(
                "running",
                &(shared.state.load(Ordering::Relaxed) == RUNNING),
            )
            .finish_non_exhaustive()
    }
}

fn pairs<T>(unfired: Vec<Unfired<T>>) -> Vec<(Instant, T)> {
    unfired.into_iter().map(|u| (u.deadline, u.value)).collect()
}
