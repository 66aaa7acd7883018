//! The timers of dropped sleeps a shard has noted, and their cancelling
//! in batches (feature `async`; why, in `filed.rs`).

use super::super::unwind::catch_unwind;
use core::panic::AssertUnwindSafe;
use core::task::Waker;

use crate::timer::job::Job;
use crate::timer::stats::Counters;
use crate::{TimerKey, Wheel};

/// How many dropped sleeps' timers a shard notes before it cancels them
/// together (module docs).
pub(in crate::timer) const DROP_BATCH: usize = 32;

/// The wakers of a cancelled batch, to drop after the lock.
pub(in crate::timer) type DroppedWakers = [Option<Waker>; DROP_BATCH];

/// The timers of dropped sleeps a shard has noted (module docs), by slack
/// class; every one is still filed.
#[derive(Debug)]
pub(in crate::timer) struct Dropped {
    timers: [Option<(u16, TimerKey)>; DROP_BATCH],
    len: usize,
}

impl Dropped {
    pub(in crate::timer) const fn new() -> Self {
        Dropped {
            timers: [None; DROP_BATCH],
            len: 0,
        }
    }

    #[inline]
    pub(in crate::timer) fn len(&self) -> usize {
        self.len
    }

    /// Notes a timer; `true` once the batch is full.
    #[inline]
    pub(in crate::timer) fn push(&mut self, class: u16, key: TimerKey) -> bool {
        self.timers[self.len] = Some((class, key));
        self.len += 1;
        self.len == DROP_BATCH
    }

    /// Cancels every noted timer in `by_class` (their entries prefetched
    /// first); their wakers go to `wakers`.
    pub(in crate::timer) fn cancel_all<T>(
        &mut self,
        by_class: &mut [Option<Wheel<Job<T>>>],
        wakers: &mut DroppedWakers,
    ) {
        let noted = &self.timers[..self.len];
        for &(class, key) in noted.iter().flatten() {
            if let Some(Some(wheel)) = by_class.get(usize::from(class)) {
                wheel.prefetch(key);
            }
        }
        for (slot, &(class, key)) in wakers.iter_mut().zip(noted.iter().flatten()) {
            if let Some(Some(wheel)) = by_class.get_mut(usize::from(class)) {
                *slot = cancel_waker(wheel, key);
            }
            // A noted timer is a sleep's, and still filed.
            debug_assert!(slot.is_some(), "a noted timer was gone");
        }
        self.len = 0;
    }
}

/// Drops a cancelled batch's wakers (runtime code: after the lock), each
/// on its own, so that one whose `Drop` panics is counted and the rest
/// still go (on the driver, it once killed the driver).
pub(in crate::timer) fn drop_wakers(wakers: Option<DroppedWakers>, counters: &Counters) {
    for waker in wakers.into_iter().flatten().flatten() {
        if catch_unwind(AssertUnwindSafe(move || drop(waker))).is_err() {
            counters.panicked();
        }
    }
}

/// Cancels a sleep's timer and returns its waker. Not inlined: returned
/// in registers, the waker does not pass through the stack in pieces of
/// other widths than it was written in (which stalled the batch).
#[inline(never)]
fn cancel_waker<T>(wheel: &mut Wheel<Job<T>>, key: TimerKey) -> Option<Waker> {
    match wheel.cancel(key)? {
        Job::Wake(waker) => Some(waker),
        _ => None,
    }
}
