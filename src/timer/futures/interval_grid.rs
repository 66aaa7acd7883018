//! Where an [`Interval`](super::Interval)'s next tick falls: arithmetic
//! on the timer's ticks (its pure part tested here).
//!
//! # The schedule
//!
//! Ticks are due on a grid `start + n × period`, in whole ticks of the
//! timer. A tick is *missed* when it is polled more than the timer's slack
//! after it was due while the task was not waiting for it (tokio uses a
//! fixed 5 ms). A tick the task was waiting for (it polled before the tick
//! was due) is missed only if the next point has passed that way too: a
//! late wake-up by the driver must not move the schedule, or `Delay`
//! drifts by it every period. Ticks less than the slack late are not
//! missed, so points that close come at once, as tokio's within 5 ms.
//!
//! After a missed tick, polled at `now`:
//!
//! | policy  | next tick                                                   |
//! |---------|-------------------------------------------------------------|
//! | `Burst` | the next point of the grid: every missed one comes at once  |
//! | `Delay` | `now + period`, a new grid                                  |
//! | `Skip`  | the first point of the grid after `now`                     |
//!
//! Points of the grid before the timer's tick 0 (a start earlier than the
//! timer) cannot be expressed in ticks: they are owed at once (all under
//! `Burst`, the next one otherwise, by the policy at each poll). Then `Burst` goes on from the grid's
//! first point at or after tick 0, `Skip` from its first point after now
//! and `Delay` a period from now. That first point is found by remainder
//! in `u128` nanoseconds, never by multiplying the period, which once
//! overflowed a gap of `u32::MAX` periods into "never".

use core::time::Duration;
use std::time::Instant;

use super::filed::Sleeps;
use crate::timer::MissedTicks;
use crate::Tick;

/// Now in whole ticks: the tick it is in (`down`) and the first not
/// before it (`up`). A point is late only once `down` has passed it, and
/// a new schedule starts from `up`, so that rounding never makes a tick
/// missed or early. `at` is now itself, where such a schedule starts.
#[derive(Clone, Copy, Debug)]
pub(super) struct Now {
    pub(super) down: Tick,
    pub(super) up: Tick,
    pub(super) at: Instant,
}

impl Now {
    /// Now on `timer`'s clock.
    pub(super) fn of(timer: &dyn Sleeps) -> Now {
        Now::at(timer, timer.now())
    }

    /// The tick a grid whose points fall `offset` before their ticks has
    /// passed: its points up to that tick are not after now. `Skip` goes
    /// on from the first point after it (from `down`, it once answered a
    /// point already passed, up to a tick before now).
    pub(super) fn passed_by(self, timer: &dyn Sleeps, offset: Duration) -> Tick {
        self.at
            .checked_add(offset)
            .map_or(self.down, |at| Now::at(timer, at).down)
    }

    fn at(timer: &dyn Sleeps, at: Instant) -> Now {
        let up = timer.tick_at(at);
        let down = if up > 0 && timer.instant_of(up) > at {
            up - 1
        } else {
            up
        };
        Now { down, up, at }
    }
}

/// `Delay`'s new grid after a miss polled at `now`: its first tick, a
/// period from now, and how much earlier than that tick's start the
/// grid's own instant, `now + period`, falls (the grid's offset).
pub(super) fn delay_grid(timer: &dyn Sleeps, now: Now, period: Tick) -> (Tick, Duration) {
    let next = now.up.saturating_add(period);
    let offset = now
        .at
        .checked_add(timer.duration_of(period))
        .map_or(Duration::ZERO, |first| {
            timer.instant_of(next).saturating_duration_since(first)
        });
    (next, offset)
}

