//! What a sleep shares with its timer (feature `async`; the protocol is
//! at the top of `sleep.rs`): [`Sleeps`], through which a `Sleep` reaches
//! a timer of any value and executor types, and why the timers of dropped
//! sleeps are cancelled in batches (the batch is in `dropped.rs`).
//!
//! # Dropped sleeps
//!
//! A sleep's timer lives in the wheel's slab, not in the sleep, so
//! cancelling it reads one more cache line than dropping the sleep does.
//! Sleeps that come and go in no particular order (a server's
//! connections) would pay a cache miss each, one after another. So a
//! dropped sleep whose timer is not yet due, which is therefore still
//! filed, is only noted in its shard, under the lock, and counted as
//! cancelled at once. Once [`DROP_BATCH`] are noted, or before the driver
//! next moves that shard's time, or before a drain, the batch is
//! cancelled together: every entry prefetched first, so that the misses
//! overlap. Since a noted timer is cancelled before its shard's time can
//! reach its deadline, it never fires; until then it holds its task's
//! waker (at most `DROP_BATCH` per shard), and it may still be the wheel's
//! earliest timer, which costs the driver a wake-up for nothing, as any
//! cancelled timer's old deadline may. A sleep dropped once its deadline
//! has come, or after the timer stopped, is cancelled at once.

use super::super::unwind::catch_unwind;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::panic::AssertUnwindSafe;
use core::task::Waker;
use core::time::Duration;
use std::time::Instant;

use crate::timer::executor::Executor;
use crate::timer::job::Job;
use crate::timer::shard::{ShardCell, Shared, Wheels, RUNNING};
use crate::timer::sync::Ordering;
use crate::timer::{Timer, TimerHandle};
use crate::{Tick, TimerKey, Wheel};

/// What a sleep needs of its timer, whatever the timer's value and
/// executor types.
pub(in crate::timer) trait Sleeps: Send + Sync {
    fn now(&self) -> Instant;
    /// The slack of `class`, in ticks.
    fn slack(&self, class: u16) -> Tick;
    fn tick_at(&self, deadline: Instant) -> Tick;
    /// The tick `delay` from now, saturating (as `Timer::sleep`'s).
    fn deadline_after(&self, delay: Duration) -> Tick;
    fn instant_of(&self, tick: Tick) -> Instant;
    /// The length of `ticks` ticks (saturating).
    fn duration_of(&self, ticks: Tick) -> Duration;
    /// `true` once the timer has stopped.
    fn is_stopped(&self) -> bool;
    /// Files a timer at `deadline` that wakes `waker`; `None` if the timer
    /// has stopped.
    fn file(&self, deadline: Tick, class: u16, waker: Waker) -> Option<TimerHandle>;
    /// Makes the pending timer `handle` wake `waker`; `false` if it is
    /// gone (fired, or the timer stopped).
    fn refresh(&self, handle: TimerHandle, waker: &Waker) -> bool;
    /// `true` while the timer `handle` is filed.
    fn is_filed(&self, handle: TimerHandle) -> bool;
    /// Moves the pending timer `handle`; `false` if it is gone.
    fn rearm(&self, handle: TimerHandle, deadline: Tick) -> bool;
    /// Removes the timer `handle`, filed at `at`, if it is still there.
    fn disarm(&self, handle: TimerHandle, at: Tick);
    /// Removes the timer `handle` of a sleep that completes because its
    /// `deadline` has passed, if the driver has not fired it yet: it
    /// counts as fired, as if the driver had woken it.
    fn finish(&self, handle: TimerHandle, deadline: Tick);
}

