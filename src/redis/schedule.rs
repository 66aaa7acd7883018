//! A job scheduler's timetable: when its runs fall due (every period, or
//! a cron expression in a time zone), and what becomes of runs missed
//! while no consumer ran. How the runs are made is in `scheduler.rs`.

#[cfg(feature = "cron")]
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
#[cfg(feature = "cron")]
use alloc::string::ToString;
use alloc::vec::Vec;
use core::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};

use super::scheduler::{self, ScheduleInfo, Upserted};
use super::{AsyncQueue, Delivery, Queue, QueueError};

/// When a job scheduler's runs fall due, and what becomes of runs missed
/// while nothing ran ([`Missed`]). Given to
/// [`Queue::upsert_schedule`](super::Queue::upsert_schedule).
///
/// ```
/// use std::time::Duration;
/// use tickwheel::redis::{Missed, Schedule};
///
/// let heartbeat = Schedule::every(Duration::from_secs(30));
/// let nightly = Schedule::every(Duration::from_secs(86_400)).missed(Missed::RunOnce);
/// assert_ne!(heartbeat, nightly);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    when: When,
    missed: Missed,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum When {
    /// At `from + k × period` (µs since the epoch), `k` ≥ 0.
    Every { period: u64, from: u64 },
    /// A cron expression's instants in an IANA time zone.
    #[cfg(feature = "cron")]
    Cron {
        expression: String,
        zone: String,
        parsed: Box<(cron::Schedule, chrono_tz::Tz)>,
    },
}

/// What becomes of the runs that fell due while no consumer of the queue
/// ran to make them (the queue down, every consumer stopped): the
/// instants a consumer finds more than a second in the past when it next
/// looks.
///
/// ```
/// use tickwheel::redis::Missed;
/// assert_eq!(Missed::default(), Missed::RunOnce);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Missed {
    /// None of them runs; the next run is the next instant to come.
    Skip,
    /// One run stands for all of them, for the latest (cron's and
    /// systemd's `Persistent=true`).
    #[default]
    RunOnce,
    /// Each runs, oldest first, up to 1,000 each time a consumer looks.
    RunAll,
}

/// The shortest period: runs are made ahead, a batch at a time, and a
/// shorter period would make thousands a second.
pub const MIN_PERIOD: Duration = Duration::from_millis(10);

impl Schedule {
    /// Runs every `period` (at least [`MIN_PERIOD`], rounded down to the
    /// microsecond), on the grid of its multiples since the Unix epoch: a
    /// 1 min schedule runs at each whole minute, whoever made it.
    ///
    /// ```
    /// let s = tickwheel::redis::Schedule::every(std::time::Duration::from_secs(60));
    /// # drop(s);
    /// ```
    #[must_use]
    pub fn every(period: Duration) -> Schedule {
        Schedule::every_from(period, UNIX_EPOCH)
    }

    /// Runs at `start` and every `period` after it.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// let s = tickwheel::redis::Schedule::every_from(Duration::from_secs(60), SystemTime::now());
    /// # drop(s);
    /// ```
    #[must_use]
    pub fn every_from(period: Duration, start: SystemTime) -> Schedule {
        Schedule {
            when: When::Every {
                period: u64::try_from(period.as_micros()).unwrap_or(u64::MAX),
                from: start
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
            },
            missed: Missed::default(),
        }
    }

