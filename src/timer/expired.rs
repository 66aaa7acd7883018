//! [`Expired`]: a fired timer as the std layer hands it over.

use std::time::Instant;

use super::TimerHandle;

/// A fired timer as the std layer hands it over: its handle, its deadline
/// (rounded up to the tick) and its value.
///
/// ```
/// use tickwheel::timer::Expired;
///
/// fn on_fire(fired: Expired<String>) {
///     println!("{} was due at {:?}", fired.value, fired.deadline);
/// }
/// # let _ = on_fire;
/// ```
pub type Expired<T> = crate::Expired<T, TimerHandle, Instant>;
