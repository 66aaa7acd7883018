//! [`Queue`]: the producer's and operator's side (schedule, cancel,
//! reschedule, dead letters, metrics), blocking.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Bound::Unbounded;
use core::ops::RangeBounds;
use core::time::Duration;
use std::time::SystemTime;

use super::async_queue::AsyncQueue;
use super::consumer::Consumer;
use super::job_info::JobInfo;
use super::listing::{self, Cursor, Kind, Page};
use super::ops::{self, When};
use super::outcome::{Cancelled, DeadLetter, Scheduled};
use super::pending::Pending;
use super::shared::Shared;
use super::{Metrics, QueueError};

/// A durable delayed-job queue on Redis: the producer's side, blocking.
/// Cloning it is cheap: clones share one I/O thread (or task:
/// [`QueueBuilder::runtime`](super::QueueBuilder::runtime)) and one multiplexed
/// connection, so any number of threads may call it at once (their calls
/// share script calls under load). [`to_async`](Self::to_async) gives the
/// same queue as futures. See the [module docs](super) for the guarantees.
///
/// ```no_run
/// use std::time::Duration;
/// use tickwheel::redis::{Cancelled, Queue};
///
/// let orders = Queue::connect("redis://127.0.0.1:6380", "orders")?;
/// orders.schedule_in("order-17", Duration::from_secs(900), b"close 17")?;
/// // Paid in time:
/// assert!(matches!(orders.cancel("order-17")?, Cancelled::Cancelled(_)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Queue {
    pub(super) shared: Arc<Shared>,
}

impl core::fmt::Debug for Queue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Queue")
            .field("queue", &self.shared.ctx.identity)
            .field("options", &self.shared.ctx.options)
            .finish_non_exhaustive()
    }
}

/// Waits for every answer, so none is left behind; the first error wins.
pub(super) fn wait_all<A>(pending: Vec<Pending<A>>) -> Result<Vec<A>, QueueError> {
    let answers: Vec<Result<A, QueueError>> = pending.into_iter().map(Pending::wait).collect();
    answers.into_iter().collect()
}

impl Queue {
    pub(super) fn started(shared: Arc<Shared>) -> Queue {
        Queue { shared }
    }

