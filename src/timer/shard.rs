//! The state every handle, the driver and running tasks share: the
//! sharded wheels, the timer's lifecycle, the driver's wake tick, the
//! executor and the counters.
//!
//! # Ground rules
//!
//! **Shards.** The timers live in `S` shards (a power of two, 4 per core by
//! default). A shard is a `Mutex` around its `Wheel`s, one per slack class
//! in use (`slack.rs`), and every access to a wheel is under its shard's
//! lock. Each thread schedules into a *home*
//! shard of its own (assigned round-robin at its first schedule), so
//! threads do not contend; a [`TimerHandle`] records its shard, and cancel
//! and reset lock that one. There is no global lock.
//!
//! **Only the driver moves a wheel's time**, and no user code (executors,
//! tasks, value factories, hooks) ever runs under a shard lock: whoever
//! takes timers out collects them, unlocks, then calls out.
//!
//! **Fire or cancel: exactly one wins.** Both take the timer out of its
//! wheel under the shard lock; a `cancel` that finds it gone returns `None`
//! (fired or firing).
//!
//! **Lifecycle** (`Shared::state`):
//!
//! | state | entered by | schedules | driver |
//! |-------|------------|-----------|--------|
//! | `RUNNING` | `build` | accepted | fires what is due, sleeps until the next |
//! | `FINISHING` | `shutdown_graceful` (from `RUNNING`) | refused with `Shutdown` | one last pass firing what is due, then exits |
//! | `STOPPING` | `shutdown` or dropping the last handle (from `RUNNING`) | refused with `Shutdown` | hands nothing more over (what it holds goes back, `in_hand.rs`), exits |
//!
//! Only `RUNNING` moves on, and only once (a compare-exchange), so one
//! caller drains. Schedulers read the state *under the shard lock*, so
//! every schedule either lands before that shard is drained (and is
//! returned by the drain) or sees the new state and gets its value back.

use super::unwind::catch_unwind;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::marker::PhantomData;
use core::panic::AssertUnwindSafe;

use super::executor::{Executor, Undelivered, UndeliveredHook, Why};
use super::job::{Job, Unfired};
use super::priority::Ranks;
use super::slack::Classes;
use super::stats::Counters;
use super::sync::{
    AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Mutex, MutexGuard, Ordering, Thread,
};
use super::time::TimeSource;
use super::{Expired, ScheduleError, ScheduleErrorKind, TimerHandle};
use crate::{Geometry, Tick, Wheel};

/// `Shared::state`: accepting schedules.
pub(super) const RUNNING: u8 = 0;
/// Graceful shutdown: the driver fires what is due, then exits.
pub(super) const FINISHING: u8 = 1;
/// The driver exits at its next check.
pub(super) const STOPPING: u8 = 2;

/// One slack class's wheel in a shard.
pub(super) type Shard<T> = Wheel<Job<T>>;

/// A shard's wheels, one per slack class used in it (`slack.rs`).
pub(super) struct Wheels<T> {
    pub(super) by_class: Vec<Option<Shard<T>>>,
    geometry: Geometry,
    /// The priorities of timers filed with one (`priority.rs`); `None`
    /// until the first, and never again after. Boxed: a shard without any
    /// keeps one word for them beside its hot fields.
    pub(super) ranks: Option<Box<Ranks>>,
    /// Dropped sleeps' timers, still filed, to cancel (`futures/filed.rs`).
    #[cfg(feature = "async")]
    dropped: super::futures::Dropped,
}

impl<T> Wheels<T> {
    pub(super) fn new(geometry: Geometry) -> Self {
        Wheels {
            by_class: Vec::new(),
            geometry,
            ranks: None,
            #[cfg(feature = "async")]
            dropped: super::futures::Dropped::new(),
        }
    }

    /// Notes a dropped sleep's timer (`futures/filed.rs`); `true` once the batch
    /// is full.
    #[cfg(feature = "async")]
    #[inline]
    pub(super) fn push_dropped(&mut self, class: u16, key: crate::TimerKey) -> bool {
        self.dropped.push(class, key)
    }

    /// Cancels the noted timers of dropped sleeps, if any: before a wheel's
    /// time moves, and before a drain. Drop the wakers after the lock.
    #[cfg(feature = "async")]
    #[inline]
    pub(super) fn flush_dropped(&mut self) -> Option<super::futures::DroppedWakers> {
        if self.dropped.len() == 0 {
            return None;
        }
        let mut wakers = [const { None }; super::futures::DROP_BATCH];
        self.dropped.cancel_all(&mut self.by_class, &mut wakers);
        Some(wakers)
    }

