//! [`Timer::restore`] and its [`MisfirePolicy`]: what happens to each job of
//! a snapshot in the new process.
//!
//! The vocabulary is Quartz's and systemd's: a *misfire threshold* (Quartz,
//! 60 s by default) separates a job that is merely late from one that was
//! *missed*; a missed one-shot job fires now (Quartz `FIRE_NOW`, systemd
//! `Persistent=true`), is spread over a window (so that thousands of orders
//! due during an outage do not stampede the executor), is discarded
//! (Quartz `DO_NOTHING`, systemd `Persistent=false`), goes to the dead
//! letters, or is rescheduled by a function. A missed fixed-rate job
//! follows its `MissedTicks`, making up at most `max_catch_up` runs
//! (Kubernetes gives up on a CronJob after 100 missed runs).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;
use std::time::SystemTime;

use super::{Epoch, PendingJob, Snapshot};
use crate::timer::{Executor, MissedTicks, ScheduleErrorKind, Timer, TimerHandle};

/// A function that picks a new due time for a missed job, given the job
/// and the wall time now (for [`OnMissed::Reschedule`]).
pub type Reschedule<T> = Arc<dyn Fn(&PendingJob<T>, SystemTime) -> SystemTime + Send + Sync>;

/// What to do with a one-shot job that was missed (later than the
/// threshold).
///
/// ```
/// use std::time::Duration;
/// use tickwheel::persist::OnMissed;
///
/// let calm: OnMissed<u32> = OnMissed::Spread(Duration::from_secs(60));
/// # let _ = calm;
/// ```
#[non_exhaustive]
pub enum OnMissed<T> {
    /// Fire at once (Quartz `FIRE_NOW`, systemd `Persistent=true`).
    FireNow,
    /// Fire spread evenly over this window from now, in due order.
    Spread(Duration),
    /// Drop it (Quartz `DO_NOTHING`, systemd `Persistent=false`); the
    /// report counts it.
    Discard,
    /// Do not schedule it: hand it back in [`RestoreReport::dead_letters`].
    DeadLetter,
    /// Schedule it at the time the function returns.
    Reschedule(Reschedule<T>),
}

impl<T> Clone for OnMissed<T> {
    fn clone(&self) -> Self {
        match self {
            OnMissed::FireNow => OnMissed::FireNow,
            OnMissed::Spread(window) => OnMissed::Spread(*window),
            OnMissed::Discard => OnMissed::Discard,
            OnMissed::DeadLetter => OnMissed::DeadLetter,
            OnMissed::Reschedule(f) => OnMissed::Reschedule(Arc::clone(f)),
        }
    }
}

impl<T> fmt::Debug for OnMissed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OnMissed::FireNow => f.write_str("FireNow"),
            OnMissed::Spread(window) => f.debug_tuple("Spread").field(window).finish(),
            OnMissed::Discard => f.write_str("Discard"),
            OnMissed::DeadLetter => f.write_str("DeadLetter"),
            OnMissed::Reschedule(_) => f.write_str("Reschedule(..)"),
        }
    }
}

/// How [`Timer::restore`] treats overdue jobs.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::persist::{MisfirePolicy, OnMissed};
///
/// let policy: MisfirePolicy<u64> = MisfirePolicy::default()
///     .threshold(Duration::from_secs(30))
///     .on_missed(OnMissed::Spread(Duration::from_secs(120)))
///     .max_catch_up(10);
/// assert_eq!(policy.threshold_value(), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone)]
pub struct MisfirePolicy<T> {
    pub(super) threshold: Duration,
    pub(crate) on_missed: OnMissed<T>,
    pub(super) max_catch_up: u64,
}

impl<T> Default for MisfirePolicy<T> {
    /// Threshold 60 s (Quartz's default), missed one-shots fire now, at
    /// most 100 runs made up (Kubernetes' limit).
    fn default() -> Self {
        MisfirePolicy {
            threshold: Duration::from_secs(60),
            on_missed: OnMissed::FireNow,
            max_catch_up: 100,
        }
    }
}

impl<T> MisfirePolicy<T> {
    /// Jobs later than this were missed; up to it, they are only late and
    /// fire at once.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let p = tickwheel::persist::MisfirePolicy::<()>::default().threshold(Duration::ZERO);
    /// assert_eq!(p.threshold_value(), Duration::ZERO);
    /// ```
    #[must_use]
    pub fn threshold(mut self, threshold: Duration) -> Self {
        self.threshold = threshold;
        self
    }

    /// What a missed one-shot job does.
    ///
    /// ```
    /// use tickwheel::persist::{MisfirePolicy, OnMissed};
    /// let p = MisfirePolicy::<()>::default().on_missed(OnMissed::DeadLetter);
    /// # let _ = p;
    /// ```
    #[must_use]
    pub fn on_missed(mut self, on_missed: OnMissed<T>) -> Self {
        self.on_missed = on_missed;
        self
    }

