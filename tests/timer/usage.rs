//! The std layer as a new user meets it: closures, errors that fit `?`,
//! handle queries, inference, refused settings, and what happens to values
//! nobody takes. Each test names the defect or ergonomic gap it guards.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::time::Duration;
use std::sync::Mutex;

use tickwheel::timer::{
    BuildError, Clock, Executor, Inline, ManualClock, Receiver, Task, Undelivered, Why,
};
use tickwheel::Timer;

#[allow(dead_code)]
use crate::timers;
use timers::manual_inline;

const MS: Duration = Duration::from_millis(1);

type AnyError = Box<dyn core::error::Error + Send + Sync>;

/// A bare closure schedules without `Box::new`, and a refused one converts
/// with `?` into the `Send + Sync` error type that anyhow and friends need.
#[test]
fn closures_schedule_directly_and_errors_fit_question_mark() -> Result<(), AnyError> {
    let timer = Timer::builder().executor(Inline).build()?;
    let (tx, rx) = std::sync::mpsc::channel();
    timer.run_after(MS, move || tx.send("ran").unwrap())?;
    assert_eq!(rx.recv_timeout(Duration::from_secs(5))?, "ran");
    timer.shutdown();
    let refused = || -> Result<(), AnyError> {
        timer.run_after(MS, || ())?;
        Ok(())
    };
    let err = refused().unwrap_err();
    assert_eq!(err.to_string(), "timer is shut down");
    Ok(())
}

/// `with_channel` infers its value type from use, and its receiver is
/// nameable from this crate.
#[test]
fn with_channel_infers_the_value_type() -> Result<(), AnyError> {
    let (queue, ready) = Timer::with_channel()?;
    queue.schedule(MS, 5u16)?;
    let ready: Receiver<u16> = ready;
    assert_eq!(ready.recv_timeout(Duration::from_secs(5))?, 5);
    // Named up front, where nothing later fixes the type.
    let (queue, ready) = tickwheel::timer::delay_queue::<&str>()?;
    drop(queue);
    assert!(ready.recv().is_err(), "the queue's sender is gone with it");
    Ok(())
}

/// A timer answers, per handle: when is it due, how long remains, is it
/// pending; and it resets to an instant.
#[test]
fn handles_answer_when_and_whether() {
    let (clock, timer) = manual_inline();
    let t0 = clock.now();
    let job = timer.run_after(10 * MS, || ()).unwrap();
    assert!(timer.is_pending(job));
    assert_eq!(timer.deadline(job), Some(t0 + 10 * MS));
    assert_eq!(timer.remaining(job), Some(10 * MS));
    clock.advance(4 * MS);
    assert_eq!(timer.remaining(job), Some(6 * MS));
    assert!(timer.reset_at(job, t0 + 30 * MS));
    assert_eq!(timer.deadline(job), Some(t0 + 30 * MS));
    clock.advance(26 * MS);
    timer.sync();
    assert!(!timer.is_pending(job), "fired");
    assert_eq!((timer.deadline(job), timer.remaining(job)), (None, None));
    assert!(!timer.reset_at(job, t0));
}

/// Defect 9: `tick(Duration::MAX)` was accepted, and then a 1 ms timer
/// never fired. Ticks outside 1 µs ..= 1 h are refused with a clear error.
#[test]
fn ticks_out_of_range_are_refused() {
    for tick in [
        Duration::MAX,
        Duration::from_secs(3_601),
        Duration::from_nanos(999),
    ] {
        let err = Timer::builder().tick(tick).build().unwrap_err();
        assert!(matches!(err, BuildError::Tick(t) if t == tick), "{tick:?}");
        assert!(err.to_string().contains("tick must be between"), "{err}");
    }
    assert!(Timer::builder()
        .tick(Duration::from_secs(3_600))
        .build()
        .is_ok());
}

