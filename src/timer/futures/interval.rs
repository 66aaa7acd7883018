//! [`Interval`]: ticks at a fixed rate, on one reused [`Sleep`] (feature
//! `async`).

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::time::Instant;

use super::interval_grid::{across_origin, after, delay_grid, next_due, Now};
use super::next_tick::NextTick;
use super::sleep::Sleep;
use crate::timer::executor::Executor;
use crate::timer::{MissedTicks, ScheduleError, ScheduleErrorKind, Timer};
use crate::Tick;

/// A stream of ticks every `period`: [`Timer::interval`]. Each
/// [`tick`](Self::tick) completes at the next point of its schedule, and
/// [`MissedTicks`] says what happens when ticks were missed: run them all
/// at once (`Burst`), restart the schedule a period from now (`Delay`), or
/// skip to the first point of the grid after now (`Skip`). A tick counts
/// as missed when it is polled more than the timer's slack after it was
/// due while the task was not waiting for it (tokio uses a fixed 5 ms);
/// one the task was waiting for is not missed however late the wake-up,
/// unless the next point has passed that way too. It is a
/// `futures_core::Stream` of the instants each tick was due, and reuses
/// one sleep for every tick.
///
/// When the timer stops (shut down, or its last handle dropped) the
/// interval ends: [`tick`](Self::tick) answers `None` and the stream
/// ends, at once and on every later call. It never answers an instant
/// that has not come.
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
    missed: MissedTicks,
    /// The task polled for the coming tick before it was due (from a
    /// `Pending` poll until the tick, or until a `tick()` future is
    /// dropped): that tick is not missed, however late the wake-up.
    waiting: bool,
    /// Points of the grid before the timer's tick 0, which ticks cannot
    /// express (a start earlier than the timer): the next one and how many
    /// are still to come at once (under `Burst`), before the ticks' grid.
    early: Option<(Instant, u64)>,
    /// How much earlier than the start of its tick each point of the grid
    /// falls (under a tick): a grid placed between two of the timer's
    /// ticks answers its own instants, not the ticks' (tokio's `tick`
    /// answers `start + n × period`).
    offset: Duration,
}

impl Interval {
    /// Waits for the next tick; returns the instant it was due, or `None`
    /// once the timer has stopped (then at once, every time). Dropped
    /// before the tick (a lost `select!` branch), the future ends the
    /// task's wait: a tick then polled late counts as missed.
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
        NextTick::new(self)
    }

    /// Polls for the next tick: the instant it was due, once it is;
    /// `None` once the timer has stopped.
    ///
    /// The task counts as waiting for the tick from a `Pending` poll until
    /// the tick, so a late wake-up does not make it missed. A dropped
    /// [`tick`](Self::tick) future ends the wait; a task that stops
    /// calling `poll_tick` (or `next()`) cannot be seen, and still counts
    /// as waiting.
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
        let now = Now::of(&**timer);
        let slack = timer.slack(self.sleep.class);
        let due_at = timer.instant_of(due);
        let due_at = due_at.checked_sub(self.offset).unwrap_or(due_at);
        let mut next = next_due(self.missed, due, self.period, now, slack, awaited);
        // Skipping: from the first point after now by the grid's own instants.
        if self.missed == MissedTicks::Skip && next != due.saturating_add(self.period) {
            next = after(due, self.period, now.passed_by(&**timer, self.offset));
        }
        if next != due.saturating_add(self.period) && self.missed == MissedTicks::Delay {
            // A new grid, a period from now, on its own instants.
            (_, self.offset) = delay_grid(&**timer, now, self.period);
        }
        self.sleep.reset_tick(next);
        Poll::Ready(Some(due_at))
    }

    /// The period, rounded up to whole ticks of the timer (saturating at
    /// [`Duration::MAX`]).
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
        self.sleep.timer.duration_of(self.period)
    }
}

impl Interval {
    /// A [`tick`](Self::tick) future that was waiting was dropped: the
    /// wait ends, unless the tick came first. Then the task waited for
    /// it, and the drop (a `select!` branch that lost to one ready at the
    /// same wake-up) must not make it missed.
    pub(super) fn end_wait(&mut self) {
        if !self.sleep.is_elapsed() {
            self.waiting = false;
        }
    }

    fn new(sleep: Sleep, period: Tick, missed: MissedTicks) -> Interval {
        Interval {
            sleep,
            period,
            missed,
            waiting: false,
            early: None,
            offset: Duration::ZERO,
        }
    }

