//! Per-timer slack: how late a timer may fire, spent on waking less
//! often. The algorithm is [`coalesce`], documented there.

use crate::Tick;

/// The tick in `[deadline, deadline + slack]` with the most trailing zero
/// bits: where a timer with that deadline and slack is filed so that it
/// shares its tick with as many others as it can.
///
/// A timer with deadline `d` and slack `s` may fire at any tick of its
/// *window* `[d, d + s]` (`d + s` saturates at `Tick::MAX`). The tick
/// chosen is the window's upper end with every bit below the highest bit
/// in which `d` and `d + s` differ cleared, or `d` itself if it is rounder
/// still. It is a multiple of the largest power of two that any tick of
/// the window is a multiple of, so timers whose windows overlap tend to
/// pick the same tick, and a tickless driver that sleeps until
/// [`Wheel::next_expiration`](super::Wheel::next_expiration) wakes once for
/// all of them. A timer with zero slack keeps its exact deadline, so it
/// neither pays for nor disturbs the coalescing of the others.
///
/// O(1) and pure: nothing is stored beside the timer, whose filed deadline
/// is the chosen tick. Linux's timer wheel did the same (`apply_slack` in
/// `kernel/timer.c`, before 4.8); the name *slack* is Linux's too
/// (`timer_slack_ns`, and the range of `hrtimer_start_range_ns`). Apple's
/// GCD calls it *leeway* and Windows' waitable timers *tolerable delay*;
/// this crate says slack everywhere.
///
/// ```
/// use tickwheel::wheel::coalesce;
///
/// assert_eq!(coalesce(1_000, 0), 1_000); // no slack: exact
/// assert_eq!(coalesce(1_000, 30), 1_024); // 1024 = 2^10 lies in [1000, 1030]
/// assert_eq!(coalesce(1_001, 20), 1_008); // [1001, 1021]: 1008 = 2^4 · 63
/// for deadline in [0, 7, 1_000, 123_456] {
///     let tick = coalesce(deadline, 100);
///     assert!(deadline <= tick && tick <= deadline + 100);
/// }
/// ```
#[inline]
#[must_use]
pub const fn coalesce(deadline: Tick, slack: Tick) -> Tick {
    let limit = deadline.saturating_add(slack);
    let differing = deadline ^ limit;
    if differing == 0 {
        return deadline;
    }
    // `limit` has a 1 at the highest differing bit and `deadline` a 0, so
    // clearing every bit below it keeps the tick above `deadline`; only
    // `deadline` itself can be rounder, when those bits are all 0 in it.
    let below = (1 << (63 - differing.leading_zeros())) - 1;
    if deadline & below == 0 {
        deadline
    } else {
        limit & !below
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The most trailing zeros of any tick in `[low, high]`, the slow way:
    /// the largest power of two with a multiple in the range.
    fn best_alignment(low: Tick, high: Tick) -> u32 {
        (0..64)
            .rev()
            .find(|&bits| {
                let step = 1u64 << bits;
                // The first multiple of `step` at or after `low`.
                low.checked_next_multiple_of(step)
                    .is_some_and(|multiple| multiple <= high)
            })
            .unwrap_or(0)
    }

    proptest! {
        // Under miri, XorShift draws the cases: proptest's default ChaCha
        // took most of the interpreter's time.
        #![proptest_config(ProptestConfig {
            cases: if cfg!(miri) { 50 } else { 4_096 },
            rng_algorithm: if cfg!(miri) {
                proptest::test_runner::RngAlgorithm::XorShift
            } else {
                proptest::test_runner::RngAlgorithm::default()
            },
            ..ProptestConfig::default()
        })]

        #[test]
        fn the_tick_is_in_the_window_and_as_round_as_any(
            deadline in any::<u64>(),
            slack in prop_oneof![0u64..2_000, any::<u64>()],
        ) {
            let tick = coalesce(deadline, slack);
            let limit = deadline.saturating_add(slack);
            prop_assert!(deadline <= tick && tick <= limit, "{tick} outside [{deadline}, {limit}]");
            prop_assert!(tick.trailing_zeros() >= best_alignment(deadline, limit));
        }
    }

    #[test]
    fn zero_slack_and_the_top_of_the_range() {
        assert_eq!(coalesce(12_345, 0), 12_345);
        assert_eq!(coalesce(Tick::MAX, 5), Tick::MAX);
        assert_eq!(coalesce(Tick::MAX - 3, 100), Tick::MAX - 3); // rounder than MAX
        assert_eq!(coalesce(0, 1_000), 0);
        assert_eq!(coalesce(1_024, 1_000), 1_024);
        assert_eq!(coalesce(1_025, 1_000), 1_536);
    }
}
