//! Restart safety: a [`Snapshot`] of every pending job in wall-clock time,
//! [`Timer::restore`] with a [`MisfirePolicy`] for jobs that fell due
//! while the process was down, and [`DurableTimer`], whose jobs survive a
//! crash through an fsync'd journal (`durable.rs`, the file in `journal.rs`,
//! its format in `format.rs`), one-shot or recurring (job schedulers,
//! `schedulers.rs`).
//!
//! A `Timer` keeps deadlines as `Instant`s, which mean nothing in the next
//! process. A snapshot converts each one to `SystemTime` through the
//! timer's [`Clock`](crate::timer::Clock) (`now` and `wall_now` read
//! together), so it survives a restart and can be stored (feature `serde`
//! derives `Serialize` and `Deserialize`). Restoring converts back with the
//! new timer's clock, and decides what to do with every job that is now
//! overdue:
//!
//! - late by at most the policy's **threshold** (60 s by default, Quartz's
//!   `misfireThreshold`): scheduled as it was, so it fires at once (a
//!   `Burst` job more than `max_catch_up` runs behind is reported as
//!   missed, since runs are left out);
//! - later than that, **missed**: a one-shot job follows
//!   [`OnMissed`] (fire now, spread over a window, discard, dead-letter, or
//!   reschedule through a function); a fixed-rate job follows its own
//!   `MissedTicks`, with at most `max_catch_up` missed runs made up
//!   (`MissedTicks::Burst` makes up each one; `Skip` and `Delay`, one).
//!
//! Every job comes out of `restore` scheduled, discarded on purpose, or
//! handed back (dead letters, and everything not yet restored when an
//! error stops it): nothing is lost silently. The report says which.
//!
//! Only values that can be copied and stored are persisted: snapshots need
//! `T: Clone`, so closures ([`Task`](crate::timer::Task)) and fixed-delay
//! timers, which run closures, are not covered.
//!
//! ```
//! use std::time::Duration;
//! use tickwheel::persist::{MisfirePolicy, Snapshot};
//! use tickwheel::Timer;
//!
//! let (before, _fired) = Timer::with_channel()?;
//! before.schedule(Duration::from_secs(900), "close order 17")?;
//! let snapshot: Snapshot<&str> = before.shutdown_snapshot();
//! // ... the process restarts ...
//! let (after, _fired) = Timer::with_channel()?;
//! let report = after.restore(snapshot, &MisfirePolicy::default())?;
//! assert_eq!(report.outcomes.len(), 1);
//! assert_eq!(after.pending(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod compaction;
mod crc32;
mod decode;
mod durable;
mod error;
mod folded;
mod format;
mod handle;
mod job;
mod journal;
mod journaled_job;
mod keyed;
mod keys;
mod lock;
mod misfire_policy;
mod outcome;
mod payload;
#[cfg(feature = "metrics")]
mod published;
mod recurring;
mod replay;
mod restore;
mod schedulers;
mod summary;
mod upkeep;

use alloc::vec::Vec;
use core::time::Duration;
use std::time::{Instant, SystemTime};

use crate::timer::{Executor, MissedTicks, Timer};

pub use decode::Damage;
pub use durable::DurableTimer;
pub use error::{JournalError, RestoreError, RestoreFailure};
pub use handle::{DurableHandle, Found, Recovery};
pub use journal::SyncPolicy;
pub use journaled_job::JournaledJob;
pub use keyed::KeyedJob;
pub use misfire_policy::{MisfirePolicy, OnMissed, Reschedule};
pub use outcome::{Outcome, RestoreReport};
pub use payload::Payload;
pub use recurring::JournaledSchedule;
pub use schedulers::ScheduledRun;
pub use summary::JournalSummary;

/// The largest encoded value a [`DurableTimer`] journals: 16 MiB less a
/// record's 21 bytes of kind, id and due time. `schedule` refuses a larger
/// one with [`ScheduleErrorKind::TooLarge`](crate::timer::ScheduleErrorKind::TooLarge)
/// and hands it back, so every record written can be read back.
///
/// ```
/// assert_eq!(tickwheel::persist::MAX_PAYLOAD, (16 << 20) - 21);
/// ```
pub const MAX_PAYLOAD: usize = format::MAX_PAYLOAD;

/// The longest key of a keyed job
/// ([`DurableTimer::schedule_keyed`]), in bytes.
///
/// ```
/// assert_eq!(tickwheel::persist::MAX_KEY, 4096);
/// ```
pub const MAX_KEY: usize = format::MAX_KEY;

/// Every pending job of a timer at one moment, in wall-clock time.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::persist::Snapshot;
///
/// let (timer, _fired) = tickwheel::Timer::with_channel()?;
/// timer.schedule(Duration::from_secs(60), 7u32)?;
/// let snapshot: Snapshot<u32> = timer.snapshot();
/// assert_eq!(snapshot.version, Snapshot::<u32>::VERSION);
/// assert_eq!(snapshot.jobs[0].value, 7);
/// assert!(snapshot.jobs[0].due > snapshot.taken_at);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Snapshot<T> {
    /// The format version this snapshot was written with; [`restore`]
    /// refuses any other.
    ///
    /// [`restore`]: Timer::restore
    pub version: u32,
    /// When the snapshot was taken (the timer clock's wall time).
    pub taken_at: SystemTime,
    /// The jobs, in no particular order.
    pub jobs: Vec<PendingJob<T>>,
}

