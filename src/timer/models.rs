//! Models of every cross-thread protocol of the std layer: cancel against
//! fire and reset against fire (`shard.rs`), an earlier insert against a
//! driver going to sleep (`driver.rs`), shutdown against schedule
//! (`shard.rs`, `owner.rs`), and the fixed-delay run protocol
//! (`periodic.rs`): a first run against its own schedule, and a cancel
//! against a run in flight on the thread pool. With feature `async`, a
//! sleep's protocol (`futures/sleep.rs`): a fire against a drop, a fire against a
//! re-poll with a new waker, and a lazy reset against its old timer
//! firing.
//!
//! Each body runs under loom's model checker with
//! `RUSTFLAGS="--cfg loom" cargo test --lib timer::models`, which
//! explores the thread interleavings (bounded by `LOOM_MAX_PREEMPTIONS`,
//! 3 by default here), and as a plain unit test otherwise.

use alloc::vec::Vec;
use core::time::Duration;

use super::sync::{thread, Arc, AtomicUsize, Mutex, Ordering};
use super::{Clock, Expired, ManualClock, Task, ThreadPool, Timer};

const MS: Duration = Duration::from_millis(1);

/// Runs `body` under loom (every interleaving up to the preemption bound)
/// or once. Prints how many executions loom explored, so a model that
/// silently stopped exploring would show.
fn model(body: impl Fn() + Sync + Send + 'static) {
    #[cfg(all(loom, test))]
    {
        use core::sync::atomic::{AtomicUsize, Ordering};
        let runs = alloc::sync::Arc::new(AtomicUsize::new(0));
        let counter = alloc::sync::Arc::clone(&runs);
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(3);
        }
        builder.check(move || {
            counter.fetch_add(1, Ordering::Relaxed);
            body();
        });
        std::println!("loom explored {} executions", runs.load(Ordering::Relaxed));
    }
    #[cfg(not(all(loom, test)))]
    body();
}

/// A timer on a manual clock whose executor records what fires.
struct Harness {
    clock: ManualClock,
    timer: Timer<u32, RecordingExecutor>,
    fired: Arc<Mutex<Vec<u32>>>,
}

struct RecordingExecutor {
    fired: Arc<Mutex<Vec<u32>>>,
    count: Arc<AtomicUsize>,
    /// Unparked after every fire (the thread that built the harness).
    waiter: thread::Thread,
}

impl super::Executor<u32> for RecordingExecutor {
    fn execute(&self, fired: Expired<u32>) -> Result<(), super::Rejected<u32>> {
        self.fired.lock().push(fired.value);
        self.count.fetch_add(1, Ordering::SeqCst);
        self.waiter.unpark();
        Ok(())
    }
}

impl Harness {
    fn new() -> (Self, Arc<AtomicUsize>) {
        let clock = ManualClock::new();
        let fired = Arc::new(Mutex::new(Vec::new()));
        let count = Arc::new(AtomicUsize::new(0));
        let timer = Timer::builder()
            .clock(clock.clone())
            .slack(Duration::ZERO)
            .shards(1)
            .executor(RecordingExecutor {
                fired: Arc::clone(&fired),
                count: Arc::clone(&count),
                waiter: thread::current(),
            })
            .build()
            .expect("timer");
        (
            Harness {
                clock,
                timer,
                fired,
            },
            count,
        )
    }

    fn fired(&self) -> Vec<u32> {
        self.fired.lock().clone()
    }
}

/// Parks until `done()`; each fire unparks this thread. Under loom a lost
/// wake-up leaves every thread parked, which loom reports as a deadlock;
/// run normally, a lost wake-up fails after 10 s instead of hanging.
fn wait_until(done: impl Fn() -> bool, what: &str) {
    #[cfg(not(all(loom, test)))]
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        #[cfg(not(all(loom, test)))]
        {
            assert!(std::time::Instant::now() < give_up, "{what}");
            thread::park_timeout(Duration::from_millis(10));
        }
        #[cfg(all(loom, test))]
        {
            let _ = what;
            thread::park();
        }
    }
}

