//! What a restore did: an [`Outcome`] per job, gathered in a
//! [`RestoreReport`] with the dead letters.

use alloc::vec::Vec;
use core::fmt;
use std::time::SystemTime;

use super::PendingJob;
use crate::timer::TimerHandle;

/// What restoring did with one job.
///
/// ```
/// use tickwheel::persist::Outcome;
///
/// fn describe(outcome: &Outcome) -> &'static str {
///     match outcome {
///         Outcome::Scheduled(_) => "as it was",
///         Outcome::FiredNow(_) | Outcome::Spread(..) | Outcome::Rescheduled(..) => "missed, scheduled",
///         Outcome::CaughtUp { .. } => "missed runs made up",
///         Outcome::Discarded | Outcome::DeadLettered => "missed, not scheduled",
///         _ => "other",
///     }
/// }
/// # let _ = describe;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Not missed (due later, or late within the threshold with the
    /// overdue runs its `MissedTicks` makes up: all of them for `Burst`):
    /// scheduled at its due time.
    Scheduled(TimerHandle),
    /// A missed one-shot, scheduled to fire at once.
    FiredNow(TimerHandle),
    /// A missed one-shot, scheduled at this time within the spread window.
    Spread(TimerHandle, SystemTime),
    /// A missed one-shot, scheduled where the policy's function said.
    Rescheduled(TimerHandle, SystemTime),
    /// A missed one-shot, dropped by the policy.
    Discarded,
    /// A missed one-shot, handed back in [`RestoreReport::dead_letters`].
    DeadLettered,
    /// A fixed-rate job that missed `missed` runs: beyond the threshold,
    /// or (`MissedTicks::Burst`) more than
    /// [`max_catch_up`](super::MisfirePolicy::max_catch_up) runs behind
    /// even within it. Its `MissedTicks` decides, and at most
    /// `made_up` of them run at once; the others are skipped.
    CaughtUp {
        /// The restored timer.
        handle: TimerHandle,
        /// Runs whose due time had passed (`u64::MAX` if more: a 1 ns
        /// period from `SystemTime`'s far past).
        missed: u64,
        /// Of those, the most that will run now.
        made_up: u64,
    },
}

impl Outcome {
    /// The restored timer's handle, if the job was scheduled.
    ///
    /// ```
    /// assert_eq!(tickwheel::persist::Outcome::Discarded.handle(), None);
    /// ```
    pub fn handle(&self) -> Option<TimerHandle> {
        match *self {
            Outcome::Scheduled(h)
            | Outcome::FiredNow(h)
            | Outcome::Spread(h, _)
            | Outcome::Rescheduled(h, _)
            | Outcome::CaughtUp { handle: h, .. } => Some(h),
            Outcome::Discarded | Outcome::DeadLettered => None,
        }
    }
}

/// What [`Timer::restore`](crate::timer::Timer::restore) did: one outcome per job, in the snapshot's
/// order, and the jobs handed back as dead letters.
///
/// ```
/// use tickwheel::persist::RestoreReport;
///
/// fn missed(report: &RestoreReport<u32>) -> usize {
///     report.outcomes.iter().filter(|o| !matches!(o, tickwheel::persist::Outcome::Scheduled(_))).count()
/// }
/// # let _ = missed;
/// ```
///
/// Its `Debug` counts the dead letters rather than printing them, so it
/// needs no `T: Debug` and puts no payload in a log line.
#[non_exhaustive]
pub struct RestoreReport<T> {
    /// One per job of the snapshot, in its order.
    pub outcomes: Vec<Outcome>,
    /// Missed one-shot jobs the policy sent to the dead letters.
    pub dead_letters: Vec<PendingJob<T>>,
}

impl<T> fmt::Debug for RestoreReport<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestoreReport")
            .field("outcomes", &self.outcomes)
            .field("dead_letters", &Jobs(self.dead_letters.len()))
            .finish()
    }
}

/// How many jobs a list holds, for a `Debug` that hides their values.
pub(super) struct Jobs(pub(super) usize);

impl fmt::Debug for Jobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{} jobs]", self.0)
    }
}
