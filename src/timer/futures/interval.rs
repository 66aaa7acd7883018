//! [`Interval`]: ticks at a fixed rate, on one reused [`Sleep`] (feature
//! `async`).

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::time::Instant;

use super::sleep::Sleep;
use crate::timer::executor::Executor;
use crate::timer::{MissedTicks, ScheduleError, ScheduleErrorKind, Timer};
use crate::Tick;

/// A stream of ticks every `period`: [`Timer::interval`]. Each
/// [`tick`](Self::tick) completes at the next point of its schedule, and
/// [`MissedTicks`] says what happens when ticks were missed (the task was
/// busy): run them all at once (`Burst`), restart the schedule from now
/// (`Delay`), or skip to the next point of the grid (`Skip`). It is a
/// `futures_core::Stream` of the instants each tick was due, and reuses one
/// sleep for every tick.
///
/// When the timer stops (shut down, or its last handle dropped) the
/// interval ends: [`tick`](Self::tick) answers `None` and the stream ends,
/// at once and on every later call. It never answers an instant that has
/// not come.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::timer::MissedTicks;
///
/// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     use std::task::{Context, Poll, Wake, Waker};
/// #     struct Unpark(std::thread::Thread);
/// #     impl Wake for Unpark { fn wake(self: std::sync::Arc<Self>) { self.0.unpark() } }
/// #     let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
/// #     let mut f = std::pin::pin!(f);
/// #     loop {
/// #         if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&waker)) { return v; }
/// #         std::thread::park();
/// #     }
/// # }
/// let timer = tickwheel::Timer::new()?;
/// let mut heartbeat = timer.interval(Duration::from_millis(1), MissedTicks::Burst)?;
/// let first = block_on(heartbeat.tick()).unwrap();
/// let second = block_on(heartbeat.tick()).unwrap();
/// assert_eq!(second - first, Duration::from_millis(1)); // on its grid, however late
/// timer.shutdown();
/// assert_eq!(block_on(heartbeat.tick()), None); // the timer is gone
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Interval {
    sleep: Sleep,
    /// The period, in ticks (at least one).
    period: Tick,
    /// The first point of the grid (`Skip` keeps to it).
    start: Tick,
    missed: MissedTicks,
    /// The task polled for the coming tick before it was due: that tick
    /// is not missed, however late the wake-up (unless the next one has
    /// passed too).
    waiting: bool,
    /// Points of the grid before the timer's tick 0, which ticks cannot
    /// express (a start earlier than the timer): the next one and how
    /// many are still to come, at once, before the ticks' grid goes on.
    early: Option<(Instant, u64)>,
}

