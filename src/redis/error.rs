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
#[derive(Debug)]
#[non_exhaustive]
pub enum QueueError {
    /// The job id is empty or longer than [`MAX_ID`](super::MAX_ID) bytes.
    InvalidId(&'static str),
    /// The payload is longer than [`MAX_PAYLOAD`](super::MAX_PAYLOAD).
    PayloadTooLarge {
        /// Its length in bytes.
        len: usize,
    },
    /// The due time is before the Unix epoch or after
    /// [`MAX_DUE_MICROS`](super::MAX_DUE_MICROS) (Redis scores are exact only up to 2^53).
    DueOutOfRange,
    /// Redis could not be reached, or kept failing, for the whole retry
    /// window; the last error is given. The call may or may not have taken
    /// effect: every call is safe to repeat.
    Unavailable(String),
    /// Redis answered with an error (a misconfigured server, say).
    Server(String),
    /// The options cannot work (a zero lease, say).
    Config(&'static str),
    /// A value could not be encoded as, or decoded from, a JSON payload
    /// (feature `serde`).
    Json(String),
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
            QueueError::Unavailable(last) => write!(f, "redis unavailable: {last}"),
            QueueError::Server(message) => write!(f, "redis error: {message}"),
            QueueError::Config(why) => write!(f, "invalid queue options: {why}"),
            QueueError::Json(why) => write!(f, "payload is not the expected JSON: {why}"),
        }
    }
}

impl core::error::Error for QueueError {}
