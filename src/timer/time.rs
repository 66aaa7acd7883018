//! The time source: the one place that converts between the clock's
//! `Instant`s and the wheels' ticks.
//!
//! Wheels count ticks since the timer was built (its *origin*). Rounding
//! is what keeps the promise "never early":
//!
//! | conversion | rounds | why |
//! |------------|--------|-----|
//! | a deadline (`tick_at`, `deadline_after`) | up | a timer may fire only once its whole deadline has passed |
//! | the driver's "now" (`now_tick`) | down | a tick counts as passed only once it has fully passed |
//! | a period (`ticks_in`) | up, at least 1 | a repeating timer never runs more often than asked |
//! | a slack (`slack_ticks`) | down | a timer's window never ends later than asked |
//! | a tick back to an `Instant` (`instant_of`) | exact | the start of the tick |
//!
//! Arithmetic is in `u64` nanoseconds (584 years from the origin), which is
//! several times cheaper than `u128` and saturates instead of wrapping.

use alloc::sync::Arc;
use core::time::Duration;
use std::time::Instant;

use super::clock::Clock;
use crate::Tick;

/// The clock, the origin and the tick length.
pub(super) struct TimeSource {
    pub(super) clock: Arc<dyn Clock>,
    origin: Instant,
    tick_nanos: u64,
}

impl TimeSource {
    /// The shortest tick: below it, reading the clock costs more than a
    /// tick lasts.
    pub(super) const MIN_TICK: Duration = Duration::from_micros(1);
    /// The longest tick. A longer one would round even a short delay up to
    /// hours; coarse timers should use a long delay, not a long tick.
    pub(super) const MAX_TICK: Duration = Duration::from_secs(3_600);

    /// A time source whose tick 0 is the clock's current time.
    ///
    /// # Errors
    ///
    /// The tick, if it is outside `MIN_TICK ..= MAX_TICK`.
    pub(super) fn new(clock: Arc<dyn Clock>, tick: Duration) -> Result<Self, Duration> {
        if !(Self::MIN_TICK..=Self::MAX_TICK).contains(&tick) {
            return Err(tick);
        }
        let origin = clock.now();
        Ok(TimeSource {
            clock,
            origin,
            tick_nanos: tick.as_nanos() as u64, // at most an hour: fits
        })
    }

    /// The tick length.
    pub(super) fn tick(&self) -> Duration {
        Duration::from_nanos(self.tick_nanos)
    }

    /// The clock's current time.
    #[inline]
    pub(super) fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Nanoseconds from the origin to `instant` (0 before it), saturating.
    #[inline]
    fn nanos_since_origin(&self, instant: Instant) -> u64 {
        let since = instant.saturating_duration_since(self.origin);
        since
            .as_secs()
            .checked_mul(1_000_000_000)
            .and_then(|nanos| nanos.checked_add(u64::from(since.subsec_nanos())))
            .unwrap_or(u64::MAX)
    }

    /// The tick of `instant`, rounded up.
    #[inline]
    pub(super) fn tick_at(&self, instant: Instant) -> Tick {
        self.nanos_since_origin(instant).div_ceil(self.tick_nanos)
    }

    /// The tick of `delay` from now, rounded up.
    #[inline]
    pub(super) fn deadline_after(&self, delay: Duration) -> Tick {
        let now = self.nanos_since_origin(self.clock.now());
        let delay = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        now.saturating_add(delay).div_ceil(self.tick_nanos)
    }

    /// Whole ticks in `period`, rounded up, at least one.
    pub(super) fn ticks_in(&self, period: Duration) -> u64 {
        let ticks = period.as_nanos().div_ceil(u128::from(self.tick_nanos));
        u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
    }

    /// The current tick, rounded down (every tick up to it has fully
    /// passed), and rounded up (the first tick not before now).
    #[inline]
    pub(super) fn now_tick(&self) -> (Tick, Tick) {
        let nanos = self.nanos_since_origin(self.clock.now());
        (nanos / self.tick_nanos, nanos.div_ceil(self.tick_nanos))
    }

    /// Whole ticks in `slack`, rounded down (a window never ends after
    /// `deadline + slack`), saturating.
    pub(super) fn slack_ticks(&self, slack: Duration) -> u64 {
        let ticks = slack.as_nanos() / u128::from(self.tick_nanos);
        u64::try_from(ticks).unwrap_or(u64::MAX)
    }

    /// The length of `ticks` ticks (saturating).
    pub(super) fn duration_of(&self, ticks: u64) -> Duration {
        let nanos = u128::from(ticks) * u128::from(self.tick_nanos);
        u64::try_from(nanos).map_or(Duration::MAX, Duration::from_nanos)
    }

