//! The one place that picks the synchronisation primitives: `std` and
//! `parking_lot` normally, `loom`'s model-checked ones under `cfg(loom)`.
//! Everything in `driver/` imports from here, so a loom model exercises the
//! same code that ships.

#[cfg(not(all(loom, test)))]
mod imp {
    pub(crate) use alloc::sync::Arc;
    pub(crate) use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
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

#[cfg(all(loom, test))]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
    pub(crate) use loom::sync::Arc;
    pub(crate) use thread::Thread;

    /// `std::thread`'s park/unpark, rebuilt on a loom mutex and condvar.
    ///
    /// loom's own `Thread::unpark` makes a thread runnable whatever it is
    /// blocked on, including a mutex another thread holds, which its mutex
    /// model then rejects. The driver is unparked while it may be waiting
    /// for a shard lock, so models need park/unpark that only affects
    /// `park`. Same token semantics: an unpark before a park is kept.
    pub(crate) mod thread {
        pub(crate) use loom::thread::{spawn, yield_now, JoinHandle};

        use loom::sync::{Arc, Condvar, Mutex};

        #[derive(Debug, Default)]
        struct Parker {
            token: Mutex<bool>,
            wake: Condvar,
        }

        loom::thread_local! {
            static PARKER: Arc<Parker> = Arc::new(Parker::default());
        }

        /// A handle to a thread that can unpark it.
        #[derive(Debug, Clone)]
        pub(crate) struct Thread {
            parker: Arc<Parker>,
            id: loom::thread::ThreadId,
        }

        impl Thread {
            pub(crate) fn unpark(&self) {
                *self.parker.token.lock().unwrap() = true;
                self.parker.wake.notify_one();
            }

            pub(crate) fn id(&self) -> loom::thread::ThreadId {
                self.id
            }
        }

        pub(crate) fn current() -> Thread {
            Thread {
                parker: PARKER.with(Arc::clone),
                id: loom::thread::current().id(),
            }
        }

        pub(crate) fn park() {
            PARKER.with(|parker| {
                let mut token = parker.token.lock().unwrap();
                while !*token {
                    token = parker.wake.wait(token).unwrap();
                }
                *token = false;
            });
        }
    }

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
