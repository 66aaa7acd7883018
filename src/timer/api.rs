//! [`Timer`]: the handle users hold. Scheduling, cancel and reset, queries
//! on a handle, stats, and shutdown. (Repeating timers are in
//! `periodic.rs`; `Timer::new`, `builder` and `with_channel` in
//! `builder.rs`.)

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;
use std::time::Instant;

use super::executor::{Executor, Task};
use super::job::{Job, Unfired};
use super::owner::Owner;
use super::pool::ThreadPool;
use super::shard::{ShardCell, FINISHING, RUNNING, STOPPING};
use super::stats::Stats;
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
/// hook, or, without one, are dropped (counted in [`Stats::dropped`], which
/// nobody can read any more: set the hook or call `shutdown` if they
/// matter). Dropping also drops the executor, and a [`ThreadPool`] then
/// finishes the tasks it was handed and joins its workers, so the drop
/// waits for tasks still running; `shutdown` does not wait for them.
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
}

impl<T: Send + 'static, E: Executor<T>> Timer<T, E> {
    /// Schedules `value` to fire after `delay`. The deadline rounds up to
    /// the tick, so it never fires early.
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
            .insert(deadline, self.class, Job::Once(value))
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
            .insert(deadline, self.class, Job::Once(value))
            .map_err(|err| err.map(Job::into_once))
    }

    /// Cancels a timer. Returns its value if it will never fire (for a
    /// repeating timer: no future run will; the value comes from its
    /// factory, outside the lock), or `None` if it has fired or is firing
    /// (a one-shot), or the handle is stale. Fire and cancel never both win.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// let refund = timer.run_after(Duration::from_secs(60), || println!("refund"))?;
    /// assert!(timer.cancel(refund).is_some()); // paid: no refund
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn cancel(&self, handle: TimerHandle) -> Option<T> {
        let shared = &self.owner.shared;
        let job = {
            let (cell, mut wheels) = shared.lock(handle)?;
            let job = wheels.get_mut(handle.class)?.cancel(handle.key)?;
            ShardCell::<T>::bump(&cell.cancelled);
            cell.publish_len(&wheels);
            job
        };
        shared.release_reservation(1);
        match job {
            Job::Once(value) => Some(value),
            Job::Repeat(repeat) => Some((repeat.make)(None)),
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
    /// (one in the past makes the timer due at once).
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
        let shared = &self.owner.shared;
        let Some((_, mut wheels)) = shared.lock(handle) else {
            return false;
        };
        // The timer stays in its class: it keeps its slack.
        let Some(wheel) = wheels.get_mut(handle.class) else {
            return false;
        };
        let moved_to = match wheel.get_mut(handle.key) {
            None => return false,
            Some(Job::Repeat(repeat)) => repeat.cadence.reset(deadline),
            Some(Job::Once(_)) => Some(deadline),
        };
        if let Some(deadline) = moved_to {
            wheel.reset(handle.key, deadline);
            drop(wheels);
            shared.wake_if_earlier(deadline, handle.class);
        }
        true
    }

    /// A handle to the same timer whose schedules (one-shot and repeating)
    /// carry `slack`: each may fire anywhere in `[deadline, deadline +
    /// slack]`, never before. Make one per kind of timer and keep it:
    /// `Duration::ZERO` for timers that must fire as close to their
    /// deadline as the platform allows, a few milliseconds for timeouts
    /// that only need to fire eventually.
    ///
    /// The driver wakes as few times as it can while firing every timer
    /// inside its window: it wakes just before the earliest window closes
    /// and fires every timer whose deadline has passed, whatever its slack
    /// (the rule, and why, are in the module `slack.rs`). A timer with
    /// less slack costs its own wake-up and no one else's. A timer keeps
    /// its slack across [`reset`](Self::reset)s; the slack of a fixed-rate
    /// timer's run never moves the next run, which stays on its grid.
    ///
    /// Slack is counted in whole ticks, rounded down. Timers with the same
    /// slack form a class; a timer keeps at most 16 classes, and past that
    /// a new slack shares the class of the largest slack below it (a
    /// narrower window, never a wider one). Clones of the returned handle
    /// keep its slack. Every handle reaches the same timers: cancel, reset
    /// and stop through any of them. [`Stats::in_window`] and
    /// [`Stats::overshoot`] report how runs kept to their windows.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::Timer;
    ///
    /// let timer = Timer::new()?; // slack: tickwheel::timer::DEFAULT_SLACK
    /// let precise = timer.with_slack(Duration::ZERO);
    /// let relaxed = timer.with_slack(Duration::from_millis(50));
    /// assert_eq!(precise.slack(), Duration::ZERO);
    ///
    /// precise.run_after(Duration::from_micros(250), || println!("on the dot"))?;
    /// let idle = relaxed.run_after(Duration::from_secs(30), || println!("idle: close"))?;
    /// timer.reset(idle, Duration::from_secs(30)); // still 50 ms of slack
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    ///
    /// [`Stats::in_window`]: super::Stats::in_window
    /// [`Stats::overshoot`]: super::Stats::overshoot
    #[must_use]
    pub fn with_slack(&self, slack: Duration) -> Self {
        let shared = &self.owner.shared;
        Timer {
            owner: Arc::clone(&self.owner),
            class: shared.classes.class_of(shared.time.slack_ticks(slack)),
        }
    }

    /// The slack of timers scheduled through this handle: the builder's
    /// [`slack`](super::Builder::slack), or the one given to
    /// [`with_slack`](Self::with_slack), in whole ticks.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::builder().slack(Duration::from_micros(100)).build()?;
    /// assert_eq!(timer.slack(), Duration::from_micros(100));
    /// assert_eq!(timer.with_slack(Duration::ZERO).slack(), Duration::ZERO);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn slack(&self) -> Duration {
        let shared = &self.owner.shared;
        shared
            .time
            .duration_of(shared.classes.get(self.class).slack)
    }

    /// When a pending timer is due (its next run, for a repeating one),
    /// rounded up to the tick; `None` if the handle is stale.
    ///
    /// ```
    /// # use std::time::{Duration, Instant};
    /// let timer = tickwheel::Timer::new()?;
    /// let before = Instant::now();
    /// let job = timer.run_after(Duration::from_secs(60), || ())?;
    /// assert!(timer.deadline(job).unwrap() >= before + Duration::from_secs(60));
    /// timer.cancel(job);
    /// assert_eq!(timer.deadline(job), None);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn deadline(&self, handle: TimerHandle) -> Option<Instant> {
        let shared = &self.owner.shared;
        let tick = {
            let (_, wheels) = shared.lock(handle)?;
            let wheel = wheels.get(handle.class)?;
            let tick = wheel.deadline(handle.key)?;
            match wheel.get(handle.key)? {
                Job::Repeat(repeat) => repeat.cadence.next_run(tick),
                Job::Once(_) => tick,
            }
        };
        Some(shared.time.instant_of(tick))
    }

    /// How long until a pending timer is due (zero if it is due already);
    /// `None` if the handle is stale.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// let job = timer.run_after(Duration::from_secs(60), || ())?;
    /// let left = timer.remaining(job).unwrap();
    /// assert!(left > Duration::from_secs(59) && left <= Duration::from_secs(61));
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn remaining(&self, handle: TimerHandle) -> Option<Duration> {
        let deadline = self.deadline(handle)?;
        Some(deadline.saturating_duration_since(self.owner.shared.time.now()))
    }

    /// `true` if the handle's timer is pending: scheduled and neither fired
    /// (for a one-shot) nor cancelled.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// let job = timer.run_after(Duration::from_secs(60), || ())?;
    /// assert!(timer.is_pending(job));
    /// timer.cancel(job);
    /// assert!(!timer.is_pending(job));
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn is_pending(&self, handle: TimerHandle) -> bool {
        self.owner
            .shared
            .lock(handle)
            .and_then(|(_, wheels)| Some(wheels.get(handle.class)?.contains(handle.key)))
            .unwrap_or(false)
    }

    /// Number of timers pending (scheduled, and neither fired nor
    /// cancelled). Read without locking.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// timer.run_after(Duration::from_secs(60), || ())?;
    /// assert_eq!(timer.pending(), 1);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn pending(&self) -> usize {
        self.owner
            .shared
            .shards
            .iter()
            .map(|cell| cell.pending.load(Ordering::Relaxed))
            .sum()
    }

    /// A snapshot of the counters and the lateness distribution. Cheap: it
    /// reads atomics only.
    ///
    /// ```
    /// let timer = tickwheel::Timer::new()?;
    /// assert_eq!(timer.stats().fired, 0);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn stats(&self) -> Stats {
        let shared = &self.owner.shared;
        let (mut scheduled, mut cancelled) = (0, 0);
        for cell in shared.shards.iter() {
            scheduled += cell.scheduled.load(Ordering::Relaxed);
            cancelled += cell.cancelled.load(Ordering::Relaxed);
        }
        let mut stats = shared.counters.snapshot();
        stats.pending = self.pending();
        stats.scheduled = scheduled;
        stats.cancelled = cancelled;
        stats.panicked += shared.executor.panics();
        stats.wakeups = shared.passes.started.load(Ordering::Relaxed);
        stats
    }

    /// Waits until the driver has made a full pass that began after this
    /// call: everything due at the clock's current time has been handed to
    /// the executor (and, for executors that run on the driver thread, has
    /// run). For deterministic tests with a `ManualClock`; feature
    /// `test-util`.
    ///
    /// Returns at once if the timer has been shut down.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::ManualClock;
    /// use tickwheel::Timer;
    ///
    /// let clock = ManualClock::new();
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// let timer = Timer::builder()
    ///     .clock(clock.clone())
    ///     .slack(Duration::ZERO) // due exactly at its deadline
    ///     .executor(tx)
    ///     .build()?;
    /// timer.schedule(Duration::from_millis(5), "due at 5 ms")?;
    /// clock.advance(Duration::from_millis(4));
    /// timer.sync();
    /// assert!(rx.try_recv().is_err()); // not early
    /// clock.advance(Duration::from_millis(1));
    /// timer.sync();
    /// assert_eq!(rx.try_recv()?, "due at 5 ms");
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    #[cfg(all(feature = "test-util", not(all(loom, test))))]
    pub fn sync(&self) {
        let shared = &self.owner.shared;
        let target = shared.passes.started.load(Ordering::SeqCst) + 1;
        shared.unpark_driver();
        let mut completed = shared.passes.completed.lock();
        // The unpark guarantees a new pass while running; a stop wakes this
        // wait under the same lock (`Owner::stop`), so it cannot be missed.
        while *completed < target && shared.state.load(Ordering::SeqCst) == RUNNING {
            completed = shared.passes.done.wait(completed);
        }
    }

    /// Stops the driver and returns every timer that has not fired, as
    /// `(deadline, value)`, deadline rounded up to the tick. (A repeating
    /// timer appears once, with its next run's deadline and a value from
    /// its factory.) Runs already handed to the executor are not waited
    /// for. Later schedules fail with a `Shutdown` [`ScheduleError`]; a
    /// second `shutdown` returns nothing.
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