    /// The instant tick `tick` starts (far in the future if that overflows).
    pub(super) fn instant_of(&self, tick: Tick) -> Instant {
        let nanos = u128::from(tick) * u128::from(self.tick_nanos);
        let far = Duration::from_secs(u64::MAX / 4);
        let offset = u64::try_from(nanos).map_or(far, Duration::from_nanos);
        self.origin
            .checked_add(offset)
            .or_else(|| self.origin.checked_add(far))
            .unwrap_or(self.origin)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A clock that stands where it is put.
    struct Fixed(Mutex<Instant>);

    impl Clock for Fixed {
        fn now(&self) -> Instant {
            *self.0.lock().unwrap()
        }
        fn sleep_until(&self, _: Option<Instant>) {}
    }

    fn source(tick: Duration) -> (Arc<Fixed>, TimeSource, Instant) {
        let origin = Instant::now();
        let clock = Arc::new(Fixed(Mutex::new(origin)));
        let time = TimeSource::new(clock.clone(), tick).unwrap();
        (clock, time, origin)
    }

    const MS: Duration = Duration::from_millis(1);
    const US: Duration = Duration::from_micros(1);

    #[test]
    fn deadlines_round_up_and_now_rounds_down() {
        let (clock, time, origin) = source(MS);
        assert_eq!(time.tick_at(origin), 0);
        assert_eq!(time.tick_at(origin + US), 1);
        assert_eq!(time.tick_at(origin + MS), 1);
        assert_eq!(time.tick_at(origin + MS + US), 2);
        assert_eq!(time.tick_at(origin - MS), 0, "before the origin");
        *clock.0.lock().unwrap() = origin + 2 * MS + 300 * US;
        assert_eq!(time.now_tick(), (2, 3));
        assert_eq!(time.deadline_after(Duration::ZERO), 3);
        assert_eq!(time.deadline_after(700 * US), 3);
        assert_eq!(time.deadline_after(701 * US), 4);
        *clock.0.lock().unwrap() = origin + 5 * MS;
        assert_eq!(time.now_tick(), (5, 5), "on a tick boundary");
    }

    /// Whatever the clock says, a deadline's tick never starts before the
    /// deadline, and "now" never counts a tick that has not fully passed.
    #[test]
    fn conversions_never_make_a_timer_early() {
        for tick_us in [1, 7, 100, 1_000, 16_667] {
            let (clock, time, origin) = source(Duration::from_micros(tick_us));
            for offset_us in (0..50_000).step_by(997) {
                let at = origin + Duration::from_micros(offset_us);
                assert!(time.instant_of(time.tick_at(at)) >= at);
                *clock.0.lock().unwrap() = at;
                let (down, up) = time.now_tick();
                assert!(time.instant_of(down) <= at && time.instant_of(up) >= at);
                assert!(up - down <= 1);
                let delay = Duration::from_micros(offset_us / 3);
                assert!(time.instant_of(time.deadline_after(delay)) >= at + delay);
            }
        }
    }

    #[test]
    fn periods_round_up_to_at_least_one_tick() {
        let (_, time, _) = source(MS);
        assert_eq!(time.ticks_in(Duration::from_nanos(1)), 1);
        assert_eq!(time.ticks_in(MS), 1);
        assert_eq!(time.ticks_in(MS + US), 2);
        assert_eq!(time.ticks_in(Duration::MAX), u64::MAX);
    }

    #[test]
    fn slack_rounds_down_and_saturates() {
        let (_, time, _) = source(MS);
        assert_eq!(time.slack_ticks(Duration::ZERO), 0);
        assert_eq!(time.slack_ticks(MS - US), 0);
        assert_eq!(time.slack_ticks(3 * MS + 999 * US), 3);
        let (_, time, _) = source(US);
        assert_eq!(time.slack_ticks(Duration::MAX), u64::MAX);
    }

    #[test]
    fn extremes_saturate_instead_of_wrapping() {
        let (_, time, origin) = source(US);
        assert_eq!(time.deadline_after(Duration::MAX), u64::MAX.div_ceil(1_000));
        assert!(time.instant_of(Tick::MAX) > origin + Duration::from_secs(1 << 40));
    }

    #[test]
    fn ticks_outside_the_range_are_refused() {
        let clock: Arc<dyn Clock> = Arc::new(Fixed(Mutex::new(Instant::now())));
        for bad in [
            Duration::ZERO,
            Duration::from_nanos(999),
            TimeSource::MAX_TICK + US,
            Duration::MAX,
        ] {
            assert_eq!(TimeSource::new(clock.clone(), bad).err(), Some(bad));
        }
        for good in [TimeSource::MIN_TICK, MS, TimeSource::MAX_TICK] {
            assert!(TimeSource::new(clock.clone(), good).is_ok());
        }
    }
}
