//! How a snapshot's fixed-rate job repeats.

use core::time::Duration;

use crate::timer::MissedTicks;

/// How a fixed-rate job repeats: run `n` is due at `due + n × period`.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::persist::Repeat;
/// use tickwheel::timer::MissedTicks;
///
/// let hourly = Repeat { period: Duration::from_secs(3600), missed: MissedTicks::Skip };
/// # let _ = hourly;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Repeat {
    /// Time between runs (a whole number of the timer's ticks).
    pub period: Duration,
    /// What to do about runs that were missed.
    pub missed: MissedTicks,
}
