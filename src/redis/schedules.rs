//! The Redis queue's job scheduler calls: `upsert_schedule`,
//! `remove_schedule`, `schedules` (and their async twins) and
//! `Delivery::schedule`. Their work is in `schedule_calls.rs`, how the runs
//! are made in `scheduler.rs`.

use alloc::string::String;
use alloc::vec::Vec;
use std::time::SystemTime;

use super::{schedule_calls, scheduler};
use super::{AsyncQueue, Delivery, Queue, QueueError};
use crate::schedule::Schedule;
pub use crate::schedule::Upserted;

/// A job scheduler as stored, from
/// [`Queue::schedules`](super::Queue::schedules).
///
/// ```no_run
/// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
/// for s in q.schedules()? {
///     println!("{}: {} (made up to {:?})", s.key, s.timetable, s.made_until);
/// }
/// # Ok::<(), tickwheel::redis::QueueError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleInfo {
    /// Its key.
    pub key: String,
    /// Its timetable, as text: `every 30s`, or `cron "…" Zone`.
    pub timetable: String,
    /// Its version: one more at each change.
    pub version: u64,
    /// Runs exist for its instants up to this time.
    pub made_until: SystemTime,
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
    /// missed while no consumer ran follow
    /// [`Schedule::missed`](crate::schedule::Schedule::missed): those it
    /// makes are due when made (their [`Delivery::due`]), in order, so the
    /// queue's misfire policy ([`QueueBuilder::misfire`](super::QueueBuilder::misfire))
    /// does not discard them as late.
    ///
    /// # Errors
    ///
    /// [`QueueError::InvalidSchedule`] for a key that is empty or over
    /// [`MAX_SCHEDULE_KEY`](super::MAX_SCHEDULE_KEY) bytes, a period out
    /// of range, or a timetable with no instant to come (a cron one for
    /// 30 February, or for a year gone); [`QueueError::DueOutOfRange`] if
    /// its next instant is past [`MAX_DUE_MICROS`](super::MAX_DUE_MICROS);
    /// [`QueueError::PayloadTooLarge`]; or Redis unreachable for the retry
    /// window (an upsert retried answers the same). Also
    /// [`QueueError::InvalidSchedule`] if the key's scheduler has a
    /// timetable this build cannot read (a cron one, made by a build with
    /// feature `cron`, in a build without it): the runs made for it could
    /// not be cancelled, so it is left as it is. Nothing is stored for a
    /// refused one.
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
        schedule_calls::upsert(&self.shared, key, schedule, payload)?.wait()
    }

    /// Removes the job scheduler `key` and cancels its runs still waiting
    /// (one in flight finishes); `false` if there was none.
    ///
    /// # Errors
    ///
    /// As [`upsert_schedule`](Self::upsert_schedule): a key out of range,
    /// a timetable this build cannot read (the scheduler stays), or Redis
    /// unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// let was_there = q.remove_schedule("sweep-unpaid")?;
    /// # let _ = was_there;
    /// # Ok::<(), tickwheel::redis::QueueError>(())
    /// ```
    pub fn remove_schedule(&self, key: &str) -> Result<bool, QueueError> {
        schedule_calls::remove(&self.shared, key)?.wait()
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
        schedule_calls::list(&self.shared).wait()
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
        schedule_calls::upsert(&self.shared, key, schedule, payload)?.await
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
        schedule_calls::remove(&self.shared, key)?.await
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
        schedule_calls::list(&self.shared).await
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
