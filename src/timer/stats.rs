//! Counters and the lateness histogram behind [`Timer::stats`](super::Timer::stats).

use core::time::Duration;

use super::sync::{AtomicU64, Ordering};
use crate::metrics::metric;

/// Buckets of the lateness histogram: bucket 0 holds lateness under 1 µs,
/// bucket `i` holds `[2^(i-1), 2^i)` µs, and the last one everything above.
pub(crate) const BUCKETS: usize = 32;

/// A snapshot of a timer's counters, from [`Timer::stats`](super::Timer::stats).
///
/// Counts are totals since the timer was built. They are read one by one
/// without stopping the timer, so a snapshot taken under load is a moment's
/// approximation (each counter is exact, their sum may be a few ops apart).
///
/// ```
/// use std::time::Duration;
/// use tickwheel::Timer;
///
/// let timer = Timer::new()?;
/// let handle = timer.run_after(Duration::from_secs(60), || ())?;
/// timer.cancel(handle);
/// let stats = timer.stats();
/// assert_eq!((stats.scheduled, stats.cancelled, stats.pending), (1, 1, 0));
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Timers scheduled and neither fired nor cancelled, async sleeps
    /// waiting in the wheels included.
    pub pending: usize,
    /// Timers accepted by `schedule`, `schedule_at` or `schedule_repeating`
    /// (a repeating timer counts once), and async sleeps filed.
    pub scheduled: u64,
    /// Runs handed to the executor (each run of a repeating timer counts,
    /// and so does a run the executor refused, which `rejected` counts
    /// too), and async sleeps that reached the deadline they were filed
    /// for: woken by the driver, or found due by a poll before the driver
    /// fired them. A sleep reset to a later deadline stays filed for its
    /// old one (a reset takes no lock); it is woken there and filed again,
    /// so each such step counts here and in `scheduled`.
    pub fired: u64,
    /// Timers removed by `cancel`, and async sleeps dropped before the
    /// driver fired them. A sleep is not polled when dropped, so one
    /// dropped past its deadline while the driver is late counts here.
    pub cancelled: u64,
    /// Runs the executor refused (then passed to the `on_undelivered` hook).
    pub rejected: u64,
    /// Runs whose task, value factory or executor panicked, and panics of
    /// the `on_undelivered` hook.
    pub panicked: u64,
    /// Values the timer had to drop because nobody could take them: refused
    /// by the executor with no `on_undelivered` hook (or a hook that
    /// panicked), or lost to a value factory that panicked at shutdown.
    /// Values pending when the last handle is dropped with no hook are
    /// dropped too, but no `Timer` is left to report them.
    pub dropped: u64,
    /// Times the driver thread woke up and scanned the wheels. With no
    /// timers pending it sleeps without a deadline, so this stays still.
    pub wakeups: u64,
    /// How late runs were handed to the executor, from the deadline asked
    /// for (rounded up to the tick).
    pub lateness: Lateness,
    /// Runs handed to the executor inside their window `[deadline,
    /// deadline + slack]` (see [`Timer::with_slack`](super::Timer::with_slack)).
    pub in_window: u64,
    /// How far past the end of its window each of the other runs was
    /// handed over: `overshoot.count()` runs missed their window (a busy
    /// or starved driver, a deadline already past when it was scheduled,
    /// the OS waking the driver late), and `overshoot.max()` is the worst.
    pub overshoot: Lateness,
    /// Runs handed to the executor before their deadline, by the timer's
    /// clock: none, since the driver fires a timer only once the clock
    /// has passed its deadline. Counted as a check (a clock that went
    /// backwards would show here); not counted in `lateness` or
    /// `in_window`.
    pub early: u64,
}

/// Distribution of lateness: the time from a run's deadline (rounded up to
/// the tick) to its hand-off to the executor.
///
/// Buckets double in width (under 1 µs, 1–2 µs, 2–4 µs, …), so quantiles
/// are upper bounds within a factor of two; [`max`](Self::max) is exact.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::timer::Lateness;
///
/// let empty = Lateness::default();
/// assert_eq!(empty.count(), 0);
/// assert_eq!(empty.quantile(0.99), Duration::ZERO);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lateness {
    buckets: [u64; BUCKETS],
    max: Duration,
    total: Duration,
}