impl Interval {
    /// Waits for the next tick; returns the instant it was due, or `None`
    /// once the timer has stopped (then at once, every time).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::MissedTicks;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let mut every_second = timer.interval(Duration::from_secs(1), MissedTicks::Delay)?;
    /// let next_tick = every_second.tick();
    /// # drop(next_tick);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn tick(&mut self) -> impl Future<Output = Option<Instant>> + '_ {
        core::future::poll_fn(move |cx| self.poll_tick(cx))
    }

    /// Polls for the next tick: the instant it was due, once it is;
    /// `None` once the timer has stopped.
    ///
    /// ```
    /// use std::task::{Context, Waker};
    /// use std::time::Duration;
    /// use tickwheel::timer::MissedTicks;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let mut hourly = timer.interval(Duration::from_secs(3_600), MissedTicks::Skip)?;
    /// assert!(hourly.poll_tick(&mut Context::from_waker(Waker::noop())).is_pending());
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        if let Some((at, left)) = self.early {
            return Poll::Ready(self.early_tick(at, left));
        }
        if Pin::new(&mut self.sleep).poll(cx).is_pending() {
            self.waiting = true;
            return Poll::Pending;
        }
        // A stopped timer completes every sleep at once: that is no tick.
        if self.sleep.timer.is_stopped() {
            return Poll::Ready(None);
        }
        let awaited = core::mem::take(&mut self.waiting);
        let due = self.sleep.deadline;
        let timer = &self.sleep.timer;
        let now = timer.tick_at(timer.now());
        // A tick counts as missed only once its whole window has passed,
        // so the slack of one tick never shifts or skips the next.
        let missed_before = now.saturating_sub(timer.slack(self.sleep.class));
        let next = match self.missed {
            // A tick the task was waiting for is not missed: a late
            // wake-up (the driver's, within or past the slack) must not
            // move the schedule, or `Delay` drifts by it every period. Only
            // if the next point has passed too were ticks missed.
            _ if awaited && due.saturating_add(self.period) > missed_before => {
                due.saturating_add(self.period)
            }
            MissedTicks::Burst => due.saturating_add(self.period),
            MissedTicks::Delay if missed_before > due => now.saturating_add(self.period),
            MissedTicks::Delay => due.saturating_add(self.period),
            MissedTicks::Skip => {
                let runs = missed_before.saturating_sub(self.start) / self.period + 1;
                self.start
                    .saturating_add(runs.saturating_mul(self.period))
                    .max(due.saturating_add(self.period))
            }
        };
        let due_at = self.sleep.timer.instant_of(due);
        let next_at = self.sleep.timer.instant_of(next);
        self.sleep.reset(next_at);
        Poll::Ready(Some(due_at))
    }

    /// The period, rounded up to whole ticks of the timer.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::MissedTicks;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let beat = timer.interval(Duration::from_millis(5), MissedTicks::Burst)?;
    /// assert_eq!(beat.period(), Duration::from_millis(5));
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn period(&self) -> Duration {
        self.sleep.timer.instant_of(self.period) - self.sleep.timer.instant_of(0)
    }
}

impl Interval {
    fn new(sleep: Sleep, period: Tick, missed: MissedTicks) -> Interval {
        Interval {
            start: sleep.deadline,
            sleep,
            period,
            missed,
            waiting: false,
            early: None,
        }
    }

    /// Starts the grid at `first`. Points of it before the timer's tick 0
    /// are owed at once (every one under `Burst`, the first otherwise);
    /// the ticks' grid goes on from its first point at or after tick 0
    /// (ticks before it do not exist, and a start there once moved the
    /// whole grid onto tick 0).
    fn place(&mut self, first: Instant) {
        let timer = &self.sleep.timer;
        let origin = timer.instant_of(0);
        let every = self.period();
        let mut on_grid = first;
        self.early = None;
        if let Some(before) = origin
            .checked_duration_since(first)
            .filter(|d| !d.is_zero())
        {
            let points = before.as_nanos().div_ceil(every.as_nanos());
            on_grid = u32::try_from(points)
                .ok()
                .and_then(|n| every.checked_mul(n))
                .and_then(|ahead| first.checked_add(ahead))
                .unwrap_or_else(|| timer.instant_of(Tick::MAX));
            let owed = match self.missed {
                MissedTicks::Burst => u64::try_from(points).unwrap_or(u64::MAX),
                MissedTicks::Skip | MissedTicks::Delay => 1,
            };
            self.early = Some((first, owed));
        }
        self.sleep.reset(on_grid);
        self.start = self.sleep.deadline;
        self.waiting = false;
    }

    /// Yields the early point `at`, `left` of them still owed; `None` once
    /// the timer has stopped. After the last, `Delay` restarts the
    /// schedule a period from now, as for any missed tick.
    fn early_tick(&mut self, at: Instant, left: u64) -> Option<Instant> {
        if self.sleep.timer.is_stopped() {
            return None;
        }
        let next = at.checked_add(self.period()).filter(|_| left > 1);
        self.early = next.map(|next| (next, left - 1));
        if self.early.is_none() && self.missed == MissedTicks::Delay {
            let now = self.sleep.timer.now();
            self.sleep
                .reset(now.checked_add(self.period()).unwrap_or(now));
            self.start = self.sleep.deadline;
        }
        Some(at)
    }
}

