//! The async futures layer audited as a demanding user would use it
//! (feature `async`): `Sleep`, `Timeout` and `Interval` against their
//! docs and `tokio::time`'s semantics where they claim it. Each test
//! failed before its fix.

use core::future::Future;
use core::task::{Context, Poll};
use core::time::Duration;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Mutex;

use tickwheel::timer::{Clock, Elapsed, Expired, ManualClock, MissedTicks, Task, ThreadPool};
use tickwheel::Timer;

use crate::sleep::{counting, manual, poll, MS};
use crate::timers::wait_for;

const US: Duration = Duration::from_micros(1);

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
/// A timer of `u32`s on a manual clock whose executor holds the driver in
/// its hand-off of [`GATE`] until the test sends on the returned `open`
/// (`entered` says it is held): a stop then waits for the driver before
/// it drains the wheels.
fn gated() -> (ManualClock, Timer<u32, Gate>, Receiver<()>, Sender<()>) {
    let clock = ManualClock::new();
    let (entered_tx, entered) = mpsc::channel();
    let (open, open_rx) = mpsc::channel::<()>();
    let gate = Mutex::new((entered_tx, open_rx));
    let executor: Gate = Box::new(move |fired| {
        if fired.value == GATE {
            let gate = gate.lock().unwrap();
            gate.0.send(()).unwrap();
            let _ = gate.1.recv_timeout(Duration::from_secs(30));
        }
    });
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .shards(1)
        .executor(executor)
        .build()
        .unwrap();
    (clock, timer, entered, open)
}

const GATE: u32 = u32::MAX;
type Gate = Box<dyn Fn(Expired<u32>) + Send + Sync>;

/// The bug: "a poll that finds the timer stopped completes" held only
/// once the stop's drain had taken the sleep's entry, and the drain comes
/// after the driver exits. While a stop waited for a driver busy in a
/// hand-off, a pending sleep polled again said `Pending` (though
/// `is_elapsed` said `true`), a `Timeout` did not say `Elapsed` and an
/// `Interval` did not end: each waited for the driver.
#[test]
fn a_poll_during_a_stop_completes_before_the_drain() {
    let (clock, timer, entered, open) = gated();
    let (_, waker) = counting();
    let mut sleep = timer.sleep(Duration::from_secs(60));
    let mut timeout =
        Box::pin(timer.timeout(Duration::from_secs(60), core::future::pending::<()>()));
    let mut ticks = timer
        .interval(Duration::from_secs(60), MissedTicks::Skip)
        .unwrap();
    let mut cx = Context::from_waker(&waker);
    assert!(poll(&mut sleep, &waker).is_pending());
    assert!(timeout.as_mut().poll(&mut cx).is_pending());
    assert!(ticks.poll_tick(&mut cx).is_pending());
    timer.schedule(MS, GATE).unwrap();
    clock.advance(MS);
    entered.recv_timeout(Duration::from_secs(10)).unwrap();
    let stopping = timer.clone();
    let stop = std::thread::spawn(move || stopping.shutdown());
    wait_for("the stop to begin", || sleep.is_elapsed());
    let polled = (
        poll(&mut sleep, &waker),
        timeout.as_mut().poll(&mut cx),
        ticks.poll_tick(&mut cx),
    );
    open.send(()).unwrap();
    stop.join().unwrap();
    assert_eq!(
        polled,
        (
            Poll::Ready(()),
            Poll::Ready(Err(Elapsed)),
            Poll::Ready(None)
        )
    );
}

