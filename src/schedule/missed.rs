//! [`Missed`]: what becomes of runs missed while nothing ran.

/// What becomes of the runs that fell due while nothing ran to make them
/// (the Redis queue down, every consumer stopped, the process that owns a
/// journal stopped): the instants found more than a second
/// ([`MISSED_AFTER`](super::MISSED_AFTER)) in the past when one next looks.
///
/// ```
/// use tickwheel::schedule::Missed;
/// assert_eq!(Missed::default(), Missed::RunOnce);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Missed {
    /// None of them runs; the next run is the next instant to come.
    Skip,
    /// One run stands for all of them, for the latest (cron's and
    /// systemd's `Persistent=true`).
    #[default]
    RunOnce,
    /// Each runs, oldest first, up to 1,000 each time a consumer looks.
    RunAll,
}
