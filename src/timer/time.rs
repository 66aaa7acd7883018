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
//! When the tick divides a second (the default 1 µs does), a deadline's
//! conversion divides no 64-bit number: whole seconds times ticks per
//! second, plus the sub-second nanoseconds divided by a multiply
//! (`Divider`). Sleeps convert a deadline each time they are made or reset.

use alloc::sync::Arc;
use core::time::Duration;
use std::time::Instant;

use super::clock::Clock;
use super::MAX_SLACK;
use crate::Tick;

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// The clock, the origin and the tick length.
pub(super) struct TimeSource {
    pub(super) clock: Arc<dyn Clock>,
    origin: Instant,
    tick_nanos: u64,
    /// Ticks per second, if the tick divides a second; else 0.
    per_second: u64,
    /// Divides sub-second nanoseconds by the tick (when `per_second > 0`).
    divider: Divider,
}

/// Division of any `u32` by a fixed divisor `d` as a multiply and a shift:
/// with `l = ceil(log2 d)` and `m = floor(2^(32 + l) / d) + 1`,
/// `floor(n / d) = (n × m) >> (32 + l)` for every `n < 2^32` (Granlund and
/// Montgomery, 1994, theorem 4.2). `m < 2^33` for `d < 2^32`, so the
/// product fits in a `u64` when `n < 2^31`, which is all it is used for.
#[derive(Debug, Clone, Copy)]
struct Divider {
    multiplier: u64,
    shift: u32,
}

impl Divider {
    /// For `1 <= d < 2^31`.
    fn new(d: u64) -> Self {
        debug_assert!((1..1 << 31).contains(&d));
        let l = u64::BITS - (d - 1).leading_zeros(); // ceil(log2 d)
        let shift = 32 + l;
        Divider {
            multiplier: ((1u128 << shift) / u128::from(d)) as u64 + 1,
            shift,
        }
    }

