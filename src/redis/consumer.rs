//! [`Consumer`]: takes due jobs with a lease, acks and nacks them
//! (blocking); and what it shares with [`AsyncConsumer`](super::AsyncConsumer):
//! the handle on its claim loop (`claimer.rs`).

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::time::Instant;

use tokio::sync::{mpsc, oneshot, watch};

use super::batched;
use super::claimer::{self, Fetch, Fetched, ToClaimer};
use super::hints;
use super::link::Request;
use super::ops;
use super::outcome::{Acked, Delivery, Nacked};
use super::pending::Pending;
use super::queue::wait_all;
use super::scheduler;
use super::shared::Shared;
use super::QueueError;
use crate::timer::{Inline, Timer};

/// A consumer's claim loop, seen from its handles: closing it (or dropping
/// the last handle) ends the loop and every waiting fetch.
pub(super) struct ClaimLoop {
    pub(super) shared: Arc<Shared>,
    tx: mpsc::UnboundedSender<ToClaimer>,
    /// `close` was called: every later fetch answers `Closed`, even one
    /// that would take nothing. A loop gone without it means the I/O
    /// stopped (`Unavailable`).
    closed: AtomicBool,
    /// Turns `true` at `close`: waiting fetches answer `Closed` at once,
    /// even while the loop is busy in a round.
    closing: watch::Sender<bool>,
}

impl ClaimLoop {
    pub(super) fn start(shared: &Arc<Shared>) -> Result<ClaimLoop, QueueError> {
        let ctx = &shared.ctx;
        let builder = Timer::builder()
            .shards(1)
            .slack(ctx.options.wake_slack)
            // The slack batches claims: a lead learned on a loaded machine
            // would wake for each job alone (one claim a job, run B5).
            .learn_lead(false)
            .thread_name("tickwheel-redis-wake")
            .executor(Inline);
        // Its wake-ups are the claim loop's: the queue's metrics tell them.
        #[cfg(feature = "metrics")]
        let builder = builder.publish(crate::timer::stats::TimerMetrics::default());
        let timer = builder
            .build()
            .map_err(|_| QueueError::Config("the wake-up timer could not start"))?;
        let hints = if ctx.options.hints {
            let rx = ctx.hints.subscribe();
            if !ctx.hints_started.swap(true, Ordering::AcqRel) {
                shared.send(Request::Daemon(Box::new(|io| Box::pin(hints::hints(io)))));
            }
            Some(rx)
        } else {
            None
        };
        if !ctx.schedules_started.swap(true, Ordering::AcqRel) {
            shared.send(Request::Daemon(Box::new(|io| {
                Box::pin(scheduler::keep(io))
            })));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let started = shared.send(Request::Task(Box::new(move |io| {
            Box::pin(claimer::run(io, rx, hints, timer))
        })));
        if !started {
            return Err(QueueError::io_stopped());
        }
        Ok(ClaimLoop {
            shared: Arc::clone(shared),
            tx,
            closed: AtomicBool::new(false),
            closing: watch::Sender::new(false),
        })
    }

    /// Asks the loop to ack `done` and then for up to `max` jobs within
    /// `timeout`; the acks ride with the next claim.
    pub(super) fn fetch(
        &self,
        done: &[Delivery],
        max: usize,
        timeout: Duration,
    ) -> Result<Pending<Fetched>, QueueError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(QueueError::Closed);
        }
        let acks = batched::ack_jobs(&self.shared.ctx, done)?;
        let (reply, rx) = oneshot::channel();
        if max == 0 && acks.is_empty() {
            let _ = reply.send(Ok((Vec::new(), Vec::new())));
            return Ok(Pending::new(rx));
        }
        let fetch = Fetch {
            max: max.min(self.shared.ctx.options.batch),
            // With nothing to take, the fetch ends once its acks are sent.
            deadline: if max == 0 {
                Some(Instant::now())
            } else {
                Instant::now().checked_add(timeout)
            },
            ack_count: acks.len(),
            acks,
            acked: None,
            claimed: false,
            reply,
            outage_ends: None,
        };
        if let Err(mpsc::error::SendError(ToClaimer::Fetch(fetch))) =
            self.tx.send(ToClaimer::Fetch(fetch))
        {
            // The loop is gone, though nobody closed it: its I/O stopped.
            let _ = fetch.reply.send(Err(QueueError::io_stopped()));
        }
        // Jobs answered to a future dropped before it read them go back
        // to the loop: to the next fetch, or released; once the loop has
        // closed, released through the queue's I/O.
        let (back, shared) = (self.tx.clone(), Arc::clone(&self.shared));
        Ok(self
            .shared
            .pending(rx)
            .until_closed(self.closing.subscribe())
            .on_unread(move |(_, jobs): Fetched| {
                if jobs.is_empty() {
                    return;
                }
                if let Err(mpsc::error::SendError(ToClaimer::Return(jobs))) =
                    back.send(ToClaimer::Return(jobs))
                {
                    drop(shared.task(move |io, reply| async move {
                        super::release::release(&io, &jobs).await;
                        let _ = reply.send(Ok(()));
                    }));
                }
            }))
    }

    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.closing.send_replace(true);
        let _ = self.tx.send(ToClaimer::Close);
    }
}

