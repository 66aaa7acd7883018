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

use alloc::vec::Vec;
use core::panic::AssertUnwindSafe;
use core::time::Duration;
use std::panic::catch_unwind;
use std::time::SystemTime;

use super::epoch::Epoch;
use super::error::{RestoreError, RestoreFailure};
use super::misfire_policy::{MisfirePolicy, OnMissed};
use super::outcome::{Outcome, RestoreReport};
use super::{PendingJob, Snapshot};
use crate::timer::{Executor, MissedTicks, ScheduleErrorKind, Timer, TimerHandle};

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
    /// Jobs are scheduled in due order (equal due times in the snapshot's
    /// order), whatever the snapshot's order: the jobs overdue at the
    /// restart all fall due at once, and then run in due order, as they
    /// would have in the original timer (within a shard: see
    /// [`Builder::shards`](crate::timer::Builder::shards)). The report's
    /// outcomes are in the snapshot's order.
    ///
    /// # Errors
    ///
    /// [`RestoreError`] if the snapshot has another format version, or the
    /// timer refuses a job (full or shut down, or a repeating job with a
    /// zero period, which only a snapshot made by hand has); it holds every job not yet
    /// restored (the latest due, since the earliest go first).
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
        // Scheduled in due order (ties in the snapshot's): every job
        // overdue at the restart lands on the timer's current tick, where
        // first scheduled is first out, so the snapshot's order (its
        // shards' storage order) would otherwise decide which of them runs
        // first. The outcomes stay in the snapshot's order.
        let mut order: Vec<usize> = (0..snapshot.jobs.len()).collect();
        order.sort_by_key(|&i| snapshot.jobs[i].due);
        let mut outcomes: Vec<Option<Outcome>> = alloc::vec![None; snapshot.jobs.len()];
        let mut jobs: Vec<Option<PendingJob<T>>> = snapshot.jobs.into_iter().map(Some).collect();
        for i in order {
            let Some(job) = jobs[i].take() else {
                continue;
            };
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
                        match catch_unwind(AssertUnwindSafe(|| pick(&job, wall))) {
                            Ok(at) => {
                                self.restore_at(epoch, job, |_| at, |h| Outcome::Rescheduled(h, at))
                            }
                            // The user's function panicked: the job is handed
                            // back, not lost with the snapshot.
                            Err(_) => {
                                report.dead_letters.push(job);
                                Ok(Outcome::DeadLettered)
                            }
                        }
                    }
                    OnMissed::Discard => Ok(Outcome::Discarded),
                    OnMissed::DeadLetter => {
                        report.dead_letters.push(job);
                        Ok(Outcome::DeadLettered)
                    }
                }
            };
            match restored {
                Ok(outcome) => outcomes[i] = Some(outcome),
                Err((kind, job)) => {
                    jobs[i] = Some(job);
                    report.outcomes = outcomes.into_iter().flatten().collect();
                    return Err(RestoreError {
                        reason: RestoreFailure::Schedule(kind),
                        restored: report,
                        remaining: jobs.into_iter().flatten().collect(),
                    });
                }
            }
        }
        report.outcomes = outcomes.into_iter().flatten().collect();
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
        // whole period since. Counted in 128 bits: a 1 ns period from
        // `SystemTime`'s far past is more than 2^64 runs behind, and a
        // count that saturated would put the grid's start in the past.
        let overdue = late.map_or(0, |late| late.as_nanos() / period.as_nanos() + 1);
        let made_up = match repeat.missed {
            MissedTicks::Burst => overdue.min(u128::from(policy.max_catch_up)),
            MissedTicks::Skip | MissedTicks::Delay => overdue.min(1),
        };
        // The first run to schedule, on the grid `due + n × period`: after
        // the runs not made up. Never before `due` nor after now.
        let n = overdue - made_up;
        let first = on_grid(job.due, period, n).unwrap_or(epoch.wall);
        // Missed: later than the threshold, or `Burst` runs left out by
        // the cap (never silently, however late). `Skip` and `Delay` make
        // up one run by their own rule, as the live timer would.
        let capped = repeat.missed == MissedTicks::Burst && made_up < overdue;
        let is_missed = late.is_some_and(|late| late > policy.threshold) || capped;
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
                missed: u64::try_from(overdue).unwrap_or(u64::MAX),
                made_up: u64::try_from(made_up).unwrap_or(u64::MAX),
            }),
            Ok(handle) => Ok(Outcome::Scheduled(handle)),
            Err(err) => Err((err.kind(), job)),
        }
    }
}

/// `due + n × period`, exact for any `n` (in 128-bit nanoseconds: a 1 ms
/// job down for 60 days is more than 2^32 periods behind); `None` past
/// what `SystemTime` holds.
fn on_grid(due: SystemTime, period: Duration, n: u128) -> Option<SystemTime> {
    let nanos = period.as_nanos().checked_mul(n)?;
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    let shift = Duration::new(secs, (nanos % 1_000_000_000) as u32);
    due.checked_add(shift)
}

fn job_due<T>(job: &PendingJob<T>) -> SystemTime {
    job.due
}
