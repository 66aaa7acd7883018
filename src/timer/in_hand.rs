//! Timers the driver had taken out of their wheels but not yet handed over
//! when `shutdown` came. The driver stops between two hand-offs and keeps
//! the rest here; the stop's drain returns them with everything else. A
//! stop from a task the driver runs inline has drained before they come
//! back: those go to the undelivered hook as [`Why::Stopped`].

use alloc::vec::Vec;

use super::executor::Why;
use super::job::Unfired;
use super::sync::{AtomicBool, Mutex, Ordering};

pub(super) struct InHand<T> {
    kept: Mutex<Vec<Unfired<T>>>,
    /// The stop's drain has run: what is kept from now on is too late for
    /// its caller.
    drained: AtomicBool,
}

impl<T> InHand<T> {
    pub(super) fn new() -> Self {
        InHand {
            kept: Mutex::new(Vec::new()),
            drained: AtomicBool::new(false),
        }
    }

    pub(super) fn keep(&self, unfired: Unfired<T>) {
        self.kept.lock().push(unfired);
    }

    /// For the stop's drain: everything kept so far.
    pub(super) fn drain(&self) -> Vec<Unfired<T>> {
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
