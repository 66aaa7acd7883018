//! Queries on a [`Timer`]: a handle's deadline and state, the number of
//! pending timers, the stats, and `sync` for tests on a manual clock.

use core::time::Duration;
use std::time::Instant;

use super::executor::Executor;
use super::job::Job;
#[cfg(all(feature = "test-util", not(all(loom, test))))]
use super::shard::RUNNING;
use super::stats::Stats;
use super::sync::Ordering;
use super::{Timer, TimerHandle};

impl<T: Send + 'static, E: Executor<T>> Timer<T, E> {
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
                _ => tick,
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

    /// Number of timers pending: scheduled, and neither cancelled nor on
    /// their way to the executor. A one-shot the driver has taken out of
    /// its wheel counts until no stop can keep it from the executor, so
    /// once this reads 0 every one-shot so far reaches it: waiting for 0
    /// and then dropping the timer loses none (a
    /// [`ThreadPool`](crate::timer::ThreadPool) runs what it was given
    /// before its threads exit). Read without locking, so a timer on its
    /// way from a wheel to the driver's hands may be counted twice for a
    /// moment, never missed.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// timer.run_after(Duration::from_secs(60), || ())?;
    /// assert_eq!(timer.pending(), 1);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn pending(&self) -> usize {
        let shared = &self.owner.shared;
        // The shards first: a timer leaving one is already in `handing`.
        let filed: usize = shared
            .shards
            .iter()
            .map(|cell| cell.pending.load(Ordering::Acquire))
            .sum();
        filed + shared.handing.load(Ordering::Acquire)
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
        stats.panicked += self.owner.executor.panics();
        stats.wakeups = shared.passes.started.load(Ordering::Relaxed);
        stats
    }

    /// Waits until the driver has made a full pass that began after this
    /// call: everything due at the clock's current time has been handed to
    /// the executor (and, for executors that run on the driver thread, has
    /// run). For deterministic tests with a `ManualClock`; feature
    /// `test-util`.
    ///
    /// Returns at once if the timer has been shut down, and when called on
    /// the driver thread itself (from a task an `Inline` executor runs),
    /// whose pass cannot end while it waits.
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
        let on_driver = shared
            .driver
            .lock()
            .as_ref()
            .is_some_and(|driver| driver.id() == std::thread::current().id());
        if on_driver {
            return; // waiting here would wait on itself, for good
        }
        let target = shared.passes.started.load(Ordering::SeqCst) + 1;
        shared.passes.wanted.fetch_max(target, Ordering::SeqCst);
        shared.unpark_driver();
        let mut completed = shared.passes.completed.lock();
        // The unpark guarantees a new pass while running; a stop wakes this
        // wait under the same lock (`Owner::stop`), so it cannot be missed.
        while *completed < target && shared.state.load(Ordering::SeqCst) == RUNNING {
            completed = shared.passes.done.wait(completed);
        }
    }
}
