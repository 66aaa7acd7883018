//! Repeating timers: fixed rate ([`Timer::schedule_repeating`],
//! [`Timer::every`]) and fixed delay ([`Timer::with_fixed_delay`]), and the
//! protocol that re-arms a fixed-delay timer when its run finishes.
//!
//! A repeating timer keeps one wheel entry and one handle for its whole
//! life: each run is made by its factory (outside every lock) and the
//! entry is re-armed in place.
//!
//! # Fixed rate
//!
//! Run `n` is due at `first + n × period`: the driver re-arms the entry as
//! it takes the run, so the schedule never drifts. Runs are handed over on
//! that grid whether or not earlier runs have finished, so on a pool with
//! several workers a run that outlasts its period overlaps the next one
//! (use fixed delay when runs must not overlap). [`MissedTicks`] says what
//! happens when the driver falls behind.
//!
//! # Fixed delay: the run protocol
//!
//! The next run is due `delay` after the previous run *finished*, so the
//! timer is re-armed by the run itself. Each run of a fixed-delay task
//! carries a guard; when the run returns, panics, or is dropped unrun (an
//! executor refused it), the guard re-arms the timer. All transitions
//! happen under the timer's shard lock:
//!
//! The states and their transitions are tabled in `job.rs`.
//!
//! So runs never overlap, even when a reset arrives mid-run, and a panic
//! does not stop the timer (it is counted in `Stats::panicked`). The guard
//! reads the clock before it locks: no clock or user code runs under the
//! shard lock.
//!
//! The guard holds the timer's shared state. Pending fixed-delay timers
//! thus keep it alive, a cycle that stopping the timer breaks: every stop
//! (shutdown, or dropping the last handle) drains the wheels.

use alloc::boxed::Box;
use alloc::sync::Arc as StdArc;
use core::time::Duration;
use std::time::Instant;

use super::executor::{Executor, Task};
use super::job::{Cadence, DelayRun, Factory, Job, Make, MissedTicks, Repeat};
use super::shard::Shared;
use super::sync::Arc;
use super::{ScheduleError, ScheduleErrorKind, Timer, TimerHandle};
use crate::Tick;

fn zero_period<T: 'static>(make: Make<T>) -> ScheduleError<Factory<T>> {
    ScheduleError::new(ScheduleErrorKind::ZeroPeriod, Box::new(move || make(None)))
}