/// The tick after one due at `due` and polled at `now`; `awaited` if the
/// task was waiting for it.
pub(super) fn next_due(
    missed: MissedTicks,
    due: Tick,
    period: Tick,
    now: Now,
    slack: Tick,
    awaited: bool,
) -> Tick {
    let on_grid = due.saturating_add(period);
    // Points before this one are more than the slack late.
    let late_before = now.down.saturating_sub(slack);
    let was_missed = if awaited {
        on_grid < late_before
    } else {
        due < late_before
    };
    match missed {
        _ if !was_missed => on_grid,
        MissedTicks::Burst => on_grid,
        MissedTicks::Delay => now.up.saturating_add(period),
        MissedTicks::Skip => after(due, period, now.down),
    }
}

/// The first point of the grid `from + n × period` after `now` (`from`
/// itself if it is after `now`).
pub(super) fn after(from: Tick, period: Tick, now: Tick) -> Tick {
    match now.checked_sub(from) {
        None => from,
        Some(gone) => now.saturating_add(period - gone % period),
    }
}

/// For a grid of `period` that starts `before` the timer's tick 0: how
/// many of its points come before tick 0, and how long after tick 0 the
/// first of the others is.
pub(super) fn across_origin(before: Duration, period: Duration) -> (u128, Duration) {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    let (before, every) = (before.as_nanos(), period.as_nanos().max(1));
    let ahead = (every - before % every) % every;
    // Below `period`, so its seconds fit.
    let secs = u64::try_from(ahead / NANOS_PER_SEC).unwrap_or(u64::MAX);
    let nanos = u32::try_from(ahead % NANOS_PER_SEC).unwrap_or(0);
    (before.div_ceil(every), Duration::new(secs, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Now exactly on tick `t`.
    fn at(t: Tick) -> Now {
        let at = std::time::Instant::now();
        Now { down: t, up: t, at }
    }

    #[test]
    fn after_finds_the_first_point_strictly_after_now() {
        assert_eq!(after(100, 10, 50), 100);
        assert_eq!(after(100, 10, 100), 110);
        assert_eq!(after(100, 10, 105), 110);
        assert_eq!(after(100, 10, 110), 120);
        assert_eq!(after(0, 3, u64::MAX - 1), u64::MAX);
        assert_eq!(after(0, u64::MAX, 5), u64::MAX);
    }

    #[test]
    fn a_tick_is_missed_only_past_its_slack_and_unawaited() {
        use MissedTicks::{Burst, Delay, Skip};
        for missed in [Burst, Delay, Skip] {
            // Within the slack: on the grid, whatever the policy.
            assert_eq!(
                next_due(missed, 20, 10, at(60), 50, false),
                30,
                "{missed:?}"
            );
            // Awaited, and the next point within the slack: on the grid.
            assert_eq!(next_due(missed, 20, 10, at(75), 50, true), 30, "{missed:?}");
        }
        // Missed (busy to 210 with 50 of slack): from now, not from 160.
        assert_eq!(next_due(Burst, 20, 10, at(210), 50, false), 30);
        assert_eq!(next_due(Delay, 20, 10, at(213), 50, false), 223);
        assert_eq!(next_due(Skip, 20, 10, at(213), 50, false), 220);
        assert_eq!(next_due(Skip, 20, 10, at(210), 50, true), 220);
        assert_eq!(next_due(Skip, 20, 10, at(210), 0, false), 220);
        assert_eq!(next_due(Delay, 20, u64::MAX, at(30), 0, false), u64::MAX);
    }

    #[test]
    fn across_origin_needs_no_multiplication() {
        assert_eq!(across_origin(95 * MS, 10 * MS), (10, 5 * MS));
        assert_eq!(across_origin(100 * MS, 10 * MS), (10, Duration::ZERO));
        let two_hours = Duration::from_secs(7_200);
        let us = Duration::from_micros(1);
        assert_eq!(
            across_origin(two_hours, us),
            (7_200_000_000, Duration::ZERO)
        );
        assert_eq!(
            across_origin(Duration::MAX, Duration::MAX),
            (1, Duration::ZERO)
        );
        let (points, ahead) = across_origin(MS, Duration::MAX);
        assert_eq!((points, ahead), (1, Duration::MAX - MS));
    }
}