    /// Starts the grid at `first`, with the points before the timer's
    /// tick 0 owed at once (`interval_grid.rs`).
    fn place(&mut self, first: Instant) {
        let timer = &self.sleep.timer;
        let origin = timer.instant_of(0);
        let Some(before) = origin
            .checked_duration_since(first)
            .filter(|d| !d.is_zero())
        else {
            let tick = timer.tick_at(first);
            let offset = timer.instant_of(tick).saturating_duration_since(first);
            self.restart(tick);
            self.offset = offset;
            return;
        };
        let (points, ahead) = across_origin(before, self.period());
        // Past the end of `Instant`: never.
        let first_after = origin.checked_add(ahead);
        let on_grid = first_after.map_or(Tick::MAX, |at| timer.tick_at(at));
        let offset = first_after.map_or(Duration::ZERO, |at| {
            timer.instant_of(on_grid).saturating_duration_since(at)
        });
        self.restart(on_grid);
        self.offset = offset;
        // All of them: the policy when each comes says how many are given
        // (`set_missed_tick_behavior` may change it meanwhile).
        let owed = u64::try_from(points).unwrap_or(u64::MAX);
        self.early = Some((first, owed));
    }

    /// The next tick at `deadline`, the grid from there, nothing owed.
    fn restart(&mut self, deadline: Tick) {
        self.sleep.reset_tick(deadline);
        self.early = None;
        self.waiting = false;
        self.offset = Duration::ZERO;
    }

    /// Yields the early point `at`, `left` of them still owed (`None` once
    /// stopped): `Burst` gives every one, `Skip` and `Delay` this one, by
    /// the policy now; then the grid goes on as after any missed tick.
    fn early_tick(&mut self, at: Instant, left: u64) -> Option<Instant> {
        let timer = &self.sleep.timer;
        if timer.is_stopped() {
            return None;
        }
        let burst = self.missed == MissedTicks::Burst;
        let next = at.checked_add(self.period()).filter(|_| burst && left > 1);
        self.early = next.map(|next| (next, left - 1));
        if self.early.is_none() {
            let timer = &*self.sleep.timer;
            let now = Now::of(timer);
            match self.missed {
                MissedTicks::Burst => {}
                MissedTicks::Delay => {
                    let (next, offset) = delay_grid(timer, now, self.period);
                    self.sleep.reset_tick(next);
                    self.offset = offset;
                }
                MissedTicks::Skip => {
                    let passed = now.passed_by(timer, self.offset);
                    let next = after(self.sleep.deadline, self.period, passed);
                    self.sleep.reset_tick(next);
                }
            }
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
        let timer = &self.sleep.timer;
        match timer.now().checked_add(after) {
            // Its own instant, which may fall between two ticks.
            Some(first) => self.place(first),
            // Past the end of `Instant`: saturates as `Timer::sleep`
            // does, far means never, not now.
            None => self.restart(timer.deadline_after(after)),
        }
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

/// The task counts as waiting from a `Pending` poll until the tick, as
/// with [`Interval::poll_tick`]; a stream abandoned between polls cannot
/// be seen.
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
        let period_ticks = self.owner.shared.time.ticks_in(period);
        let mut interval = Interval::new(self.sleep(period), period_ticks, missed);
        // On the grid from now + period itself, not from the tick it
        // rounds up to.
        interval.reset_after(period);
        Ok(interval)
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

    /// `Burst` from more than `u32::MAX` periods before tick 0: after the
    /// owed points (skipped to the last here), the grid goes on from tick
    /// 0. It went on from the end of time, as `Skip` did.
    #[test]
    fn burst_from_far_before_the_timer_goes_on_after_the_owed_ticks() {
        let (clock, timer) = manual();
        let origin = clock.now();
        let (us, two_hours) = (Duration::from_micros(1), Duration::from_secs(7_200));
        let mut ticks = timer
            .interval_at(origin - two_hours, us, MissedTicks::Burst)
            .unwrap();
        assert_eq!(ticks.early, Some((origin - two_hours, 7_200_000_000)));
        ticks.early = Some((origin - us, 1));
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(ticks.poll_tick(&mut cx), Poll::Ready(Some(origin - us)));
        clock.advance(Duration::from_secs(60));
        timer.sync();
        assert_eq!(ticks.poll_tick(&mut cx), Poll::Ready(Some(origin)));
        assert_eq!(ticks.poll_tick(&mut cx), Poll::Ready(Some(origin + us)));
    }

    /// Before: `period` was the gap between two instants, the later one
    /// capped far ahead of the clock's origin, so a huge period read as
    /// some unrelated length.
    #[test]
    fn a_huge_period_reads_as_the_longest_duration() {
        let (_clock, timer) = manual();
        let ticks = timer.interval(Duration::MAX, MissedTicks::Skip).unwrap();
        assert_eq!(ticks.period(), Duration::MAX);
        let ticks = timer
            .interval(Duration::from_secs(3_600), MissedTicks::Skip)
            .unwrap();
        assert_eq!(ticks.period(), Duration::from_secs(3_600));
    }
}
