//! [`TimerHandle`]: names a scheduled timer.

use crate::TimerKey;

#[cfg(doc)]
use super::Timer;

/// A handle to a scheduled timer: for [`Timer::cancel`], [`Timer::reset`]
/// and the queries. `Copy`, 12 bytes.
///
/// A handle whose timer has fired (a one-shot) or been cancelled is stale:
/// `cancel` returns `None` and `reset` returns `false`, even if the slot was
/// reused (see [`TimerKey`] for the bound).
///
/// ```
/// use std::time::Duration;
/// use tickwheel::Timer;
///
/// let timer = Timer::new()?;
/// let handle = timer.run_after(Duration::from_secs(30), || ())?;
/// assert!(timer.reset(handle, Duration::from_secs(60)));
/// assert!(timer.cancel(handle).is_some());
/// assert!(timer.cancel(handle).is_none());
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TimerHandle {
    pub(super) key: TimerKey,
    pub(super) shard: u16,
    /// The timer's slack class (`slack.rs`).
    pub(super) class: u16,
}
