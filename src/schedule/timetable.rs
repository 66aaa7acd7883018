//! [`Schedule`]: a timetable's instants, as the job schedulers read them.

#[cfg(feature = "cron")]
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
#[cfg(feature = "cron")]
use alloc::string::ToString;

use core::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{InvalidSchedule, Missed, MIN_PERIOD, MISSED_AFTER_MICROS};

/// When a job scheduler's runs fall due, and what becomes of runs missed
/// while nothing ran ([`Missed`]). Given to
/// [`DurableTimer::upsert_schedule`](crate::persist::DurableTimer::upsert_schedule)
/// and to the Redis queue's `Queue::upsert_schedule` (feature `redis`).
///
/// ```
/// use std::time::Duration;
/// use tickwheel::schedule::{Missed, Schedule};
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

impl Schedule {
    /// Runs every `period` (at least [`MIN_PERIOD`], rounded down to the
    /// microsecond), on the grid of its multiples since the Unix epoch: a
    /// 1 min schedule runs at each whole minute, whoever made it.
    ///
    /// ```
    /// let s = tickwheel::schedule::Schedule::every(std::time::Duration::from_secs(60));
    /// # drop(s);
    /// ```
    #[must_use]
    pub fn every(period: Duration) -> Schedule {
        Schedule::every_from(period, UNIX_EPOCH)
    }