/// Cancel races the driver firing: the value comes out exactly once, by
/// exactly one of cancel, fire, or (if neither happened yet) shutdown.
#[test]
fn cancel_against_fire() {
    model(|| {
        let (h, _) = Harness::new();
        let handle = h.timer.schedule(MS, 7).expect("schedule");
        let clock = h.clock.clone();
        let advancer = thread::spawn(move || clock.advance(MS));
        let cancelled = h.timer.cancel(handle);
        advancer.join().expect("advancer");
        let unfired = h.timer.shutdown();
        let fired = h.fired();
        let outcomes = usize::from(cancelled.is_some()) + fired.len() + unfired.len();
        assert_eq!(
            outcomes,
            1,
            "cancel {cancelled:?}, fired {fired:?}, unfired {}",
            unfired.len()
        );
        if let Some(value) = cancelled {
            assert_eq!(value, 7);
        }
    });
}

/// The driver is going to sleep (until a far timer) while another thread
/// inserts a timer that is due now: the driver must wake and fire it. The
/// clock never moves, so only the insert's own wake-up can do it; if it is
/// lost, every thread ends up parked and loom reports the deadlock.
#[test]
fn earlier_insert_against_a_driver_going_to_sleep() {
    model(|| {
        let (h, count) = Harness::new();
        h.timer.schedule(Duration::from_secs(3600), 1).expect("far");
        let timer = h.timer.clone();
        let inserter = thread::spawn(move || {
            // Zero delay on a clock standing at the origin: due at tick 0.
            timer.schedule(Duration::ZERO, 2).expect("near");
        });
        inserter.join().expect("inserter");
        wait_until(
            || count.load(Ordering::SeqCst) > 0,
            "the early timer never fired",
        );
        assert_eq!(h.fired(), [2]);
        h.timer.shutdown();
    });
}

/// Reset races the driver firing: either the reset wins (true; the timer
/// then waits for its new deadline) or the fire did (false: it fired, or
/// the shutdown stopped its hand-off and returned it at its old deadline).
/// Never both, never neither.
#[test]
fn reset_against_fire() {
    model(|| {
        let (h, _) = Harness::new();
        let handle = h.timer.schedule(MS, 5).expect("schedule");
        let clock = h.clock.clone();
        let advancer = thread::spawn(move || clock.advance(MS));
        let moved = h.timer.reset(handle, Duration::from_secs(60));
        advancer.join().expect("advancer");
        let unfired = h.timer.shutdown();
        let fired = h.fired();
        assert_eq!(fired.len() + unfired.len(), 1, "lost or duplicated");
        let kept_at_old_deadline = unfired
            .first()
            .is_some_and(|&(at, _)| at < h.clock.now() + Duration::from_secs(1));
        assert_eq!(
            moved,
            fired.is_empty() && !kept_at_old_deadline,
            "reset {moved} but fired {fired:?}, unfired {unfired:?}"
        );
    });
}

/// Shutdown races the driver firing: the driver stops between two
/// hand-offs, so the value is either handed over or returned by shutdown,
/// never lost and never both.
#[test]
fn shutdown_against_fire() {
    model(|| {
        let (h, _) = Harness::new();
        h.timer.schedule(MS, 3).expect("schedule");
        let clock = h.clock.clone();
        let advancer = thread::spawn(move || clock.advance(MS));
        let unfired = h.timer.shutdown();
        advancer.join().expect("advancer");
        let fired = h.fired();
        assert_eq!(
            fired.len() + unfired.len(),
            1,
            "fired {fired:?}, unfired {unfired:?}"
        );
    });
}

/// Shutdown races a schedule: the value is either returned by shutdown or
/// handed back by the error, never lost and never both.
#[test]
fn shutdown_against_schedule() {
    model(|| {
        let (h, _) = Harness::new();
        let timer = h.timer.clone();
        let scheduler = thread::spawn(move || timer.schedule(Duration::from_secs(60), 9));
        let unfired = h.timer.shutdown();
        let scheduled = scheduler.join().expect("scheduler");
        match scheduled {
            Ok(_) => assert_eq!(unfired.iter().map(|&(_, v)| v).collect::<Vec<_>>(), [9]),
            Err(err) => {
                assert!(err.is_shutdown());
                assert_eq!(err.into_inner(), 9);
                assert!(unfired.is_empty());
            }
        }
        assert!(h.fired().is_empty());
    });
}

