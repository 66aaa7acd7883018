//! `Timer::sleep`, `sleep_until` and `timeout` (feature `async`): on a
//! manual clock with hand-made wakers that count their wake-ups, and under
//! tokio on the real clock. Intervals: `interval.rs`.

use alloc::sync::Arc;
use alloc::task::Wake;
use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::time::Instant;

use tickwheel::timer::{Clock, Elapsed, ManualClock, Sleep, Task, ThreadPool};
use tickwheel::Timer;

pub(crate) const MS: Duration = Duration::from_millis(1);
const US: Duration = Duration::from_micros(1);

/// A waker that counts how often it was woken.
#[derive(Default)]
pub(crate) struct Counting(AtomicUsize);

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

pub(crate) fn counting() -> (Arc<Counting>, Waker) {
    let count = Arc::new(Counting::default());
    (Arc::clone(&count), Waker::from(count))
}

pub(crate) fn poll<F: Future + Unpin>(future: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

pub(crate) fn manual() -> (ManualClock, Timer<Task, ThreadPool>) {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .build()
        .unwrap();
    (clock, timer)
}

pub(crate) fn advance(clock: &ManualClock, timer: &Timer<Task, ThreadPool>, by: Duration) {
    clock.advance(by);
    timer.sync();
}

#[test]
fn a_sleep_completes_at_its_deadline_and_wakes_its_task_once() {
    let (clock, timer) = manual();
    let mut sleep = timer.sleep(5 * MS);
    let (count, waker) = counting();
    assert!(poll(&mut sleep, &waker).is_pending());
    advance(&clock, &timer, 5 * MS - US);
    assert_eq!(count.0.load(Ordering::SeqCst), 0, "woken early");
    assert!(poll(&mut sleep, &waker).is_pending());
    assert!(!sleep.is_elapsed());
    advance(&clock, &timer, US);
    assert_eq!(count.0.load(Ordering::SeqCst), 1);
    assert!(sleep.is_elapsed());
    assert!(poll(&mut sleep, &waker).is_ready());
    assert_eq!(timer.pending(), 0);
}

/// Polled again with another waker, the sleep wakes the new one only.
#[test]
fn a_repoll_with_a_new_waker_moves_the_wake_up() {
    let (clock, timer) = manual();
    let mut sleep = timer.sleep(MS);
    let (first, first_waker) = counting();
    let (second, second_waker) = counting();
    assert!(poll(&mut sleep, &first_waker).is_pending());
    assert!(poll(&mut sleep, &second_waker).is_pending());
    advance(&clock, &timer, MS);
    assert_eq!(first.0.load(Ordering::SeqCst), 0);
    assert_eq!(second.0.load(Ordering::SeqCst), 1);
}

/// A sleep is filed on its first poll; dropping a filed one cancels it.
#[test]
fn dropping_a_pending_sleep_cancels_its_timer() {
    let (clock, timer) = manual();
    let (_, waker) = counting();
    let mut sleeps: Vec<Sleep> = (1..=1_000).map(|i| timer.sleep(i * MS)).collect();
    assert_eq!(timer.pending(), 0, "filed before its first poll");
    for sleep in &mut sleeps {
        assert!(poll(sleep, &waker).is_pending());
    }
    assert_eq!(timer.pending(), 1_000);
    drop(sleeps);
    assert_eq!(timer.pending(), 0);
    advance(&clock, &timer, 2 * 1_000 * MS);
    assert_eq!(timer.stats().fired, 0);
}

/// Sleeps dropped while filed are cancelled in batches (`filed.rs`): each
/// counts as cancelled at once, none ever fires, and their wakers are let
/// go by a full batch or by the driver's next pass.
#[test]
fn dropped_sleeps_never_fire_and_let_their_wakers_go() {
    let (clock, timer) = manual();
    let (count, waker) = counting();
    let mut sleeps: Vec<Sleep> = (1..=100).map(|i| timer.sleep(i * MS)).collect();
    for sleep in &mut sleeps {
        assert!(poll(sleep, &waker).is_pending());
    }
    // `count` and `waker`, and a clone in each filed timer.
    assert_eq!(Arc::strong_count(&count), 2 + 100);
    // Dropped in no particular order.
    let mut order: Vec<usize> = (0..100).map(|i| i * 37 % 100).collect();
    order.dedup();
    let mut sleeps: Vec<Option<Sleep>> = sleeps.into_iter().map(Some).collect();
    for &i in &order {
        sleeps[i] = None;
    }
    assert_eq!(timer.pending(), 0);
    assert_eq!(timer.stats().cancelled, 100);
    let held = Arc::strong_count(&count) - 2;
    assert!(held < 32, "{held} wakers held past a full batch");
    advance(&clock, &timer, 200 * MS);
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        0,
        "a dropped sleep woke its task"
    );
    assert_eq!(
        Arc::strong_count(&count),
        2,
        "the driver's pass let the rest go"
    );
    assert_eq!(timer.stats().fired, 0);
    assert_eq!(timer.stats().cancelled, 100);
}

