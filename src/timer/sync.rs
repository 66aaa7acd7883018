//! The one place that picks the synchronisation primitives of the std
//! layer: `std` and `parking_lot` normally, `loom`'s model-checked ones
//! under `cfg(loom)`. Every file of `timer/` takes its atomics, locks,
//! condition variables, channels and threads from here (and nowhere else),
//! so a loom model exercises the same code that ships. (`ScheduleError`
//! keeps its value in a `std` mutex that is never locked: a `Sync` wrapper,
//! not a lock.)

#[cfg(not(all(loom, test)))]
mod imp {
    pub(crate) use alloc::sync::Arc;
    pub(crate) use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
    pub(crate) use std::thread;
    pub(crate) use std::thread::{JoinHandle, Thread, ThreadId};

    /// A mutex whose `lock` cannot fail (parking_lot's does not poison).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(parking_lot::Mutex<T>);

    pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(parking_lot::Mutex::new(value))
        }

        #[inline]
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock()
        }
    }

    /// The worker pool's queue.
    pub(crate) mod channel {
        pub(crate) use crossbeam_channel::{unbounded, Receiver, Sender};
    }

    /// A condition variable over [`Mutex`].
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        /// Unlocks, waits for a notification (or a spurious wake-up),
        /// relocks.
        pub(crate) fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(&mut guard);
            guard
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

#[cfg(all(loom, test))]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
    pub(crate) use loom::sync::Arc;
    pub(crate) use loom::thread::{JoinHandle, ThreadId};
    pub(crate) use thread::Thread;

    /// `std::thread`'s park/unpark, rebuilt on a loom mutex and condvar.
    ///
    /// loom's own `Thread::unpark` makes a thread runnable whatever it is
    /// blocked on, including a mutex another thread holds, which its mutex
    /// model then rejects. The driver is unparked while it may be waiting
    /// for a shard lock, so models need park/unpark that only affects
    /// `park`. Same token semantics: an unpark before a park is kept.
    pub(crate) mod thread {
        pub(crate) use loom::thread::{spawn, yield_now, Builder};

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
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        }
    }

    /// The worker pool's queue, rebuilt on loom's mutex and condvar (a
    /// crossbeam channel blocks outside the model), with the subset of
    /// crossbeam's API the pool uses.
    pub(crate) mod channel {
        use alloc::collections::VecDeque;

        use super::{Arc, Condvar, Mutex};

        struct Queue<T> {
            items: VecDeque<T>,
            senders: usize,
        }

        struct Inner<T> {
            queue: Mutex<Queue<T>>,
            ready: Condvar,
        }

        pub(crate) struct Sender<T>(Arc<Inner<T>>);
        pub(crate) struct Receiver<T>(Arc<Inner<T>>);
        pub(crate) struct SendError<T>(T);

        impl<T> SendError<T> {
            pub(crate) fn into_inner(self) -> T {
                self.0
            }
        }

        pub(crate) fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
            let inner = Arc::new(Inner {
                queue: Mutex::new(Queue {
                    items: VecDeque::new(),
                    senders: 1,
                }),
                ready: Condvar::default(),
            });
            (Sender(Arc::clone(&inner)), Receiver(inner))
        }

        impl<T> Sender<T> {
            pub(crate) fn send(&self, value: T) -> Result<(), SendError<T>> {
                self.0.queue.lock().items.push_back(value);
                self.0.ready.notify_all();
                Ok(())
            }
        }

        impl<T> Drop for Sender<T> {
            fn drop(&mut self) {
                self.0.queue.lock().senders -= 1;
                self.0.ready.notify_all();
            }
        }

        impl<T> Clone for Receiver<T> {
            fn clone(&self) -> Self {
                Receiver(Arc::clone(&self.0))
            }
        }

        impl<T> Receiver<T> {
            /// The next item if one is queued.
            pub(crate) fn try_recv(&self) -> Result<T, ()> {
                self.0.queue.lock().items.pop_front().ok_or(())
            }

            /// Blocks for the next item; ends once every sender is gone and
            /// the queue is empty.
            pub(crate) fn iter(&self) -> impl Iterator<Item = T> + '_ {
                core::iter::from_fn(move || {
                    let mut queue = self.0.queue.lock();
                    loop {
                        if let Some(item) = queue.items.pop_front() {
                            return Some(item);
                        }
                        if queue.senders == 0 {
                            return None;
                        }
                        queue = self.0.ready.wait(queue);
                    }
                })
            }
        }
    }

    /// loom's condition variable, with the same by-value `wait` as the
    /// normal build.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0
                .wait(guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

pub(crate) use core::sync::atomic::Ordering;
pub(crate) use imp::*;
