//! `Timer::interval` and `interval_at` (feature `async`), on the manual
//! clock and counting wakers of `sleep.rs`: the grid, missed ticks, a
//! stopped timer, and the calls users porting from `tokio::time` reach for.

use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::time::Instant;

use tickwheel::timer::{Clock, Elapsed};

use crate::sleep::{advance, counting, manual, poll, MS};

/// An interval keeps its grid, and after a gap follows its policy: every
/// missed tick at once (`Burst`), one then the grid (`Skip`), or one then a
/// new schedule from now (`Delay`).
#[test]
fn an_interval_keeps_its_grid_and_follows_its_missed_ticks() {
    use tickwheel::timer::MissedTicks;
    for (missed, after_gap) in [
        (MissedTicks::Burst, vec![20, 30, 40, 50]),
        (MissedTicks::Skip, vec![20, 50]),
        (MissedTicks::Delay, vec![20, 55]),
    ] {
        let (clock, timer) = manual();
        let start = clock.now();
        let mut ticks = timer.interval(10 * MS, missed).unwrap();
        let (_, waker) = counting();
        let due = |ticks: &mut tickwheel::timer::Interval| {
            let mut seen = Vec::new();
            while let Poll::Ready(Some(at)) = ticks.poll_tick(&mut Context::from_waker(&waker)) {
                seen.push(((at - start).as_millis()) as u64);
                assert!(seen.len() < 10, "{missed:?}: ticks without end");
            }
            seen
        };
        assert_eq!(due(&mut ticks), [0u64; 0], "{missed:?}: early");
        advance(&clock, &timer, 10 * MS);
        assert_eq!(due(&mut ticks), [10], "{missed:?}");
        advance(&clock, &timer, 35 * MS); // now 45 ms: 20, 30 and 40 missed
        let mut seen = due(&mut ticks);
        for _ in 0..14 {
            advance(&clock, &timer, MS); // up to 59 ms
            seen.extend(due(&mut ticks));
        }
        assert_eq!(seen, after_gap, "{missed:?}");
    }
    let (_clock, timer) = manual();
    assert!(timer.interval(Duration::ZERO, MissedTicks::Skip).is_err());
}

