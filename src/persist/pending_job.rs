//! One pending job of a snapshot.

use std::time::SystemTime;

use super::Repeat;

/// One pending job: when it is due, how it repeats, and its value.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use tickwheel::persist::{PendingJob, Repeat};
/// use tickwheel::timer::MissedTicks;
///
/// let heartbeat = PendingJob {
///     due: SystemTime::now() + Duration::from_secs(1),
///     repeat: Some(Repeat { period: Duration::from_secs(1), missed: MissedTicks::Skip }),
///     value: "ping",
/// };
/// # let _ = heartbeat;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PendingJob<T> {
    /// The deadline (of the next run, for a repeating job), in wall-clock
    /// time, rounded up to the timer's tick.
    pub due: SystemTime,
    /// For a fixed-rate job, its period and its policy for missed runs.
    pub repeat: Option<Repeat>,
    /// The job's value (for a repeating job, one from its factory; a
    /// restored job repeats clones of it).
    pub value: T,
}
