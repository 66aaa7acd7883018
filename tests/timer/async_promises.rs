//! Promises of the async layer (feature `async`) that did not hold, each
//! test failing before its fix: a sleep refused by a stopped timer and
//! `max_pending`.

use core::time::Duration;

use tickwheel::timer::ManualClock;
use tickwheel::Timer;

use crate::sleep::{counting, poll, MS};

/// The bug: a sleep polled after `shutdown` is refused, and the refusal
/// gave back a `max_pending` reservation the sleep never took. The count
/// wrapped, and every later schedule said `Full` instead of `Shutdown`:
/// a producer that backs off and retries on `Full` retried for ever.
#[test]
fn a_sleep_refused_after_shutdown_leaves_schedules_saying_shutdown() {
    let timer = Timer::builder()
        .clock(ManualClock::new())
        .max_pending(10)
        .build()
        .unwrap();
    timer.shutdown();
    let (_, waker) = counting();
    let mut late = timer.sleep(Duration::from_secs(60));
    assert!(poll(&mut late, &waker).is_ready(), "the timer has stopped");
    let refused = timer.run_after(MS, || ()).unwrap_err();
    assert!(refused.is_shutdown(), "refused as {:?}", refused.kind());
}