    /// The most missed runs of one fixed-rate job made up at once (with
    /// `MissedTicks::Burst`); older ones are skipped. At least 1.
    ///
    /// ```
    /// let p = tickwheel::persist::MisfirePolicy::<()>::default().max_catch_up(0);
    /// assert_eq!(p.max_catch_up_value(), 1);
    /// ```
    #[must_use]
    pub fn max_catch_up(mut self, runs: u64) -> Self {
        self.max_catch_up = runs.max(1);
        self
    }

    /// The misfire threshold.
    ///
    /// ```
    /// # use std::time::Duration;
    /// assert_eq!(tickwheel::persist::MisfirePolicy::<()>::default().threshold_value(), Duration::from_secs(60));
    /// ```
    pub fn threshold_value(&self) -> Duration {
        self.threshold
    }

    /// The catch-up limit.
    ///
    /// ```
    /// assert_eq!(tickwheel::persist::MisfirePolicy::<()>::default().max_catch_up_value(), 100);
    /// ```
    pub fn max_catch_up_value(&self) -> u64 {
        self.max_catch_up
    }
}

/// What restoring did with one job.
///
/// ```
/// use tickwheel::persist::Outcome;
///
/// fn describe(outcome: &Outcome) -> &'static str {
///     match outcome {
///         Outcome::Scheduled(_) => "as it was",
///         Outcome::FiredNow(_) | Outcome::Spread(..) | Outcome::Rescheduled(..) => "missed, scheduled",
///         Outcome::CaughtUp { .. } => "missed runs made up",
///         Outcome::Discarded | Outcome::DeadLettered => "missed, not scheduled",
///         _ => "other",
///     }
/// }
/// # let _ = describe;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Not missed (due later, or late within the threshold): scheduled at
    /// its due time.
    Scheduled(TimerHandle),
    /// A missed one-shot, scheduled to fire at once.
    FiredNow(TimerHandle),
    /// A missed one-shot, scheduled at this time within the spread window.
    Spread(TimerHandle, SystemTime),
    /// A missed one-shot, scheduled where the policy's function said.
    Rescheduled(TimerHandle, SystemTime),
    /// A missed one-shot, dropped by the policy.
    Discarded,
    /// A missed one-shot, handed back in [`RestoreReport::dead_letters`].
    DeadLettered,
    /// A fixed-rate job that missed `missed` runs (beyond the threshold);
    /// its `MissedTicks` decides, and at most `made_up` of them run at once.
    CaughtUp {
        /// The restored timer.
        handle: TimerHandle,
        /// Runs whose due time had passed.
        missed: u64,
        /// Of those, the most that will run now.
        made_up: u64,
    },
}

impl Outcome {
    /// The restored timer's handle, if the job was scheduled.
    ///
    /// ```
    /// assert_eq!(tickwheel::persist::Outcome::Discarded.handle(), None);
    /// ```
    pub fn handle(&self) -> Option<TimerHandle> {
        match *self {
            Outcome::Scheduled(h)
            | Outcome::FiredNow(h)
            | Outcome::Spread(h, _)
            | Outcome::Rescheduled(h, _)
            | Outcome::CaughtUp { handle: h, .. } => Some(h),
            Outcome::Discarded | Outcome::DeadLettered => None,
        }
    }
}

/// What [`Timer::restore`] did: one outcome per job, in the snapshot's
/// order, and the jobs handed back as dead letters.
///
/// ```
/// use tickwheel::persist::RestoreReport;
///
/// fn missed(report: &RestoreReport<u32>) -> usize {
///     report.outcomes.iter().filter(|o| !matches!(o, tickwheel::persist::Outcome::Scheduled(_))).count()
/// }
/// # let _ = missed;
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct RestoreReport<T> {
    /// One per job of the snapshot, in its order.
    pub outcomes: Vec<Outcome>,
    /// Missed one-shot jobs the policy sent to the dead letters.
    pub dead_letters: Vec<PendingJob<T>>,
}

/// Why [`Timer::restore`] stopped. Nothing is lost: the jobs restored so
/// far are in `restored`, and the rest, untouched, in `remaining`.
///
/// ```
/// use std::time::SystemTime;
/// use tickwheel::persist::{MisfirePolicy, Snapshot};
///
/// let (timer, _fired) = tickwheel::timer::delay_queue::<u8>()?;
/// let alien = Snapshot { version: 99, taken_at: SystemTime::now(), jobs: Vec::new() };
/// let err = timer.restore(alien, &MisfirePolicy::default()).unwrap_err();
/// assert_eq!(err.to_string(), "snapshot has format version 99, this crate reads 1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct RestoreError<T> {
    /// What went wrong.
    pub reason: RestoreFailure,
    /// What was restored before it did.
    pub restored: RestoreReport<T>,
    /// The jobs not restored, as they were in the snapshot.
    pub remaining: Vec<PendingJob<T>>,
}

