//! Promises of the async layer (feature `async`) that did not hold, each
//! test failing before its fix: a sleep refused by a stopped timer and
//! `max_pending`, and a `tick()` future dropped after its tick came.

use core::task::Poll;
use core::time::Duration;

use tickwheel::timer::{Clock, ManualClock, MissedTicks};
use tickwheel::Timer;

use crate::sleep::{advance, counting, manual, poll, MS};

/// The bug: a sleep polled after `shutdown` is refused, and the refusal
/// gave back a `max_pending` reservation the sleep never took. The count
/// wrapped, and every later schedule said `Full` instead of `Shutdown`:
/// a producer that backs off and retries on `Full` retried for ever.
#[test]
fn a_sleep_refused_after_shutdown_leaves_schedules_saying_shutdown() {
    let timer = Timer::builder()
        .clock(ManualClock::new())
        .max_pending(10)
        .build()
        .unwrap();
    timer.shutdown();
    let (_, waker) = counting();
    let mut late = timer.sleep(Duration::from_secs(60));
    assert!(poll(&mut late, &waker).is_ready(), "the timer has stopped");
    let refused = timer.run_after(MS, || ()).unwrap_err();
    assert!(refused.is_shutdown(), "refused as {:?}", refused.kind());
}

/// The bug: a `tick()` future dropped after its tick came (a `select!`
/// branch that lost to another branch ready at the same wake-up) ended
/// the task's wait all the same, so the tick, polled once the other
/// branch was handled, counted as missed and `Delay` left its grid
/// (the next tick at 25 ms, not 20). Only a drop before the tick ends the
/// wait.
#[test]
fn a_tick_future_dropped_after_its_tick_leaves_it_awaited() {
    let (clock, timer) = manual(); // zero slack: any lateness counts
    let start = clock.now();
    let mut ticks = timer.interval(10 * MS, MissedTicks::Delay).unwrap();
    let (_, waker) = counting();
    let mut next = Box::pin(ticks.tick());
    assert!(poll(&mut next, &waker).is_pending(), "the task waits");
    advance(&clock, &timer, 10 * MS); // the tick comes and wakes the task
    drop(next); // the other branch won
    advance(&clock, &timer, 5 * MS); // and took 5 ms to handle
    let tick = poll(&mut Box::pin(ticks.tick()), &waker);
    assert_eq!(tick, Poll::Ready(Some(start + 10 * MS)));
    let tick = poll(&mut Box::pin(ticks.tick()), &waker);
    assert!(tick.is_pending(), "{tick:?}");
    advance(&clock, &timer, 5 * MS);
    let tick = poll(&mut Box::pin(ticks.tick()), &waker);
    assert_eq!(tick, Poll::Ready(Some(start + 20 * MS)), "off its grid");
}
