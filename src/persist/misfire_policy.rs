//! [`MisfirePolicy`] and [`OnMissed`]: how a restore treats the jobs that
//! fell due while the process was down (the rules are in `restore.rs`).

use alloc::sync::Arc;
use core::fmt;
use core::time::Duration;
use std::time::SystemTime;

use super::PendingJob;

/// A function that picks a new due time for a missed job, given the job
/// and the wall time now (for [`OnMissed::Reschedule`]).
///
/// ```
/// use std::sync::Arc;
/// use std::time::{Duration, SystemTime};
/// use tickwheel::persist::{MisfirePolicy, OnMissed, PendingJob, Reschedule, Snapshot};
///
/// // A missed reminder comes back in 10 minutes, not at once.
/// let later: Reschedule<&str> = Arc::new(|_job, now| now + Duration::from_secs(600));
/// let policy = MisfirePolicy::default().on_missed(OnMissed::Reschedule(later));
/// let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
/// let job = PendingJob { due: an_hour_ago, repeat: None, value: "remind" };
/// let snapshot = Snapshot { version: Snapshot::<&str>::VERSION, taken_at: an_hour_ago, jobs: vec![job] };
/// let (timer, _fired) = tickwheel::timer::delay_queue()?;
/// timer.restore(snapshot, &policy)?;
/// assert_eq!(timer.pending(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Reschedule<T> = Arc<dyn Fn(&PendingJob<T>, SystemTime) -> SystemTime + Send + Sync>;

/// What to do with a one-shot job that was missed (later than the
/// threshold).
///
/// ```
/// use std::time::Duration;
/// use tickwheel::persist::OnMissed;
///
/// let calm: OnMissed<u32> = OnMissed::Spread(Duration::from_secs(60));
/// # let _ = calm;
/// ```
#[non_exhaustive]
pub enum OnMissed<T> {
    /// Fire at once (Quartz `FIRE_NOW`, systemd `Persistent=true`).
    FireNow,
    /// Fire spread evenly over this window from now, in due order.
    Spread(Duration),
    /// Drop it (Quartz `DO_NOTHING`, systemd `Persistent=false`); the
    /// report counts it.
    Discard,
    /// Do not schedule it: hand it back in
    /// [`RestoreReport::dead_letters`](super::RestoreReport::dead_letters).
    DeadLetter,
    /// Schedule it at the time the function returns. If the function
    /// panics, the job is handed back in
    /// [`RestoreReport::dead_letters`](super::RestoreReport::dead_letters)
    /// (its outcome `DeadLettered`), never lost.
    Reschedule(Reschedule<T>),
}

impl<T> Clone for OnMissed<T> {
    fn clone(&self) -> Self {
        match self {
            OnMissed::FireNow => OnMissed::FireNow,
            OnMissed::Spread(window) => OnMissed::Spread(*window),
            OnMissed::Discard => OnMissed::Discard,
            OnMissed::DeadLetter => OnMissed::DeadLetter,
            OnMissed::Reschedule(f) => OnMissed::Reschedule(Arc::clone(f)),
        }
    }
}

impl<T> fmt::Debug for OnMissed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OnMissed::FireNow => f.write_str("FireNow"),
            OnMissed::Spread(window) => f.debug_tuple("Spread").field(window).finish(),
            OnMissed::Discard => f.write_str("Discard"),
            OnMissed::DeadLetter => f.write_str("DeadLetter"),
            OnMissed::Reschedule(_) => f.write_str("Reschedule(..)"),
        }
    }
}

/// How [`Timer::restore`](crate::timer::Timer::restore) treats overdue jobs.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::persist::{MisfirePolicy, OnMissed};
///
/// let policy: MisfirePolicy<u64> = MisfirePolicy::default()
///     .threshold(Duration::from_secs(30))
///     .on_missed(OnMissed::Spread(Duration::from_secs(120)))
///     .max_catch_up(10);
/// assert_eq!(policy.threshold_value(), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone)]
pub struct MisfirePolicy<T> {
    pub(super) threshold: Duration,
    pub(crate) on_missed: OnMissed<T>,
    pub(super) max_catch_up: u64,
}

impl<T> Default for MisfirePolicy<T> {
    /// Threshold 60 s (Quartz's default), missed one-shots fire now, at
    /// most 100 runs made up (Kubernetes' limit).
    fn default() -> Self {
        MisfirePolicy {
            threshold: Duration::from_secs(60),
            on_missed: OnMissed::FireNow,
            max_catch_up: 100,
        }
    }
}

impl<T> MisfirePolicy<T> {
    /// Jobs later than this were missed; up to it, they are only late and
    /// fire at once.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let p = tickwheel::persist::MisfirePolicy::<()>::default().threshold(Duration::ZERO);
    /// assert_eq!(p.threshold_value(), Duration::ZERO);
    /// ```
    #[must_use]
    pub fn threshold(mut self, threshold: Duration) -> Self {
        self.threshold = threshold;
        self
    }

    /// What a missed one-shot job does.
    ///
    /// ```
    /// use tickwheel::persist::{MisfirePolicy, OnMissed};
    /// let p = MisfirePolicy::<()>::default().on_missed(OnMissed::DeadLetter);
    /// # let _ = p;
    /// ```
    #[must_use]
    pub fn on_missed(mut self, on_missed: OnMissed<T>) -> Self {
        self.on_missed = on_missed;
        self
    }

    /// The most overdue runs of one fixed-rate job made up at once (with
    /// `MissedTicks::Burst`), late within the threshold or not; older ones
    /// are skipped, and the job's outcome is then
    /// [`CaughtUp`](super::Outcome::CaughtUp), which says how many. At
    /// least 1.
    ///
    /// ```
    /// let p = tickwheel::persist::MisfirePolicy::<()>::default().max_catch_up(0);
    /// assert_eq!(p.max_catch_up_value(), 1);
    /// ```
    #[must_use]
    pub fn max_catch_up(mut self, runs: u64) -> Self {
        self.max_catch_up = runs.max(1);
        self
    }

    /// The misfire threshold.
    ///
    /// ```
    /// # use std::time::Duration;
    /// assert_eq!(tickwheel::persist::MisfirePolicy::<()>::default().threshold_value(), Duration::from_secs(60));
    /// ```
    pub fn threshold_value(&self) -> Duration {
        self.threshold
    }

    /// The catch-up limit.
    ///
    /// ```
    /// assert_eq!(tickwheel::persist::MisfirePolicy::<()>::default().max_catch_up_value(), 100);
    /// ```
    pub fn max_catch_up_value(&self) -> u64 {
        self.max_catch_up
    }
}
