//! Catching the panics of user code (tasks, executors, factories, hooks,
//! wakers, `Drop`s) without being killed by the catch itself.
//!
//! A panic's payload is user data too: `std::panic::panic_any(x)` unwinds
//! with `x`, and dropping a caught payload runs `x`'s `Drop`. Were that to
//! panic where the payload was caught, it would unwind through the driver
//! or a pool worker, the very threads the catch was there to keep alive.
//! So [`catch_unwind`] drops the payload under a catch of its own, and
//! forgets (leaks) what a second panic leaves: one allocation, against a
//! dead driver or a pool that waits for ever for a task that never ends.

use core::panic::{AssertUnwindSafe, UnwindSafe};

/// A panic was caught; its payload is gone.
#[derive(Debug)]
pub(super) struct Panicked;

/// `std::panic::catch_unwind`, which drops the payload of a caught panic
/// here, where a panic in that drop is caught too.
pub(super) fn catch_unwind<R>(f: impl FnOnce() -> R + UnwindSafe) -> Result<R, Panicked> {
    std::panic::catch_unwind(f).map_err(|payload| {
        if let Err(again) = std::panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            core::mem::forget(again);
        }
        Panicked
    })
}