/// A sleep dropped after its timer stopped (drained, and woken) cancels
/// nothing, and the counts stay right.
#[test]
fn a_sleep_dropped_after_shutdown_cancels_nothing() {
    let (_clock, timer) = manual();
    let (count, waker) = counting();
    let mut sleep = timer.sleep(Duration::from_secs(60));
    assert!(poll(&mut sleep, &waker).is_pending());
    timer.shutdown();
    assert_eq!(count.0.load(Ordering::SeqCst), 1, "woken by the shutdown");
    drop(sleep); // never polled again
    assert_eq!(timer.pending(), 0);
    assert_eq!(timer.stats().cancelled, 0);
}

/// A reset moves a pending sleep, and files a completed one again. A later
/// deadline is stored lazily: the old one wakes the task once, and that
/// poll files the sleep at the new deadline.
#[test]
fn reset_moves_a_pending_sleep_and_rearms_a_completed_one() {
    let (clock, timer) = manual();
    let start = clock.now();
    let woken = |count: &Counting| count.0.load(Ordering::SeqCst);
    let mut sleep = timer.sleep(10 * MS);
    let (count, waker) = counting();
    assert!(poll(&mut sleep, &waker).is_pending());
    sleep.reset(start + 20 * MS); // later: stored lazily
    advance(&clock, &timer, 10 * MS);
    assert_eq!(woken(&count), 1, "the old deadline wakes the task once");
    assert!(!sleep.is_elapsed());
    assert!(poll(&mut sleep, &waker).is_pending(), "completed early");
    assert_eq!(timer.pending(), 1, "filed again at the new deadline");
    sleep.reset(start + 15 * MS); // earlier: moved at once
    advance(&clock, &timer, 5 * MS - US);
    assert_eq!(woken(&count), 1, "woken before the moved deadline");
    advance(&clock, &timer, US);
    assert_eq!(woken(&count), 2);
    assert!(sleep.is_elapsed());
    assert!(poll(&mut sleep, &waker).is_ready());

    sleep.reset(start + 30 * MS); // completed: filed again on its next poll
    assert!(!sleep.is_elapsed());
    assert_eq!(sleep.deadline(), start + 30 * MS);
    assert!(poll(&mut sleep, &waker).is_pending());
    advance(&clock, &timer, 14 * MS);
    assert!(poll(&mut sleep, &waker).is_pending());
    advance(&clock, &timer, MS);
    assert!(poll(&mut sleep, &waker).is_ready());
    assert_eq!(woken(&count), 3);
    assert_eq!(timer.pending(), 0);
}

/// Documented choice: a sleep on a timer that stops completes at once, and
/// so a timeout on it reports `Elapsed`; nothing hangs.
#[test]
fn sleeps_complete_at_once_when_their_timer_stops() {
    let (_clock, timer) = manual();
    let mut pending = timer.sleep(Duration::from_secs(60));
    let mut bounded = timer.timeout(Duration::from_secs(60), core::future::pending::<()>());
    let (count, waker) = counting();
    assert!(poll(&mut pending, &waker).is_pending());
    assert!(poll(&mut bounded, &waker).is_pending());
    assert!(
        timer.shutdown().is_empty(),
        "sleeps are not jobs to hand back"
    );
    assert_eq!(count.0.load(Ordering::SeqCst), 2, "both tasks woken");
    assert!(poll(&mut pending, &waker).is_ready());
    assert_eq!(poll(&mut bounded, &waker), Poll::Ready(Err(Elapsed)));
    let mut late = timer.sleep(Duration::from_secs(60));
    assert!(late.is_elapsed());
    assert!(poll(&mut late, &waker).is_ready());
}