/// Defect 10: without a hook, values nobody takes were dropped silently.
/// They are still dropped, but counted.
#[test]
fn values_dropped_without_a_hook_are_counted() {
    let (clock, timer, rx) = timers::channel_timer::<u32>();
    drop(rx); // every hand-off is refused
    timer.schedule(MS, 1).unwrap();
    timer.schedule(MS, 2).unwrap();
    clock.advance(MS);
    timer.sync();
    let stats = timer.stats();
    assert_eq!((stats.rejected, stats.dropped), (2, 2));
}

/// Defect 10, documented behaviour: dropping the last handle with values
/// pending and no hook drops them (their `Drop` runs, nothing leaks).
#[test]
fn dropping_the_last_handle_without_a_hook_drops_pending_values() {
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, _rx) = crossbeam_channel::unbounded::<Counted>();
    let timer = Timer::builder().executor(tx).build().unwrap();
    for _ in 0..3 {
        timer
            .schedule(Duration::from_secs(60), Counted(Arc::clone(&drops)))
            .unwrap();
    }
    drop(timer);
    assert_eq!(drops.load(Ordering::SeqCst), 3);
}

/// Defect 6 (untested promise): an `on_undelivered` hook that panics is
/// counted, the value with it, and the driver carries on.
#[test]
fn a_panicking_hook_is_counted_and_the_driver_carries_on() {
    let clock = ManualClock::new();
    let (tx, rx) = crossbeam_channel::bounded::<u32>(1);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .executor(tx)
        .on_undelivered(move |lost: Undelivered<u32>| {
            sink.lock().unwrap().push(lost.fired.value);
            assert_eq!(lost.why, Why::Rejected);
            panic!("the hook fails");
        })
        .build()
        .unwrap();
    for value in 1..=3 {
        timer.schedule(MS, value).unwrap();
    }
    clock.advance(MS);
    timer.sync();
    // The channel holds one; the other two reach the panicking hook.
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(*seen.lock().unwrap(), [2, 3]);
    let stats = timer.stats();
    assert_eq!((stats.rejected, stats.panicked, stats.dropped), (2, 2, 2));
    // Still running.
    timer.schedule(MS, 4).unwrap();
    clock.advance(MS);
    timer.sync();
    assert_eq!(rx.try_recv(), Ok(4));
}

