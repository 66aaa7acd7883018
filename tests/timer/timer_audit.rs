//! Audit of the std layer's less-travelled surfaces: each test names the
//! defect it guards against.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::time::Duration;
use std::time::Instant;

use tickwheel::timer::{Inline, ManualClock, Task, ThreadPool};
use tickwheel::Timer;

use crate::timers::advance;

const MS: Duration = Duration::from_millis(1);

/// Panics when dropped outside an unwind.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("bomb");
        }
    }
}

fn wait_for(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(10), "{what}");
        std::thread::sleep(MS);
    }
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
    let ran = Arc::new(AtomicUsize::new(0));
    timer.run_after(MS, || std::panic::panic_any(Bomb)).unwrap();
    let r = Arc::clone(&ran);
    timer
        .run_after(MS * 2, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    advance(&clock, &timer, MS * 5);
    wait_for("the pool's worker died", || ran.load(Ordering::SeqCst) == 1);
    assert_eq!(timer.stats().panicked, 1);
    assert!(timer.shutdown_graceful().is_empty());
}

/// Defect: the same payload, from a task run on the driver (`Inline`),
/// killed the driver thread: later timers were accepted and never fired.
#[test]
fn the_driver_survives_a_panic_whose_payload_panics_when_dropped() {
    let clock = ManualClock::new();
    let timer: Timer<Task, Inline> = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .executor(Inline)
        .build()
        .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    timer.run_after(MS, || std::panic::panic_any(Bomb)).unwrap();
    let r = Arc::clone(&ran);
    timer
        .run_after(MS * 2, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(MS * 5);
    wait_for("the driver died", || ran.load(Ordering::SeqCst) == 1);
    assert_eq!(timer.stats().panicked, 1);
}