    /// The wheel of `class`, if a timer of it was ever filed here.
    #[inline]
    pub(super) fn get(&self, class: u16) -> Option<&Shard<T>> {
        self.by_class.get(usize::from(class))?.as_ref()
    }

    #[inline]
    pub(super) fn get_mut(&mut self, class: u16) -> Option<&mut Shard<T>> {
        self.by_class.get_mut(usize::from(class))?.as_mut()
    }

    /// The wheel of `class`, made on its first timer.
    #[inline]
    pub(super) fn get_or_make(&mut self, class: u16) -> &mut Shard<T> {
        let class = usize::from(class);
        if self.by_class.len() <= class {
            self.by_class.resize_with(class + 1, || None);
        }
        let geometry = self.geometry;
        self.by_class[class].get_or_insert_with(|| Wheel::with_geometry(geometry))
    }

    /// Timers pending in every class (not counting dropped sleeps'.)
    #[inline]
    pub(super) fn len(&self) -> usize {
        let filed: usize = self.by_class.iter().flatten().map(Wheel::len).sum();
        #[cfg(feature = "async")]
        let filed = filed - self.dropped.len();
        filed
    }

    /// Every class's wheel.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Shard<T>> {
        self.by_class.iter().flatten()
    }
}

/// A shard and its counters (written under its lock, read without it).
/// Aligned to its own cache lines so that threads working on neighbouring
/// shards do not share a line.
#[repr(align(128))]
pub(super) struct ShardCell<T> {
    pub(super) lock: Mutex<Wheels<T>>,
    pub(super) pending: AtomicUsize,
    pub(super) scheduled: AtomicU64,
    pub(super) cancelled: AtomicU64,
}

impl<T> ShardCell<T> {
    pub(super) fn new(wheels: Wheels<T>) -> Self {
        ShardCell {
            lock: Mutex::new(wheels),
            pending: AtomicUsize::new(0),
            scheduled: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
        }
    }

    /// Publishes the wheel's length; call under the lock after a change.
    #[inline]
    pub(super) fn publish_len(&self, wheels: &Wheels<T>) {
        // Release: a reader that sees timers leave here for the driver's
        // hands also sees them counted in `Shared::handing`.
        self.pending.store(wheels.len(), Ordering::Release);
    }

    /// Publishes a length one more (`grew`) or one less than the last
    /// published: under the lock, after filing or cancelling one timer,
    /// without summing the classes' wheels.
    #[inline]
    pub(super) fn publish_one(&self, grew: bool) {
        let len = self.pending.load(Ordering::Relaxed);
        let len = if grew { len + 1 } else { len - 1 };
        // Release, as `publish_len`: a reader of this length sees what the
        // lock's earlier holders did, the driver's `handing` count too.
        self.pending.store(len, Ordering::Release);
    }

    /// Adds one to a counter only this shard's lock holder writes: a plain
    /// load and store, no read-modify-write.
    #[inline]
    pub(super) fn bump(counter: &AtomicU64) {
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}

pub(super) struct Shared<T, E> {
    pub(super) shards: Box<[ShardCell<T>]>,
    /// The tick the driver will wake by (the protocol is in `driver.rs`).
    pub(super) next_wake: AtomicU64,
    /// The driver is scanning the shards: its wake tick will include any
    /// deadline lowered into `next_wake` meanwhile.
    pub(super) scanning: AtomicBool,
    /// `RUNNING`, `FINISHING` or `STOPPING` (table above).
    pub(super) state: AtomicU8,
    /// The driver thread, for unparking; set by the driver as it starts.
    pub(super) driver: Mutex<Option<Thread>>,
    pub(super) time: TimeSource,
    /// The slack classes (`slack.rs`).
    pub(super) classes: Classes,
    /// The executor is not here but in the `Owner` and the driver: sleeps
    /// and fixed-delay runs hold this state, and must not keep the
    /// executor (a channel's sender, a pool's threads) after the last
    /// handle is dropped.
    pub(super) executor: PhantomData<fn() -> E>,
    pub(super) max_pending: Option<usize>,
    /// Pending timers counted against `max_pending` (only when it is set).
    pub(super) reserved: AtomicUsize,
    pub(super) counters: Counters,
    pub(super) on_undelivered: Option<UndeliveredHook<T>>,
    pub(super) passes: super::passes::Passes,
    /// Taken for hand-off when a stop came (`in_hand.rs`).
    pub(super) in_hand: super::in_hand::InHand<T>,
    /// One-shots and sleeps the driver has taken out of the wheels and
    /// not yet handed over (or kept back at a stop): `pending` counts
    /// them. Only the driver thread writes it.
    pub(super) handing: AtomicUsize,
}

impl<T: Send + 'static, E: Executor<T>> Shared<T, E> {
    /// The shard of `handle`, locked; `None` for a handle of no shard here.
    #[inline]
    pub(super) fn lock(
        &self,
        handle: TimerHandle,
    ) -> Option<(&ShardCell<T>, MutexGuard<'_, Wheels<T>>)> {
        let cell = self.shards.get(usize::from(handle.shard))?;
        Some((cell, cell.lock.lock()))
    }

