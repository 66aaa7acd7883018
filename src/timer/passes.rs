//! The driver's pass counter, which `Timer::sync` waits on.

use super::sync::{AtomicU64, Ordering};

/// Counts the driver's passes over the shards: started ones (wake-ups) and
/// the last one completed, so that `Timer::sync` can wait for a pass that
/// began after it was called.
#[derive(Debug, Default)]
pub(super) struct Passes {
    pub(super) started: AtomicU64,
    #[cfg(all(feature = "test-util", not(all(loom, test))))]
    pub(super) completed: super::sync::Mutex<u64>,
    #[cfg(all(feature = "test-util", not(all(loom, test))))]
    pub(super) done: super::sync::Condvar,
    /// The latest pass a `Timer::sync` waits for: the driver makes it
    /// before it sleeps, even if a task run inline parked the thread and
    /// so ate the unpark that asked for it.
    #[cfg(all(feature = "test-util", not(all(loom, test))))]
    pub(super) wanted: AtomicU64,
}

impl Passes {
    pub(super) fn start(&self) -> u64 {
        self.started.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// A `Timer::sync` waits for a pass not yet started.
    #[inline]
    pub(super) fn wanted(&self) -> bool {
        #[cfg(all(feature = "test-util", not(all(loom, test))))]
        return self.wanted.load(Ordering::SeqCst) > self.started.load(Ordering::SeqCst);
        #[cfg(not(all(feature = "test-util", not(all(loom, test)))))]
        false
    }

    pub(super) fn complete(&self, pass: u64) {
        #[cfg(all(feature = "test-util", not(all(loom, test))))]
        {
            *self.completed.lock() = pass;
            self.done.notify_all();
        }
        let _ = pass;
    }
}