impl Interval {
    /// Moves the schedule: the next tick at `deadline`, and the grid
    /// (`first + n × period`) from there.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tickwheel::timer::MissedTicks;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let mut beat = timer.interval(Duration::from_secs(1), MissedTicks::Skip)?;
    /// beat.reset_at(Instant::now() + Duration::from_millis(10));
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn reset_at(&mut self, deadline: Instant) {
        self.place(deadline);
    }

    /// Moves the schedule: the next tick `after` from now, and the grid
    /// from there.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::MissedTicks;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let mut beat = timer.interval(Duration::from_secs(1), MissedTicks::Skip)?;
    /// beat.reset_after(Duration::from_millis(10));
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn reset_after(&mut self, after: Duration) {
        let now = self.sleep.timer.now();
        self.reset_at(now.checked_add(after).unwrap_or(now));
    }

    /// Moves the schedule: the next tick a period from now (tokio's
    /// `Interval::reset`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::MissedTicks;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let mut beat = timer.interval(Duration::from_secs(1), MissedTicks::Skip)?;
    /// beat.reset(); // activity: the next beat a full second from now
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn reset(&mut self) {
        self.reset_after(self.period());
    }

    /// What happens when ticks were missed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::MissedTicks;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let beat = timer.interval(Duration::from_secs(1), MissedTicks::Skip)?;
    /// assert_eq!(beat.missed_tick_behavior(), MissedTicks::Skip);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn missed_tick_behavior(&self) -> MissedTicks {
        self.missed
    }

    /// Changes what happens when ticks are missed, from the next tick on.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::MissedTicks;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let mut beat = timer.interval(Duration::from_secs(1), MissedTicks::Skip)?;
    /// beat.set_missed_tick_behavior(MissedTicks::Delay);
    /// assert_eq!(beat.missed_tick_behavior(), MissedTicks::Delay);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn set_missed_tick_behavior(&mut self, missed: MissedTicks) {
        self.missed = missed;
    }
}

impl futures_core::Stream for Interval {
    type Item = Instant;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        self.get_mut().poll_tick(cx)
    }
}

impl<T: Send + 'static, E: Executor<T>> Timer<T, E> {
    /// Ticks every `period`, the first `period` from now, at a fixed rate
    /// on the grid `first + n × period`; `missed` says what happens when
    /// ticks were missed. The period rounds up to whole ticks. Feature
    /// `async`.
    ///
    /// # Errors
    ///
    /// [`ScheduleErrorKind::ZeroPeriod`](crate::timer::ScheduleErrorKind::ZeroPeriod)
    /// for a zero `period`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::MissedTicks;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let heartbeat = timer.interval(Duration::from_secs(1), MissedTicks::Skip)?;
    /// assert!(timer.interval(Duration::ZERO, MissedTicks::Skip).is_err());
    /// # drop(heartbeat);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn interval(
        &self,
        period: Duration,
        missed: MissedTicks,
    ) -> Result<Interval, ScheduleError<()>> {
        if period.is_zero() {
            return Err(ScheduleError::new(ScheduleErrorKind::ZeroPeriod, ()));
        }
        Ok(Interval::new(
            self.sleep(period),
            self.owner.shared.time.ticks_in(period),
            missed,
        ))
    }

    /// Ticks every `period` from `start`: the first tick at `start` (at
    /// once if it has passed), then on the grid `start + n × period`. As
    /// [`interval`](Self::interval) otherwise (which starts a period from
    /// now). Feature `async`.
    ///
    /// # Errors
    ///
    /// [`ScheduleErrorKind::ZeroPeriod`](crate::timer::ScheduleErrorKind::ZeroPeriod)
    /// for a zero `period`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tickwheel::timer::MissedTicks;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let now_and_every_second = timer.interval_at(Instant::now(), Duration::from_secs(1), MissedTicks::Skip)?;
    /// # drop(now_and_every_second);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn interval_at(
        &self,
        start: Instant,
        period: Duration,
        missed: MissedTicks,
    ) -> Result<Interval, ScheduleError<()>> {
        if period.is_zero() {
            return Err(ScheduleError::new(ScheduleErrorKind::ZeroPeriod, ()));
        }
        let period_ticks = self.owner.shared.time.ticks_in(period);
        let mut interval = Interval::new(self.sleep_until(start), period_ticks, missed);
        interval.place(start);
        Ok(interval)
    }
}