impl Lateness {
    /// Number of runs recorded.
    ///
    /// ```
    /// # let l = tickwheel::timer::Lateness::default();
    /// assert_eq!(l.count(), 0);
    /// ```
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The largest lateness recorded.
    ///
    /// ```
    /// # let l = tickwheel::timer::Lateness::default();
    /// assert_eq!(l.max(), std::time::Duration::ZERO);
    /// ```
    pub fn max(&self) -> Duration {
        self.max
    }

    /// The mean lateness.
    ///
    /// ```
    /// # let l = tickwheel::timer::Lateness::default();
    /// assert_eq!(l.mean(), std::time::Duration::ZERO);
    /// ```
    pub fn mean(&self) -> Duration {
        match u32::try_from(self.count()) {
            Ok(0) => Duration::ZERO,
            Ok(count) => self.total / count,
            Err(_) => {
                Duration::from_nanos((self.total.as_nanos() / u128::from(self.count())) as u64)
            }
        }
    }

    /// An upper bound of the `q`-quantile (`0.0 ..= 1.0`): the upper edge of
    /// the bucket it falls in, capped at [`max`](Self::max).
    ///
    /// ```
    /// # let l = tickwheel::timer::Lateness::default();
    /// assert_eq!(l.quantile(0.5), std::time::Duration::ZERO);
    /// ```
    pub fn quantile(&self, q: f64) -> Duration {
        let count = self.count();
        if count == 0 {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (bucket, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return bucket_upper_edge(bucket).min(self.max);
            }
        }
        self.max
    }

    /// The non-empty buckets as `(upper edge, count)`, in order.
    ///
    /// ```
    /// # let l = tickwheel::timer::Lateness::default();
    /// assert_eq!(l.buckets().count(), 0);
    /// ```
    pub fn buckets(&self) -> impl Iterator<Item = (Duration, u64)> + '_ {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(bucket, &n)| (bucket_upper_edge(bucket), n))
    }
}

fn bucket_of(lateness: Duration) -> usize {
    let micros = lateness.as_micros();
    if micros == 0 {
        0
    } else {
        ((128 - micros.leading_zeros()) as usize).min(BUCKETS - 1)
    }
}

fn bucket_upper_edge(bucket: usize) -> Duration {
    if bucket == BUCKETS - 1 {
        Duration::MAX
    } else {
        Duration::from_micros(1 << bucket)
    }
}

/// The timer's counters beside the per-shard ones: lock-free, written
/// mostly by the driver thread, read by anyone. With feature `metrics`,
/// each count also goes to its metric (`crate::metrics`); callers hold no
/// lock.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    fired: AtomicU64,
    rejected: AtomicU64,
    panicked: AtomicU64,
    dropped: AtomicU64,
    late: LatenessCounter,
    in_window: AtomicU64,
    overshoot: LatenessCounter,
    early: AtomicU64,
    #[cfg(feature = "metrics")]
    pub(crate) metrics: TimerMetrics,
}

impl Counters {
    /// Counters that also publish to `metrics`.
    #[cfg(feature = "metrics")]
    pub(crate) fn publishing(metrics: TimerMetrics) -> Counters {
        Counters {
            metrics,
            ..Counters::default()
        }
    }

    /// Records a run handed over `lateness` after its deadline, with
    /// `slack` allowed.
    pub(crate) fn lateness(&self, lateness: Duration, slack: Duration) {
        self.late.record(lateness);
        metric!(self.metrics.lateness.record(lateness.as_secs_f64()));
        match lateness.checked_sub(slack) {
            Some(over) if !over.is_zero() => {
                self.overshoot.record(over);
                metric!(self.metrics.overshoot.increment(1));
            }
            _ => {
                self.in_window.fetch_add(1, Ordering::Relaxed);
                metric!(self.metrics.in_window.increment(1));
            }
        }
    }

    /// Records a run handed over before its deadline.
    pub(crate) fn early(&self) {
        self.early.fetch_add(1, Ordering::Relaxed);
        metric!(self.metrics.early.increment(1));
    }

    /// Counts a run handed over (or a sleep woken).
    pub(crate) fn fired(&self) {
        self.fired.fetch_add(1, Ordering::Relaxed);
        metric!(self.metrics.fired.increment(1));
    }

