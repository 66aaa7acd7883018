//! A timer's pending jobs at one moment, in wall-clock time: the type,
//! and how a running or stopping `Timer` takes one.

use alloc::vec::Vec;
use std::time::SystemTime;

use super::epoch::Epoch;
use super::{PendingJob, Repeat};
use crate::timer::{Executor, Timer};

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