#[cfg(all(test, feature = "test-util", not(loom)))]
mod tests {
    use super::*;
    use crate::timer::{Clock, ManualClock};
    use alloc::vec::Vec;
    use core::task::Waker;
    use futures_core::Stream;

    /// A timer on a manual clock, timers due exactly at their deadline.
    fn manual() -> (ManualClock, Timer) {
        let clock = ManualClock::new();
        let timer = Timer::builder()
            .clock(clock.clone())
            .slack(Duration::ZERO)
            .build()
            .unwrap();
        (clock, timer)
    }

    #[test]
    fn an_interval_is_a_stream_of_its_due_instants() {
        let (clock, timer) = manual();
        let start = clock.now();
        let mut ticks = timer
            .interval(Duration::from_millis(2), MissedTicks::Skip)
            .unwrap();
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut ticks).poll_next(&mut cx).is_pending());
        clock.advance(Duration::from_millis(2));
        timer.sync();
        assert_eq!(
            Pin::new(&mut ticks).poll_next(&mut cx),
            Poll::Ready(Some(start + Duration::from_millis(2)))
        );
        assert_eq!(ticks.period(), Duration::from_millis(2));
    }

    /// A start before the timer was built (its tick 0): the grid stays
    /// `start + n × period`; the points before tick 0 come at once (all of
    /// them under `Burst`, the first otherwise). Before, the grid moved
    /// onto tick 0: the first tick said the timer's origin, `Burst` ran one
    /// tick instead of ten, and every later tick was off by the gap.
    #[test]
    fn a_start_before_the_timer_keeps_its_grid() {
        let ms = Duration::from_millis(1);
        for (missed, at_once) in [
            (MissedTicks::Burst, 10),
            (MissedTicks::Skip, 1),
            (MissedTicks::Delay, 1),
        ] {
            let (clock, timer) = manual();
            let origin = clock.now();
            let start = origin - 95 * ms;
            let mut ticks = timer.interval_at(start, 10 * ms, missed).unwrap();
            let mut cx = Context::from_waker(Waker::noop());
            let mut poll = |ticks: &mut Interval| match ticks.poll_tick(&mut cx) {
                Poll::Ready(at) => at,
                Poll::Pending => None,
            };
            let early: Vec<_> = (0..at_once).map(|_| poll(&mut ticks)).collect();
            let grid: Vec<_> = (0..at_once).map(|n| Some(start + 10 * ms * n)).collect();
            assert_eq!(early, grid, "{missed:?}");
            assert_eq!(
                poll(&mut ticks),
                None,
                "{missed:?}: a tick too many at once"
            );
            clock.advance(5 * ms);
            timer.sync();
            let next = poll(&mut ticks);
            match missed {
                // Back on the grid: start + 100 ms is tick 0 + 5 ms.
                MissedTicks::Burst | MissedTicks::Skip => {
                    assert_eq!(next, Some(origin + 5 * ms), "{missed:?}")
                }
                // Restarted a period after the missed tick.
                MissedTicks::Delay => {
                    assert_eq!(next, None);
                    clock.advance(5 * ms);
                    timer.sync();
                    assert_eq!(poll(&mut ticks), Some(origin + 10 * ms));
                }
            }
        }
    }
}
