//! The async futures layer audited as a demanding user would use it
//! (feature `async`): `Sleep`, `Timeout` and `Interval` against their
//! docs and `tokio::time`'s semantics where they claim it. Each test
//! failed before its fix.

use core::task::{Context, Poll};

use tickwheel::timer::{Clock, MissedTicks};

use crate::sleep::{counting, manual, MS};

/// The bug: `set_missed_tick_behavior` applies "from the next tick on",
/// but the points of an `interval_at` grid before the timer was built
/// were counted once, under the policy the interval was made with. An
/// interval made `Burst` and switched to `Skip` still delivered every
/// owed point at once (here nine, from a start 100 ms back; from a day
/// back at 1 ms, 86 million), where `Skip` gives the one due and then
/// the first point after now, as tokio's does after the switch.
#[test]
fn a_policy_set_after_an_early_start_applies_to_the_owed_ticks() {
    let (clock, timer) = manual();
    let origin = clock.now();
    let mut ticks = timer
        .interval_at(origin - 100 * MS, 10 * MS, MissedTicks::Burst)
        .unwrap();
    let (_, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    assert_eq!(
        ticks.poll_tick(&mut cx),
        Poll::Ready(Some(origin - 100 * MS))
    );
    ticks.set_missed_tick_behavior(MissedTicks::Skip);
    assert_eq!(
        ticks.poll_tick(&mut cx),
        Poll::Ready(Some(origin - 90 * MS))
    );
    let next = ticks.poll_tick(&mut cx);
    assert!(next.is_pending(), "Skip gave an owed point: {next:?}");

    // The other way: made `Skip`, switched to `Burst`, every point owed
    // comes, then the grid from tick 0 on.
    let mut ticks = timer
        .interval_at(origin - 30 * MS, 10 * MS, MissedTicks::Skip)
        .unwrap();
    ticks.set_missed_tick_behavior(MissedTicks::Burst);
    for back in [30, 20, 10, 0] {
        assert_eq!(
            ticks.poll_tick(&mut cx),
            Poll::Ready(Some(origin - back * MS)),
            "{back} ms back"
        );
    }
    assert!(ticks.poll_tick(&mut cx).is_pending());
}
