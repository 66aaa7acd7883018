//! Timers the driver had taken out of their wheels but not yet handed over
//! when `shutdown` came. The driver stops between two hand-offs and keeps
//! the rest here; the stop's drain returns them with everything else. A
//! stop from a task or factory the driver runs has drained before they
//! come back: those go to the undelivered hook as [`Why::Stopped`], a
//! repeating timer's runs too (the drain returned the timer itself).

use alloc::vec::Vec;

use super::executor::Why;
use super::job::Unfired;
use super::sync::{AtomicBool, Mutex, Ordering};
use super::TimerHandle;

pub(super) struct InHand<T> {
    kept: Mutex<Vec<Unfired<T>>>,
    /// The stop's drain has run: what is kept from now on is too late for
    /// its caller.
    drained: AtomicBool,
    /// The repeating timers that drain took: their runs the driver still
    /// holds are theirs, not those of timers cancelled before.
    repeating: Mutex<Vec<TimerHandle>>,
}

impl<T> InHand<T> {
    pub(super) fn new() -> Self {
        InHand {
            kept: Mutex::new(Vec::new()),
            drained: AtomicBool::new(false),
            repeating: Mutex::new(Vec::new()),
        }
    }

    /// Whether the stop's drain took the repeating timer `handle`.
    pub(super) fn drained(&self, handle: TimerHandle) -> bool {
        self.drained.load(Ordering::SeqCst) && self.repeating.lock().contains(&handle)
    }

    pub(super) fn keep(&self, unfired: Unfired<T>) {
        self.kept.lock().push(unfired);
    }

    /// For the stop's drain, which took the repeating timers `repeating`:
    /// everything kept so far.
    pub(super) fn drain(&self, repeating: Vec<TimerHandle>) -> Vec<Unfired<T>> {
        *self.repeating.lock() = repeating;
        self.drained.store(true, Ordering::SeqCst);
        core::mem::take(&mut *self.kept.lock())
    }

    /// For the driver as it exits: what was kept after the drain ran, with
    /// the reason to give the hook. A stop from another thread joins the
    /// driver before it drains, so then this is empty.
    pub(super) fn too_late(&self) -> (Vec<Unfired<T>>, Why) {
        let late = if self.drained.load(Ordering::SeqCst) {
            core::mem::take(&mut *self.kept.lock())
        } else {
            Vec::new()
        };
        (late, Why::Stopped)
    }
}