/// Today's bug: after `shutdown`, 1,000 ticks of a 1 s interval returned
/// at once with instants up to 1,000 s ahead. The interval ends instead.
#[test]
fn an_interval_on_a_stopped_timer_ends_and_never_answers_the_future() {
    let (clock, timer) = manual();
    let mut ticks = timer
        .interval(Duration::from_secs(1), tickwheel::timer::MissedTicks::Skip)
        .unwrap();
    let (_, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    assert!(ticks.poll_tick(&mut cx).is_pending());
    advance(&clock, &timer, Duration::from_secs(1));
    let first = ticks.poll_tick(&mut cx);
    assert!(
        matches!(first, Poll::Ready(Some(at)) if at <= clock.now()),
        "{first:?}"
    );
    timer.shutdown();
    for _ in 0..1_000 {
        assert_eq!(ticks.poll_tick(&mut cx), Poll::Ready(None));
    }
    use futures_core::Stream;
    assert_eq!(Pin::new(&mut ticks).poll_next(&mut cx), Poll::Ready(None));
}

/// Today's bug: a `MissedTicks::Delay` interval drifted although its task
/// never missed a tick (2 ms steps became 3.05 ms): every wake-up later
/// than the slack made the tick look missed. A tick the task was waiting
/// for is on the grid, however late the wake-up; one it was not waiting
/// for (the task was busy past it) restarts the schedule from then.
#[test]
fn an_awaited_delay_interval_stays_on_its_grid() {
    let (clock, timer) = manual(); // zero slack: any lateness counted
    let start = clock.now();
    let mut ticks = timer
        .interval(2 * MS, tickwheel::timer::MissedTicks::Delay)
        .unwrap();
    let (_, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    let late = Duration::from_micros(50);
    let mut got = Vec::new();
    for _ in 0..10 {
        assert!(ticks.poll_tick(&mut cx).is_pending(), "the task waits");
        advance(&clock, &timer, 2 * MS + late);
        match ticks.poll_tick(&mut cx) {
            Poll::Ready(Some(at)) => got.push(at - start),
            other => panic!("{other:?}"),
        }
    }
    let grid: Vec<Duration> = (1..=10).map(|k| k * 2 * MS).collect();
    assert_eq!(got, grid);
    // Busy past a tick, not waiting for it: `Delay` restarts from now.
    advance(&clock, &timer, 5 * MS);
    let now = clock.now() - start;
    assert!(matches!(ticks.poll_tick(&mut cx), Poll::Ready(Some(_))));
    assert!(ticks.poll_tick(&mut cx).is_pending());
    advance(&clock, &timer, 2 * MS);
    match ticks.poll_tick(&mut cx) {
        Poll::Ready(Some(at)) => assert_eq!(at - start, now + 2 * MS),
        other => panic!("{other:?}"),
    }
}

/// What users porting from `tokio::time` reach for: `interval_at` (first
/// tick at its start), `Interval::reset_at`/`reset_after`/`reset` (the
/// grid moves), the missed-tick behaviour getter and setter, and
/// `timeout_at`.
#[test]
fn tokio_style_interval_and_timeout_calls() {
    use tickwheel::timer::MissedTicks;
    let (clock, timer) = manual();
    let start = clock.now();
    let (_, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    let at = |p: Poll<Option<Instant>>| match p {
        Poll::Ready(Some(at)) => at - start,
        other => panic!("{other:?}"),
    };

    // First tick at the start, then every period.
    let mut ticks = timer
        .interval_at(start + 3 * MS, 10 * MS, MissedTicks::Skip)
        .unwrap();
    assert!(ticks.poll_tick(&mut cx).is_pending());
    advance(&clock, &timer, 3 * MS);
    assert_eq!(at(ticks.poll_tick(&mut cx)), 3 * MS);
    assert!(ticks.poll_tick(&mut cx).is_pending());
    advance(&clock, &timer, 10 * MS);
    assert_eq!(at(ticks.poll_tick(&mut cx)), 13 * MS);
    // A start in the past ticks at once.
    let mut now_and_then = timer
        .interval_at(start, 10 * MS, MissedTicks::Skip)
        .unwrap();
    assert_eq!(at(now_and_then.poll_tick(&mut cx)), Duration::ZERO);

    // reset_after / reset_at / reset move the grid (now 13 ms).
    ticks.reset_after(5 * MS);
    assert!(ticks.poll_tick(&mut cx).is_pending());
    advance(&clock, &timer, 5 * MS);
    assert_eq!(at(ticks.poll_tick(&mut cx)), 18 * MS);
    assert!(ticks.poll_tick(&mut cx).is_pending());
    ticks.reset_at(start + 21 * MS);
    advance(&clock, &timer, 3 * MS);
    assert_eq!(at(ticks.poll_tick(&mut cx)), 21 * MS);
    ticks.reset(); // a period from now (21 ms)
    advance(&clock, &timer, 9 * MS);
    assert!(ticks.poll_tick(&mut cx).is_pending());
    advance(&clock, &timer, MS);
    assert_eq!(at(ticks.poll_tick(&mut cx)), 31 * MS);

    assert_eq!(ticks.missed_tick_behavior(), MissedTicks::Skip);
    ticks.set_missed_tick_behavior(MissedTicks::Burst);
    assert_eq!(ticks.missed_tick_behavior(), MissedTicks::Burst);

    // timeout_at: the deadline is an instant.
    let mut late = Box::pin(timer.timeout_at(clock.now() + 2 * MS, core::future::pending::<()>()));
    assert!(poll(&mut late, &waker).is_pending());
    advance(&clock, &timer, 2 * MS);
    assert_eq!(poll(&mut late, &waker), Poll::Ready(Err(Elapsed)));
}
