//! A second audit of the std layer: each test names the defect it guards
//! against.

use core::time::Duration;

use tickwheel::timer::ManualClock;
use tickwheel::Timer;

use crate::timers::advance;

/// Defect: with a tick that divides `u64::MAX` nanoseconds (1,285 ns,
/// say, off the fast path for ticks that divide a second), a deadline at
/// the 584-year horizon rounded up to the very tick the driver's "now"
/// saturates at: a `Duration::MAX` timer, documented to stay pending for
/// ever, fired once a manual clock was moved past the horizon.
#[test]
fn a_timer_at_the_horizon_never_fires_whatever_the_tick() {
    let clock = ManualClock::new();
    let (tx, rx) = crossbeam_channel::unbounded();
    let timer = Timer::builder()
        .clock(clock.clone())
        .tick(Duration::from_nanos(1_285))
        .slack(Duration::ZERO)
        .executor(tx)
        .build()
        .unwrap();
    let never = timer.schedule(Duration::MAX, "never").unwrap();
    advance(&clock, &timer, Duration::from_secs(600 * 366 * 24 * 3600));
    assert!(rx.try_recv().is_err(), "a Duration::MAX timer fired");
    assert!(timer.is_pending(never));
    assert_eq!(timer.stats().fired, 0);
    assert_eq!(timer.shutdown().len(), 1);
}
