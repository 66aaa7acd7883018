//! What the persistence layer (`crate::persist`) reads out of a timer: every
//! unfired timer, copied live or taken at shutdown, and the clock's two
//! faces (`Instant` inside the process, wall time across processes).

use super::unwind::catch_unwind;
use alloc::vec::Vec;
use core::panic::AssertUnwindSafe;
use std::time::{Instant, SystemTime};

use super::executor::Executor;
use super::job::{Job, Make, Unfired};
use super::shard::{Shared, STOPPING};
use super::{Timer, TimerHandle};
use crate::Tick;

impl<T: Send + 'static, E: Executor<T>> Timer<T, E> {
    /// A copy of every pending timer, taken without stopping the timer.
    ///
    /// One-shot values are cloned while their shard is locked (the one
    /// place user code runs under a shard lock: `T::clone` must not call
    /// back into this timer); a repeating timer's value is made by its
    /// factory after the lock is released.
    pub(crate) fn copy_unfired(&self) -> Vec<Unfired<T>>
    where
        T: Clone,
    {
        let shared = &self.owner.shared;
        let mut copies = Vec::new();
        let mut repeating: Vec<(Tick, Job<T>)> = Vec::new();
        for cell in shared.shards.iter() {
            let wheels = cell.lock.lock();
            for (_, deadline, job) in wheels.iter().flat_map(|wheel| wheel.iter()) {
                match job {
                    Job::Once(value) => copies.push(Unfired {
                        deadline: shared.time.instant_of(deadline),
                        every: None,
                        value: value.clone(),
                    }),
                    // A sleep is its caller's future, not a job to keep.
                    #[cfg(feature = "async")]
                    Job::Wake(..) => {}
                    Job::Repeat(repeat) => repeating.push((
                        deadline,
                        Job::Repeat(alloc::boxed::Box::new(super::job::Repeat {
                            make: Make::clone(&repeat.make),
                            cadence: repeat.cadence,
                            epoch: repeat.epoch,
                        })),
                    )),
                }
            }
        }
        copies.extend(
            repeating
                .into_iter()
                .filter_map(|(deadline, job)| shared.unfired(deadline, job)),
        );
        copies
    }

    /// Stops the timer as [`shutdown`](Self::shutdown) does, keeping each
    /// unfired timer's period.
    pub(crate) fn shutdown_unfired(&self) -> Vec<Unfired<T>> {
        self.owner.stop(STOPPING)
    }

    /// Keeps a pending timer from firing until [`unhold`](Self::unhold)
    /// or a cancel, for a caller that must write something down first:
    /// moves it to the end of time and returns the deadline it had, or
    /// `None` if the handle is stale. Both bypass a repeating timer's
    /// cadence: the timer is moved, not rescheduled.
    pub(crate) fn hold(&self, handle: TimerHandle) -> Option<Tick> {
        let (_, mut wheels) = self.owner.shared.lock(handle)?;
        let wheel = wheels.get_mut(handle.class)?;
        let deadline = wheel.deadline(handle.key)?;
        wheel.reset(handle.key, Tick::MAX);
        Some(deadline)
    }

    /// Puts a timer [`hold`](Self::hold) kept back at `deadline`; `false`
    /// if the handle is stale.
    pub(crate) fn unhold(&self, handle: TimerHandle, deadline: Tick) -> bool {
        let shared = &self.owner.shared;
        let Some((_, mut wheels)) = shared.lock(handle) else {
            return false;
        };
        let moved = wheels
            .get_mut(handle.class)
            .is_some_and(|wheel| wheel.reset(handle.key, deadline));
        drop(wheels);
        if moved {
            shared.wake_if_earlier(deadline, handle.class);
        }
        moved
    }

    /// The clock's time now, as an `Instant` and as wall time, read as
    /// close together as possible.
    pub(crate) fn clock_now(&self) -> (Instant, SystemTime) {
        let clock = &self.owner.shared.time.clock;
        (clock.now(), clock.wall_now())
    }
}

impl<T: Send + 'static, E: Executor<T>> Shared<T, E> {
    /// A job out of its wheel as `Unfired`, making a repeating job's value
    /// (outside every lock).
    pub(super) fn unfired(&self, deadline: Tick, job: Job<T>) -> Option<Unfired<T>> {
        let (deadline, every, value) = match job {
            // A sleep whose timer stops completes at once (`futures/sleep.rs`).
            // Its waker is runtime code: a panic in it is caught and
            // counted, as when the driver wakes it (`hand_off.rs`), so that
            // it costs neither the other sleeps nor the unfired values.
            #[cfg(feature = "async")]
            Job::Wake(waker) => {
                if catch_unwind(AssertUnwindSafe(move || waker.wake())).is_err() {
                    self.counters.panicked();
                }
                return None;
            }
            Job::Once(value) => (self.time.instant_of(deadline), None, value),
            Job::Repeat(repeat) => {
                // Runs owed at once are due from the first of them (its
                // entry waits at "now"): a snapshot keeps them, and the grid.
                let owed_from = repeat.cadence.owed().and_then(|(next, owed, period)| {
                    let behind =
                        (self.time.duration_of(period).as_nanos()).checked_mul(u128::from(owed))?;
                    let behind = core::time::Duration::new(
                        u64::try_from(behind / 1_000_000_000).ok()?,
                        (behind % 1_000_000_000) as u32,
                    );
                    self.time.instant_of(next).checked_sub(behind)
                });
                let deadline = owed_from
                    .unwrap_or_else(|| self.time.instant_of(repeat.cadence.next_run(deadline)));
                let every = repeat
                    .cadence
                    .rate()
                    .map(|(ticks, missed)| (self.time.duration_of(ticks), missed));
                let made = catch_unwind(AssertUnwindSafe(|| (repeat.make)(None)));
                // The factory and what it captured go here: their `Drop`
                // is user code, and must not cost the other values.
                if catch_unwind(AssertUnwindSafe(move || drop(repeat))).is_err() {
                    self.counters.panicked();
                }
                match made {
                    Ok(value) => (deadline, every, value),
                    Err(_) => {
                        self.counters.panicked();
                        self.counters.dropped();
                        return None;
                    }
                }
            }
        };
        Some(Unfired {
            deadline,
            every,
            value,
        })
    }
}
