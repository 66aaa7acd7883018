//! Stops that hand back, wake and wait for everything they promise, and
//! repeating grids and intervals that keep the instants they were given.
//! Each test names the behaviour it checks and the promise it holds the
//! code to; each failed before its fix.

use alloc::sync::Arc;
use alloc::task::Wake;
use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::task::{Context, Waker};
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

/// A waker whose `wake` panics (runtime code the timer does not control).
struct PanickingWake;

impl Wake for PanickingWake {
    fn wake(self: Arc<Self>) {
        panic!("a waker that panics");
    }
}

/// A waker that counts its wake-ups.
#[derive(Default)]
struct CountingWake(AtomicUsize);

impl Wake for CountingWake {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// `shutdown` wakes every filed sleep ("stopping the timer wakes every
/// filed sleep") and returns every unfired value ("stops the driver and
/// returns every timer that has not fired"). A sleep's waker that panics
/// when woken there is runtime code like a waker the driver wakes, whose
/// panic is caught and counted (`hand_off.rs`): it must not take the
/// other sleeps' wake-ups and the unfired values with it. `shutdown`
/// panicked instead: the values never came back and the other sleep's
/// task was never woken (it would hang).
#[test]
fn shutdown_returns_every_value_and_wakes_every_sleep_when_a_waker_panics() {
    let (_clock, timer, _rx) = channel_timer::<u32>();
    timer.schedule(Duration::from_secs(60), 1).unwrap();
    let panicking = Waker::from(Arc::new(PanickingWake));
    let mut bad = timer.sleep(Duration::from_secs(60));
    let mut cx = Context::from_waker(&panicking);
    assert!(Pin::new(&mut bad).poll(&mut cx).is_pending());
    let woken = Arc::new(CountingWake::default());
    let counting = Waker::from(Arc::clone(&woken));
    let mut good = timer.sleep(Duration::from_secs(60));
    let mut cx = Context::from_waker(&counting);
    assert!(Pin::new(&mut good).poll(&mut cx).is_pending());
    timer.schedule(Duration::from_secs(60), 2).unwrap();

    let unfired = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| timer.shutdown()))
        .expect("shutdown must not panic");
    let mut values: Vec<u32> = unfired.into_iter().map(|(_, value)| value).collect();
    values.sort_unstable();
    assert_eq!(values, [1, 2], "every unfired value comes back");
    assert_eq!(
        woken.0.load(Ordering::SeqCst),
        1,
        "the other sleep is woken"
    );
    assert!(timer.stats().panicked >= 1, "the panic is counted");
}

/// Polls `future` to completion on this thread.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut future = core::pin::pin!(future);
    loop {
        if let core::task::Poll::Ready(output) =
            future.as_mut().poll(&mut Context::from_waker(&waker))
        {
            return output;
        }
        std::thread::park();
    }
}

/// `shutdown_graceful` stops the timer, so every pending sleep completes
/// at once ("When the timer stops ... every pending sleep completes at
/// once ... a task never hangs on a timer that is gone"), and then waits
/// for the executor's tasks. A pool task awaiting one of the timer's own
/// sleeps (a `timeout` around its I/O, say) must therefore finish, and
/// the call return. The sleeps were woken only by the drain after the
/// executor's flush, which waited for that very task: the call hung for
/// good (here, for the sleep's hour).
#[test]
fn shutdown_graceful_completes_the_sleeps_its_executors_tasks_await() {
    let timer = tickwheel::Timer::new().unwrap();
    let (started, task_started) = std::sync::mpsc::channel();
    let (finished, task_finished) = std::sync::mpsc::channel();
    let own = timer.clone();
    timer
        .run_after(Duration::ZERO, move || {
            started.send(()).unwrap();
            block_on(own.sleep(Duration::from_secs(3_600)));
            finished.send(()).unwrap();
        })
        .unwrap();
    task_started.recv_timeout(Duration::from_secs(10)).unwrap();
    let (returned, graceful_returned) = std::sync::mpsc::channel();
    let stopper = timer.clone();
    std::thread::spawn(move || returned.send(stopper.shutdown_graceful().len()).unwrap());
    assert_eq!(
        graceful_returned.recv_timeout(Duration::from_secs(10)),
        Ok(0),
        "shutdown_graceful returns"
    );
    assert_eq!(
        task_finished.try_recv(),
        Ok(()),
        "the task's sleep completed"
    );
}