/// A fixed-delay timer due at once: its first run (on the driver) races the
/// `with_fixed_delay` call that schedules it. Whatever the order, the run
/// re-arms the timer, and the second run comes one delay later. (On the
/// old code the run could miss its own handle and stop the timer: a lost
/// second run, a deadlock here.)
#[test]
fn fixed_delay_rearm_against_the_first_run() {
    model(|| {
        let clock = ManualClock::new();
        let runs = Arc::new(AtomicUsize::new(0));
        let (counter, waiter) = (Arc::clone(&runs), thread::current());
        // Runs the task on the driver, then signals: by then the run's guard
        // has re-armed the timer, so the clock is advanced only after the
        // re-arm has read it.
        let timer = Timer::builder()
            .clock(clock.clone())
            .slack(Duration::ZERO)
            .shards(1)
            .executor(move |fired: Expired<Task>| {
                (fired.value)();
                counter.fetch_add(1, Ordering::SeqCst);
                waiter.unpark();
            })
            .build()
            .expect("timer");
        let handle = timer
            .with_fixed_delay(Duration::ZERO, MS, || {})
            .expect("schedule");
        wait_until(|| runs.load(Ordering::SeqCst) >= 1, "no first run");
        clock.advance(MS);
        wait_until(
            || runs.load(Ordering::SeqCst) >= 2,
            "the timer stopped after its first run",
        );
        assert!(timer.cancel(handle).is_some());
        assert!(timer.shutdown().is_empty());
    });
}

/// A cancel races a fixed-delay run in flight on the thread pool. The
/// cancel wins (the timer is always pending between runs), the run in
/// flight may finish, but its re-arm must not bring the timer back, and
/// no further run starts.
#[test]
fn cancel_against_a_fixed_delay_run_in_flight() {
    model(|| {
        let clock = ManualClock::new();
        let timer: Timer<Task, ThreadPool> = Timer::builder()
            .clock(clock.clone())
            .slack(Duration::ZERO)
            .shards(1)
            .executor(ThreadPool::new(1))
            .build()
            .expect("timer");
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&runs);
        let handle = timer
            .with_fixed_delay(Duration::ZERO, MS, move || {
                counter.fetch_add(1, Ordering::SeqCst);
            })
            .expect("schedule");
        assert!(
            timer.cancel(handle).is_some(),
            "a fixed-delay timer is pending between runs"
        );
        clock.advance(MS);
        // Fires what is due, waits for the pool, then drains: a re-armed
        // timer would come back here.
        let unfired = timer.shutdown_graceful();
        assert!(unfired.is_empty(), "the cancelled timer came back");
        assert!(runs.load(Ordering::SeqCst) <= 1);
        assert!(!timer.is_pending(handle));
    });
}

/// A waker that counts its wake-ups, on the model's atomics, and unparks
/// the thread that made it.
#[cfg(feature = "async")]
struct CountingWaker {
    count: AtomicUsize,
    waiter: thread::Thread,
}

#[cfg(feature = "async")]
impl alloc::task::Wake for CountingWaker {
    fn wake(self: alloc::sync::Arc<Self>) {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.waiter.unpark();
    }
}

#[cfg(feature = "async")]
impl CountingWaker {
    fn new() -> (alloc::sync::Arc<Self>, core::task::Waker) {
        let counting = alloc::sync::Arc::new(CountingWaker {
            count: AtomicUsize::new(0),
            waiter: thread::current(),
        });
        let waker = core::task::Waker::from(alloc::sync::Arc::clone(&counting));
        (counting, waker)
    }

    fn woken(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }
}

#[cfg(feature = "async")]
fn poll_sleep(sleep: &mut super::Sleep, waker: &core::task::Waker) -> core::task::Poll<()> {
    use core::future::Future;
    core::pin::Pin::new(sleep).poll(&mut core::task::Context::from_waker(waker))
}