    /// Counts a run the executor refused.
    pub(crate) fn rejected(&self) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
        metric!(self.metrics.rejected.increment(1));
    }

    /// Counts a panic caught by the timer.
    pub(crate) fn panicked(&self) {
        self.panicked.fetch_add(1, Ordering::Relaxed);
        metric!(self.metrics.panicked.increment(1));
    }

    /// Counts a value dropped because nobody could take it.
    pub(crate) fn dropped(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        metric!(self.metrics.dropped.increment(1));
    }

    /// A timer was filed; the count itself is the shard's, bumped under
    /// its lock. Call after the lock is released.
    #[inline]
    pub(crate) fn filed(&self) {
        metric!(self.metrics.scheduled.increment(1));
    }

    /// A timer was cancelled; as [`filed`](Self::filed).
    #[inline]
    pub(crate) fn removed(&self) {
        metric!(self.metrics.cancelled.increment(1));
    }

    /// These counters as `Stats`; the per-shard counts are left at zero
    /// for the caller to fill in.
    pub(crate) fn snapshot(&self) -> Stats {
        Stats {
            fired: self.fired.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            panicked: self.panicked.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            lateness: self.late.snapshot(),
            in_window: self.in_window.load(Ordering::Relaxed),
            overshoot: self.overshoot.snapshot(),
            early: self.early.load(Ordering::Relaxed),
            ..Stats::default()
        }
    }
}

/// A timer's metric handles (feature `metrics`, names in
/// `crate::metrics`), registered when it is built. A default one
/// publishes nothing: the timers inside a `DurableTimer` and a Redis
/// consumer publish what they choose, or nothing.
#[cfg(feature = "metrics")]
#[derive(Debug)]
pub(crate) struct TimerMetrics {
    pub(crate) scheduled: ::metrics::Counter,
    pub(crate) fired: ::metrics::Counter,
    pub(crate) cancelled: ::metrics::Counter,
    pub(crate) rejected: ::metrics::Counter,
    pub(crate) dropped: ::metrics::Counter,
    pub(crate) panicked: ::metrics::Counter,
    pub(crate) in_window: ::metrics::Counter,
    pub(crate) overshoot: ::metrics::Counter,
    pub(crate) early: ::metrics::Counter,
    pub(crate) wakeups: ::metrics::Counter,
    pub(crate) lateness: ::metrics::Histogram,
}

#[cfg(feature = "metrics")]
impl Default for TimerMetrics {
    fn default() -> TimerMetrics {
        use ::metrics::{Counter, Histogram};
        TimerMetrics {
            scheduled: Counter::noop(),
            fired: Counter::noop(),
            cancelled: Counter::noop(),
            rejected: Counter::noop(),
            dropped: Counter::noop(),
            panicked: Counter::noop(),
            in_window: Counter::noop(),
            overshoot: Counter::noop(),
            early: Counter::noop(),
            wakeups: Counter::noop(),
            lateness: Histogram::noop(),
        }
    }
}

#[cfg(feature = "metrics")]
impl TimerMetrics {
    /// Every `tickwheel_timer_*` metric, labelled `timer = name`.
    pub(crate) fn register(name: &str) -> TimerMetrics {
        use crate::metrics::*;
        let labels = Labels::new("timer", name);
        TimerMetrics {
            scheduled: labels.counter(&TIMER_SCHEDULED),
            fired: labels.counter(&TIMER_FIRED),
            cancelled: labels.counter(&TIMER_CANCELLED),
            rejected: labels.counter(&TIMER_REJECTED),
            dropped: labels.counter(&TIMER_DROPPED),
            panicked: labels.counter(&TIMER_PANICKED),
            in_window: labels.counter(&TIMER_IN_WINDOW),
            overshoot: labels.counter(&TIMER_OVERSHOOT),
            early: labels.counter(&TIMER_EARLY),
            wakeups: labels.counter(&TIMER_WAKEUPS),
            lateness: labels.histogram(&TIMER_LATENESS),
        }
    }
}

