//! [`NewJob`]: a job to schedule with more than an id, a time and a
//! payload: a priority among the jobs due at the same time; and the
//! queue calls that schedule it.

use alloc::vec::Vec;
use core::time::Duration;
use std::time::SystemTime;

use super::async_queue::all;
use super::ops::{self, When};
use super::queue::wait_all;
use super::{AsyncQueue, Queue, QueueError, Scheduled};

/// A job for [`Queue::schedule_job`](super::Queue::schedule_job) and
/// [`schedule_jobs`](super::Queue::schedule_jobs): its id, when it is due
/// (a wall-clock time or a delay from the server's now), its payload and
/// its priority.
///
/// A priority orders jobs due at the same microsecond: a claim hands out
/// the higher priority first, and jobs of one priority first in, first
/// out. Jobs due at different times go in time order whatever their
/// priority, so no job waits behind later ones, and none is ever
/// delivered early. The default priority is 0, the lowest; a call that
/// carries no priority costs nothing more (see `scripts/schedule.lua`).
///
/// ```no_run
/// use std::time::{Duration, SystemTime};
/// use tickwheel::redis::{NewJob, Queue};
///
/// let q = Queue::connect("redis://127.0.0.1:6380", "orders")?;
/// let midnight = SystemTime::now() + Duration::from_secs(3600);
/// // Both due at midnight: the refund goes first.
/// q.schedule_job(NewJob::at("close-17", midnight, b"close 17"))?;
/// q.schedule_job(NewJob::at("refund-9", midnight, b"refund 9").priority(10))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct NewJob<'a> {
    pub(super) id: &'a str,
    due: Due,
    pub(super) payload: &'a [u8],
    pub(super) priority: u8,
}

#[derive(Debug, Clone, Copy)]
enum Due {
    At(SystemTime),
    After(Duration),
}

impl<'a> NewJob<'a> {
    /// A job due at `due` (wall clock, compared with the Redis server's),
    /// priority 0.
    ///
    /// ```
    /// let job = tickwheel::redis::NewJob::at("order-17", std::time::SystemTime::now(), b"close 17");
    /// assert_eq!(job.id(), "order-17");
    /// ```
    #[must_use]
    pub fn at(id: &'a str, due: SystemTime, payload: &'a [u8]) -> Self {
        NewJob {
            id,
            due: Due::At(due),
            payload,
            priority: 0,
        }
    }

    /// A job due `delay` after the server's now when it is scheduled,
    /// priority 0.
    ///
    /// ```
    /// let job = tickwheel::redis::NewJob::after("order-17", std::time::Duration::from_secs(900), b"close 17");
    /// assert_eq!(job.get_priority(), 0);
    /// ```
    #[must_use]
    pub fn after(id: &'a str, delay: Duration, payload: &'a [u8]) -> Self {
        NewJob {
            id,
            due: Due::After(delay),
            payload,
            priority: 0,
        }
    }

    /// The same job with priority `priority`: among jobs due at the same
    /// microsecond, a higher one is delivered first (0, the default, is
    /// the lowest).
    ///
    /// ```
    /// let job = tickwheel::redis::NewJob::after("a", std::time::Duration::ZERO, b"").priority(7);
    /// assert_eq!(job.get_priority(), 7);
    /// ```
    #[must_use]
    pub fn priority(self, priority: u8) -> Self {
        NewJob { priority, ..self }
    }

    /// The job's id.
    ///
    /// ```
    /// assert_eq!(tickwheel::redis::NewJob::after("a", std::time::Duration::ZERO, b"").id(), "a");
    /// ```
    #[must_use]
    pub fn id(&self) -> &'a str {
        self.id
    }

    /// The job's priority.
    ///
    /// ```
    /// assert_eq!(tickwheel::redis::NewJob::after("a", std::time::Duration::ZERO, b"").get_priority(), 0);
    /// ```
    #[must_use]
    pub fn get_priority(&self) -> u8 {
        self.priority
    }

    /// The job as the schedule call takes it, its time checked.
    pub(super) fn checked(&self) -> Result<(&'a str, When, &'a [u8], u8), QueueError> {
        let when = match self.due {
            Due::At(due) => When::at(due)?,
            Due::After(delay) => When::after(delay)?,
        };
        Ok((self.id, when, self.payload, self.priority))
    }
}

impl Queue {
    /// Schedules one [`NewJob`] (a job with a priority, say), as
    /// [`schedule`](Self::schedule) does.
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// use tickwheel::redis::NewJob;
    /// let due = std::time::SystemTime::now() + std::time::Duration::from_secs(900);
    /// q.schedule_job(NewJob::at("refund-9", due, b"refund 9").priority(10))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule_job(&self, job: NewJob<'_>) -> Result<Scheduled, QueueError> {
        let mut one = self.schedule_jobs(&[job])?;
        Ok(one.remove(0))
    }

    /// Schedules many [`NewJob`]s together, as
    /// [`schedule_many`](Self::schedule_many) does; one answer per job, in
    /// order.
    ///
    /// # Errors
    ///
    /// As [`schedule_many`](Self::schedule_many).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// use std::time::Duration;
    /// use tickwheel::redis::NewJob;
    /// let jobs = [
    ///     NewJob::after("order-1", Duration::from_secs(900), b"close 1"),
    ///     NewJob::after("vip-2", Duration::from_secs(900), b"close 2").priority(5),
    /// ];
    /// assert_eq!(q.schedule_jobs(&jobs)?.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule_jobs(&self, jobs: &[NewJob<'_>]) -> Result<Vec<Scheduled>, QueueError> {
        let jobs = jobs
            .iter()
            .map(NewJob::checked)
            .collect::<Result<Vec<_>, QueueError>>()?;
        wait_all(ops::schedule_many(&self.shared, &jobs)?)
    }
}

impl AsyncQueue {
    /// [`Queue::schedule_job`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::schedule`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// use tickwheel::redis::NewJob;
    /// let due = std::time::SystemTime::now() + std::time::Duration::from_secs(900);
    /// q.schedule_job(NewJob::at("refund-9", due, b"refund 9").priority(10)).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn schedule_job(&self, job: NewJob<'_>) -> Result<Scheduled, QueueError> {
        let mut one = self.schedule_jobs(&[job]).await?;
        Ok(one.remove(0))
    }

    /// [`Queue::schedule_jobs`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::schedule_many`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// use std::time::Duration;
    /// use tickwheel::redis::NewJob;
    /// q.schedule_jobs(&[NewJob::after("vip-2", Duration::from_secs(900), b"close 2").priority(5)]).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn schedule_jobs(&self, jobs: &[NewJob<'_>]) -> Result<Vec<Scheduled>, QueueError> {
        let jobs = jobs
            .iter()
            .map(NewJob::checked)
            .collect::<Result<Vec<_>, QueueError>>()?;
        all(ops::schedule_many(&self.shared, &jobs)?).await
    }
}
