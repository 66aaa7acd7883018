//! The state a sleep shares with its pending timer, and the protocol
//! between the driver firing it and a task polling it (stated in
//! `sleep.rs`, model-checked in `models.rs`).

use core::task::Waker;

use super::sync::{AtomicU64, Mutex, Ordering};

/// The state a sleep shares with its pending timer.
#[derive(Debug, Default)]
pub(super) struct Wake {
    /// `generation << 1 | fired`.
    state: AtomicU64,
    waker: Mutex<Option<Waker>>,
}

impl Wake {
    /// The driver fired the timer of `generation`: complete the sleep if
    /// that is still its timer, and wake its task. Call outside every lock.
    pub(super) fn fire(&self, generation: u64) {
        let armed = generation << 1;
        if self
            .state
            .compare_exchange(armed, armed | 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return;
        }
        self.wake_task();
    }

    /// Completes the sleep whatever its generation: the timer is gone.
    pub(super) fn fire_now(&self) {
        self.state.fetch_or(1, Ordering::SeqCst);
        self.wake_task();
    }

    /// Takes the task's waker and wakes it, outside the slot's lock.
    fn wake_task(&self) {
        let waker = self.waker.lock().take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Moves to a new generation, not fired; returns it.
    pub(super) fn next_generation(&self) -> u64 {
        // One read-modify-write: a fire of the old generation lands before
        // it (and is cleared) or after it (and fails its compare).
        let old = self.state.fetch_add(2, Ordering::SeqCst);
        let generation = (old >> 1) + 1;
        // Clear a fired bit carried over from the old generation; a fire of
        // the new one cannot have come yet (its timer is not filed).
        self.state.fetch_and(!1, Ordering::SeqCst);
        generation
    }

    /// `true` if the timer of `generation` has fired (or the sleep was
    /// completed at once while at it).
    pub(super) fn is_fired(&self, generation: u64) -> bool {
        self.state.load(Ordering::SeqCst) == (generation << 1 | 1)
    }

    /// Stores the task's waker, then says whether the sleep has fired.
    pub(super) fn register(&self, waker: &Waker) -> bool {
        let same = self
            .waker
            .lock()
            .as_ref()
            .is_some_and(|stored| stored.will_wake(waker));
        if !same {
            // Clone and drop outside the lock: waker methods are the
            // runtime's code.
            let old = self.waker.lock().replace(waker.clone());
            drop(old);
        }
        self.state.load(Ordering::SeqCst) & 1 == 1
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_stale_fire_does_not_complete_a_newer_generation() {
        let wake = Wake::default();
        let first = wake.next_generation();
        let second = wake.next_generation();
        wake.fire(first);
        assert_eq!(wake.state.load(Ordering::SeqCst), second << 1, "not fired");
        wake.fire(second);
        assert_eq!(wake.state.load(Ordering::SeqCst), second << 1 | 1);
    }
}
