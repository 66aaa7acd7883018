//! [`AsyncConsumer`]: a [`Consumer`](super::Consumer) whose calls are
//! futures.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;

use super::consumer::ClaimLoop;
use super::ops;
use super::outcome::{Acked, Delivery, Nacked};
use super::shared::Shared;
use super::QueueError;

/// Takes due jobs as futures, under any executor: the waiting happens in
/// the queue's I/O thread, woken by a tickwheel timer, so a `fetch` future
/// is only a channel to poll. Dropping a `fetch` future gives up its
/// place; jobs claimed for it go to the next fetch, or back to the queue
/// without spending an attempt.
///
/// ```no_run
/// # async fn f() -> Result<(), tickwheel::redis::QueueError> {
/// use std::time::Duration;
/// use tickwheel::redis::Queue;
///
/// let orders = Queue::builder("redis://127.0.0.1:6380", "orders").connect_async().await?;
/// let consumer = orders.consumer()?;
/// loop {
///     for job in consumer.fetch(10, Duration::from_secs(5)).await? {
///         println!("close order {}", job.id);
///         consumer.ack(&job).await?;
///     }
/// }
/// # }
/// ```
pub struct AsyncConsumer {
    claims: ClaimLoop,
}

impl core::fmt::Debug for AsyncConsumer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AsyncConsumer")
            .field("queue", &self.claims.shared.ctx.identity)
            .finish_non_exhaustive()
    }
}

impl AsyncConsumer {
    pub(super) fn start(shared: &Arc<Shared>) -> Result<AsyncConsumer, QueueError> {
        Ok(AsyncConsumer {
            claims: ClaimLoop::start(shared)?,
        })
    }

    /// [`Consumer::fetch`](super::Consumer::fetch), as a future.
    ///
    /// # Errors
    ///
    /// As [`Consumer::fetch`](super::Consumer::fetch).
    ///
    /// ```no_run
    /// # async fn f(c: tickwheel::redis::AsyncConsumer) -> Result<(), tickwheel::redis::QueueError> {
    /// let jobs = c.fetch(10, std::time::Duration::from_secs(1)).await?;
    /// # let _ = jobs;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn fetch(&self, max: usize, timeout: Duration) -> Result<Vec<Delivery>, QueueError> {
        Ok(self.claims.fetch(&[], max, timeout)?.await?.1)
    }

    /// [`Consumer::ack_and_fetch`](super::Consumer::ack_and_fetch), as a
    /// future.
    ///
    /// # Errors
    ///
    /// As [`Consumer::ack_and_fetch`](super::Consumer::ack_and_fetch).
    ///
    /// ```no_run
    /// # async fn f(c: tickwheel::redis::AsyncConsumer) -> Result<(), tickwheel::redis::QueueError> {
    /// let mut jobs = c.fetch(10, std::time::Duration::from_secs(1)).await?;
    /// loop {
    ///     let (_acked, next) = c.ack_and_fetch(&jobs, 10, std::time::Duration::from_secs(1)).await?;
    ///     jobs = next;
    /// }
    /// # }
    /// ```
    pub async fn ack_and_fetch(
        &self,
        done: &[Delivery],
        max: usize,
        timeout: Duration,
    ) -> Result<(Vec<Acked>, Vec<Delivery>), QueueError> {
        self.claims.fetch(done, max, timeout)?.await
    }

    /// [`Consumer::ack`](super::Consumer::ack), as a future.
    ///
    /// # Errors
    ///
    /// As [`Consumer::ack`](super::Consumer::ack).
    ///
    /// ```no_run
    /// # async fn f(c: tickwheel::redis::AsyncConsumer) -> Result<(), tickwheel::redis::QueueError> {
    /// for job in c.fetch(1, std::time::Duration::from_secs(1)).await? {
    ///     c.ack(&job).await?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn ack(&self, job: &Delivery) -> Result<Acked, QueueError> {
        ops::ack_async(&self.claims.shared, job).await
    }

    /// [`Consumer::ack_all`](super::Consumer::ack_all), as a future.
    ///
    /// # Errors
    ///
    /// As [`Consumer::ack`](super::Consumer::ack).
    ///
    /// ```no_run
    /// # async fn f(c: tickwheel::redis::AsyncConsumer) -> Result<(), tickwheel::redis::QueueError> {
    /// let jobs = c.fetch(100, std::time::Duration::from_secs(1)).await?;
    /// c.ack_all(&jobs).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn ack_all(&self, jobs: &[Delivery]) -> Result<Vec<Acked>, QueueError> {
        let pending = ops::ack_all(&self.claims.shared, jobs)?;
        let mut answers = Vec::with_capacity(pending.len());
        for p in pending {
            answers.push(p.await);
        }
        answers.into_iter().collect()
    }

    /// [`Consumer::extend`](super::Consumer::extend), as a future.
    ///
    /// # Errors
    ///
    /// As [`Consumer::extend`](super::Consumer::extend).
    ///
    /// ```no_run
    /// # async fn f(c: tickwheel::redis::AsyncConsumer, job: tickwheel::redis::Delivery) -> Result<(), tickwheel::redis::QueueError> {
    /// c.extend(&job, std::time::Duration::from_secs(60)).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn extend(&self, job: &Delivery, lease: Duration) -> Result<bool, QueueError> {
        ops::extend(&self.claims.shared, job, lease)?.await
    }

    /// [`Consumer::nack`](super::Consumer::nack), as a future.
    ///
    /// # Errors
    ///
    /// As [`Consumer::nack`](super::Consumer::nack).
    ///
    /// ```no_run
    /// # async fn f(c: tickwheel::redis::AsyncConsumer, job: tickwheel::redis::Delivery) -> Result<(), tickwheel::redis::QueueError> {
    /// c.nack(&job, std::time::Duration::from_secs(30)).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn nack(&self, job: &Delivery, delay: Duration) -> Result<Nacked, QueueError> {
        ops::nack(&self.claims.shared, job, delay)?.await
    }

    /// [`Consumer::close`](super::Consumer::close).
    ///
    /// ```no_run
    /// # fn f(c: tickwheel::redis::AsyncConsumer) {
    /// c.close();
    /// # }
    /// ```
    pub fn close(&self) {
        self.claims.close();
    }
}