/// A lock-free lateness histogram, read as a [`Lateness`].
#[derive(Debug, Default)]
pub(crate) struct LatenessCounter {
    buckets: [AtomicU64; BUCKETS],
    max_nanos: AtomicU64,
    /// The sum in nanoseconds, saturating: `u64::MAX` once past 584 years
    /// in all (a `fetch_add` wrapped there, and the mean fell silently).
    total_nanos: AtomicU64,
    /// The sum in whole microseconds (each lateness rounded down), for the
    /// mean once `total_nanos` is saturated: it lasts a thousand times as
    /// long, and saturates too.
    total_micros: AtomicU64,
}

impl LatenessCounter {
    pub(crate) fn record(&self, lateness: Duration) {
        let nanos = u64::try_from(lateness.as_nanos()).unwrap_or(u64::MAX);
        self.buckets[bucket_of(lateness)].fetch_add(1, Ordering::Relaxed);
        self.max_nanos.fetch_max(nanos, Ordering::Relaxed);
        add_saturating(&self.total_nanos, nanos);
        add_saturating(&self.total_micros, nanos / 1_000);
    }

    pub(crate) fn snapshot(&self) -> Lateness {
        let mut buckets = [0; BUCKETS];
        for (out, bucket) in buckets.iter_mut().zip(&self.buckets) {
            *out = bucket.load(Ordering::Relaxed);
        }
        Lateness {
            buckets,
            max: Duration::from_nanos(self.max_nanos.load(Ordering::Relaxed)),
            total: match self.total_nanos.load(Ordering::Relaxed) {
                u64::MAX => Duration::from_micros(self.total_micros.load(Ordering::Relaxed)),
                nanos => Duration::from_nanos(nanos),
            },
        }
    }
}

/// Adds `n` to `counter`, stopping at `u64::MAX` rather than wrapping.
fn add_saturating(counter: &AtomicU64, n: u64) {
    // A loop of its own: `fetch_update` is deprecated on nightly, and its
    // new name is not on every toolchain this crate builds with.
    let mut total = counter.load(Ordering::Relaxed);
    while let Err(now) = counter.compare_exchange_weak(
        total,
        total.saturating_add(n),
        Ordering::Relaxed,
        Ordering::Relaxed,
    ) {
        total = now;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn buckets_double() {
        assert_eq!(bucket_of(Duration::from_nanos(999)), 0);
        assert_eq!(bucket_of(Duration::from_micros(1)), 1);
        assert_eq!(bucket_of(Duration::from_micros(3)), 2);
        assert_eq!(bucket_of(Duration::from_micros(1023)), 10);
        assert_eq!(bucket_of(Duration::from_micros(1024)), 11);
        assert_eq!(bucket_of(Duration::from_secs(1 << 40)), BUCKETS - 1);
    }

    #[test]
    fn quantiles_are_bucket_upper_edges_capped_at_the_max() {
        let counters = Counters::default();
        for micros in [100, 200, 300, 900, 1_100] {
            counters.lateness(Duration::from_micros(micros), Duration::MAX);
        }
        let l = counters.snapshot().lateness;
        assert_eq!(l.count(), 5);
        assert_eq!(l.max(), Duration::from_micros(1_100));
        assert_eq!(l.mean(), Duration::from_micros(520));
        assert_eq!(l.quantile(0.2), Duration::from_micros(128));
        assert_eq!(l.quantile(0.6), Duration::from_micros(512));
        assert_eq!(l.quantile(0.8), Duration::from_micros(1_024));
        assert_eq!(l.quantile(1.0), Duration::from_micros(1_100));
        assert_eq!(l.buckets().map(|(_, n)| n).sum::<u64>(), 5);
    }

    #[test]
    fn runs_inside_their_window_are_counted_and_the_rest_measured_past_it() {
        let counters = Counters::default();
        let slack = Duration::from_micros(500);
        for micros in [0, 200, 500, 501, 1_300] {
            counters.lateness(Duration::from_micros(micros), slack);
        }
        let stats = counters.snapshot();
        assert_eq!(stats.lateness.count(), 5);
        assert_eq!(stats.in_window, 3, "0, 200 and 500 µs are inside");
        assert_eq!(stats.overshoot.count(), 2);
        assert_eq!(stats.overshoot.max(), Duration::from_micros(800));
        counters.early();
        let stats = counters.snapshot();
        assert_eq!((stats.early, stats.in_window), (1, 3), "early is apart");
        assert_eq!(stats.lateness.count(), 5);
    }
}