    /// Files `job`, due at `deadline`, in slack class `class` of this
    /// thread's home shard.
    pub(super) fn insert(
        &self,
        deadline: Tick,
        class: u16,
        priority: u8,
        job: Job<T>,
    ) -> Result<TimerHandle, ScheduleError<Job<T>>> {
        if let Some(max) = self.max_pending {
            if self.reserved.fetch_add(1, Ordering::Relaxed) >= max {
                self.reserved.fetch_sub(1, Ordering::Relaxed);
                return Err(ScheduleError::new(ScheduleErrorKind::Full, job));
            }
        }
        self.file(deadline, class, priority, job)
            .inspect_err(|_| self.release_reservation(1))
    }

    /// [`insert`](Self::insert) outside `max_pending`: for sleeps, which
    /// are futures their callers hold (so bounded by them) and have no
    /// value to hand back.
    #[cfg(feature = "async")]
    pub(super) fn insert_unreserved(
        &self,
        deadline: Tick,
        class: u16,
        job: Job<T>,
    ) -> Result<TimerHandle, ScheduleError<Job<T>>> {
        self.file(deadline, class, 0, job)
    }

    /// Files a job whose reservation (if any) is made. A refusal leaves
    /// the reservation to the caller: a sleep made none, and giving one
    /// back for it wrapped the count (every schedule then said `Full`).
    fn file(
        &self,
        deadline: Tick,
        class: u16,
        priority: u8,
        job: Job<T>,
    ) -> Result<TimerHandle, ScheduleError<Job<T>>> {
        let index = home_shard(self.shards.len());
        let cell = &self.shards[index];
        let key = {
            let mut wheels = cell.lock.lock();
            if self.state.load(Ordering::SeqCst) != RUNNING {
                drop(wheels);
                return Err(ScheduleError::new(ScheduleErrorKind::Shutdown, job));
            }
            match wheels.get_or_make(class).try_insert(deadline, job) {
                Ok(key) => {
                    if priority > 0 {
                        wheels.rank(class, key, priority);
                    }
                    ShardCell::<T>::bump(&cell.scheduled);
                    cell.publish_one(true);
                    key
                }
                Err(full) => {
                    drop(wheels);
                    return Err(ScheduleError::new(
                        ScheduleErrorKind::Full,
                        full.into_inner(),
                    ));
                }
            }
        };
        self.counters.filed();
        self.wake_if_earlier(deadline, class);
        Ok(TimerHandle {
            key,
            shard: index as u16,
            class,
        })
    }

    /// After filing a timer of slack class `class` at `deadline` (and
    /// unlocking): make sure the driver wakes before its window closes.
    /// Why this is enough is in `driver.rs`; the plain load keeps the
    /// common case (a later wake) free of writes to the shared line.
    #[inline]
    pub(super) fn wake_if_earlier(&self, deadline: Tick, class: u16) {
        let wake = deadline.saturating_add(self.classes.get(class).wake_after);
        self.wake_by(wake);
    }

    /// Makes sure the driver wakes by tick `deadline`.
    #[inline]
    fn wake_by(&self, deadline: Tick) {
        if deadline < self.next_wake.load(Ordering::SeqCst)
            && deadline < self.next_wake.fetch_min(deadline, Ordering::SeqCst)
            && !self.scanning.load(Ordering::SeqCst)
        {
            self.unpark_driver();
        }
    }

    pub(super) fn unpark_driver(&self) {
        if let Some(driver) = self.driver.lock().as_ref() {
            driver.unpark();
        }
    }