impl<T: Send + 'static, E: Executor<T>> Timer<T, E> {
    /// Schedules a repeating timer: the first run after `first_delay`, then
    /// every `period` at a fixed rate (run `n` is due at
    /// `first + n × period`, no drift; the period rounds up to whole ticks);
    /// `missed` says what happens when runs fall behind. `make` produces
    /// each run's value (outside any lock; if it panics, that run is
    /// skipped and counted in `Stats::panicked`).
    ///
    /// The handle stays valid across runs; [`cancel`](Self::cancel) stops
    /// all future runs (a run already handed to the executor finishes) and
    /// returns one more value from `make`. Runs are handed over on the
    /// grid even if earlier ones are still running (see the module docs).
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule), handing `make` back as a boxed
    /// factory; [`ScheduleErrorKind::ZeroPeriod`] for a zero `period`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::{Expired, MissedTicks};
    /// use tickwheel::Timer;
    ///
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let tx = std::sync::Mutex::new(tx);
    /// let timer = Timer::builder()
    ///     .executor(move |fired: Expired<&'static str>| tx.lock().unwrap().send(fired.value).unwrap())
    ///     .build()?;
    /// let beat = timer.schedule_repeating(
    ///     Duration::from_millis(1),
    ///     Duration::from_millis(1),
    ///     MissedTicks::Skip,
    ///     || "heartbeat",
    /// )?;
    /// assert_eq!(rx.recv()?, "heartbeat");
    /// assert_eq!(rx.recv()?, "heartbeat");
    /// timer.cancel(beat);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn schedule_repeating(
        &self,
        first_delay: Duration,
        period: Duration,
        missed: MissedTicks,
        make: impl Fn() -> T + Send + Sync + 'static,
    ) -> Result<TimerHandle, ScheduleError<Factory<T>>> {
        let time = &self.owner.shared.time;
        let first = time
            .now()
            .checked_add(first_delay)
            .unwrap_or_else(|| time.instant_of(Tick::MAX));
        self.schedule_repeating_at(first, period, missed, make)
    }

    /// Like [`schedule_repeating`](Self::schedule_repeating), with the first
    /// run at `first`, an instant of this timer's clock. Runs on the grid
    /// `first + n × period` that are already past when it is scheduled
    /// count as missed: `missed` decides (with [`MissedTicks::Burst`] they
    /// all run at once, back to back). They are counted on `period` as
    /// given, not rounded to ticks (a restore counts a journal's missed
    /// runs this way), so a period under the tick owes more runs than the
    /// ticks it then keeps.
    ///
    /// # Errors
    ///
    /// As [`schedule_repeating`](Self::schedule_repeating).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tickwheel::timer::MissedTicks;
    ///
    /// let (timer, ready) = tickwheel::Timer::with_channel()?;
    /// let on_the_hour = Instant::now() + Duration::from_millis(5);
    /// timer.schedule_repeating_at(on_the_hour, Duration::from_secs(3600), MissedTicks::Skip, || "report")?;
    /// assert_eq!(ready.recv()?, "report");
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn schedule_repeating_at(
        &self,
        first: Instant,
        period: Duration,
        missed: MissedTicks,
        make: impl Fn() -> T + Send + Sync + 'static,
    ) -> Result<TimerHandle, ScheduleError<Factory<T>>> {
        // Runs of the grid already past are owed: all of them (`Burst`) or
        // one, made up at once; then the grid goes on from its first point
        // in the future (ticks cannot express a grid before tick 0).
        let make: Make<T> = StdArc::new(move |_| make());
        if period.is_zero() {
            return Err(zero_period(make));
        }
        let time = &self.owner.shared.time;
        let now = time.now();
        let (next_on_grid, owed) = match now.checked_duration_since(first) {
            Some(late) => {
                let (late, every) = (late.as_nanos(), period.as_nanos());
                let past = u64::try_from(late / every)
                    .unwrap_or(u64::MAX)
                    .saturating_add(1);
                // The next point by remainder, never by multiplying the
                // period (a `u32` count of periods once put a grid more
                // than `u32::MAX` periods old off by up to a period).
                // At most `period`, so it fits a `Duration`.
                let ahead = every - late % every;
                let ahead = Duration::new(
                    u64::try_from(ahead / 1_000_000_000).unwrap_or(u64::MAX),
                    (ahead % 1_000_000_000) as u32,
                );
                let next = now.checked_add(ahead);
                let owed = match missed {
                    MissedTicks::Burst => past,
                    MissedTicks::Skip | MissedTicks::Delay => 1,
                };
                (next, owed)
            }
            None => (Some(first), 0),
        };
        // A grid point past what an `Instant` holds (a period of centuries):
        // one period from now, in ticks, which saturate (this once added
        // `now + period` and panicked).
        let base = next_on_grid.map_or_else(|| time.deadline_after(period), |at| time.tick_at(at));
        let file_at = if owed > 0 { time.tick_at(now) } else { base };
        let job = Job::Repeat(Box::new(Repeat {
            make,
            cadence: Cadence::Rate {
                base,
                runs: 0,
                period: time.ticks_in(period),
                missed,
                owed,
            },
            epoch: 0,
        }));
        self.owner
            .shared
            .insert(file_at, self.class, self.priority, job)
            .map_err(|err| err.map(Job::into_factory))
    }
}