    /// Runs at the instants of a cron `expression` in time zone `zone` (an
    /// IANA name such as `Europe/Paris`, or `UTC`): six or seven fields,
    /// seconds first (`sec min hour day-of-month month day-of-week
    /// [year]`), as the [`cron`](https://docs.rs/cron) crate reads them.
    /// Local times that a daylight-saving change skips do not run; those
    /// it repeats run once, at the first. Feature `cron`.
    ///
    /// # Errors
    ///
    /// [`QueueError::InvalidSchedule`], naming what does not parse.
    ///
    /// ```
    /// use tickwheel::redis::Schedule;
    /// let close_books = Schedule::cron("0 30 18 * * Mon-Fri", "America/New_York")?;
    /// assert!(Schedule::cron("every tuesday", "UTC").is_err());
    /// assert!(Schedule::cron("0 * * * * *", "Mars/Olympus").is_err());
    /// # drop(close_books);
    /// # Ok::<(), tickwheel::redis::QueueError>(())
    /// ```
    #[cfg(feature = "cron")]
    pub fn cron(expression: &str, zone: &str) -> Result<Schedule, QueueError> {
        let parsed: cron::Schedule = expression.parse().map_err(|e| {
            QueueError::InvalidSchedule(format!("cron expression `{expression}`: {e}"))
        })?;
        let tz: chrono_tz::Tz = zone
            .parse()
            .map_err(|_| QueueError::InvalidSchedule(format!("unknown time zone `{zone}`")))?;
        if expression.contains('\n') {
            return Err(QueueError::InvalidSchedule(String::from(
                "a cron expression is one line",
            )));
        }
        Ok(Schedule {
            when: When::Cron {
                expression: expression.to_string(),
                zone: zone.to_string(),
                parsed: Box::new((parsed, tz)),
            },
            missed: Missed::default(),
        })
    }

    /// What becomes of runs missed while no consumer ran (default
    /// [`Missed::RunOnce`]).
    ///
    /// ```
    /// use tickwheel::redis::{Missed, Schedule};
    /// let s = Schedule::every(std::time::Duration::from_secs(1)).missed(Missed::Skip);
    /// # drop(s);
    /// ```
    #[must_use]
    pub fn missed(mut self, missed: Missed) -> Schedule {
        self.missed = missed;
        self
    }

    /// Refuses a period too short or too long.
    pub(super) fn check(&self) -> Result<(), QueueError> {
        match &self.when {
            When::Every { period, .. } => {
                let min = MIN_PERIOD.as_micros() as u64;
                if *period < min || *period > (1 << 52) {
                    return Err(QueueError::InvalidSchedule(format!(
                        "a schedule's period must be from {MIN_PERIOD:?} to about 142 years"
                    )));
                }
                Ok(())
            }
            #[cfg(feature = "cron")]
            When::Cron { .. } => Ok(()),
        }
    }

    /// The first instant strictly after `t` (µs since the epoch), if any.
    pub(super) fn next_after(&self, t: i64) -> Option<i64> {
        match &self.when {
            When::Every { period, from } => {
                let (period, from) = (*period as i64, *from as i64);
                if t < from {
                    return Some(from);
                }
                let k = (t - from) / period + 1;
                k.checked_mul(period)?.checked_add(from)
            }
            #[cfg(feature = "cron")]
            When::Cron { parsed, .. } => {
                use chrono::TimeZone as _;
                let (schedule, tz) = &**parsed;
                let secs = t.div_euclid(1_000_000);
                let at = tz.timestamp_opt(secs, 0).single()?;
                let next = schedule.after(&at).next()?;
                next.timestamp().checked_mul(1_000_000)
            }
        }
    }

    /// The latest instant after `after` and before `before` (µs), if
    /// any. A cron timetable steps from a week before `before` if it has
    /// instants there (a run a second is 604,800 steps at most), else from
    /// `after`.
    pub(super) fn last_before(&self, after: i64, before: i64) -> Option<i64> {
        match &self.when {
            When::Every { period, from } => {
                let (period, from) = (*period as i64, *from as i64);
                if before <= from {
                    return None;
                }
                let last = from + (before - 1 - from) / period * period;
                (last > after).then_some(last)
            }
            #[cfg(feature = "cron")]
            When::Cron { .. } => {
                const WEEK: i64 = 7 * 86_400 * 1_000_000;
                let walk = |mut t: i64| {
                    let mut last = None;
                    while let Some(next) = self.next_after(t).filter(|&n| n < before) {
                        last = Some(next);
                        t = next;
                    }
                    last
                };
                let from = after.max(before - WEEK);
                walk(from).or_else(|| if from > after { walk(after) } else { None })
            }
        }
    }

    pub(super) fn missed_policy(&self) -> Missed {
        self.missed
    }