impl<T> Snapshot<T> {
    /// The version of the format this crate writes and reads.
    ///
    /// ```
    /// assert_eq!(tickwheel::persist::Snapshot::<()>::VERSION, 1);
    /// ```
    pub const VERSION: u32 = 1;
}

/// One pending job: when it is due, how it repeats, and its value.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use tickwheel::persist::{PendingJob, Repeat};
/// use tickwheel::timer::MissedTicks;
///
/// let heartbeat = PendingJob {
///     due: SystemTime::now() + Duration::from_secs(1),
///     repeat: Some(Repeat { period: Duration::from_secs(1), missed: MissedTicks::Skip }),
///     value: "ping",
/// };
/// # let _ = heartbeat;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PendingJob<T> {
    /// The deadline (of the next run, for a repeating job), in wall-clock
    /// time, rounded up to the timer's tick.
    pub due: SystemTime,
    /// For a fixed-rate job, its period and its policy for missed runs.
    pub repeat: Option<Repeat>,
    /// The job's value (for a repeating job, one from its factory; a
    /// restored job repeats clones of it).
    pub value: T,
}

/// How a fixed-rate job repeats: run `n` is due at `due + n × period`.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::persist::Repeat;
/// use tickwheel::timer::MissedTicks;
///
/// let hourly = Repeat { period: Duration::from_secs(3600), missed: MissedTicks::Skip };
/// # let _ = hourly;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Repeat {
    /// Time between runs (a whole number of the timer's ticks).
    pub period: Duration,
    /// What to do about runs that were missed.
    pub missed: MissedTicks,
}

/// Converts between a timer's `Instant`s and wall time, from one reading of
/// both.
#[derive(Debug, Clone, Copy)]
struct Epoch {
    instant: Instant,
    wall: SystemTime,
}

impl Epoch {
    fn wall_of(self, instant: Instant) -> SystemTime {
        match instant.checked_duration_since(self.instant) {
            Some(ahead) => self.wall.checked_add(ahead).unwrap_or(self.wall),
            None => {
                let behind = self.instant.duration_since(instant);
                self.wall
                    .checked_sub(behind)
                    .unwrap_or(SystemTime::UNIX_EPOCH)
            }
        }
    }

    fn instant_of(self, wall: SystemTime) -> Instant {
        match wall.duration_since(self.wall) {
            Ok(ahead) => self
                .instant
                .checked_add(ahead)
                .unwrap_or_else(|| far_future(self.instant)),
            Err(behind) => self
                .instant
                .checked_sub(behind.duration())
                .unwrap_or(self.instant),
        }
    }
}

/// The latest `Instant` after `from` that the platform represents, roughly.
fn far_future(from: Instant) -> Instant {
    let mut step = Duration::from_secs(u64::MAX / 4);
    loop {
        if let Some(far) = from.checked_add(step) {
            return far;
        }
        step /= 2;
    }
}

impl<T: Send + 'static, E: Executor<T>> Timer<T, E> {
    /// A snapshot of every pending job, taken without stopping the timer.
    ///
    /// Values are cloned; a one-shot value is cloned while its shard is
    /// locked, so `T::clone` must not call back into this timer (a
    /// repeating job's value is made by its factory with no lock held).
    /// Jobs that fire or are scheduled while the snapshot is being taken
    /// may or may not be in it.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let (timer, _fired) = tickwheel::Timer::with_channel()?;
    /// timer.schedule(Duration::from_secs(60), "refund #3")?;
    /// let snapshot = timer.snapshot();
    /// assert_eq!(snapshot.jobs.len(), 1);
    /// assert_eq!(timer.pending(), 1); // still running
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self) -> Snapshot<T>
    where
        T: Clone,
    {
        let (instant, wall) = self.clock_now();
        let epoch = Epoch { instant, wall };
        snapshot_of(epoch, self.copy_unfired())
    }

    /// Stops the timer as [`shutdown`](Timer::shutdown) does and returns
    /// what never fired as a [`Snapshot`], periods included. Values are
    /// moved, not cloned.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let (timer, _fired) = tickwheel::Timer::with_channel()?;
    /// timer.schedule(Duration::from_secs(60), String::from("close order 9"))?;
    /// let snapshot = timer.shutdown_snapshot();
    /// assert_eq!(snapshot.jobs[0].value, "close order 9");
    /// assert!(timer.schedule(Duration::ZERO, String::new()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown_snapshot(&self) -> Snapshot<T> {
        let unfired = self.shutdown_unfired();
        let (instant, wall) = self.clock_now();
        snapshot_of(Epoch { instant, wall }, unfired)
    }
}

fn snapshot_of<T>(epoch: Epoch, unfired: Vec<crate::timer::Unfired<T>>) -> Snapshot<T> {
    Snapshot {
        version: Snapshot::<T>::VERSION,
        taken_at: epoch.wall,
        jobs: unfired
            .into_iter()
            .map(|job| PendingJob {
                due: epoch.wall_of(job.deadline),
                repeat: job.every.map(|(period, missed)| Repeat { period, missed }),
                value: job.value,
            })
            .collect(),
    }
}