/// `interval_at(start, ..)`: "the first tick at `start` ... then on the
/// grid `start + n × period`", and `tick` "returns the instant it was
/// due", as tokio's `interval_at` and `tick` do. A `start` that falls
/// between two of the timer's ticks (any `Instant::now() + d` does: the
/// timer's ticks count from when it was built) came back rounded up to
/// the tick, here 500 ns late (up to a whole tick with a coarser one),
/// and so did every later tick of the grid. `Interval::reset_at` the same.
#[test]
fn an_interval_at_an_instant_between_ticks_answers_that_instant_and_its_grid() {
    use core::task::Poll;
    const MS: Duration = Duration::from_millis(1);
    let (clock, timer) = crate::sleep::manual();
    let start = clock.now() + 3 * MS + Duration::from_nanos(500);
    let mut ticks = timer
        .interval_at(start, 10 * MS, MissedTicks::Skip)
        .unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    assert!(ticks.poll_tick(&mut cx).is_pending());
    crate::sleep::advance(&clock, &timer, 4 * MS);
    assert_eq!(ticks.poll_tick(&mut cx), Poll::Ready(Some(start)));
    crate::sleep::advance(&clock, &timer, 10 * MS);
    assert_eq!(ticks.poll_tick(&mut cx), Poll::Ready(Some(start + 10 * MS)));
    let again = clock.now() + 2 * MS + Duration::from_nanos(250);
    ticks.reset_at(again);
    crate::sleep::advance(&clock, &timer, 3 * MS);
    assert_eq!(ticks.poll_tick(&mut cx), Poll::Ready(Some(again)));
}

/// Dropping the last handle "drops the executor, and a `ThreadPool` then
/// finishes the tasks it was handed and joins its workers, so the drop
/// waits for tasks still running" (`Timer` docs, "Stopping"); and a sleep
/// "holds the timer's shared state, not its driver, so it does not keep
/// the timer running". But the executor lives in that shared state: while
/// any `Sleep` of the timer is alive (here one never polled; a completed
/// one kept in a struct does the same), the drop returned at once, with
/// the task still running and the pool's workers left alive until the
/// sleep was dropped. A program that drops its timer to wait for its
/// tasks before exiting loses their effects.
#[test]
fn dropping_the_last_handle_waits_for_running_tasks_while_a_sleep_is_alive() {
    use core::sync::atomic::AtomicBool;
    let timer = tickwheel::Timer::new().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let (started, task_started) = std::sync::mpsc::channel();
    let finished = Arc::clone(&done);
    timer
        .run_after(Duration::ZERO, move || {
            started.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(200));
            finished.store(true, Ordering::SeqCst);
        })
        .unwrap();
    task_started.recv_timeout(Duration::from_secs(10)).unwrap();
    let idle = timer.sleep(Duration::from_secs(3_600));
    drop(timer);
    assert!(
        done.load(Ordering::SeqCst),
        "the drop returned before the running task finished"
    );
    drop(idle);
}

/// The same promise without any sleep: a fixed-delay run carries a guard
/// that holds the timer's shared state (to re-arm the timer when the run
/// ends), and so the executor in it. Dropping the last handle while such
/// a run is in progress on the pool returned at once instead of waiting
/// for it ("the drop waits for tasks still running").
#[test]
fn dropping_the_last_handle_waits_for_a_running_fixed_delay_run() {
    use core::sync::atomic::AtomicBool;
    let timer = tickwheel::Timer::new().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let (started, run_started) = std::sync::mpsc::sync_channel(1);
    let finished = Arc::clone(&done);
    timer
        .with_fixed_delay(Duration::ZERO, Duration::from_secs(3_600), move || {
            let _ = started.try_send(());
            std::thread::sleep(Duration::from_millis(200));
            finished.store(true, Ordering::SeqCst);
        })
        .unwrap();
    run_started.recv_timeout(Duration::from_secs(10)).unwrap();
    drop(timer);
    assert!(
        done.load(Ordering::SeqCst),
        "the drop returned before the running fixed-delay run finished"
    );
}

/// A `SpinningClock` spins at most `MAX_SPIN` before a deadline: while it
/// spins the driver notices nothing, so a spin of `Duration::MAX` held a
/// `shutdown` (and a core) until the next deadline, here an hour away.
#[test]
fn a_spinning_clock_of_any_spin_lets_a_shutdown_through() {
    use tickwheel::timer::SpinningClock;
    let timer = tickwheel::Timer::builder()
        .clock(SpinningClock::new(Duration::MAX))
        .build()
        .unwrap();
    timer.run_after(Duration::from_secs(3_600), || ()).unwrap();
    // The driver spins towards the deadline from its first pass.
    std::thread::sleep(Duration::from_millis(50));
    let (returned, shutdown_returned) = std::sync::mpsc::channel();
    let stopper = timer.clone();
    std::thread::spawn(move || returned.send(stopper.shutdown().len()).unwrap());
    assert_eq!(
        shutdown_returned.recv_timeout(Duration::from_secs(10)),
        Ok(1),
        "shutdown returns, with the hour's timer"
    );
}

/// Dropping the last handle "also drops the executor" (`Timer`'s docs): a
/// delay queue's receiver then disconnects, which ends a consumer's
/// `for value in ready` loop. A sleep of the timer still alive held the
/// shared state, which held the executor: the channel stayed connected,
/// and such a consumer waited for ever.
#[test]
fn dropping_the_last_handle_drops_the_executor_while_a_sleep_is_alive() {
    use crossbeam_channel::RecvTimeoutError;
    let (queue, ready) = tickwheel::timer::delay_queue::<u32>().unwrap();
    let sleep = queue.sleep(Duration::from_secs(60));
    drop(queue);
    assert_eq!(
        ready.recv_timeout(Duration::from_secs(5)),
        Err(RecvTimeoutError::Disconnected),
        "the executor outlived the last handle"
    );
    drop(sleep);
}