    /// The timetable as stored (the lines of a record after its version
    /// and horizon): missed policy, kind, then the kind's two fields.
    pub(super) fn encode(&self) -> String {
        let missed = match self.missed {
            Missed::Skip => "skip",
            Missed::RunOnce => "once",
            Missed::RunAll => "all",
        };
        match &self.when {
            When::Every { period, from } => format!("{missed}\nevery\n{period}\n{from}"),
            #[cfg(feature = "cron")]
            When::Cron {
                expression, zone, ..
            } => format!("{missed}\ncron\n{expression}\n{zone}"),
        }
    }

    /// A stored timetable; `None` if this build cannot read it (a cron
    /// schedule without feature `cron`) or it is damaged.
    pub(super) fn decode(text: &str) -> Option<Schedule> {
        let mut lines = text.split('\n');
        let missed = match lines.next()? {
            "skip" => Missed::Skip,
            "once" => Missed::RunOnce,
            "all" => Missed::RunAll,
            _ => return None,
        };
        let (kind, a, b) = (lines.next()?, lines.next()?, lines.next()?);
        let schedule = match kind {
            "every" => Schedule {
                when: When::Every {
                    period: a.parse().ok()?,
                    from: b.parse().ok()?,
                },
                missed,
            },
            #[cfg(feature = "cron")]
            "cron" => Schedule::cron(a, b).ok()?.missed(missed),
            _ => return None,
        };
        schedule.check().ok()?;
        Some(schedule)
    }

    /// How the timetable reads, for listings: `every 30s` or
    /// `cron "0 30 18 * * Mon-Fri" America/New_York`.
    pub(super) fn describe(&self) -> String {
        match &self.when {
            When::Every { period, from } if *from == 0 => {
                format!("every {:?}", Duration::from_micros(*period))
            }
            When::Every { period, from } => {
                format!("every {:?} from {from} µs", Duration::from_micros(*period))
            }
            #[cfg(feature = "cron")]
            When::Cron {
                expression, zone, ..
            } => format!("cron \"{expression}\" {zone}"),
        }
    }
}

impl Queue {
    /// Makes or changes the job scheduler `key`: a recurring job whose
    /// runs, one per instant of `schedule`, are ordinary jobs of this queue
    /// with the id `schedule/<key>/<version>/<instant µs>` and `payload`
    /// ([`Delivery::schedule`] tells them apart). Each instant runs once,
    /// at least once across a consumer's death (at-least-once, as every
    /// job), never early, however many consumers there are. Calling it
    /// again with the same timetable and payload changes nothing; with
    /// another, the old runs still waiting are cancelled. Consumers make
    /// the runs ahead of time (two seconds, at least the next one); runs
    /// missed while no consumer ran follow [`Schedule::missed`].
    ///
    /// # Errors
    ///
    /// [`QueueError::InvalidSchedule`] for a key that is empty or over
    /// [`MAX_SCHEDULE_KEY`](super::MAX_SCHEDULE_KEY) bytes or a period out
    /// of range, [`QueueError::PayloadTooLarge`], or Redis unreachable for
    /// the retry window (an upsert retried answers the same).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// use std::time::Duration;
    /// use tickwheel::redis::{Schedule, Upserted};
    /// let sweep = Schedule::every(Duration::from_secs(60));
    /// assert_eq!(q.upsert_schedule("sweep-unpaid", &sweep, b"sweep")?, Upserted::Created);
    /// assert_eq!(q.upsert_schedule("sweep-unpaid", &sweep, b"sweep")?, Upserted::Unchanged);
    /// # Ok::<(), tickwheel::redis::QueueError>(())
    /// ```
    pub fn upsert_schedule(
        &self,
        key: &str,
        schedule: &Schedule,
        payload: &[u8],
    ) -> Result<Upserted, QueueError> {
        scheduler::upsert(&self.shared, key, schedule, payload)?.wait()
    }

    /// Removes the job scheduler `key` and cancels its runs still waiting
    /// (one in flight finishes); `false` if there was none.
    ///
    /// # Errors
    ///
    /// As [`upsert_schedule`](Self::upsert_schedule).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// let was_there = q.remove_schedule("sweep-unpaid")?;
    /// # let _ = was_there;
    /// # Ok::<(), tickwheel::redis::QueueError>(())
    /// ```
    pub fn remove_schedule(&self, key: &str) -> Result<bool, QueueError> {
        scheduler::remove(&self.shared, key)?.wait()
    }