    /// `n / d`, for `n < 2^31`.
    #[inline]
    fn divide(self, n: u32) -> u64 {
        debug_assert!(n < 1 << 31);
        (u64::from(n) * self.multiplier) >> self.shift
    }
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
        let tick_nanos = tick.as_nanos() as u64; // at most an hour: fits
        let divides_a_second = NANOS_PER_SEC % tick_nanos == 0;
        Ok(TimeSource {
            clock,
            origin,
            tick_nanos,
            per_second: if divides_a_second {
                NANOS_PER_SEC / tick_nanos
            } else {
                0
            },
            divider: Divider::new(tick_nanos.min(NANOS_PER_SEC)),
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

    /// Time from the origin to `instant` (zero before it).
    #[inline]
    fn since_origin(&self, instant: Instant) -> Duration {
        instant.saturating_duration_since(self.origin)
    }

    /// Ticks in `span`, rounded up (`up`) or down, as whole `u64`
    /// nanoseconds saturating at `u64::MAX` would give them.
    #[inline]
    fn ticks(&self, span: Duration, up: bool) -> Tick {
        if self.per_second == 0 {
            let nanos = u64::try_from(span.as_nanos()).unwrap_or(u64::MAX);
            // At the horizon a deadline rounds one tick past the last
            // "now": when the tick divides `u64::MAX` the two once met, and
            // a `Duration::MAX` timer fired once the clock got there.
            return if up && nanos == u64::MAX {
                u64::MAX / self.tick_nanos + 1
            } else if up {
                nanos.div_ceil(self.tick_nanos)
            } else {
                nanos / self.tick_nanos
            };
        }
        // The tick divides a second, so it is at most 10^9 and a sub-second
        // count plus one tick stays under 2^31.
        let round = if up { self.tick_nanos as u32 - 1 } else { 0 };
        let part = self.divider.divide(span.subsec_nanos() + round);
        let whole = span.as_secs().saturating_mul(self.per_second);
        // Past u64::MAX nanoseconds, where the nanosecond count saturates.
        let cap = if up {
            u64::MAX / self.tick_nanos + 1
        } else {
            u64::MAX / self.tick_nanos
        };
        whole.saturating_add(part).min(cap)
    }

    /// The tick of `instant`, rounded up.
    #[inline]
    pub(super) fn tick_at(&self, instant: Instant) -> Tick {
        self.ticks(self.since_origin(instant), true)
    }

    /// The tick of `delay` from now, rounded up.
    #[inline]
    pub(super) fn deadline_after(&self, delay: Duration) -> Tick {
        let span = self.since_origin(self.clock.now()).saturating_add(delay);
        self.ticks(span, true)
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
        let span = self.since_origin(self.clock.now());
        (self.ticks(span, false), self.ticks(span, true))
    }

    /// Whole ticks in `slack`, rounded down (a window never ends after
    /// `deadline + slack`), at most [`MAX_SLACK`].
    pub(super) fn slack_ticks(&self, slack: Duration) -> u64 {
        let ticks = slack.min(MAX_SLACK).as_nanos() / u128::from(self.tick_nanos);
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

    /// The conversion without a 64-bit division gives what whole `u64`
    /// nanoseconds, saturating, divided by the tick give: for ticks that
    /// divide a second (the fast path) and ticks that do not, at sub-second
    /// edges, at random spans, and past 584 years.
    #[test]
    fn tick_conversion_matches_the_nanosecond_arithmetic() {
        let reference = |span: Duration, tick: u64, up: bool| {
            let nanos = u64::try_from(span.as_nanos()).unwrap_or(u64::MAX);
            if up {
                nanos.div_ceil(tick)
            } else {
                nanos / tick
            }
        };
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let ticks_us = [
            1, 2, 8, 10, 64, 125, 1_000, 3, 7, 16_667, 999_999, 1_000_000, 2_000_000,
        ];
        for tick_us in ticks_us {
            let (_, time, _) = source(Duration::from_micros(tick_us));
            let tick = tick_us * 1_000;
            let mut spans = alloc::vec![
                Duration::ZERO,
                Duration::MAX,
                Duration::from_nanos(u64::MAX)
            ];
            for secs in [0, 1, 59, 1 << 20, u64::MAX / 1_000_000_000, u64::MAX / 2] {
                for nanos in [0, 1, tick - 1, tick, tick + 1, 999_999_999, 500_000_000] {
                    spans.push(Duration::new(secs, (nanos % 1_000_000_000) as u32));
                }
            }
            for _ in 0..20_000 {
                let secs = random() >> (random() % 64);
                spans.push(Duration::new(secs, (random() % 1_000_000_000) as u32));
            }
            for span in spans {
                for up in [false, true] {
                    assert_eq!(
                        time.ticks(span, up),
                        reference(span, tick, up),
                        "{span:?} at a {tick} ns tick, up {up}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_divider_is_exact_below_2_pow_31() {
        for d in [
            1,
            2,
            3,
            7,
            1_000,
            1_024,
            16_667_000,
            999_999_999,
            1_000_000_000,
        ] {
            let divider = Divider::new(d);
            for n in (0..1u32 << 31)
                .step_by(99_991)
                .chain([(1 << 31) - 1, d as u32, d as u32 - 1])
            {
                assert_eq!(divider.divide(n), u64::from(n) / d, "{n} / {d}");
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
    fn slack_rounds_down_and_stops_at_max_slack() {
        let (_, time, _) = source(MS);
        assert_eq!(time.slack_ticks(Duration::ZERO), 0);
        assert_eq!(time.slack_ticks(MS - US), 0);
        assert_eq!(time.slack_ticks(3 * MS + 999 * US), 3);
        let (_, time, _) = source(US);
        assert_eq!(time.slack_ticks(Duration::MAX), 3_600_000_000);
        assert_eq!(time.slack_ticks(MAX_SLACK), 3_600_000_000);
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
