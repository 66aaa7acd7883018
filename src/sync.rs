//! The one place that picks the synchronisation primitives: `std` and
//! `parking_lot` normally, `loom`'s model-checked ones under `cfg(loom)`.
//! Everything in `driver/` imports from here, so a loom model exercises the
//! same code that ships.

#[cfg(not(loom))]
mod imp {
    pub(crate) use alloc::sync::Arc;
    pub(crate) use core::sync::atomic::{fence, AtomicU64, AtomicU8, AtomicUsize};
    pub(crate) use std::thread;
    pub(crate) use std::thread::Thread;

    /// A mutex whose `lock` cannot fail (parking_lot's does not poison).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(parking_lot::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(parking_lot::Mutex::new(value))
        }

        #[inline]
        pub(crate) fn lock(&self) -> parking_lot::MutexGuard<'_, T> {
            self.0.lock()
        }
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::atomic::{fence, AtomicU64, AtomicU8, AtomicUsize};
    pub(crate) use loom::sync::Arc;
    pub(crate) use loom::thread;
    pub(crate) use loom::thread::Thread;

    /// loom's mutex with poisoning folded away: a panic under one of our
    /// locks is a bug the model should report, not recover from.
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
            self.0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        }
    }
}

pub(crate) use core::sync::atomic::Ordering;
pub(crate) use imp::*;
