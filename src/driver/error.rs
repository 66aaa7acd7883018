//! Errors of the std layer. Each one that refuses a value hands it back.

use core::fmt;
use core::time::Duration;
use std::io;

/// Why [`Timer::schedule`](super::Timer::schedule) and friends refused a
/// value. Either way the value comes back: [`into_inner`](Self::into_inner).
///
/// ```
/// use tickwheel::driver::ScheduleError;
///
/// let err = ScheduleError::Full("job");
/// assert_eq!(err.to_string(), "timer is full");
/// assert_eq!(format!("{err:?}"), "Full(..)");
/// assert_eq!(err.into_inner(), "job");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ScheduleError<T> {
    /// The timer already holds `max_pending` timers (or, without a limit,
    /// as many as a shard can address).
    Full(T),
    /// The timer has been shut down, or its last handle dropped.
    Shutdown(T),
}

impl<T> ScheduleError<T> {
    /// Takes back the value that was not scheduled.
    ///
    /// ```
    /// # use tickwheel::driver::ScheduleError;
    /// assert_eq!(ScheduleError::Shutdown(7).into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            ScheduleError::Full(value) | ScheduleError::Shutdown(value) => value,
        }
    }

    /// `true` for [`ScheduleError::Full`].
    ///
    /// ```
    /// # use tickwheel::driver::ScheduleError;
    /// assert!(ScheduleError::Full(()).is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, ScheduleError::Full(_))
    }

    /// `true` for [`ScheduleError::Shutdown`].
    ///
    /// ```
    /// # use tickwheel::driver::ScheduleError;
    /// assert!(ScheduleError::Shutdown(()).is_shutdown());
    /// ```
    pub fn is_shutdown(&self) -> bool {
        matches!(self, ScheduleError::Shutdown(_))
    }
}

impl<T> fmt::Debug for ScheduleError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::Full(_) => f.write_str("Full(..)"),
            ScheduleError::Shutdown(_) => f.write_str("Shutdown(..)"),
        }
    }
}

impl<T> fmt::Display for ScheduleError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::Full(_) => f.write_str("timer is full"),
            ScheduleError::Shutdown(_) => f.write_str("timer is shut down"),
        }
    }
}

impl<T> core::error::Error for ScheduleError<T> {}

/// Why [`Builder::build`](super::Builder::build) failed.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::Timer;
///
/// let err = Timer::builder().tick(Duration::from_nanos(10)).build().unwrap_err();
/// assert_eq!(err.to_string(), "tick must be at least 1µs, got 10ns");
/// ```
#[derive(Debug)]
pub enum BuildError {
    /// The tick is shorter than a microsecond.
    Tick(Duration),
    /// The number of shards is 0 or more than 1024.
    Shards(usize),
    /// A thread (the driver or an executor's worker) could not be spawned.
    Spawn(io::Error),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Tick(tick) => write!(f, "tick must be at least 1µs, got {tick:?}"),
            BuildError::Shards(n) => write!(f, "shards must be between 1 and 1024, got {n}"),
            BuildError::Spawn(err) => write!(f, "could not spawn a timer thread: {err}"),
        }
    }
}

impl core::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            BuildError::Spawn(err) => Some(err),
            _ => None,
        }
    }
}

impl From<io::Error> for BuildError {
    fn from(err: io::Error) -> Self {
        BuildError::Spawn(err)
    }
}
