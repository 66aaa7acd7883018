//! Timers on a manual clock, shared by the std-layer test files
//! (`tests/timer/timer.rs`, `tests/timer/timer_lifecycle.rs`, `tests/timer/periodic.rs`,
//! `tests/timer/usage.rs`): time moves
//! only when a test says so, and `advance` waits for the driver's pass.
//! These timers have zero slack, so every timer is due exactly at its
//! deadline and the tests can say when it fires (`tests/timer/slack.rs` tests
//! slack), except `sharded_channel`'s, for the tests of how a pass merges
//! shards with slack.

use core::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use tickwheel::timer::{Executor, Inline, ManualClock, Task, ThreadPool};
use tickwheel::Timer;

/// A timer of closures run on the driver thread.
pub(crate) fn manual_inline() -> (ManualClock, Timer<Task, Inline>) {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .executor(Inline)
        .build()
        .unwrap();
    (clock, timer)
}

/// A timer of closures run on a pool of two workers.
pub(crate) fn manual_pool() -> (ManualClock, Timer<Task, ThreadPool>) {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .executor(ThreadPool::new(2))
        .build()
        .unwrap();
    (clock, timer)
}

/// A timer whose fired values come out of a channel.
pub(crate) fn channel_timer<T: Send + 'static>() -> (ManualClock, Timer<T, Sender<T>>, Receiver<T>)
{
    sharded_channel(Duration::ZERO, None)
}

/// A channel timer with `slack` and, if given, that many shards.
pub(crate) fn sharded_channel<T: Send + 'static>(
    slack: Duration,
    shards: Option<usize>,
) -> (ManualClock, Timer<T, Sender<T>>, Receiver<T>) {
    let clock = ManualClock::new();
    let (tx, rx) = crossbeam_channel::unbounded();
    let builder = Timer::builder().clock(clock.clone()).slack(slack);
    let builder = match shards {
        Some(n) => builder.shards(n),
        None => builder,
    };
    (clock, builder.executor(tx).build().unwrap(), rx)
}

/// Moves the clock and waits until the driver has handled the new time.
pub(crate) fn advance<T: Send + 'static, E: Executor<T>>(
    clock: &ManualClock,
    timer: &Timer<T, E>,
    by: Duration,
) {
    clock.advance(by);
    timer.sync();
}

/// A value whose `Drop` panics (outside an unwind).
pub(crate) struct Bomb(#[allow(dead_code)] pub(crate) u32);

impl Drop for Bomb {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("bomb");
        }
    }
}

/// Waits (up to 10 s) until `done`; else fails, saying `what`.
pub(crate) fn wait_for(what: &str, done: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(10), "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}
