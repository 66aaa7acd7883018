//! [`InvalidSchedule`]: the error of a timetable that cannot work.

use alloc::string::String;
use core::fmt;

/// A timetable that cannot work: a cron expression or time zone that does
/// not parse, or a period out of range.
///
/// ```
/// let err = tickwheel::schedule::Schedule::cron("sometimes", "UTC").unwrap_err();
/// assert!(err.to_string().contains("sometimes"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidSchedule(pub(crate) String);

impl fmt::Display for InvalidSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid schedule: {}", self.0)
    }
}

impl core::error::Error for InvalidSchedule {}
