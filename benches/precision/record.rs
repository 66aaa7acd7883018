//! What the callbacks write (one lateness slot per timer), tickwheel's
//! executor that writes it, and the whole process's CPU time.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use core::time::Duration;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use tickwheel::timer::{Executor, Expired, Rejected};

/// `late` slot of a timer that has not fired.
pub(crate) const UNFIRED: i64 = i64::MIN;

/// What the callbacks write: one lateness slot per timer, and the instant
/// the last one fired.
pub(crate) struct Record {
    /// ns after the requested deadline (negative: early), or `UNFIRED`.
    pub(crate) late: Vec<AtomicI64>,
    pub(crate) fired: AtomicUsize,
    /// Fires of a timer that had fired already.
    pub(crate) twice: AtomicUsize,
    /// When the last timer fired; signalled by `all_fired`.
    last: Mutex<Option<Instant>>,
    all_fired: Condvar,
}

impl Record {
    pub(crate) fn new(timers: usize) -> Self {
        Record {
            late: (0..timers).map(|_| AtomicI64::new(UNFIRED)).collect(),
            fired: AtomicUsize::new(0),
            twice: AtomicUsize::new(0),
            last: Mutex::new(None),
            all_fired: Condvar::new(),
        }
    }

    /// The callback: timer `id`, due at `deadline`, fires now.
    pub(crate) fn fire(&self, deadline: Instant, id: u32) {
        let now = Instant::now();
        let late = match now.checked_duration_since(deadline) {
            Some(after) => after.as_nanos() as i64,
            None => -(deadline.duration_since(now).as_nanos() as i64),
        };
        if self.late[id as usize].swap(late, Ordering::Relaxed) != UNFIRED {
            self.twice.fetch_add(1, Ordering::Relaxed);
        }
        if self.fired.fetch_add(1, Ordering::AcqRel) + 1 == self.late.len() {
            *self.last.lock().unwrap() = Some(now);
            self.all_fired.notify_all();
        }
    }

    /// Waits until every timer has fired, or `limit`; returns when the last
    /// one fired.
    pub(crate) fn wait(&self, limit: Duration) -> Option<Instant> {
        let last = self.last.lock().unwrap();
        let (last, _) = self
            .all_fired
            .wait_timeout_while(last, limit, |last| last.is_none())
            .unwrap();
        *last
    }
}

/// tickwheel's executor: records on the driver thread, against the
/// requested deadline the value carries (not `Expired::deadline`, which is
/// rounded up to the tick).
pub(crate) struct Recorder(pub(crate) Arc<Record>);

impl Executor<(Instant, u32)> for Recorder {
    fn execute(&self, fired: Expired<(Instant, u32)>) -> Result<(), Rejected<(Instant, u32)>> {
        let (deadline, id) = fired.value;
        self.0.fire(deadline, id);
        Ok(())
    }
}
