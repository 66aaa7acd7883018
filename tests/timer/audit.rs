//! Defects found by an audit of the std layer and the async futures as a
//! user porting from `tokio::time` would use them. Each test names the
//! behaviour it checks and the promise it holds the code to.

use core::time::Duration;

use tickwheel::timer::{Clock, MissedTicks};

use crate::timers::{advance, channel_timer};

const US: Duration = Duration::from_micros(1);

/// `schedule_repeating_at` with `first` more than `u32::MAX` periods ago:
/// after the owed run, the grid `first + n × period` goes on ("run `n` is
/// due at `first + n × period`, no drift"). The next point was found by
/// multiplying the period by a `u32`; past that it fell back to a period
/// from now, off the grid (here 1 µs late). `Interval` finds it by
/// remainder (`interval_grid.rs`).
#[test]
fn a_repeating_timer_from_more_than_u32_max_periods_ago_stays_on_its_grid() {
    let (clock, timer, rx) = channel_timer::<u32>();
    let period = 2 * US;
    let now = clock.now();
    // 2^32 + 1/2 periods ago: the grid's next point is 1 µs from now.
    let first = now - (period * u32::MAX + period + US);
    let beat = timer
        .schedule_repeating_at(first, period, MissedTicks::Skip, || 7)
        .unwrap();
    advance(&clock, &timer, Duration::ZERO);
    assert_eq!(rx.try_recv(), Ok(7), "the owed run, at once");
    assert_eq!(timer.deadline(beat), Some(now + US), "back on the grid");
    advance(&clock, &timer, US);
    assert_eq!(rx.try_recv(), Ok(7), "the next point of the grid");
}
