//! [`AsyncQueue`]: the producer's side as futures, for any executor.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Bound::Unbounded;
use core::ops::RangeBounds;
use core::time::Duration;
use std::time::SystemTime;

use super::async_consumer::AsyncConsumer;
use super::job_info::JobInfo;
use super::listing::{self, Cursor, Kind, Page};
use super::ops::{self, When};
use super::outcome::{Cancelled, DeadLetter, Scheduled};
use super::pending::Pending;
use super::queue::Queue;
use super::shared::Shared;
use super::{Metrics, QueueError};

/// A [`Queue`] whose calls are futures. They need no particular runtime:
/// the queue's own I/O thread talks to Redis, and the answer comes back on
/// a channel any executor can poll (tokio, smol, `futures::executor`), so
/// a thousand calls in flight cost no threads and share one connection. A
/// tokio service can run that I/O on its own runtime instead
/// ([`QueueBuilder::runtime`](super::QueueBuilder::runtime)), so that a
/// call from its tasks crosses no thread.
/// Cloning is cheap. A call is sent when first polled; dropping its future
/// before the answer leaves the call to finish, as a lost reply would.
/// With the I/O on a runtime, never wait on a call's future with another
/// executor's `block_on` inside one of that runtime's workers: the I/O it
/// waits for may be queued on that very worker, which then never runs it.
/// [`Queue`]'s blocking calls are made for that place (they hand the
/// worker's tasks to another thread while they wait).
///
/// ```no_run
/// # async fn f() -> Result<(), tickwheel::redis::QueueError> {
/// use std::time::Duration;
/// use tickwheel::redis::Queue;
///
/// let orders = Queue::builder("redis://127.0.0.1:6380", "orders").connect_async().await?;
/// orders.schedule_in("order-17", Duration::from_secs(900), b"close 17").await?;
/// orders.cancel("order-17").await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct AsyncQueue {
    pub(super) shared: Arc<Shared>,
}

impl core::fmt::Debug for AsyncQueue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AsyncQueue")
            .field("queue", &self.shared.ctx.identity)
            .finish_non_exhaustive()
    }
}

pub(super) async fn all<A>(pending: Vec<Pending<A>>) -> Result<Vec<A>, QueueError> {
    let mut answers = Vec::with_capacity(pending.len());
    for p in pending {
        answers.push(p.await);
    }
    answers.into_iter().collect()
}

