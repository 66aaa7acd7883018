//! [`NewJob`]: a job to schedule with more than an id, a time and a
//! payload: a priority among the jobs due at the same time.

use core::time::Duration;
use std::time::SystemTime;

use super::ops::When;
use super::QueueError;

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
