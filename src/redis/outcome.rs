//! What the queue's calls answer: a schedule, a cancel, a dead letter; a
//! delivery, and what its ack or nack did.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use std::time::SystemTime;

/// A delivered job. Ack it when done, or nack it to retry; if neither
/// happens before the lease runs out, it is delivered again.
///
/// A delivery remembers its queue and its fencing token (how many
/// deliveries the job had had, requeues included): an ack, nack or extend
/// acts only while this delivery still holds the job, and only on the
/// queue it came from.
///
/// ```
/// fn handle(job: &tickwheel::redis::Delivery) {
///     println!("{} (attempt {})", job.id, job.attempt);
/// }
/// # let _ = handle;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Delivery {
    /// The job's id.
    pub id: String,
    /// Its payload.
    pub payload: Vec<u8>,
    /// 1 for the first delivery, and one more for each redelivery; a job
    /// requeued from the dead letters starts again at 1.
    pub attempt: u32,
    /// When it was due (server clock).
    pub due: SystemTime,
    /// The fencing token: deliveries the job ever had, this one included.
    pub(super) fence: u64,
    /// The queue (name and server) it came from.
    pub(super) queue: Arc<str>,
}

impl Delivery {
    /// The fencing token: how many deliveries the job has had, this one
    /// included, requeues and all. It only grows for the life of the id, so
    /// a handler that writes elsewhere can refuse a write from an older
    /// delivery (`UPDATE ... WHERE fence < ?`).
    ///
    /// ```
    /// fn newer(a: &tickwheel::redis::Delivery, b: &tickwheel::redis::Delivery) -> bool {
    ///     a.fence() > b.fence()
    /// }
    /// # let _ = newer;
    /// ```
    pub fn fence(&self) -> u64 {
        self.fence
    }
}

/// What an [`ack`](super::Consumer::ack) found.
///
/// ```
/// use tickwheel::redis::Acked;
/// fn fine(a: Acked) -> bool { a == Acked::Acked }
/// # let _ = fine;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Acked {
    /// Done: the job is gone (its id is remembered for the retention).
    Acked,
    /// This delivery no longer holds the job: its lease ran out and the
    /// job was delivered again (or dead-lettered, cancelled after a
    /// requeue, ...); this ack changed nothing.
    LeaseLost,
}

/// What a [`nack`](super::Consumer::nack) did.
///
/// ```
/// use tickwheel::redis::Nacked;
/// fn gave_up(n: Nacked) -> bool { n == Nacked::DeadLettered }
/// # let _ = gave_up;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Nacked {
    /// The job will be delivered again after the delay.
    Retrying,
    /// It was out of attempts: it is in the dead-letter set.
    DeadLettered,
    /// The lease had run out; this nack changed nothing.
    LeaseLost,
}

/// What [`Queue::schedule`](super::Queue::schedule) did.
///
/// ```
/// use tickwheel::redis::Scheduled;
/// fn stored(s: &Scheduled) -> bool {
///     matches!(s, Scheduled::Created { .. } | Scheduled::Exists)
/// }
/// # let _ = stored;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scheduled {
    /// A new job, due at this time by the Redis server's clock.
    Created {
        /// When it is due.
        due: SystemTime,
    },
    /// A job with this id exists (waiting, in flight or dead-lettered), or
    /// ended within the retention window: nothing was changed.
    Exists,
}

/// Who won a [`Queue::cancel`](super::Queue::cancel).
///
/// ```
/// use tickwheel::redis::Cancelled;
/// fn won(c: &Cancelled) -> bool { matches!(c, Cancelled::Cancelled(_)) }
/// # let _ = won;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cancelled {
    /// The job will never be delivered; here is its payload. (A
    /// dead-lettered job is removed the same way.)
    Cancelled(Vec<u8>),
    /// A consumer holds it now: it may still be acked, or delivered again
    /// if its lease runs out.
    InFlight,
    /// It was delivered and acked.
    Delivered,
    /// It had already been cancelled, or was discarded by the misfire
    /// policy.
    Ended,
    /// No job with this id exists (or it ended before the retention window).
    Unknown,
}

/// A dead-lettered job, from [`Queue::dead_letters`](super::Queue::dead_letters).
///
/// ```
/// fn show(d: &tickwheel::redis::DeadLetter) -> String {
///     format!("{} after {} attempts", d.id, d.attempts)
/// }
/// # let _ = show;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadLetter {
    /// The job's id.
    pub id: String,
    /// Its payload.
    pub payload: Vec<u8>,
    /// Deliveries it had.
    pub attempts: u32,
    /// When it was dead-lettered (server clock).
    pub at: SystemTime,
}