    pub(super) fn release_reservation(&self, n: usize) {
        if self.max_pending.is_some() {
            self.reserved.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// Takes a pending timer out of its wheel (a cancel), or `None` if the
    /// handle is stale.
    pub(super) fn cancel_job(&self, handle: TimerHandle) -> Option<Job<T>> {
        let job = {
            let (cell, mut wheels) = self.lock(handle)?;
            let job = wheels.get_mut(handle.class)?.cancel(handle.key)?;
            wheels.unrank(handle.class, handle.key);
            ShardCell::<T>::bump(&cell.cancelled);
            cell.publish_one(false);
            job
        };
        self.counters.removed();
        if counts_against_max_pending(&job) {
            self.release_reservation(1);
        }
        Some(job)
    }

    /// Moves a pending timer's next run to `deadline` (for a fixed-rate
    /// timer, its schedule restarts there; for a fixed-delay timer whose
    /// run is in progress, the run after it moves). `false` if the handle
    /// is stale.
    pub(super) fn reset_to(&self, handle: TimerHandle, deadline: Tick) -> bool {
        let Some((_, mut wheels)) = self.lock(handle) else {
            return false;
        };
        // The timer stays in its class: it keeps its slack.
        let Some(wheel) = wheels.get_mut(handle.class) else {
            return false;
        };
        let moved_to = match wheel.get_mut(handle.key) {
            None => return false,
            Some(Job::Repeat(repeat)) => {
                // Runs the driver took before the reset must not start.
                repeat.epoch = repeat.epoch.wrapping_add(1);
                repeat.cadence.reset(deadline)
            }
            Some(_) => Some(deadline),
        };
        if let Some(deadline) = moved_to {
            wheel.reset(handle.key, deadline);
            drop(wheels);
            self.wake_if_earlier(deadline, handle.class);
        }
        true
    }

    /// Hands a value that cannot be delivered to the hook, or drops it and
    /// counts it in `Stats::dropped`.
    pub(super) fn undelivered(&self, fired: Expired<T>, why: Why) {
        let Some(hook) = &self.on_undelivered else {
            self.counters.dropped();
            // The value's `Drop` is user code: a panic in it must not
            // take the driver down with it.
            if catch_unwind(AssertUnwindSafe(move || drop(fired))).is_err() {
                self.counters.panicked();
            }
            return;
        };
        if catch_unwind(AssertUnwindSafe(|| hook(Undelivered { fired, why }))).is_err() {
            self.counters.panicked();
            self.counters.dropped();
        }
    }

    /// Takes every timer out of every shard, and those the driver kept
    /// back from a hand-off when the stop came. Value factories run after the
    /// locks are released; one that panics loses that value, which is
    /// counted in `Stats::panicked` and `dropped`.
    pub(super) fn drain_all(&self) -> Vec<Unfired<T>> {
        let mut jobs = Vec::new();
        let mut repeating = Vec::new();
        for (shard, cell) in self.shards.iter().enumerate() {
            let mut wheels = cell.lock.lock();
            #[cfg(feature = "async")]
            let dropped = wheels.flush_dropped();
            for (class, wheel) in wheels.by_class.iter_mut().enumerate() {
                let Some(wheel) = wheel else { continue };
                repeating.extend(wheel.iter().filter_map(|(key, _, job)| {
                    matches!(job, Job::Repeat(_)).then_some(TimerHandle {
                        key,
                        shard: shard as u16,
                        class: class as u16,
                    })
                }));
                jobs.extend(wheel.drain());
            }
            wheels.forget_ranks();
            cell.publish_len(&wheels);
            drop(wheels);
            #[cfg(feature = "async")]
            super::futures::drop_wakers(dropped, &self.counters);
        }
        self.release_reservation(
            jobs.iter()
                .filter(|(_, job)| counts_against_max_pending(job))
                .count(),
        );
        let mut unfired = self.in_hand.drain(repeating);
        unfired.extend(
            jobs.into_iter()
                .filter_map(|(deadline, job)| self.unfired(deadline, job)),
        );
        unfired
    }
}

/// `true` for the jobs `max_pending` counts: all but sleeps.
#[inline]
pub(super) fn counts_against_max_pending<T>(job: &Job<T>) -> bool {
    match job {
        #[cfg(feature = "async")]
        Job::Wake(..) => false,
        _ => true,
    }
}

/// The shard a thread schedules into: its own, assigned round-robin the
/// first time it schedules (so threads rarely share one).
#[cfg(not(all(loom, test)))]
fn home_shard(shards: usize) -> usize {
    use core::cell::Cell;
    // Not a synchronisation primitive: a counter that only spreads threads.
    use core::sync::atomic::AtomicUsize as Spread;
    static NEXT: Spread = Spread::new(0);
    std::thread_local!(static HOME: Cell<usize> = const { Cell::new(usize::MAX) });
    let home = HOME.with(|home| {
        if home.get() == usize::MAX {
            home.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        home.get()
    });
    home & (shards - 1)
}

/// loom models run one shard.
#[cfg(all(loom, test))]
fn home_shard(_shards: usize) -> usize {
    0
}