/// A test clock moved by any amount, `Duration::MAX` included, stops at
/// the latest instant it can hold instead of panicking the test; small
/// steps stay exact, and a timer due within reach fires.
#[test]
fn a_manual_clock_moved_past_what_an_instant_holds_stops_there() {
    let clock = ManualClock::new();
    let (t0, w0) = (clock.now(), clock.wall_now());
    clock.advance(MS);
    assert_eq!(
        (
            clock.now() - t0,
            clock.wall_now().duration_since(w0).unwrap()
        ),
        (MS, MS)
    );
    let timer = Timer::builder()
        .clock(clock.clone())
        .executor(Inline)
        .build()
        .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    timer
        .run_after(Duration::from_secs(3600), move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(Duration::MAX);
    let end = clock.now();
    assert!(end > t0 + Duration::from_secs(100 * 365 * 86_400));
    clock.advance(Duration::MAX); // and again: it stays
    assert_eq!(clock.now(), end);
    timer.sync();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

/// An `on_undelivered` hook set before `executor` stays when the value
/// type does (it was once dropped there, silently, and pending values were
/// lost unseen); set for a type the executor then changes, `build` refuses.
#[test]
fn an_undelivered_hook_set_before_the_executor_is_kept_or_refused() {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let timer = Timer::builder()
        .on_undelivered(move |lost: Undelivered<tickwheel::timer::Task>| {
            assert!(matches!(lost.why, Why::Dropped));
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .executor(Inline)
        .build()
        .unwrap();
    timer.run_after(Duration::from_secs(60), || ()).unwrap();
    drop(timer);
    assert_eq!(seen.load(Ordering::SeqCst), 1, "the hook was dropped");

    let (tx, _rx) = crossbeam_channel::unbounded::<u8>();
    let err = Timer::builder()
        .on_undelivered(|_: Undelivered<tickwheel::timer::Task>| ())
        .executor(tx.clone())
        .build()
        .unwrap_err();
    assert!(matches!(err, BuildError::UndeliveredHook), "{err}");
    // Set again after the executor, for its type: fine.
    let timer = Timer::builder()
        .on_undelivered(|_: Undelivered<tickwheel::timer::Task>| ())
        .executor(tx)
        .on_undelivered(|_: Undelivered<u8>| ())
        .build();
    assert!(timer.is_ok());
}

/// An executor that runs each task on the calling (driver) thread, after
/// `gate` lets it: the driver holds the rest of its batch meanwhile.
struct Gated {
    entered: crossbeam_channel::Sender<()>,
    gate: crossbeam_channel::Receiver<()>,
}

impl Executor<u32> for Gated {
    fn execute(
        &self,
        _fired: tickwheel::timer::Expired<u32>,
    ) -> Result<(), tickwheel::timer::Rejected<u32>> {
        // Timed, so that a failing test ends instead of hanging its drop.
        let _ = self.entered.send(());
        let _ = self.gate.recv_timeout(Duration::from_secs(10));
        Ok(())
    }
}

/// The bug: `pending()` counted only what the wheels held, so it read 0
/// while the driver still held a batch it had taken out; a user who
/// waited for 0 and then dropped the timer lost those to the hook.
#[test]
fn pending_counts_the_timers_the_driver_holds() {
    let (entered_tx, entered) = crossbeam_channel::unbounded();
    let (open, gate) = crossbeam_channel::unbounded();
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .executor(Gated {
            entered: entered_tx,
            gate,
        })
        .build()
        .unwrap();
    for value in 0..3 {
        timer.schedule(MS, value).unwrap();
    }
    clock.advance(MS);
    let wait = Duration::from_secs(10);
    entered.recv_timeout(wait).unwrap();
    // The first is being handed over; two wait in the driver's hands.
    assert_eq!(timer.pending(), 2);
    assert_eq!(timer.stats().pending, 2);
    open.send(()).unwrap();
    entered.recv_timeout(wait).unwrap();
    assert_eq!(timer.pending(), 1);
    open.send(()).unwrap();
    entered.recv_timeout(wait).unwrap();
    assert_eq!(timer.pending(), 0);
    open.send(()).unwrap();
    timer.sync();
    assert_eq!(timer.stats().fired, 3);
}

/// A thread pool that takes 2 ms to accept each task: the driver holds
/// the rest of a burst meanwhile.
struct SlowPool(tickwheel::timer::ThreadPool);

impl Executor<Task> for SlowPool {
    fn execute(
        &self,
        fired: tickwheel::timer::Expired<Task>,
    ) -> Result<(), tickwheel::timer::Rejected<Task>> {
        std::thread::sleep(2 * MS);
        self.0.execute(fired)
    }

    fn start(&self) -> std::io::Result<()> {
        self.0.start()
    }

    fn flush(&self) {
        self.0.flush();
    }
}

/// The pattern the bug broke: wait until nothing is pending, then drop
/// the timer. The driver held most of the burst when `pending()` first
/// read 0, and the drop gave those to the hook.
#[test]
fn waiting_for_nothing_pending_then_dropping_runs_every_job() {
    let ran = Arc::new(AtomicUsize::new(0));
    let undelivered = Arc::new(AtomicUsize::new(0));
    let lost = Arc::clone(&undelivered);
    let timer = Timer::builder()
        .slack(Duration::ZERO)
        .executor(SlowPool(tickwheel::timer::ThreadPool::new(1)))
        .on_undelivered(move |_: Undelivered<Task>| {
            lost.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    for _ in 0..20 {
        let ran = Arc::clone(&ran);
        timer
            .run_after(MS, move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
    }
    while timer.pending() > 0 {
        std::thread::sleep(Duration::from_micros(100));
    }
    drop(timer);
    assert_eq!(undelivered.load(Ordering::SeqCst), 0);
    assert_eq!(ran.load(Ordering::SeqCst), 20);
}