impl Drop for ClaimLoop {
    fn drop(&mut self) {
        self.close();
    }
}

/// Takes due jobs from a [`Queue`](super::Queue), blocking. `Send + Sync`:
/// several threads may [`fetch`](Self::fetch) from one consumer; one claim
/// loop serves them all, so however many wait, an idle consumer sends one
/// command per poll interval. [`AsyncConsumer`](super::AsyncConsumer) is
/// the same as futures.
///
/// ```no_run
/// use std::time::Duration;
/// use tickwheel::redis::Queue;
///
/// let orders = Queue::connect("redis://127.0.0.1:6380", "orders")?;
/// let consumer = orders.consumer()?;
/// loop {
///     for job in consumer.fetch(10, Duration::from_secs(5))? {
///         println!("close order {}", job.id);
///         consumer.ack(&job)?;
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Consumer {
    claims: ClaimLoop,
}

impl core::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Consumer")
            .field("queue", &self.claims.shared.ctx.identity)
            .finish_non_exhaustive()
    }
}

impl Consumer {
    pub(super) fn start(shared: &Arc<Shared>) -> Result<Consumer, QueueError> {
        Ok(Consumer {
            claims: ClaimLoop::start(shared)?,
        })
    }

    /// Takes up to `max` due jobs (at most the queue's batch), waiting up
    /// to `timeout` for one to fall due; an empty vector if none did, and
    /// at once for `max == 0`. Each comes with a lease (the queue's
    /// `lease`): ack or nack it before it runs out, or it is delivered
    /// again. Any timeout works (`Duration::MAX` waits for good). A claim
    /// already sent when the timeout passes is waited for (its reply
    /// usually comes within a round trip; against a stalled server, its
    /// retries end with the retry window), so that jobs it leased come to
    /// this fetch rather than wait out their lease.
    ///
    /// # Errors
    ///
    /// Redis unreachable for the retry window (a fetch made once every
    /// shard was found unreachable waits one more window for one to
    /// answer, whatever its timeout); [`QueueError::Closed`]
    /// once [`close`](Self::close) was called, also for a fetch waiting
    /// then, and for `max == 0`; [`QueueError::Unavailable`] once the
    /// queue's I/O has stopped (the runtime it ran on shut down).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// # let consumer = q.consumer()?;
    /// let jobs = consumer.fetch(1, std::time::Duration::from_secs(1))?;
    /// # let _ = jobs;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fetch(&self, max: usize, timeout: Duration) -> Result<Vec<Delivery>, QueueError> {
        Ok(self.claims.fetch(&[], max, timeout)?.wait()?.1)
    }

    /// Acks `done` and fetches up to `max` more, the acks riding in the
    /// same script call as the next claim: a consumer loop's two round
    /// trips per batch become one (as a BullMQ worker fetches its next job
    /// while it completes one). If nothing is due yet, the acks go at once,
    /// alone, and the fetch waits as [`fetch`](Self::fetch) does. One
    /// answer per ack, in order, then the jobs.
    ///
    /// # Errors
    ///
    /// As [`ack`](Self::ack) and [`fetch`](Self::fetch); after an error
    /// the acks may or may not have been made (an ack is safe to repeat).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// # let consumer = q.consumer()?;
    /// use std::time::Duration;
    /// let mut jobs = consumer.fetch(10, Duration::from_secs(5))?;
    /// loop {
    ///     for job in &jobs {
    ///         println!("close order {}", job.id);
    ///     }
    ///     let (acked, next) = consumer.ack_and_fetch(&jobs, 10, Duration::from_secs(5))?;
    ///     # let _ = acked;
    ///     jobs = next;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ack_and_fetch(
        &self,
        done: &[Delivery],
        max: usize,
        timeout: Duration,
    ) -> Result<(Vec<Acked>, Vec<Delivery>), QueueError> {
        self.claims.fetch(done, max, timeout)?.wait()
    }

    /// Completes a delivered job. A repeated ack of the same delivery says
    /// `Acked` again and is counted once; an ack from a delivery that no
    /// longer holds the job (its lease ran out and another delivery took
    /// it) says [`Acked::LeaseLost`] and changes nothing.
    ///
    /// # Errors
    ///
    /// [`QueueError::WrongQueue`] for another queue's delivery; Redis
    /// unreachable for the retry window (the job is then delivered again
    /// when its lease runs out).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// # let consumer = q.consumer()?;
    /// for job in consumer.fetch(1, std::time::Duration::from_secs(1))? {
    ///     consumer.ack(&job)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ack(&self, job: &Delivery) -> Result<Acked, QueueError> {
        ops::ack(&self.claims.shared, job)?.wait()
    }

    /// Acks many delivered jobs together (one script call under load); one
    /// answer per job, in order.
    ///
    /// # Errors
    ///
    /// As [`ack`](Self::ack).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// # let consumer = q.consumer()?;
    /// let jobs = consumer.fetch(100, std::time::Duration::from_secs(1))?;
    /// // ... run them ...
    /// consumer.ack_all(&jobs)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ack_all(&self, jobs: &[Delivery]) -> Result<Vec<Acked>, QueueError> {
        let pending = ops::ack_all(&self.claims.shared, jobs)?;
        wait_all(pending)
    }

    /// Extends the lease of a job still being worked on to `lease` (from
    /// 1 ms to [`MAX_LEASE`](super::MAX_LEASE)) from now by the server's
    /// clock, so a long job is not delivered again meanwhile; `false` if
    /// this delivery no longer holds the job.
    ///
    /// # Errors
    ///
    /// [`QueueError::Argument`] for a lease out of range;
    /// [`QueueError::WrongQueue`]; Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// # let consumer = q.consumer()?;
    /// for job in consumer.fetch(1, std::time::Duration::from_secs(1))? {
    ///     // A slow job: keep the lease alive while it runs.
    ///     consumer.extend(&job, std::time::Duration::from_secs(60))?;
    ///     consumer.ack(&job)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn extend(&self, job: &Delivery, lease: Duration) -> Result<bool, QueueError> {
        ops::extend(&self.claims.shared, job, lease)?.wait()
    }

    /// Gives a delivered job back, to be delivered again after `delay` (at
    /// most 365 days), or dead-lettered if it has had its attempts. A
    /// retry after a lost reply answers what the first attempt did.
    ///
    /// # Errors
    ///
    /// [`QueueError::Argument`] for a delay out of range;
    /// [`QueueError::WrongQueue`]; Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// # let consumer = q.consumer()?;
    /// for job in consumer.fetch(1, std::time::Duration::from_secs(1))? {
    ///     consumer.nack(&job, std::time::Duration::from_secs(30))?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn nack(&self, job: &Delivery, delay: Duration) -> Result<Nacked, QueueError> {
        ops::nack(&self.claims.shared, job, delay)?.wait()
    }

    /// Stops the consumer: a fetch waiting now, or made later, returns
    /// [`QueueError::Closed`]. Jobs already delivered can still be acked.
    /// Dropping the consumer does the same.
    ///
    /// A claim given up on while its shard stalled can still run when the
    /// shard resumes and lease jobs that nobody received; the consumer
    /// hands those back once the shard answers. Closed before then, it
    /// leaves them leased until their lease ends, as a crashed consumer
    /// would.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// let consumer = std::sync::Arc::new(q.consumer()?);
    /// let worker = std::thread::spawn({
    ///     let consumer = consumer.clone();
    ///     move || while let Ok(jobs) = consumer.fetch(10, std::time::Duration::MAX) {
    ///         let _ = consumer.ack_all(&jobs);
    ///     }
    /// });
    /// consumer.close(); // at shutdown: the worker's fetch returns Closed
    /// worker.join().unwrap();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.claims.close();
    }
}