impl<T: Send + 'static, E: Executor<T>> Sleeps for Shared<T, E> {
    fn now(&self) -> Instant {
        self.time.now()
    }

    fn slack(&self, class: u16) -> Tick {
        self.classes.get(class).slack
    }

    #[inline]
    fn tick_at(&self, deadline: Instant) -> Tick {
        self.time.tick_at(deadline)
    }

    fn deadline_after(&self, delay: Duration) -> Tick {
        self.time.deadline_after(delay)
    }

    fn instant_of(&self, tick: Tick) -> Instant {
        self.time.instant_of(tick)
    }

    fn duration_of(&self, ticks: Tick) -> Duration {
        self.time.duration_of(ticks)
    }

    fn is_stopped(&self) -> bool {
        self.state.load(Ordering::SeqCst) != RUNNING
    }

    fn file(&self, deadline: Tick, class: u16, waker: Waker) -> Option<TimerHandle> {
        // A refusal hands the waker back inside the error, dropped here,
        // after the lock.
        self.insert_unreserved(deadline, class, Job::Wake(waker))
            .ok()
    }

    fn refresh(&self, handle: TimerHandle, waker: &Waker) -> bool {
        {
            let Some((_, mut wheels)) = self.lock(handle) else {
                return false;
            };
            match entry(&mut wheels, handle) {
                None => return false,
                Some(stored) if stored.will_wake(waker) => return true,
                Some(_) => {}
            }
        }
        // Another waker: clone it outside the lock, then swap it in.
        let new = waker.clone();
        let old = {
            let Some((_, mut wheels)) = self.lock(handle) else {
                return false;
            };
            match entry(&mut wheels, handle) {
                Some(stored) => core::mem::replace(stored, new),
                // Fired meanwhile: `new` is dropped after the lock.
                None => return false,
            }
        };
        drop(old);
        true
    }

    fn is_filed(&self, handle: TimerHandle) -> bool {
        self.lock(handle).is_some_and(|(_, wheels)| {
            wheels
                .get(handle.class)
                .is_some_and(|wheel| wheel.contains(handle.key))
        })
    }

    fn rearm(&self, handle: TimerHandle, deadline: Tick) -> bool {
        self.reset_to(handle, deadline)
    }

    fn disarm(&self, handle: TimerHandle, at: Tick) {
        let Some((cell, mut wheels)) = self.lock(handle) else {
            return;
        };
        let Some(now) = wheels.get(handle.class).map(Wheel::now) else {
            return;
        };
        if at > now && self.state.load(Ordering::SeqCst) == RUNNING {
            // Filed and not yet due, so still there: it joins the batch
            // (module docs) without being read now.
            let full = wheels.push_dropped(handle.class, handle.key);
            ShardCell::<T>::bump(&cell.cancelled);
            cell.publish_one(false);
            let wakers = if full { wheels.flush_dropped() } else { None };
            drop(wheels);
            self.counters.removed();
            // Runtime code, after the lock.
            super::drop_wakers(wakers, &self.counters);
            return;
        }
        let job = wheels
            .get_mut(handle.class)
            .and_then(|wheel| wheel.cancel(handle.key));
        if job.is_some() {
            ShardCell::<T>::bump(&cell.cancelled);
            cell.publish_one(false);
        }
        drop(wheels);
        if job.is_some() {
            self.counters.removed();
        }
        drop(job);
    }

    fn finish(&self, handle: TimerHandle, deadline: Tick) {
        let Some((cell, mut wheels)) = self.lock(handle) else {
            return;
        };
        let job = wheels
            .get_mut(handle.class)
            .and_then(|wheel| wheel.cancel(handle.key));
        if job.is_some() {
            // Reached its deadline: a fire, not a cancel.
            cell.publish_one(false);
        }
        drop(wheels);
        let Some(job) = job else {
            return; // the driver fired it and counted it
        };
        // Runtime code and the clock, after the lock.
        drop(job);
        let slack = self.classes.get(handle.class).slack;
        crate::timer::hand_off::record_fire(self, deadline, slack);
    }
}