/// A timer on a manual clock, a sleep on it due in 1 ms and polled once
/// (pending) with a counting waker, and a thread moving the clock to that
/// deadline, so that the driver fires the sleep while the model goes on.
#[cfg(feature = "async")]
#[allow(clippy::type_complexity)]
fn a_sleep_about_to_fire() -> (
    Harness,
    super::Sleep,
    alloc::sync::Arc<CountingWaker>,
    core::task::Waker,
    super::sync::JoinHandle<()>,
) {
    let (h, _) = Harness::new();
    let mut sleep = h.timer.sleep(MS);
    let (woken, waker) = CountingWaker::new();
    assert!(poll_sleep(&mut sleep, &waker).is_pending());
    let clock = h.clock.clone();
    let advancer = thread::spawn(move || clock.advance(MS));
    (h, sleep, woken, waker, advancer)
}

/// A pending sleep is dropped while the driver fires it: its timer leaves
/// the wheel exactly once (by the drop's cancel or by the fire), its task
/// is woken at most once, and nothing stays filed.
#[cfg(feature = "async")]
#[test]
fn sleep_fire_against_drop() {
    model(|| {
        let (h, sleep, woken, _waker, advancer) = a_sleep_about_to_fire();
        drop(sleep);
        advancer.join().expect("advancer");
        h.timer.shutdown();
        // A timer that stayed filed would be drained: neither fired nor
        // cancelled. (`pending()` before the stop may count it while the
        // driver still holds it for the wake.)
        let stats = h.timer.stats();
        assert_eq!(stats.fired + stats.cancelled, 1, "{stats:?}");
        assert_eq!(woken.woken() as u64, stats.fired, "woken {}", woken.woken());
    });
}

/// The driver firing races a task that polls again with a new waker:
/// either that poll sees the sleep complete, or the new waker is woken;
/// never neither (a lost wake-up: the model then parks forever, which loom
/// reports). The old waker is never woken after the new one took over.
#[cfg(feature = "async")]
#[test]
fn sleep_fire_against_a_repoll_with_a_new_waker() {
    model(|| {
        let (h, mut sleep, old, _old_waker, advancer) = a_sleep_about_to_fire();
        let (new, new_waker) = CountingWaker::new();
        let seen = poll_sleep(&mut sleep, &new_waker).is_ready();
        advancer.join().expect("advancer");
        if !seen {
            wait_until(|| new.woken() == 1, "the new waker was never woken");
            assert_eq!(old.woken(), 0, "the replaced waker was woken");
            assert!(poll_sleep(&mut sleep, &new_waker).is_ready());
        }
        h.timer.shutdown();
    });
}

/// A sleep is pushed back (a lazy reset: no lock) while its timer fires at
/// the old deadline: whatever the interleaving, it must not complete
/// early, and its new deadline's own wake-up must come.
#[cfg(feature = "async")]
#[test]
fn sleep_reset_against_the_old_timer_firing() {
    model(|| {
        let (h, mut sleep, woken, waker, advancer) = a_sleep_about_to_fire();
        // Its deadline is 1 ms after the clock's origin, where it still is
        // or where the advancer is taking it: push it to 2 ms.
        sleep.reset(sleep.deadline() + MS);
        advancer.join().expect("advancer");
        // The old timer fired (or will): at most one early wake-up, and a
        // poll never completes before the new deadline.
        assert!(
            poll_sleep(&mut sleep, &waker).is_pending(),
            "completed early"
        );
        assert!(!sleep.is_elapsed());
        let early = woken.woken();
        assert!(early <= 1, "woken {early} times before the new deadline");
        h.clock.advance(MS);
        // Woken by the new deadline's timer (after at most one more early
        // wake-up from the old one, if it fired only now).
        let mut seen = early;
        while poll_sleep(&mut sleep, &waker).is_pending() {
            assert!(seen <= early + 1, "woken {seen} times, still pending");
            wait_until(
                || woken.woken() > seen,
                "the new deadline never woke the task",
            );
            seen = woken.woken();
        }
        h.timer.shutdown();
    });
}
