//! Ownership: every `Timer` clone shares one [`Owner`]; the first stop
//! (shutdown, or dropping the last clone) stops and joins the driver and
//! drains the wheels.

use super::unwind::catch_unwind;
use alloc::vec::Vec;
use core::panic::AssertUnwindSafe;

use super::executor::{Executor, Why};
use super::job::Unfired;
use super::shard::{Shared, FINISHING, RUNNING};
use super::sync::{thread, Arc, JoinHandle, Mutex, Ordering};
use super::TimerHandle;
use crate::TimerKey;

/// Owned by every `Timer` clone; dropping the last one stops the driver.
pub(super) struct Owner<T: Send + 'static, E: Executor<T>> {
    pub(super) shared: Arc<Shared<T, E>>,
    /// Shared with the driver only: dropped with the last handle once the
    /// driver has exited.
    pub(super) executor: Arc<E>,
    pub(super) driver: Mutex<Option<JoinHandle<()>>>,
}

impl<T: Send + 'static, E: Executor<T>> Owner<T, E> {
    /// Moves the state to `how` (if still running), stops and joins the
    /// driver, and returns what never fired. Only the first call does
    /// anything; later ones return nothing.
    pub(super) fn stop(&self, how: u8) -> Vec<Unfired<T>> {
        let shared = &self.shared;
        if shared
            .state
            .compare_exchange(RUNNING, how, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Vec::new();
        }
        shared.unpark_driver();
        #[cfg(all(feature = "test-util", not(all(loom, test))))]
        {
            // Wake `Timer::sync` callers: no pass may complete from now on.
            let _completed = shared.passes.completed.lock();
            shared.passes.done.notify_all();
        }
        let driver = self.driver.lock().take();
        if let Some(driver) = driver {
            // A task running inline can stop the timer from the driver
            // thread itself; the driver then exits after this batch.
            if driver.thread().id() != thread::current().id() {
                let _ = driver.join();
            }
        }
        if how == FINISHING {
            // The timer has stopped, so its sleeps complete: before the
            // wait for the executor's tasks, some of which may await them.
            #[cfg(feature = "async")]
            shared.wake_sleeps();
            // A panicking flush must not keep the timers from being handed
            // back: counted, and the drain goes on.
            if catch_unwind(AssertUnwindSafe(|| self.executor.flush())).is_err() {
                shared.counters.panicked();
            }
        }
        shared.drain_all()
    }
}

impl<T: Send + 'static, E: Executor<T>> Drop for Owner<T, E> {
    fn drop(&mut self) {
        for unfired in self.stop(super::shard::STOPPING) {
            self.shared
                .undelivered(unfired.into_expired(), Why::Dropped);
        }
        // The drop waits for the tasks still running. Dropping the executor
        // does that (a `ThreadPool` joins its workers), but a drop on the
        // driver thread (an inline task) leaves the driver's copy until it
        // exits. So wait here too, after the drain has woken every sleep
        // (a task may await one); the executor goes with this `Owner`.
        if catch_unwind(AssertUnwindSafe(|| self.executor.flush())).is_err() {
            self.shared.counters.panicked();
        }
    }
}

/// The handle reported for timers handed to the hook at drop: they have no
/// timer left to cancel in, and it matches no shard.
pub(super) const DROPPED: TimerHandle = TimerHandle {
    key: match TimerKey::from_bits(u64::MAX << 32) {
        Some(key) => key,
        None => unreachable!(),
    },
    shard: u16::MAX,
    class: 0,
};