impl AsyncQueue {
    /// [`Queue::schedule`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::schedule`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// let due = std::time::SystemTime::now() + std::time::Duration::from_secs(900);
    /// q.schedule("order-17", due, b"close 17").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn schedule(
        &self,
        id: &str,
        due: SystemTime,
        payload: &[u8],
    ) -> Result<Scheduled, QueueError> {
        ops::schedule_async(&self.shared, id, When::at(due)?, payload).await
    }

    /// [`Queue::schedule_in`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::schedule`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// q.schedule_in("order-17", std::time::Duration::from_secs(900), b"close 17").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn schedule_in(
        &self,
        id: &str,
        delay: Duration,
        payload: &[u8],
    ) -> Result<Scheduled, QueueError> {
        ops::schedule_async(&self.shared, id, When::after(delay)?, payload).await
    }

    /// [`Queue::schedule_many`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::schedule_many`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// use std::time::Duration;
    /// q.schedule_many(&[("order-1", Duration::from_secs(900), &b"close 1"[..])]).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn schedule_many(
        &self,
        jobs: &[(&str, Duration, &[u8])],
    ) -> Result<Vec<Scheduled>, QueueError> {
        let jobs = jobs
            .iter()
            .map(|&(id, delay, payload)| Ok((id, When::after(delay)?, payload, 0)))
            .collect::<Result<Vec<_>, QueueError>>()?;
        all(ops::schedule_many(&self.shared, &jobs)?).await
    }

    /// [`Queue::cancel`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::cancel`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// let won = matches!(q.cancel("order-17").await?, tickwheel::redis::Cancelled::Cancelled(_));
    /// # let _ = won;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn cancel(&self, id: &str) -> Result<Cancelled, QueueError> {
        ops::cancel_async(&self.shared, id).await
    }

    /// [`Queue::reschedule`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::reschedule`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// let later = std::time::SystemTime::now() + std::time::Duration::from_secs(1800);
    /// q.reschedule("order-17", later).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn reschedule(&self, id: &str, due: SystemTime) -> Result<bool, QueueError> {
        ops::reschedule(&self.shared, id, When::at(due)?)?.await
    }

    /// [`Queue::reschedule_in`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::reschedule_in`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// q.reschedule_in("order-17", std::time::Duration::from_secs(1800)).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn reschedule_in(&self, id: &str, delay: Duration) -> Result<bool, QueueError> {
        ops::reschedule(&self.shared, id, When::after(delay)?)?.await
    }

    /// [`Queue::dead_letters`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::dead_letters`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// for dead in q.dead_letters(100).await? {
    ///     q.requeue(&dead.id).await?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn dead_letters(&self, limit: usize) -> Result<Vec<DeadLetter>, QueueError> {
        ops::dead_letters(&self.shared, limit)?.await
    }

    /// [`Queue::requeue`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::requeue`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// q.requeue("order-17").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn requeue(&self, id: &str) -> Result<bool, QueueError> {
        ops::requeue(&self.shared, id)?.await
    }

    /// [`Queue::purge_dead`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::purge_dead`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// while q.purge_dead(1000).await? > 0 {}
    /// # Ok(())
    /// # }
    /// ```
    pub async fn purge_dead(&self, limit: usize) -> Result<usize, QueueError> {
        ops::purge_dead(&self.shared, limit)?.await
    }

    /// [`Queue::job`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::job`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// if let Some(job) = q.job("order-17").await? {
    ///     println!("{} is {}", job.id, job.state);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn job(&self, id: &str) -> Result<Option<JobInfo>, QueueError> {
        ops::job(&self.shared, id)?.await
    }

    /// [`Queue::pending`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::pending`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// let page = q.pending(.., 100, None).await?;
    /// # let _ = page;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn pending(
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
        .await
    }

    /// [`Queue::in_flight`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::in_flight`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// let page = q.in_flight(100, None).await?;
    /// # let _ = page;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn in_flight(
        &self,
        limit: usize,
        after: Option<&Cursor>,
    ) -> Result<Page, QueueError> {
        listing::page(
            &self.shared,
            Kind::InFlight,
            (Unbounded, Unbounded),
            limit,
            after,
        )?
        .await
    }

    /// [`Queue::dead`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::dead`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// let page = q.dead(100, None).await?;
    /// # let _ = page;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn dead(&self, limit: usize, after: Option<&Cursor>) -> Result<Page, QueueError> {
        listing::page(
            &self.shared,
            Kind::Dead,
            (Unbounded, Unbounded),
            limit,
            after,
        )?
        .await
    }

    /// [`Queue::len`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::len`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// let (live, dead) = q.len().await?;
    /// # let _ = (live, dead);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn len(&self) -> Result<(u64, u64), QueueError> {
        ops::len(&self.shared).await
    }

    /// [`Queue::metrics`].
    ///
    /// ```no_run
    /// # fn f(q: tickwheel::redis::AsyncQueue) {
    /// println!("{} scheduled", q.metrics().scheduled);
    /// # }
    /// ```
    pub fn metrics(&self) -> Metrics {
        Metrics::of(&self.shared.ctx.counters)
    }

    /// An async consumer of this queue: see [`AsyncConsumer`].
    ///
    /// # Errors
    ///
    /// As [`Queue::consumer`].
    ///
    /// ```no_run
    /// # fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// let consumer = q.consumer()?;
    /// # drop(consumer);
    /// # Ok(())
    /// # }
    /// ```
    pub fn consumer(&self) -> Result<AsyncConsumer, QueueError> {
        AsyncConsumer::start(&self.shared)
    }

    /// The same queue with blocking calls, sharing this one's connection.
    ///
    /// ```no_run
    /// # fn f(q: tickwheel::redis::AsyncQueue) {
    /// let blocking = q.to_blocking();
    /// # drop(blocking);
    /// # }
    /// ```
    pub fn to_blocking(&self) -> Queue {
        Queue::started(Arc::clone(&self.shared))
    }
}