    /// Runs at `start` (rounded up to the microsecond) and every `period`
    /// after it. A `start` before 1970 keeps its grid: the schedule starts
    /// at its first point from 1970 on.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// let s = tickwheel::schedule::Schedule::every_from(Duration::from_secs(60), SystemTime::now());
    /// # drop(s);
    /// ```
    #[must_use]
    pub fn every_from(period: Duration, start: SystemTime) -> Schedule {
        let period = u64::try_from(period.as_micros()).unwrap_or(u64::MAX);
        let from = match start.duration_since(UNIX_EPOCH) {
            // Rounded up: a start between two microseconds once ran at the
            // one before it, early.
            Ok(after) => u64::try_from(after.as_nanos().div_ceil(1_000)).unwrap_or(u64::MAX),
            // Before 1970: the grid's first point from 1970 on (it once
            // moved the whole grid to 1970 itself).
            Err(before) => {
                let before = before.duration().as_micros();
                let step = u128::from(period.max(1));
                u64::try_from(before.div_ceil(step) * step - before).unwrap_or(u64::MAX)
            }
        };
        Schedule {
            when: When::Every { period, from },
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
    /// [`InvalidSchedule`], naming what does not parse.
    ///
    /// ```
    /// use tickwheel::schedule::Schedule;
    /// let close_books = Schedule::cron("0 30 18 * * Mon-Fri", "America/New_York")?;
    /// assert!(Schedule::cron("every tuesday", "UTC").is_err());
    /// assert!(Schedule::cron("0 * * * * *", "Mars/Olympus").is_err());
    /// # drop(close_books);
    /// # Ok::<(), tickwheel::schedule::InvalidSchedule>(())
    /// ```
    #[cfg(feature = "cron")]
    pub fn cron(expression: &str, zone: &str) -> Result<Schedule, InvalidSchedule> {
        let parsed: cron::Schedule = expression
            .parse()
            .map_err(|e| InvalidSchedule(format!("cron expression `{expression}`: {e}")))?;
        let tz: chrono_tz::Tz = zone
            .parse()
            .map_err(|_| InvalidSchedule(format!("unknown time zone `{zone}`")))?;
        if expression.contains('\n') {
            return Err(InvalidSchedule(String::from(
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
    /// use tickwheel::schedule::{Missed, Schedule};
    /// let s = Schedule::every(std::time::Duration::from_secs(1)).missed(Missed::Skip);
    /// # drop(s);
    /// ```
    #[must_use]
    pub fn missed(mut self, missed: Missed) -> Schedule {
        self.missed = missed;
        self
    }
}

// What job schedulers read of a timetable.
impl Schedule {
    /// Refuses a period too short or too long.
    pub(crate) fn check(&self) -> Result<(), InvalidSchedule> {
        match &self.when {
            When::Every { period, from } => {
                let min = MIN_PERIOD.as_micros() as u64;
                if *period < min || *period > (1 << 52) {
                    return Err(InvalidSchedule(format!(
                        "a schedule's period must be from {MIN_PERIOD:?} to about 142 years"
                    )));
                }
                // Instants are `i64` µs: a later start wrapped to one long
                // past, and the schedule ran at once, every period.
                if *from > i64::MAX as u64 {
                    return Err(InvalidSchedule(String::from(
                        "a schedule's start must be within about 292,000 years of 1970",
                    )));
                }
                Ok(())
            }
            #[cfg(feature = "cron")]
            When::Cron { .. } => Ok(()),
        }
    }

    /// The first instant strictly after `t` (µs since the epoch), if any.
    pub(crate) fn next_after(&self, t: i64) -> Option<i64> {
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
                // Inside an hour a daylight-saving change repeats, the
                // crate answers a local time's first pass, before `at`,
                // then its second: neither runs (the first ran, or was
                // before `t`), and local time goes on past the hour.
                let next = schedule.after(&at).find(|next| {
                    let second_pass = matches!(
                        tz.from_local_datetime(&next.naive_local()),
                        chrono::LocalResult::Ambiguous(_, later) if later == *next
                    );
                    next.timestamp() > secs && !second_pass
                })?;
                next.timestamp().checked_mul(1_000_000)
            }
        }
    }

    /// The latest instant after `after` and before `before` (µs), if
    /// any. A cron timetable steps back from `before` to its latest
    /// instant by local time, then forward over those that an hour a
    /// daylight-saving change repeats puts later (it once stepped forward
    /// from a week before `before`: 604,800 lookups, seconds of CPU, for a
    /// run a second).
    pub(crate) fn last_before(&self, after: i64, before: i64) -> Option<i64> {
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
            When::Cron { parsed, .. } => {
                use chrono::TimeZone as _;
                let (schedule, tz) = &**parsed;
                // Instants are whole seconds: those before `before` are at
                // or before its last whole second, so before the second
                // after that one.
                let at = before
                    .saturating_sub(1)
                    .div_euclid(1_000_000)
                    .checked_add(1)
                    .and_then(|secs| tz.timestamp_opt(secs, 0).single())?;
                // Backwards by local time; in a repeated hour that order is
                // not time's: a second pass (never an instant) or a first
                // pass past `before` is passed over, and the instants of
                // the first pass later than the one found come next.
                let mut last = schedule
                    .after(&at)
                    .rev()
                    .filter_map(|t| t.timestamp().checked_mul(1_000_000))
                    .find(|&t| t < before && self.next_after(t - 1) == Some(t))?;
                while let Some(next) = self.next_after(last).filter(|&n| n < before) {
                    last = next;
                }
                (last > after).then_some(last)
            }
        }
    }

    /// The latest `n` instants at or before `upto` (µs), oldest first. A
    /// cron timetable steps back from `upto`, `n` steps at most (it once
    /// looked back a day only, and a daily or rarer timetable's run before
    /// `upto` was not among them).
    #[cfg(feature = "redis")]
    pub(crate) fn latest(&self, upto: i64, n: usize) -> alloc::vec::Vec<i64> {
        let mut out = alloc::collections::VecDeque::with_capacity(n.min(1_024));
        let mut t = match &self.when {
            When::Every { period, .. } => {
                upto.saturating_sub((*period as i64).saturating_mul(n as i64))
            }
            #[cfg(feature = "cron")]
            When::Cron { parsed, .. } => {
                use chrono::TimeZone as _;
                let (schedule, tz) = &**parsed;
                // Instants are whole seconds: those at or before `upto`
                // are those before the second after it.
                let Some(at) = upto
                    .div_euclid(1_000_000)
                    .checked_add(1)
                    .and_then(|secs| tz.timestamp_opt(secs, 0).single())
                else {
                    return alloc::vec::Vec::new();
                };
                let mut back: alloc::vec::Vec<i64> = schedule
                    .after(&at)
                    .rev()
                    .take(n)
                    .filter_map(|t| t.timestamp().checked_mul(1_000_000))
                    .collect();
                back.reverse();
                return back;
            }
        };
        while let Some(next) = self.next_after(t).filter(|&next| next <= upto) {
            if out.len() == n {
                out.pop_front();
            }
            out.push_back(next);
            t = next;
        }
        out.into()
    }

    /// The run to make after the run for instant `after`, at `now` (µs
    /// since the epoch): the next instant, or, if that is more than
    /// [`MISSED_AFTER`](super::MISSED_AFTER) past, what the [`Missed`]
    /// policy makes of the missed ones: the first instant still within the
    /// grace (`Skip`), the latest missed (`RunOnce`), or the oldest missed
    /// (`RunAll`, so that each runs, in order). `None` if the timetable
    /// has no instant left.
    pub(crate) fn next_due(&self, after: i64, now: i64) -> Option<i64> {
        let next = self.next_after(after)?;
        let missed_before = now.saturating_sub(MISSED_AFTER_MICROS);
        if next >= missed_before {
            return Some(next);
        }
        match self.missed {
            Missed::Skip => self.next_after(missed_before - 1),
            Missed::RunOnce => self
                .last_before(after, missed_before)
                .or_else(|| self.next_after(missed_before - 1)),
            Missed::RunAll => Some(next),
        }
    }

    pub(crate) fn missed_policy(&self) -> Missed {
        self.missed
    }

    /// The timetable as stored (the lines of a record after its version
    /// and horizon): missed policy, kind, then the kind's two fields.
    pub(crate) fn encode(&self) -> String {
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

    /// The timetable kinds [`decode`](Self::decode) reads in this build,
    /// separated by spaces.
    #[cfg(feature = "redis")]
    pub(crate) const READABLE_KINDS: &'static str = if cfg!(feature = "cron") {
        "every cron"
    } else {
        "every"
    };

    /// A stored timetable; `None` if this build cannot read it (a cron
    /// schedule without feature `cron`) or it is damaged.
    pub(crate) fn decode(text: &str) -> Option<Schedule> {
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
    pub(crate) fn describe(&self) -> String {
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

#[cfg(test)]
mod tests;