impl<T: Send + 'static, E: Executor<T>> Shared<T, E> {
    /// Takes every filed sleep's timer out of the wheels and wakes its
    /// task (outside the locks; a waker that panics is counted). A stop
    /// that waits for the executor's tasks (`shutdown_graceful`) does this
    /// first: one of those tasks may await a sleep, which completes once
    /// the timer has stopped, and the drain that wakes the rest comes only
    /// after the wait.
    pub(in crate::timer) fn wake_sleeps(&self) {
        let mut wakers = Vec::new();
        for cell in self.shards.iter() {
            let dropped = {
                let mut wheels = cell.lock.lock();
                let dropped = wheels.flush_dropped();
                for wheel in wheels.by_class.iter_mut().flatten() {
                    let sleeps: Vec<TimerKey> = wheel
                        .iter()
                        .filter_map(|(key, _, job)| matches!(job, Job::Wake(_)).then_some(key))
                        .collect();
                    for key in sleeps {
                        if let Some(Job::Wake(waker)) = wheel.cancel(key) {
                            wakers.push(waker);
                        }
                    }
                }
                cell.publish_len(&wheels);
                dropped
            };
            super::drop_wakers(dropped, &self.counters);
        }
        for waker in wakers {
            if catch_unwind(AssertUnwindSafe(move || waker.wake())).is_err() {
                self.counters.panicked();
            }
        }
    }
}

/// The waker of a sleep's filed timer, if it is still filed.
fn entry<T>(wheels: &mut Wheels<T>, handle: TimerHandle) -> Option<&mut Waker> {
    match wheels.get_mut(handle.class)?.get_mut(handle.key)? {
        Job::Wake(waker) => Some(waker),
        _ => None,
    }
}

impl<T: Send + 'static, E: Executor<T>> Timer<T, E> {
    #[cfg(not(all(loom, test)))]
    pub(in crate::timer) fn sleeps(&self) -> Arc<dyn Sleeps> {
        let shared: Arc<Shared<T, E>> = Arc::clone(&self.owner.shared);
        shared
    }

    /// loom's `Arc` cannot become a trait object: the models box a handle.
    #[cfg(all(loom, test))]
    pub(in crate::timer) fn sleeps(&self) -> Arc<dyn Sleeps> {
        Arc::new(loom_shared::LoomShared(self.owner.shared.clone()))
    }
}

#[cfg(all(loom, test))]
mod loom_shared {
    use super::*;

    /// A model's `Shared` behind loom's `Arc`, as a `Sleeps`.
    pub(in crate::timer) struct LoomShared<T, E>(
        pub(in crate::timer) crate::timer::sync::Arc<Shared<T, E>>,
    );

    impl<T: Send + 'static, E: Executor<T>> Sleeps for LoomShared<T, E> {
        fn now(&self) -> Instant {
            self.0.now()
        }
        fn slack(&self, class: u16) -> Tick {
            self.0.slack(class)
        }
        fn tick_at(&self, deadline: Instant) -> Tick {
            self.0.tick_at(deadline)
        }
        fn deadline_after(&self, delay: Duration) -> Tick {
            self.0.deadline_after(delay)
        }
        fn instant_of(&self, tick: Tick) -> Instant {
            self.0.instant_of(tick)
        }
        fn duration_of(&self, ticks: Tick) -> Duration {
            self.0.duration_of(ticks)
        }
        fn is_stopped(&self) -> bool {
            self.0.is_stopped()
        }
        fn file(&self, deadline: Tick, class: u16, waker: Waker) -> Option<TimerHandle> {
            self.0.file(deadline, class, waker)
        }
        fn refresh(&self, handle: TimerHandle, waker: &Waker) -> bool {
            self.0.refresh(handle, waker)
        }
        fn is_filed(&self, handle: TimerHandle) -> bool {
            self.0.is_filed(handle)
        }
        fn rearm(&self, handle: TimerHandle, deadline: Tick) -> bool {
            self.0.rearm(handle, deadline)
        }
        fn disarm(&self, handle: TimerHandle, at: Tick) {
            self.0.disarm(handle, at)
        }
        fn finish(&self, handle: TimerHandle, deadline: Tick) {
            self.0.finish(handle, deadline)
        }
    }
}