    /// Every job scheduler of the queue, by key.
    ///
    /// # Errors
    ///
    /// Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// for s in q.schedules()? {
    ///     println!("{} {}", s.key, s.timetable);
    /// }
    /// # Ok::<(), tickwheel::redis::QueueError>(())
    /// ```
    pub fn schedules(&self) -> Result<Vec<ScheduleInfo>, QueueError> {
        scheduler::list(&self.shared).wait()
    }
}

impl AsyncQueue {
    /// [`Queue::upsert_schedule`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::upsert_schedule`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// let every_minute = tickwheel::redis::Schedule::every(std::time::Duration::from_secs(60));
    /// q.upsert_schedule("sweep-unpaid", &every_minute, b"sweep").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn upsert_schedule(
        &self,
        key: &str,
        schedule: &Schedule,
        payload: &[u8],
    ) -> Result<Upserted, QueueError> {
        scheduler::upsert(&self.shared, key, schedule, payload)?.await
    }

    /// [`Queue::remove_schedule`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::remove_schedule`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// q.remove_schedule("sweep-unpaid").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn remove_schedule(&self, key: &str) -> Result<bool, QueueError> {
        scheduler::remove(&self.shared, key)?.await
    }

    /// [`Queue::schedules`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::schedules`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// let all = q.schedules().await?;
    /// # let _ = all;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn schedules(&self) -> Result<Vec<ScheduleInfo>, QueueError> {
        scheduler::list(&self.shared).await
    }
}

impl Delivery {
    /// For a job scheduler's run: the scheduler's key and the instant the
    /// run is for; `None` for any other job.
    ///
    /// ```
    /// # fn handle(job: &tickwheel::redis::Delivery) {
    /// match job.schedule() {
    ///     Some((key, instant)) => println!("{key}'s run for {instant:?}"),
    ///     None => println!("job {}", job.id),
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn schedule(&self) -> Option<(&str, SystemTime)> {
        scheduler::parse_run(&self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_runs_on_its_grid() {
        let s = Schedule::every(Duration::from_secs(60));
        assert_eq!(s.next_after(0), Some(60_000_000));
        assert_eq!(s.next_after(59_999_999), Some(60_000_000));
        assert_eq!(s.next_after(60_000_000), Some(120_000_000));
        let from = UNIX_EPOCH + Duration::from_secs(100);
        let s = Schedule::every_from(Duration::from_secs(10), from);
        assert_eq!(s.next_after(0), Some(100_000_000));
        assert_eq!(s.next_after(100_000_000), Some(110_000_000));
        assert_eq!(Schedule::decode(&s.encode()), Some(s));
        assert!(Schedule::every(Duration::from_millis(9)).check().is_err());
        assert!(Schedule::every(Duration::MAX).check().is_err());
        assert_eq!(Schedule::decode("once\nhourly\n1\n2"), None);
    }

    /// A cron schedule in a zone with daylight saving: 02:30 local does not
    /// exist on the spring-forward day and exists twice on the fall-back
    /// day; 09:30 stays 09:30 local across both.
    #[cfg(feature = "cron")]
    #[test]
    fn cron_instants_follow_the_zone() {
        let s = Schedule::cron("0 30 9 * * *", "America/New_York").unwrap();
        // 2026-03-07 12:00 UTC is 07:00 EST (UTC-5): the next 09:30 local
        // is 14:30 UTC; the one after, on 2026-03-08 (EDT from 02:00,
        // UTC-4), 13:30 UTC: 23 hours later. Then 24 again.
        let s_ = 1_000_000_i64;
        let first = s.next_after(1_772_884_800 * s_).unwrap();
        assert_eq!(first, 1_772_893_800 * s_);
        let second = s.next_after(first).unwrap();
        assert_eq!(second, 1_772_976_600 * s_);
        assert_eq!(s.next_after(second).unwrap() - second, 86_400 * s_);
        assert_eq!(Schedule::decode(&s.encode()), Some(s));
    }
}