/// The bug: `interval` (the first tick a period from now, then on that
/// grid) and `reset_after` / `reset` (the next tick `after` from now)
/// answered the instants of the timer's ticks they rounded up to, not
/// their own: at 0.4 ms on a 1 ms tick, a 10 ms interval answered 11
/// and 21 ms, where it was due at 10.4 and 20.4 ms (as tokio's answers,
/// and as `interval_at` and `reset_at` already did). Only the answered
/// instants move; the wake-ups stay on the ticks.
#[test]
fn interval_and_reset_after_answer_their_own_instants() {
    let (clock, timer) = coarse();
    let origin = clock.now();
    let (_, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    let step = |by: Duration| {
        clock.advance(by);
        timer.sync();
    };
    step(US * 400);
    let mut ticks = timer.interval(10 * MS, MissedTicks::Burst).unwrap();
    let mut beat = timer.interval(10 * MS, MissedTicks::Burst).unwrap();
    beat.reset_after(5 * MS);
    step(MS * 5 + US * 600); // 6 ms: the tick after 5.4 ms
    assert_eq!(
        beat.poll_tick(&mut cx),
        Poll::Ready(Some(origin + US * 5_400))
    );
    beat.reset(); // at 6 ms: the next at 16 ms, on a tick already
    step(5 * MS); // 11 ms
    assert_eq!(
        ticks.poll_tick(&mut cx),
        Poll::Ready(Some(origin + US * 10_400))
    );
    step(5 * MS); // 16 ms
    assert_eq!(beat.poll_tick(&mut cx), Poll::Ready(Some(origin + 16 * MS)));
    step(5 * MS); // 21 ms
    assert_eq!(
        ticks.poll_tick(&mut cx),
        Poll::Ready(Some(origin + US * 20_400))
    );
    assert!(ticks.poll_tick(&mut cx).is_pending());
}

/// The bug: after a missed tick `Delay` starts a new grid "a period from
/// now", but it answered the instants of the ticks that grid rounded up
/// to: a tick missed and polled at 25.4 ms on a 1 ms tick, 10 ms apart,
/// made the next answer 36 ms, where it was due at 35.4 ms (tokio's
/// `now + period`). The same after the points owed from a start before
/// the timer was built.
#[test]
fn delay_answers_the_instants_of_its_new_grid() {
    let (clock, timer) = coarse();
    let origin = clock.now();
    let (_, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    let step = |by: Duration| {
        clock.advance(by);
        timer.sync();
    };
    let mut ticks = timer.interval(10 * MS, MissedTicks::Delay).unwrap();
    let mut early = timer
        .interval_at(origin - 30 * MS, 10 * MS, MissedTicks::Delay)
        .unwrap();
    step(US * 400);
    assert_eq!(
        early.poll_tick(&mut cx),
        Poll::Ready(Some(origin - 30 * MS))
    );
    step(US * 25_000); // 25.4 ms: the tick due at 10 ms is missed
    assert_eq!(
        ticks.poll_tick(&mut cx),
        Poll::Ready(Some(origin + 10 * MS))
    );
    assert_eq!(
        early.poll_tick(&mut cx),
        Poll::Ready(Some(origin + US * 10_400))
    );
    step(US * 10_600); // 36 ms
    assert_eq!(
        ticks.poll_tick(&mut cx),
        Poll::Ready(Some(origin + US * 35_400))
    );
    step(10 * MS); // 46 ms
    assert_eq!(
        ticks.poll_tick(&mut cx),
        Poll::Ready(Some(origin + US * 45_400))
    );
    assert!(ticks.poll_tick(&mut cx).is_pending());
}

/// `Skip` goes on from the first point of the grid after now, as its docs
/// and tokio's say, also on a grid between two ticks: a 10 ms grid at
/// 0.4 ms past the tick, missed and polled at 20.7 ms, next answers
/// 30.4 ms. It answered 20.4 ms (at 21 ms), a point already passed when
/// it skipped, because it looked for the first point after now in whole
/// ticks (that point's tick, 21 ms, was after now).
#[test]
fn skip_goes_on_from_the_first_point_after_now_between_ticks() {
    let (clock, timer) = coarse();
    let origin = clock.now();
    let (_, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    let mut ticks = timer
        .interval_at(origin + US * 400, 10 * MS, MissedTicks::Skip)
        .unwrap();
    clock.advance(US * 20_700);
    timer.sync();
    assert_eq!(
        ticks.poll_tick(&mut cx),
        Poll::Ready(Some(origin + US * 400))
    );
    let next = ticks.poll_tick(&mut cx);
    assert!(next.is_pending(), "a point already passed: {next:?}");
    clock.advance(US * 10_300); // 31 ms, the tick of 30.4 ms
    timer.sync();
    assert_eq!(
        ticks.poll_tick(&mut cx),
        Poll::Ready(Some(origin + US * 30_400))
    );
}

/// A timer on a manual clock with a 1 ms tick and no slack: grids placed
/// between its ticks.
fn coarse() -> (ManualClock, Timer<Task, ThreadPool>) {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .clock(clock.clone())
        .tick(MS)
        .slack(Duration::ZERO)
        .build()
        .unwrap();
    (clock, timer)
}
