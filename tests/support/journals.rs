//! What the journal tests share: a `DurableTimer<u64>` that records what
//! ran, waiting for a run, and a crash child's line printer.
// Each test file uses part of it.
#![allow(dead_code)]

use alloc::sync::Arc;
use core::time::Duration;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use tickwheel::persist::{DurableTimer, JournalError, Recovery, SyncPolicy};
use tickwheel::timer::ManualClock;

/// The values that ran, in order.
pub(crate) type Ran = Arc<Mutex<Vec<u64>>>;

/// Opens `path` with fsync on every record, recording each run.
pub(crate) fn open_recording(
    path: &Path,
) -> Result<(DurableTimer<u64>, Recovery<u64>, Ran), JournalError> {
    let ran: Ran = Arc::default();
    let sink = Arc::clone(&ran);
    let (timer, recovery) =
        DurableTimer::open(path, SyncPolicy::Always, &Default::default(), move |v| {
            sink.lock().unwrap().push(v)
        })?;
    Ok((timer, recovery, ran))
}

/// Opens `path` on a clock that stands at wall time `wall` and never
/// moves: nothing runs however slow the machine (a job due "soon" on the
/// real clock once ran before its timer was dropped). A run panics.
pub(crate) fn open_frozen(path: &Path, wall: SystemTime) -> (DurableTimer<u64>, Recovery<u64>) {
    DurableTimer::open_with_clock(
        path,
        SyncPolicy::Always,
        &Default::default(),
        ManualClock::with_wall_time(wall),
        |value| panic!("job {value} ran on a clock that never moved"),
    )
    .unwrap()
}

/// Waits (up to 10 s) until `value` has run.
pub(crate) fn wait_for(ran: &Ran, value: u64) {
    let give_up = Instant::now() + Duration::from_secs(10);
    while !ran.lock().unwrap().contains(&value) {
        assert!(Instant::now() < give_up, "{value} never ran");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A crash child's printer: whole lines, flushed at once, from any thread
/// (a line cut by the kill has no newline and is ignored by the parent).
/// It first ends the test harness's own "test … " line.
pub(crate) fn printer() -> impl Fn(String) + Clone + Send + Sync + 'static {
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let print = move |line: String| {
        let mut out = out.lock().unwrap();
        writeln!(out, "{line}").unwrap();
        out.flush().unwrap();
    };
    print(String::new());
    print
}

/// A timer on `path`, every record synced, whose handler takes `handler`
/// to run, so that a run is caught with its handler started and not
/// returned (a crash then must run it again): the values whose handler
/// started, and those whose handler returned.
pub(crate) fn open_slow(path: &Path, handler: Duration) -> (DurableTimer<u64>, Ran, Ran) {
    let started: Ran = Arc::default();
    let done: Ran = Arc::default();
    let (s, d) = (Arc::clone(&started), Arc::clone(&done));
    let (timer, _) = DurableTimer::open(
        path,
        SyncPolicy::Always,
        &tickwheel::persist::MisfirePolicy::default(),
        move |job: u64| {
            s.lock().unwrap().push(job);
            std::thread::sleep(handler);
            d.lock().unwrap().push(job);
        },
    )
    .unwrap();
    (timer, started, done)
}

/// Waits until every handler that started has returned.
pub(crate) fn settle(started: &Ran, done: &Ran) {
    while started.lock().unwrap().len() != done.lock().unwrap().len() {
        std::thread::sleep(Duration::from_millis(1));
    }
}