/// The reason in a [`RestoreError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RestoreFailure {
    /// The snapshot was written in another format version.
    Version {
        /// The snapshot's version.
        found: u32,
    },
    /// The timer refused a job (it is full or shut down).
    Schedule(ScheduleErrorKind),
}

impl<T> fmt::Display for RestoreError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            RestoreFailure::Version { found } => write!(
                f,
                "snapshot has format version {found}, this crate reads {}",
                Snapshot::<T>::VERSION
            ),
            RestoreFailure::Schedule(kind) => write!(
                f,
                "restore stopped with {} jobs left: {kind}",
                self.remaining.len()
            ),
        }
    }
}

impl<T: fmt::Debug> core::error::Error for RestoreError<T> {}

impl<T, E> Timer<T, E>
where
    T: Clone + Send + Sync + 'static,
    E: Executor<T>,
{
    /// Schedules the jobs of `snapshot` on this timer, deciding for each
    /// overdue one by `policy` (see the [module docs](super)), and reports
    /// what it did with each.
    ///
    /// Due times are wall-clock times, converted with this timer's clock.
    /// A restored fixed-rate job keeps its grid (`due + n × period`) and
    /// repeats clones of its value.
    ///
    /// # Errors
    ///
    /// [`RestoreError`] if the snapshot has another format version, or the
    /// timer refuses a job (full or shut down); it holds every job not yet
    /// restored.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use tickwheel::persist::{MisfirePolicy, OnMissed, Outcome, PendingJob, Snapshot};
    ///
    /// let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    /// let snapshot = Snapshot {
    ///     version: Snapshot::<&str>::VERSION,
    ///     taken_at: an_hour_ago,
    ///     jobs: vec![PendingJob { due: an_hour_ago, repeat: None, value: "close order 5" }],
    /// };
    /// let (timer, fired) = tickwheel::Timer::with_channel()?;
    /// let policy = MisfirePolicy::default().on_missed(OnMissed::DeadLetter);
    /// let report = timer.restore(snapshot, &policy)?;
    /// assert_eq!(report.outcomes, [Outcome::DeadLettered]);
    /// assert_eq!(report.dead_letters[0].value, "close order 5");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn restore(
        &self,
        snapshot: Snapshot<T>,
        policy: &MisfirePolicy<T>,
    ) -> Result<RestoreReport<T>, RestoreError<T>> {
        let mut report = RestoreReport {
            outcomes: Vec::with_capacity(snapshot.jobs.len()),
            dead_letters: Vec::new(),
        };
        if snapshot.version != Snapshot::<T>::VERSION {
            return Err(RestoreError {
                reason: RestoreFailure::Version {
                    found: snapshot.version,
                },
                restored: report,
                remaining: snapshot.jobs,
            });
        }
        let (instant, wall) = self.clock_now();
        let epoch = Epoch { instant, wall };
        let missed = |job: &PendingJob<T>| {
            wall.duration_since(job.due)
                .is_ok_and(|late| late > policy.threshold)
        };
        // Spread: the k-th of n missed one-shots, in due order, at
        // now + window × k / n.
        let mut spread_slots = Vec::new();
        if let OnMissed::Spread(window) = policy.on_missed {
            let mut order: Vec<usize> = (0..snapshot.jobs.len())
                .filter(|&i| snapshot.jobs[i].repeat.is_none() && missed(&snapshot.jobs[i]))
                .collect();
            order.sort_by_key(|&i| snapshot.jobs[i].due);
            spread_slots = alloc::vec![None; snapshot.jobs.len()];
            let n = order.len() as u128;
            for (k, &i) in order.iter().enumerate() {
                let offset = window.as_nanos() * k as u128 / n.max(1);
                let offset = Duration::from_nanos(u64::try_from(offset).unwrap_or(u64::MAX));
                spread_slots[i] = Some(wall.checked_add(offset).unwrap_or(wall));
            }
        }
        let mut jobs = snapshot.jobs.into_iter().enumerate();
        while let Some((i, job)) = jobs.next() {
            let restored = if job.repeat.is_some() {
                self.restore_repeating(epoch, job, policy)
            } else if !missed(&job) {
                self.restore_at(epoch, job, job_due, Outcome::Scheduled)
            } else {
                match &policy.on_missed {
                    OnMissed::FireNow => self.restore_at(epoch, job, |_| wall, Outcome::FiredNow),
                    OnMissed::Spread(_) => {
                        let at = spread_slots[i].unwrap_or(wall);
                        self.restore_at(epoch, job, |_| at, |h| Outcome::Spread(h, at))
                    }
                    OnMissed::Reschedule(pick) => {
                        let at = pick(&job, wall);
                        self.restore_at(epoch, job, |_| at, |h| Outcome::Rescheduled(h, at))
                    }
                    OnMissed::Discard => Ok(Outcome::Discarded),
                    OnMissed::DeadLetter => {
                        report.dead_letters.push(job);
                        Ok(Outcome::DeadLettered)
                    }
                }
            };
            match restored {
                Ok(outcome) => report.outcomes.push(outcome),
                Err((kind, job)) => {
                    let mut remaining = alloc::vec![job];
                    remaining.extend(jobs.map(|(_, job)| job));
                    return Err(RestoreError {
                        reason: RestoreFailure::Schedule(kind),
                        restored: report,
                        remaining,
                    });
                }
            }
        }
        Ok(report)
    }

    /// Schedules a one-shot `job` at the wall time `at(&job)`.
    fn restore_at(
        &self,
        epoch: Epoch,
        job: PendingJob<T>,
        at: impl FnOnce(&PendingJob<T>) -> SystemTime,
        outcome: impl FnOnce(TimerHandle) -> Outcome,
    ) -> Result<Outcome, (ScheduleErrorKind, PendingJob<T>)> {
        let deadline = epoch.instant_of(at(&job));
        let PendingJob { due, repeat, value } = job;
        match self.schedule_at(deadline, value) {
            Ok(handle) => Ok(outcome(handle)),
            Err(err) => Err((
                err.kind(),
                PendingJob {
                    due,
                    repeat,
                    value: err.into_inner(),
                },
            )),
        }
    }

    /// Schedules a fixed-rate job on its grid, moving the grid's start
    /// forward so that at most `max_catch_up` missed runs are made up.
    fn restore_repeating(
        &self,
        epoch: Epoch,
        job: PendingJob<T>,
        policy: &MisfirePolicy<T>,
    ) -> Result<Outcome, (ScheduleErrorKind, PendingJob<T>)> {
        let Some(repeat) = job.repeat else {
            unreachable!("restore_repeating takes repeating jobs");
        };
        let late = epoch.wall.duration_since(job.due).ok();
        let period = repeat.period.max(Duration::from_nanos(1));
        // Runs whose due time has passed: the one at `due`, and one per
        // whole period since.
        let overdue = late.map_or(0, |late| {
            u64::try_from(late.as_nanos() / period.as_nanos())
                .unwrap_or(u64::MAX)
                .saturating_add(1)
        });
        let skipped = match repeat.missed {
            MissedTicks::Burst => overdue.saturating_sub(policy.max_catch_up),
            MissedTicks::Skip | MissedTicks::Delay => 0,
        };
        let made_up = match repeat.missed {
            MissedTicks::Burst => overdue - skipped,
            MissedTicks::Skip | MissedTicks::Delay => overdue.min(1),
        };
        // The first run to schedule, on the grid `due + n × period`: after
        // the skipped runs (Burst), or the last one due (Skip and Delay,
        // which make up one). Never before `due` nor after now.
        let n = match repeat.missed {
            MissedTicks::Burst => skipped,
            MissedTicks::Skip | MissedTicks::Delay => overdue.saturating_sub(1),
        };
        let first = on_grid(job.due, period, n).unwrap_or(epoch.wall);
        let is_missed = late.is_some_and(|late| late > policy.threshold);
        let value = job.value.clone();
        let make = move || value.clone();
        match self.schedule_repeating_at(
            epoch.instant_of(first),
            repeat.period,
            repeat.missed,
            make,
        ) {
            Ok(handle) if is_missed => Ok(Outcome::CaughtUp {
                handle,
                missed: overdue,
                made_up,
            }),
            Ok(handle) => Ok(Outcome::Scheduled(handle)),
            Err(err) => Err((err.kind(), job)),
        }
    }
}

/// `due + n × period`, exact for any `n` (in 128-bit nanoseconds: a 1 ms
/// job down for 60 days is more than 2^32 periods behind); `None` past
/// what `SystemTime` holds.
fn on_grid(due: SystemTime, period: Duration, n: u64) -> Option<SystemTime> {
    let nanos = period.as_nanos().checked_mul(u128::from(n))?;
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    let shift = Duration::new(secs, (nanos % 1_000_000_000) as u32);
    due.checked_add(shift)
}

fn job_due<T>(job: &PendingJob<T>) -> SystemTime {
    job.due
}