    /// Schedules job `id` at `due` (wall-clock time, compared with the
    /// Redis server's clock, rounded up to the microsecond). Idempotent by
    /// id: a second schedule of a known id changes nothing and says
    /// [`Scheduled::Exists`]; a retry after a lost reply says `Created`,
    /// as its first attempt did.
    ///
    /// # Errors
    ///
    /// Bad input ([`QueueError::InvalidId`], [`QueueError::PayloadTooLarge`],
    /// [`QueueError::DueOutOfRange`]) before anything is sent; Redis
    /// unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// let due = std::time::SystemTime::now() + std::time::Duration::from_secs(900);
    /// q.schedule("order-17", due, b"close 17")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule(
        &self,
        id: &str,
        due: SystemTime,
        payload: &[u8],
    ) -> Result<Scheduled, QueueError> {
        ops::schedule(&self.shared, id, When::at(due)?, payload)?.wait()
    }

    /// Schedules job `id` to be due `delay` after now by the Redis
    /// server's clock (so producers with skewed clocks agree).
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// q.schedule_in("order-17", std::time::Duration::from_secs(900), b"close 17")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule_in(
        &self,
        id: &str,
        delay: Duration,
        payload: &[u8],
    ) -> Result<Scheduled, QueueError> {
        ops::schedule(&self.shared, id, When::after(delay)?, payload)?.wait()
    }

    /// Schedules many jobs, each `(id, delay, payload)`; one answer per
    /// job, in order. They travel together (a few script calls), for bulk
    /// loads and bursts.
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule); bad input in any job refuses the
    /// whole batch before anything is sent. After an `Unavailable` some
    /// may be scheduled: scheduling is idempotent by id, so repeat it.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// use std::time::Duration;
    /// let jobs = [("order-1", Duration::from_secs(900), &b"close 1"[..]), ("order-2", Duration::from_secs(900), &b"close 2"[..])];
    /// let done = q.schedule_many(&jobs)?;
    /// assert_eq!(done.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule_many(
        &self,
        jobs: &[(&str, Duration, &[u8])],
    ) -> Result<Vec<Scheduled>, QueueError> {
        let jobs = jobs
            .iter()
            .map(|&(id, delay, payload)| Ok((id, When::after(delay)?, payload, 0)))
            .collect::<Result<Vec<_>, QueueError>>()?;
        wait_all(ops::schedule_many(&self.shared, &jobs)?)
    }

    /// [`schedule_many`](Self::schedule_many) with due times (wall clock,
    /// compared with the server's) instead of delays.
    ///
    /// # Errors
    ///
    /// As [`schedule_many`](Self::schedule_many).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// let at = std::time::SystemTime::now() + std::time::Duration::from_secs(900);
    /// q.schedule_many_at(&[("order-1", at, &b"close 1"[..])])?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule_many_at(
        &self,
        jobs: &[(&str, SystemTime, &[u8])],
    ) -> Result<Vec<Scheduled>, QueueError> {
        let jobs = jobs
            .iter()
            .map(|&(id, due, payload)| Ok((id, When::at(due)?, payload, 0)))
            .collect::<Result<Vec<_>, QueueError>>()?;
        wait_all(ops::schedule_many(&self.shared, &jobs)?)
    }

    /// Cancels job `id`, and says who won: [`Cancelled::Cancelled`] (with
    /// the payload) if it will never be delivered; a retry after a lost
    /// reply says the same. O(log n) in Redis.
    ///
    /// # Errors
    ///
    /// [`QueueError::InvalidId`]; Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// match q.cancel("order-17")? {
    ///     tickwheel::redis::Cancelled::Cancelled(_) => println!("will not run"),
    ///     other => println!("too late: {other:?}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(&self, id: &str) -> Result<Cancelled, QueueError> {
        ops::cancel(&self.shared, id)?.wait()
    }

    /// Moves waiting job `id` to `due`; `false` if it is not waiting
    /// (unknown, in flight, dead-lettered or ended).
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// let later = std::time::SystemTime::now() + std::time::Duration::from_secs(1800);
    /// q.reschedule("order-17", later)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reschedule(&self, id: &str, due: SystemTime) -> Result<bool, QueueError> {
        ops::reschedule(&self.shared, id, When::at(due)?)?.wait()
    }

    /// Moves waiting job `id` to `delay` after now by the server's clock.
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// q.reschedule_in("order-17", std::time::Duration::from_secs(1800))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reschedule_in(&self, id: &str, delay: Duration) -> Result<bool, QueueError> {
        ops::reschedule(&self.shared, id, When::after(delay)?)?.wait()
    }

    /// Up to `limit` dead-lettered jobs, oldest first; at most
    /// [`MAX_PAGE`](super::MAX_PAGE) (a larger limit reads that many).
    ///
    /// # Errors
    ///
    /// Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// for dead in q.dead_letters(100)? {
    ///     println!("{} failed {} times", dead.id, dead.attempts);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dead_letters(&self, limit: usize) -> Result<Vec<DeadLetter>, QueueError> {
        ops::dead_letters(&self.shared, limit)?.wait()
    }

    /// Moves dead-lettered job `id` back to waiting, due now, with a fresh
    /// set of attempts; `false` if it is not dead-lettered. Its fencing
    /// token keeps growing, so a delivery from before cannot ack the next.
    ///
    /// # Errors
    ///
    /// [`QueueError::InvalidId`]; Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// for dead in q.dead_letters(100)? {
    ///     q.requeue(&dead.id)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn requeue(&self, id: &str) -> Result<bool, QueueError> {
        ops::requeue(&self.shared, id)?.wait()
    }

    /// Removes up to `limit` dead letters (1 to [`MAX_PAGE`](super::MAX_PAGE)),
    /// oldest first, and says how many went; 0 once there are none. Each
    /// ends as a cancel would end it: its payload goes, its record stays
    /// for the retention (so scheduling its id again says
    /// [`Scheduled::Exists`] until then). A retry after a lost reply
    /// answers what the first attempt did, and removes nothing more. Call
    /// it again to go on: each call is one bounded script.
    ///
    /// # Errors
    ///
    /// [`QueueError::Argument`] for a limit outside 1 to `MAX_PAGE`; Redis
    /// unreachable for the retry window. With partitions, a call that
    /// purged some before a later partition's server became unreachable
    /// answers that count, so that it is not lost; the next call reports
    /// the error if that server is still unreachable.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// let mut purged = 0;
    /// loop {
    ///     let n = q.purge_dead(1000)?;
    ///     if n == 0 { break }
    ///     purged += n;
    /// }
    /// println!("{purged} dead letters purged");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn purge_dead(&self, limit: usize) -> Result<usize, QueueError> {
        ops::purge_dead(&self.shared, limit)?.wait()
    }

    /// Job `id` as its record says (state, due time, attempts, payload),
    /// or `None` if the id is unknown or was forgotten after the retention.
    /// One `HGET` and at most one `ZSCORE`.
    ///
    /// # Errors
    ///
    /// [`QueueError::InvalidId`]; Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// use tickwheel::redis::JobState;
    /// q.schedule_in("order-17", std::time::Duration::from_secs(900), b"close 17")?;
    /// let job = q.job("order-17")?.expect("just scheduled");
    /// assert_eq!(job.state, JobState::Waiting);
    /// assert_eq!(job.payload, b"close 17");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn job(&self, id: &str) -> Result<Option<JobInfo>, QueueError> {
        ops::job(&self.shared, id)?.wait()
    }

    /// Waiting jobs due in `range`, earliest first: a page of at most
    /// `limit` jobs (1 to [`MAX_PAGE`](super::MAX_PAGE)) from `after` on
    /// (`None`: from the start). A page costs O(log n + limit), however
    /// many jobs wait; [`Page::next`](super::Page::next) goes on. A queue
    /// of several [`partitions`](super::QueueBuilder::partitions) is listed
    /// partition after partition, in this order within each: merging them
    /// would read every partition for every page.
    ///
    /// # Errors
    ///
    /// [`QueueError::Argument`] for a limit outside 1 to `MAX_PAGE`, or a
    /// cursor that names a partition this queue does not have (another
    /// queue's); [`QueueError::DueOutOfRange`] for a bound before the
    /// epoch; Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// use std::time::{Duration, SystemTime};
    /// let next_hour = SystemTime::now()..SystemTime::now() + Duration::from_secs(3600);
    /// let mut page = q.pending(next_hour.clone(), 100, None)?;
    /// loop {
    ///     for job in &page.jobs {
    ///         println!("{} due {:?}", job.id, job.due);
    ///     }
    ///     let Some(next) = page.next else { break };
    ///     page = q.pending(next_hour.clone(), 100, Some(&next))?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pending(
        &self,
        range: impl RangeBounds<SystemTime>,
        limit: usize,
        after: Option<&Cursor>,
    ) -> Result<Page, QueueError> {
        listing::page(
            &self.shared,
            Kind::Waiting,
            listing::bounds(&range),
            limit,
            after,
        )?
        .wait()
    }

    /// Jobs in flight (delivered, not yet acked), the soonest lease to run
    /// out first (within each partition); paged as [`pending`](Self::pending). [`Listed::at`](super::Listed::at)
    /// is when the lease runs out.
    ///
    /// # Errors
    ///
    /// As [`pending`](Self::pending).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// let page = q.in_flight(100, None)?;
    /// println!("{} held, more: {}", page.jobs.len(), page.next.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_flight(&self, limit: usize, after: Option<&Cursor>) -> Result<Page, QueueError> {
        listing::page(
            &self.shared,
            Kind::InFlight,
            (Unbounded, Unbounded),
            limit,
            after,
        )?
        .wait()
    }

    /// Dead-lettered jobs, oldest first (within each partition); paged as
    /// [`pending`](Self::pending).
    /// [`Listed::at`](super::Listed::at) is when the job was dead-lettered.
    ///
    /// # Errors
    ///
    /// As [`pending`](Self::pending).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// let page = q.dead(100, None)?;
    /// for job in &page.jobs {
    ///     q.requeue(&job.id)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dead(&self, limit: usize, after: Option<&Cursor>) -> Result<Page, QueueError> {
        listing::page(
            &self.shared,
            Kind::Dead,
            (Unbounded, Unbounded),
            limit,
            after,
        )?
        .wait()
    }

    /// Jobs waiting or in flight, and dead-lettered: `(live, dead)`.
    ///
    /// # Errors
    ///
    /// Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// let (live, dead) = q.len()?;
    /// # let _ = (live, dead);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> Result<(u64, u64), QueueError> {
        ops::len(&self.shared).wait()
    }

    /// This process's counters for the queue (shared by its clones and
    /// consumers).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// println!("{} round trips", q.metrics().round_trips);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn metrics(&self) -> Metrics {
        Metrics::of(&self.shared.ctx.counters)
    }

    /// The server's `maxmemory-policy` as read at connect, or `None` if
    /// the server would not say (`CONFIG` and `INFO` both refused). On a
    /// Redis Cluster every master is read, and an evicting master's
    /// policy is the one shown (and refused, unless allowed). Behind
    /// Sentinel, a master promoted later is read when the queue would
    /// follow it there, and refused the same way; this still shows the
    /// first master's.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// assert_eq!(q.eviction_policy(), Some("noeviction"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn eviction_policy(&self) -> Option<&str> {
        self.shared.ctx.policy.get().and_then(Option::as_deref)
    }

    /// A consumer of this queue: see [`Consumer`].
    ///
    /// # Errors
    ///
    /// [`QueueError::Config`] if the wake-up timer's thread could not
    /// start; [`QueueError::Unavailable`] once the queue's I/O has stopped
    /// (the runtime it ran on shut down).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// let consumer = q.consumer()?;
    /// # drop(consumer);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn consumer(&self) -> Result<Consumer, QueueError> {
        Consumer::start(&self.shared)
    }

    /// The same queue as futures, sharing this one's connection.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// let orders = q.to_async();
    /// # drop(orders);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_async(&self) -> AsyncQueue {
        AsyncQueue {
            shared: Arc::clone(&self.shared),
        }
    }
}
