//! [`QueueError`]: why a queue operation failed.

use alloc::string::String;
use core::fmt;

/// Why a [`Queue`](super::Queue) or [`Consumer`](super::Consumer) call
/// failed. Input errors are found before anything is sent; nothing is
/// stored then.
///
/// ```
/// use tickwheel::redis::QueueError;
///
/// let err = QueueError::InvalidId("an id may not be empty");
/// assert!(err.to_string().contains("empty"));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum QueueError {
    /// The job id is empty or longer than [`MAX_ID`](super::MAX_ID)
    /// bytes; or a new job's id starts with `schedule/`, which only job
    /// schedulers' runs take (so [`Delivery::schedule`](super::Delivery::schedule)
    /// can tell them apart, and a run's id is never a user's job).
    InvalidId(&'static str),
    /// The payload is longer than [`MAX_PAYLOAD`](super::MAX_PAYLOAD).
    PayloadTooLarge {
        /// Its length in bytes.
        len: usize,
    },
    /// The due time is before the Unix epoch or after
    /// [`MAX_DUE_MICROS`](super::MAX_DUE_MICROS) (Redis scores are exact only up to 2^53).
    DueOutOfRange,
    /// An argument is outside its documented range (a lease or delay over
    /// its cap, say); nothing was sent.
    Argument(&'static str),
    /// A job scheduler's timetable cannot work: a cron expression or time
    /// zone that does not parse, a period out of range, a key that is
    /// empty or too long; nothing was sent.
    InvalidSchedule(String),
    /// Redis could not be reached, or kept failing, for the whole retry
    /// window; the last error is given. Within the window every attempt of
    /// the call carried the same request token, so a retry after a lost
    /// reply answered what the first attempt did; after this error the
    /// call may or may not have taken effect.
    Unavailable(String),
    /// Redis answered with an error (a misconfigured server, a missing
    /// permission, say).
    Server(String),
    /// The options cannot work (a zero lease, say).
    Config(&'static str),
    /// The server cannot be used as given: a URL that does not parse, TLS
    /// certificates that cannot be read, a refused password, a Redis
    /// Cluster node reached as one server (`Queue::builder`) that answers
    /// `MOVED` for the queue's keys (use `Queue::cluster_builder`).
    Connect(String),
    /// The server may evict keys (`maxmemory-policy`, named here), which
    /// would silently lose jobs: at connect, or from a call once Sentinel
    /// promoted a master that may (the queue does not write there); see
    /// [`QueueBuilder::allow_eviction`](super::QueueBuilder::allow_eviction).
    EvictingServer(String),
    /// The delivery came from another queue: a consumer acks, nacks and
    /// extends only its own queue's deliveries. A queue is its name and
    /// its server as the connection named it (the URL's host as written,
    /// the Sentinel service, or the Cluster's seeds): a delivery fetched
    /// through `redis://localhost:6380` counts as another queue's for a
    /// handle connected through `redis://127.0.0.1:6380`. Give every handle
    /// of a queue the same connection settings.
    WrongQueue,
    /// The consumer was closed ([`Consumer::close`](super::Consumer::close)
    /// or dropped) while the call waited, or before it.
    Closed,
    /// A value could not be encoded as, or decoded from, a JSON payload
    /// (feature `serde`).
    Json(String),
    /// The job was scheduled on the master, but fewer replicas than
    /// [`QueueBuilder::replicas`](super::QueueBuilder::replicas) asked for
    /// confirmed it in time: it is there now, and lost if the master dies
    /// before a replica has it. Scheduling the same id again is safe (it
    /// answers [`Scheduled::Exists`](super::Scheduled::Exists) once the job
    /// is there).
    NotReplicated {
        /// Replicas that confirmed the write.
        confirmed: u32,
        /// Replicas asked for.
        wanted: u32,
    },
}

impl QueueError {
    /// The queue's I/O is gone: its thread ended, or the runtime it ran on
    /// (`QueueBuilder::runtime`) shut down.
    pub(super) fn io_stopped() -> QueueError {
        QueueError::Unavailable(String::from(
            "the queue's I/O stopped (its thread, or the runtime it ran on)",
        ))
    }
}

impl fmt::Display for QueueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueError::InvalidId(why) => write!(f, "invalid job id: {why}"),
            QueueError::PayloadTooLarge { len } => write!(
                f,
                "payload of {len} bytes is over the limit of {} bytes",
                super::MAX_PAYLOAD
            ),
            QueueError::DueOutOfRange => {
                write!(f, "due time out of range (Unix epoch to year 2255)")
            }
            QueueError::Argument(why) => write!(f, "invalid argument: {why}"),
            QueueError::InvalidSchedule(why) => write!(f, "invalid schedule: {why}"),
            QueueError::Unavailable(last) => write!(f, "redis unavailable: {last}"),
            QueueError::Server(message) => write!(f, "redis error: {message}"),
            QueueError::Config(why) => write!(f, "invalid queue options: {why}"),
            QueueError::Connect(why) => write!(f, "cannot use this redis server: {why}"),
            QueueError::EvictingServer(policy) => write!(
                f,
                "the redis server may evict keys (maxmemory-policy {policy}), which loses jobs: \
                 set it to noeviction, or allow it explicitly"
            ),
            QueueError::WrongQueue => write!(f, "the delivery belongs to another queue"),
            QueueError::Closed => write!(f, "the consumer is closed"),
            QueueError::Json(why) => write!(f, "payload is not the expected JSON: {why}"),
            QueueError::NotReplicated { confirmed, wanted } => write!(
                f,
                "scheduled on the master, but {confirmed} of {wanted} replicas confirmed it in time"
            ),
        }
    }
}

impl core::error::Error for QueueError {}

impl From<crate::schedule::InvalidSchedule> for QueueError {
    fn from(err: crate::schedule::InvalidSchedule) -> Self {
        QueueError::InvalidSchedule(err.0)
    }
}
