//! Audit of the std layer's less-travelled surfaces: each test names the
//! defect it guards against.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::time::Duration;

use tickwheel::timer::{Executor, ManualClock, MissedTicks, Task, ThreadPool};
use tickwheel::Timer;

use crate::timers::{advance, manual_inline, wait_for, Bomb};

const MS: Duration = Duration::from_millis(1);

/// Files a task that panics with a [`Bomb`] at 1 ms and one that counts
/// at 2 ms, moves the clock past both, and waits for the count: the
/// thread that caught the panic must live on to run the second.
fn panic_then_count<E: Executor<Task>>(clock: &ManualClock, timer: &Timer<Task, E>, what: &str) {
    let ran = Arc::new(AtomicUsize::new(0));
    timer
        .run_after(MS, || std::panic::panic_any(Bomb(0)))
        .unwrap();
    let r = Arc::clone(&ran);
    timer
        .run_after(MS * 2, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(MS * 5);
    wait_for(what, || ran.load(Ordering::SeqCst) == 1);
    assert_eq!(timer.stats().panicked, 1);
}

/// Defect: a task that panicked with a payload whose `Drop` panics (
/// `panic_any(x)`) had its payload dropped in the worker's catch, outside
/// any catch: the second panic killed the worker, later tasks sat in the
/// queue for ever, and dropping the timer hung waiting for them.
#[test]
fn a_pool_survives_a_panic_whose_payload_panics_when_dropped() {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .executor(ThreadPool::new(1))
        .build()
        .unwrap();
    panic_then_count(&clock, &timer, "the pool's worker died");
    assert!(timer.shutdown_graceful().is_empty());
}

/// Defect: the same payload, from a task run on the driver (`Inline`),
/// killed the driver thread: later timers were accepted and never fired.
#[test]
fn the_driver_survives_a_panic_whose_payload_panics_when_dropped() {
    let (clock, timer) = manual_inline();
    panic_then_count(&clock, &timer, "the driver died");
}

/// Defect: cancelling a repeating timer dropped its factory (and what it
/// captured) outside any catch after making the value to return: a
/// panicking `Drop` unwound through `cancel` and lost that value, where
/// the same factory dropped at a stop or on the driver is caught.
#[test]
fn a_cancel_returns_its_value_when_the_factory_panics_on_drop() {
    let clock = ManualClock::new();
    let (tx, _rx) = crossbeam_channel::unbounded::<u32>();
    let timer = Timer::builder()
        .clock(clock.clone())
        .executor(tx)
        .build()
        .unwrap();
    let bomb = Bomb(0);
    let h = timer
        .schedule_repeating(MS * 10, MS * 10, MissedTicks::Skip, move || {
            let _ = &bomb;
            7
        })
        .unwrap();
    let got = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| timer.cancel(h)));
    assert!(matches!(got, Ok(Some(7))), "cancel lost its value");
    assert_eq!(timer.stats().panicked, 1);
    assert!(!timer.is_pending(h));
}

/// Defect: `Stats::lateness` summed lateness in a `u64` of nanoseconds
/// that wrapped silently past 584 years in all, so `mean()` then fell to
/// a fraction of the real one (a server handing over 10^5 timers a
/// second with 1 s of slack gets there in days). Two timers, each fired
/// 400 years late by a manual clock: the mean is 400 years, not 108.
#[test]
fn the_mean_lateness_survives_more_than_584_years_in_all() {
    let clock = ManualClock::new();
    let (tx, rx) = crossbeam_channel::unbounded::<u32>();
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .executor(tx)
        .build()
        .unwrap();
    timer.schedule(MS, 1).unwrap();
    timer.schedule(MS, 2).unwrap();
    let years = Duration::from_secs(400 * 365 * 86_400);
    advance(&clock, &timer, years);
    assert_eq!(rx.try_iter().count(), 2);
    let lateness = timer.stats().lateness;
    assert_eq!(lateness.count(), 2);
    assert!(lateness.max() >= years - MS * 2);
    assert!(
        lateness.mean() >= years - MS * 2 && lateness.mean() <= lateness.max(),
        "mean {:?} against max {:?}",
        lateness.mean(),
        lateness.max()
    );
}
