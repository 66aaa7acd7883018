//! Errors of the core. Each one that refuses a value hands it back.

use core::fmt;

/// Why [`Geometry::new`](crate::Geometry::new) refused a shape.
///
/// ```
/// use tickwheel::{Geometry, GeometryError};
///
/// assert_eq!(Geometry::new(7, 2), Err(GeometryError::SlotBits(7)));
/// assert_eq!(Geometry::new(4, 0), Err(GeometryError::Levels(0)));
/// assert_eq!(
///     Geometry::new(0, 1).unwrap_err().to_string(),
///     "slot bits must be between 1 and 6, got 0"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GeometryError {
    /// `slot_bits` was outside `1..=6`: a level needs at least two slots, and
    /// its occupancy bitmap is one `u64`, so it holds at most 64.
    SlotBits(u32),
    /// `levels` was outside `1..=6`.
    Levels(u32),
}

impl fmt::Display for GeometryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            GeometryError::SlotBits(bits) => {
                write!(f, "slot bits must be between 1 and 6, got {bits}")
            }
            GeometryError::Levels(levels) => {
                write!(f, "levels must be between 1 and 6, got {levels}")
            }
        }
    }
}

impl core::error::Error for GeometryError {}

/// [`Wheel::try_insert`](crate::Wheel::try_insert) found the wheel full; the
/// value is handed back.
///
/// A wheel holds at most [`Wheel::MAX_TIMERS`](crate::Wheel::MAX_TIMERS)
/// timers at once (2³¹ − 1, about 2.15 × 10⁹, far past what memory allows on most
/// machines).
///
/// ```
/// use tickwheel::CapacityError;
///
/// let err = CapacityError::new("job");
/// assert_eq!(err.to_string(), "timer wheel is full");
/// assert_eq!(format!("{err:?}"), "CapacityError(..)");
/// assert_eq!(err.into_inner(), "job");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CapacityError<T>(T);

impl<T> CapacityError<T> {
    /// Wraps a refused value.
    ///
    /// ```
    /// # use tickwheel::CapacityError;
    /// assert_eq!(CapacityError::new(3).into_inner(), 3);
    /// ```
    pub const fn new(value: T) -> Self {
        CapacityError(value)
    }

    /// Takes back the value that was not inserted.
    ///
    /// ```
    /// # use tickwheel::CapacityError;
    /// assert_eq!(CapacityError::new("v").into_inner(), "v");
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for CapacityError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CapacityError(..)")
    }
}

impl<T> fmt::Display for CapacityError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("timer wheel is full")
    }
}

impl<T> core::error::Error for CapacityError<T> {}