#[test]
fn timeout_gives_the_output_or_elapsed() {
    let (clock, timer) = manual();
    let (_, waker) = counting();
    let mut quick = timer.timeout(5 * MS, core::future::ready(7));
    assert_eq!(poll(&mut quick, &waker), Poll::Ready(Ok(7)));
    let mut slow = timer.timeout(5 * MS, core::future::pending::<u8>());
    assert!(poll(&mut slow, &waker).is_pending());
    advance(&clock, &timer, 5 * MS);
    assert_eq!(poll(&mut slow, &waker), Poll::Ready(Err(Elapsed)));
    // An idle timeout pushed back through its sleep.
    let start = clock.now();
    let mut idle = timer.timeout(5 * MS, core::future::pending::<u8>());
    assert!(poll(&mut idle, &waker).is_pending());
    idle.sleep_mut().reset(start + 10 * MS);
    advance(&clock, &timer, 5 * MS);
    assert!(poll(&mut idle, &waker).is_pending());
    advance(&clock, &timer, 5 * MS);
    assert_eq!(poll(&mut idle, &waker), Poll::Ready(Err(Elapsed)));
}

/// 10^5 concurrent sleeps over 2 s of manual time, each with its own
/// waker: every one woken exactly once, at or after its deadline, and
/// ready when polled then.
#[test]
fn a_hundred_thousand_concurrent_sleeps() {
    let (clock, timer) = manual();
    let start = clock.now();
    let mut state = 0x51EE_B00Fu64;
    let mut sleeps: Vec<(Sleep, Arc<Counting>, Waker)> = (0..100_000)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let at = start + US * ((state >> 33) % 2_000_000) as u32;
            let (count, waker) = counting();
            (timer.sleep_until(at), count, waker)
        })
        .collect();
    for (sleep, _, waker) in &mut sleeps {
        assert!(poll(sleep, waker).is_pending() || sleep.deadline() <= start);
    }
    for _ in 0..40 {
        advance(&clock, &timer, 50 * MS);
        let now = clock.now();
        for (sleep, count, waker) in &mut sleeps {
            let woken = count.0.load(Ordering::SeqCst);
            assert!(woken <= 1, "woken {woken} times");
            if woken == 1 {
                assert!(sleep.deadline() <= now, "woken before its deadline");
            }
            if sleep.deadline() <= now {
                assert!(poll(sleep, waker).is_ready(), "due but not ready");
            }
        }
    }
    assert!(sleeps
        .iter()
        .all(|(_, count, _)| count.0.load(Ordering::SeqCst) <= 1));
    assert_eq!(timer.pending(), 0);
}

/// Under tokio, on the real clock: a sleep, a timeout that elapses and one
/// that does not.
#[test]
fn works_under_tokio() {
    let timer = Timer::new().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let started = Instant::now();
        timer.with_slack(Duration::ZERO).sleep(2 * MS).await;
        assert!(started.elapsed() >= 2 * MS);
        let never = core::future::pending::<()>();
        assert_eq!(timer.timeout(MS, never).await, Err(Elapsed));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let sender = timer.clone();
        std::thread::spawn(move || {
            std::thread::sleep(MS);
            tx.send(5).unwrap();
            drop(sender);
        });
        assert_eq!(timer.timeout(Duration::from_secs(10), rx).await, Ok(Ok(5)));
    });
}

