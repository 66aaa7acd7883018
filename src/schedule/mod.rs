//! Timetables for recurring jobs: when the runs fall due (every period,
//! or a cron expression in a time zone), and what becomes of runs missed
//! while nothing ran. The Redis queue's job schedulers use them
//! (`redis/scheduler.rs`, where the runs are made), and so do a
//! `DurableTimer`'s (`persist/schedulers.rs`).
//!
//! ```
//! use std::time::Duration;
//! use tickwheel::schedule::{Missed, Schedule};
//!
//! // On the whole minutes; minutes missed while nothing ran are skipped.
//! let every_minute = Schedule::every(Duration::from_secs(60)).missed(Missed::Skip);
//! # drop(every_minute);
//! ```

mod invalid_schedule;
mod missed;
mod timetable;
mod upserted;

use core::time::Duration;

pub use invalid_schedule::InvalidSchedule;
pub use missed::Missed;
pub use timetable::Schedule;
pub use upserted::Upserted;

/// How late an instant may be found and still run as due: later than
/// this, it is missed and follows the scheduler's [`Missed`].
///
/// ```
/// assert_eq!(tickwheel::schedule::MISSED_AFTER, std::time::Duration::from_secs(1));
/// ```
pub const MISSED_AFTER: Duration = Duration::from_secs(1);

/// [`MISSED_AFTER`] in µs.
pub(crate) const MISSED_AFTER_MICROS: i64 = MISSED_AFTER.as_micros() as i64;

/// The shortest period: runs are made ahead, a batch at a time, and a
/// shorter period would make thousands a second.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("tickwheel-min-period-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// use std::time::Duration;
/// use tickwheel::{persist::*, schedule::*, timer::ScheduleErrorKind};
///
/// let (jobs, _) = DurableTimer::<u64>::open(dir.join("jobs.journal"), SyncPolicy::Always, &MisfirePolicy::default(), |_| {})?;
/// jobs.upsert_schedule("fast", &Schedule::every(MIN_PERIOD), 1)?;
/// let too_fast = Schedule::every(MIN_PERIOD - Duration::from_micros(1));
/// let err = jobs.upsert_schedule("faster", &too_fast, 2).unwrap_err();
/// assert_eq!(err.kind(), ScheduleErrorKind::OutOfRange);
/// # drop(jobs); std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MIN_PERIOD: Duration = Duration::from_millis(10);