impl<E: Executor<Task>> Timer<Task, E> {
    /// Runs `task` every `period` at a fixed rate, the first time after
    /// `first_delay` (a [`schedule_repeating`](Self::schedule_repeating) for
    /// closures). A run that panics is counted; the next runs go on.
    ///
    /// # Errors
    ///
    /// As [`schedule_repeating`](Self::schedule_repeating).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use tickwheel::timer::MissedTicks;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let beats = Arc::new(AtomicUsize::new(0));
    /// let counter = Arc::clone(&beats);
    /// let heartbeat = timer.every(Duration::ZERO, Duration::from_millis(1), MissedTicks::Skip, move || {
    ///     counter.fetch_add(1, Ordering::Relaxed);
    /// })?;
    /// while beats.load(Ordering::Relaxed) < 3 {
    ///     std::thread::sleep(Duration::from_millis(1));
    /// }
    /// timer.cancel(heartbeat);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn every(
        &self,
        first_delay: Duration,
        period: Duration,
        missed: MissedTicks,
        task: impl Fn() + Send + Sync + 'static,
    ) -> Result<TimerHandle, ScheduleError<Factory<Task>>> {
        let task = StdArc::new(task);
        self.schedule_repeating(first_delay, period, missed, move || {
            let task = StdArc::clone(&task);
            Box::new(move || task()) as Task
        })
    }

    /// Runs `task` repeatedly with a fixed *delay*: the first time after
    /// `first_delay`, then each time `delay` after the previous run
    /// *finished* (never less, whatever the tick). Runs never overlap: a
    /// slow run pushes the next one back, and a [`reset`](Self::reset)
    /// during a run moves the run after it (to the reset's deadline, or at
    /// once when the run ends if that has passed). A run that panics is
    /// counted in `Stats::panicked` and the next run comes as usual. The
    /// handle stays valid; [`cancel`](Self::cancel) stops future runs.
    ///
    /// # Errors
    ///
    /// As [`schedule_repeating`](Self::schedule_repeating), including
    /// [`ScheduleErrorKind::ZeroPeriod`] for a zero `delay`.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let polls = Arc::new(AtomicUsize::new(0));
    /// let counter = Arc::clone(&polls);
    /// let poller = timer.with_fixed_delay(Duration::ZERO, Duration::from_millis(1), move || {
    ///     counter.fetch_add(1, Ordering::Relaxed);
    /// })?;
    /// while polls.load(Ordering::Relaxed) < 3 {
    ///     std::thread::sleep(Duration::from_millis(1));
    /// }
    /// timer.cancel(poller);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn with_fixed_delay(
        &self,
        first_delay: Duration,
        delay: Duration,
        task: impl Fn() + Send + Sync + 'static,
    ) -> Result<TimerHandle, ScheduleError<Factory<Task>>> {
        let shared = &self.owner.shared;
        let task = StdArc::new(task);
        // The run re-arms through the shared state; see the module docs for
        // why holding it here is not a leak.
        let rearm_via = Arc::clone(shared);
        let make: Make<Task> = StdArc::new(move |fired: Option<TimerHandle>| {
            let task = StdArc::clone(&task);
            match fired {
                Some(handle) => {
                    let guard = RearmOnDrop {
                        shared: Arc::clone(&rearm_via),
                        handle,
                        delay,
                    };
                    Box::new(move || {
                        let _guard = guard;
                        task();
                    }) as Task
                }
                None => Box::new(move || task()) as Task,
            }
        });
        if delay.is_zero() {
            return Err(zero_period(make));
        }
        let first = shared.time.deadline_after(first_delay);
        let job = Job::Repeat(Box::new(Repeat {
            make,
            cadence: Cadence::Delay {
                delay_ticks: shared.time.ticks_in(delay),
                run: DelayRun::Waiting,
            },
            epoch: 0,
        }));
        shared
            .insert(first, self.class, self.priority, job)
            .map_err(|err| err.map(Job::into_factory))
    }
}

/// Carried by each fixed-delay run: re-arms its timer when the run ends,
/// however it ends (returned, panicked, or dropped unrun).
struct RearmOnDrop<T: Send + 'static, E: Executor<T>> {
    shared: Arc<Shared<T, E>>,
    handle: TimerHandle,
    delay: Duration,
}

impl<T: Send + 'static, E: Executor<T>> Drop for RearmOnDrop<T, E> {
    fn drop(&mut self) {
        self.shared.rearm_after_run(self.handle, self.delay);
    }
}

impl<T: Send + 'static, E: Executor<T>> Shared<T, E> {
    /// A fixed-delay run ended now: re-arm its timer (the last row but two
    /// of the table in the module docs).
    fn rearm_after_run(&self, handle: TimerHandle, delay: Duration) {
        // Read the clock before locking: `Clock` is user code.
        let after_delay = self.time.deadline_after(delay);
        let Some((_, mut wheels)) = self.lock(handle) else {
            return;
        };
        let Some(wheel) = wheels.get_mut(handle.class) else {
            return;
        };
        let next = match wheel.get_mut(handle.key) {
            Some(Job::Repeat(repeat)) => repeat.cadence.finish_run(after_delay),
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        wheel.reset(handle.key, next);
        drop(wheels);
        self.wake_if_earlier(next, handle.class);
    }
}