/// Today's bug: a sleep created with a past deadline said `is_elapsed()`
/// true, then, once polled, `Pending` and `is_elapsed()` false until the
/// driver came round, which broke tokio's `if !sleep.is_elapsed()` select
/// idiom. An overdue sleep is ready on its first poll, and stays elapsed.
#[test]
fn an_overdue_sleep_is_ready_on_its_first_poll_and_stays_elapsed() {
    let (clock, timer) = manual();
    clock.advance(Duration::from_secs(1));
    let (_, waker) = counting();
    for back in [1, 5, 500] {
        let mut sleep = Box::pin(timer.sleep_until(clock.now() - Duration::from_millis(back)));
        assert!(sleep.is_elapsed(), "{back} ms ago");
        assert_eq!(
            sleep.as_mut().poll(&mut Context::from_waker(&waker)),
            Poll::Ready(())
        );
        assert!(sleep.is_elapsed(), "{back} ms ago, after a poll");
    }
    // Reset into the past: the same.
    let mut sleep = Box::pin(timer.sleep(Duration::from_secs(60)));
    assert!(poll(&mut sleep, &waker).is_pending());
    sleep.as_mut().reset(clock.now() - Duration::from_millis(1));
    assert_eq!(poll(&mut sleep, &waker), Poll::Ready(()));
    assert!(sleep.is_elapsed());
}

/// Today's bug: after `Err(Elapsed)` a `Timeout` kept its future (and
/// polled it again when polled), so a lock guard inside stayed held.
#[test]
fn a_timeout_drops_its_future_when_the_deadline_comes_first() {
    let (clock, timer) = manual();
    let (_, waker) = counting();
    let held = Arc::new(());
    let polls = Arc::new(AtomicUsize::new(0));
    let future = {
        let (held, polls) = (Arc::clone(&held), Arc::clone(&polls));
        core::future::poll_fn(move |_| {
            let _still_here = &held;
            polls.fetch_add(1, Ordering::Relaxed);
            Poll::<()>::Pending
        })
    };
    let mut timeout = Box::pin(timer.timeout(Duration::from_millis(5), future));
    assert!(poll(&mut timeout, &waker).is_pending());
    advance(&clock, &timer, Duration::from_millis(6));
    assert_eq!(poll(&mut timeout, &waker), Poll::Ready(Err(Elapsed)));
    assert_eq!(Arc::strong_count(&held), 1, "the future was kept");
    let polled = polls.load(Ordering::Relaxed);
    assert_eq!(poll(&mut timeout, &waker), Poll::Ready(Err(Elapsed)));
    assert_eq!(
        polls.load(Ordering::Relaxed),
        polled,
        "polled after it elapsed"
    );
}

/// A waker whose `Drop` panics (the vtable's drop), and does nothing else.
fn waker_whose_drop_panics() -> core::task::Waker {
    use core::task::{RawWaker, RawWakerVTable};
    fn clone(_: *const ()) -> RawWaker {
        RawWaker::new(core::ptr::null(), &VTABLE)
    }
    fn noop(_: *const ()) {}
    fn boom(_: *const ()) {
        if !std::thread::panicking() {
            panic!("a waker's drop panics");
        }
    }
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, boom);
    // SAFETY: the vtable's functions ignore the data pointer, which is
    // null, and uphold the `RawWaker` contract (clone makes another such
    // waker; wake and drop touch nothing).
    unsafe { core::task::Waker::from_raw(RawWaker::new(core::ptr::null(), &VTABLE)) }
}

/// The bug: the wakers of dropped sleeps were dropped on the driver
/// outside every `catch_unwind`; one whose `Drop` panicked killed the
/// driver, so nothing fired any more and `pending()` never went back to 0.
#[test]
fn a_dropped_sleeps_waker_whose_drop_panics_does_not_kill_the_driver() {
    let (clock, timer, rx) = crate::timers::channel_timer();
    let waker = waker_whose_drop_panics();
    let mut sleep = Box::pin(timer.sleep(10 * MS));
    let mut cx = Context::from_waker(&waker);
    assert!(sleep.as_mut().poll(&mut cx).is_pending());
    // Not yet due: its timer joins the batch the driver cancels, and the
    // driver drops the waker it held.
    drop(sleep);
    timer.schedule(MS, 1u32).unwrap();
    clock.advance(MS);
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(1));
    timer.schedule(MS, 2u32).unwrap();
    clock.advance(MS);
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(2));
    timer.sync();
    assert_eq!(timer.pending(), 0);
    assert_eq!(timer.stats().panicked, 1);
    // Our own handle would panic on drop too.
    core::mem::forget(waker);
}
