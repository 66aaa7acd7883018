//! `Timer::interval` and `interval_at` (feature `async`), on the manual
//! clock and counting wakers of `sleep.rs`: the grid, missed ticks, a
//! stopped timer, and the calls users porting from `tokio::time` reach for.

use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::time::Instant;

use tickwheel::timer::{Clock, Elapsed, Interval, ManualClock, MissedTicks};
use tickwheel::Timer;

use crate::sleep::{advance, counting, manual, poll, MS};

const US: Duration = Duration::from_micros(1);

/// The instants of the ticks ready now, after `start` (at most 20).
fn ready(ticks: &mut Interval, start: Instant) -> Vec<Duration> {
    let (_, waker) = counting();
    let mut seen = Vec::new();
    while let Poll::Ready(Some(at)) = ticks.poll_tick(&mut Context::from_waker(&waker)) {
        seen.push(at.saturating_duration_since(start));
        assert!(seen.len() < 20, "ticks without end: {seen:?}");
    }
    seen
}

/// An interval keeps its grid, and after a gap follows its policy: every
/// missed tick at once (`Burst`), one then the grid (`Skip`), or one then a
/// new schedule from now (`Delay`).
#[test]
fn an_interval_keeps_its_grid_and_follows_its_missed_ticks() {
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

/// A start more than `u32::MAX` periods before the timer's tick 0 (2 h of
/// 1 µs): the grid goes on after the first tick. It stopped there: the
/// next point, found by a `u32` multiplication, fell back to the end of
/// time.
#[test]
fn an_interval_from_far_before_the_timer_goes_on_ticking() {
    let (clock, timer) = manual();
    let origin = clock.now();
    let start = origin - Duration::from_secs(7_200);
    let mut ticks = timer.interval_at(start, US, MissedTicks::Skip).unwrap();
    let (_, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    assert_eq!(ticks.poll_tick(&mut cx), Poll::Ready(Some(start)));
    advance(&clock, &timer, Duration::from_secs(60));
    assert_eq!(ticks.poll_tick(&mut cx), Poll::Ready(Some(origin + US)));
}

/// `Skip` from a start before the timer's tick 0, on a timer an hour old:
/// one tick at once, then the grid after now. It gave two at once, the
/// second an hour stale (the grid's first point after tick 0).
#[test]
fn skip_from_before_an_old_timer_ticks_once_then_keeps_to_now() {
    let (clock, timer) = manual();
    let origin = clock.now();
    advance(&clock, &timer, Duration::from_secs(3_600));
    let start = origin - 95 * MS;
    let mut ticks = timer
        .interval_at(start, 10 * MS, MissedTicks::Skip)
        .unwrap();
    assert_eq!(ready(&mut ticks, start), [Duration::ZERO]);
    advance(&clock, &timer, 5 * MS); // the grid: start + 10 ms × n
    let since = Duration::from_secs(3_600) + 100 * MS;
    assert_eq!(ready(&mut ticks, start), [since]);
}

/// `reset_after` a duration past the end of `Instant`: never ticks. It
/// ticked at once (the overflow fell back to now).
#[test]
fn an_interval_reset_after_forever_never_ticks() {
    let (clock, timer) = manual();
    let start = clock.now();
    let mut ticks = timer.interval(10 * MS, MissedTicks::Skip).unwrap();
    ticks.reset_after(Duration::MAX);
    assert_eq!(ready(&mut ticks, start), [Duration::ZERO; 0]);
    advance(&clock, &timer, Duration::from_secs(3_600));
    assert_eq!(
        ready(&mut ticks, start),
        [Duration::ZERO; 0],
        "overflow read as now"
    );
}

/// A manual timer with `slack`.
fn with_slack(slack: Duration) -> (ManualClock, Timer) {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(slack)
        .build()
        .unwrap();
    (clock, timer)
}

/// A missed tick (polled more than the slack after it was due, the task
/// not waiting): `Skip` gives it, then the first point after now. It
/// reckoned from `now - slack`, and every point in that window came at
/// once too: 11 ticks after 50 ms busy on a 100 µs grid with 1 ms slack.
#[test]
fn skip_after_a_missed_tick_goes_past_now_not_past_the_slack() {
    let (clock, timer) = with_slack(MS); // the default slack
    let start = clock.now();
    let mut ticks = timer.interval(100 * US, MissedTicks::Skip).unwrap();
    clock.advance(50 * MS); // busy
    timer.sync();
    assert_eq!(ready(&mut ticks, start), [100 * US]);

    let (clock, timer) = with_slack(50 * MS);
    let start = clock.now();
    let mut ticks = timer.interval(10 * MS, MissedTicks::Skip).unwrap();
    assert_eq!(ready(&mut ticks, start), [Duration::ZERO; 0]); // waiting
    clock.advance(10 * MS + US);
    timer.sync();
    assert_eq!(ready(&mut ticks, start), [10 * MS]);
    clock.advance(200 * MS); // busy past 20 ms, …, 210 ms
    timer.sync();
    assert_eq!(ready(&mut ticks, start), [20 * MS]);
    clock.advance(10 * MS);
    timer.sync();
    assert_eq!(ready(&mut ticks, start), [220 * MS]);
}

/// A `tick()` future dropped before its tick (a `select!` branch that
/// lost) ends the wait: a tick then found late is missed, and `Delay`
/// restarts from then. The task stayed "waiting" and `Delay` kept the
/// old grid.
#[test]
fn a_dropped_tick_future_ends_the_wait() {
    let (clock, timer) = manual();
    let origin = clock.now();
    let mut ticks = timer
        .interval_at(origin + 100 * MS, 100 * MS, MissedTicks::Delay)
        .unwrap();
    let (_, waker) = counting();
    assert!(poll(&mut Box::pin(ticks.tick()), &waker).is_pending());
    advance(&clock, &timer, 150 * MS);
    let tick = poll(&mut Box::pin(ticks.tick()), &waker);
    assert_eq!(tick, Poll::Ready(Some(origin + 100 * MS)));
    advance(&clock, &timer, 50 * MS + US);
    let tick = poll(&mut Box::pin(ticks.tick()), &waker);
    assert!(tick.is_pending(), "next at 250 ms, got {tick:?}");
    advance(&clock, &timer, 50 * MS);
    let tick = poll(&mut Box::pin(ticks.tick()), &waker);
    assert_eq!(tick, Poll::Ready(Some(origin + 250 * MS)));
}

/// A start before the timer was built (its tick 0): the grid stays
/// `start + n × period`; the points before tick 0 come at once (all of
/// them under `Burst`, the first otherwise). Before, the grid moved
/// onto tick 0: the first tick said the timer's origin, `Burst` ran one
/// tick instead of ten, and every later tick was off by the gap.
#[test]
fn a_start_before_the_timer_keeps_its_grid() {
    for (missed, at_once) in [
        (MissedTicks::Burst, 10),
        (MissedTicks::Skip, 1),
        (MissedTicks::Delay, 1),
    ] {
        let (clock, timer) = manual();
        let origin = clock.now();
        let start = origin - 95 * MS;
        let mut ticks = timer.interval_at(start, 10 * MS, missed).unwrap();
        let mut cx = Context::from_waker(core::task::Waker::noop());
        let mut poll = |ticks: &mut Interval| match ticks.poll_tick(&mut cx) {
            Poll::Ready(at) => at,
            Poll::Pending => None,
        };
        let early: Vec<_> = (0..at_once).map(|_| poll(&mut ticks)).collect();
        let grid: Vec<_> = (0..at_once).map(|n| Some(start + 10 * MS * n)).collect();
        assert_eq!(early, grid, "{missed:?}");
        assert_eq!(
            poll(&mut ticks),
            None,
            "{missed:?}: a tick too many at once"
        );
        clock.advance(5 * MS);
        timer.sync();
        let next = poll(&mut ticks);
        match missed {
            // Back on the grid: start + 100 MS is tick 0 + 5 MS.
            MissedTicks::Burst | MissedTicks::Skip => {
                assert_eq!(next, Some(origin + 5 * MS), "{missed:?}")
            }
            // Restarted a period after the missed tick.
            MissedTicks::Delay => {
                assert_eq!(next, None);
                clock.advance(5 * MS);
                timer.sync();
                assert_eq!(poll(&mut ticks), Some(origin + 10 * MS));
            }
        }
    }
}

/// A zero-slack timer on a manual clock, with a coarse `tick` if given.
fn coarse(tick: Option<Duration>) -> (ManualClock, Timer) {
    let clock = ManualClock::new();
    let builder = Timer::builder().clock(clock.clone()).slack(Duration::ZERO);
    let builder = match tick {
        Some(tick) => builder.tick(tick),
        None => builder,
    };
    (clock, builder.build().unwrap())
}

/// The bug: the next point, due exactly now, of a tick the task waited
/// for counted as missed (`<=` where `<` was meant): `Skip` jumped over
/// it and `Delay` moved the grid.
#[test]
fn a_point_due_exactly_now_is_not_missed() {
    for missed in [MissedTicks::Skip, MissedTicks::Delay] {
        let (clock, timer) = coarse(None);
        let start = clock.now();
        let mut ticks = timer.interval(2 * MS, missed).unwrap();
        let mut cx = Context::from_waker(core::task::Waker::noop());
        assert!(ticks.poll_tick(&mut cx).is_pending());
        clock.advance(4 * MS);
        timer.sync();
        assert_eq!(ticks.poll_tick(&mut cx), Poll::Ready(Some(start + 2 * MS)));
        let next = ticks.poll_tick(&mut cx).map(|t| t.map(|at| at - start));
        assert_eq!(next, Poll::Ready(Some(4 * MS)), "{missed:?}");
    }
}

/// The bug: now rounded up to a coarse tick made a waited-for tick look a
/// tick late: a 1 ms interval on a 1 ms tick, woken 50 µs after each
/// point, ran at half rate.
#[test]
fn a_coarse_tick_does_not_make_waited_ticks_missed() {
    for missed in [MissedTicks::Skip, MissedTicks::Delay] {
        let (clock, timer) = coarse(Some(MS));
        let start = clock.now();
        let mut ticks = timer.interval(MS, missed).unwrap();
        let mut cx = Context::from_waker(core::task::Waker::noop());
        clock.advance(50 * US);
        timer.sync();
        let mut got = Vec::new();
        for _ in 0..10 {
            if let Poll::Ready(Some(at)) = ticks.poll_tick(&mut cx) {
                got.push((at - start).as_millis());
            }
            clock.advance(MS);
            timer.sync();
        }
        assert_eq!(got, (1..=9).collect::<Vec<u128>>(), "{missed:?}");
    }
}

/// The bug: `Skip` reckoned from now rounded up to the tick, and so
/// skipped a point that had not come (20 ms, at 19.5 ms).
#[test]
fn skip_never_skips_a_point_that_has_not_come() {
    let (clock, timer) = coarse(Some(MS));
    let start = clock.now();
    let mut ticks = timer.interval(10 * MS, MissedTicks::Skip).unwrap();
    let mut cx = Context::from_waker(core::task::Waker::noop());
    clock.advance(19 * MS + 500 * US);
    timer.sync();
    assert_eq!(ticks.poll_tick(&mut cx), Poll::Ready(Some(start + 10 * MS)));
    clock.advance(500 * US);
    timer.sync();
    let next = ticks.poll_tick(&mut cx).map(|t| t.map(|at| at - start));
    assert_eq!(next, Poll::Ready(Some(20 * MS)));
}
