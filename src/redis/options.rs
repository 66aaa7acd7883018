//! A queue's settings, shared by its producers and consumers, and the
//! limits every setting and argument is checked against.

use core::time::Duration;

use super::{QueueError, MAX_BATCH, MAX_LEASE};

/// The settings of [`QueueBuilder`](super::QueueBuilder), checked at
/// connect.
#[derive(Debug, Clone)]
pub(super) struct Options {
    pub(super) lease: Duration,
    pub(super) max_attempts: u32,
    pub(super) threshold: Duration,
    pub(super) on_missed: &'static str,
    pub(super) window: Duration,
    pub(super) retention: Duration,
    pub(super) batch: usize,
    pub(super) poll: Duration,
    pub(super) hints: bool,
    pub(super) wake_slack: Duration,
    pub(super) retry_for: Duration,
    pub(super) io_timeout: Duration,
    pub(super) allow_eviction: bool,
    /// Replicas a schedule must reach before it answers (0: none), and
    /// how long it waits for them.
    pub(super) replicas: u32,
    pub(super) replica_timeout: Duration,
    /// Partitions of the queue (see `keys.rs`); `None`: as stored, or 1
    /// for a new queue.
    pub(super) partitions: Option<u16>,
    /// Connect to an existing queue only, storing nothing
    /// (`QueueBuilder::existing_only`).
    pub(super) existing: bool,
}

/// The most partitions a queue can have.
pub(super) const MAX_PARTITIONS: u16 = 1024;

/// The most replicas a schedule can wait for.
pub(super) const MAX_REPLICAS: u32 = 16;
/// The longest poll interval.
pub(super) const MAX_POLL: Duration = Duration::from_secs(3600);
/// The longest retention (ten years).
pub(super) const MAX_RETENTION: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// The longest retry window.
pub(super) const MAX_RETRY_WINDOW: Duration = Duration::from_secs(3600);
/// The longest I/O timeout.
pub(super) const MAX_IO_TIMEOUT: Duration = Duration::from_secs(600);
/// The longest misfire threshold or spread window (a year).
pub(super) const MAX_MISFIRE: Duration = Duration::from_secs(365 * 24 * 3600);
/// The most attempts.
pub(super) const MAX_ATTEMPTS: u32 = 1_000_000;

impl Default for Options {
    fn default() -> Options {
        Options {
            lease: Duration::from_secs(30),
            max_attempts: 5,
            threshold: Duration::from_secs(60),
            on_missed: "fire",
            window: Duration::ZERO,
            retention: Duration::from_secs(24 * 3600),
            batch: 100,
            poll: Duration::from_secs(1),
            hints: true,
            wake_slack: Duration::from_millis(1),
            retry_for: Duration::from_secs(10),
            io_timeout: Duration::from_secs(2),
            allow_eviction: false,
            replicas: 0,
            replica_timeout: Duration::from_secs(1),
            partitions: None,
            existing: false,
        }
    }
}

impl Options {
    /// Refuses settings that cannot work, with the reason.
    pub(super) fn check(&self) -> Result<(), QueueError> {
        let within = |d: Duration, min: Duration, max: Duration| d >= min && d <= max;
        let ms = Duration::from_millis(1);
        let checks: [(bool, &'static str); 14] = [
            (
                within(self.lease, ms, MAX_LEASE),
                "the lease must be from 1 ms to 24 h",
            ),
            (
                (1..=MAX_ATTEMPTS).contains(&self.max_attempts),
                "max attempts must be from 1 to 1,000,000",
            ),
            (
                (1..=MAX_BATCH).contains(&self.batch),
                "the batch must be from 1 to 1,000 jobs",
            ),
            (
                within(self.poll, ms, MAX_POLL),
                "the poll interval must be from 1 ms to 1 h",
            ),
            (
                self.retention <= MAX_RETENTION,
                "the retention must be at most ten years",
            ),
            (
                self.threshold <= MAX_MISFIRE,
                "the misfire threshold must be at most a year",
            ),
            (
                self.window <= MAX_MISFIRE,
                "the misfire spread window must be at most a year",
            ),
            (
                self.retry_for <= MAX_RETRY_WINDOW,
                "the retry window must be at most 1 h",
            ),
            (
                within(self.io_timeout, ms, MAX_IO_TIMEOUT),
                "the I/O timeout must be from 1 ms to 10 min",
            ),
            (
                self.wake_slack <= Duration::from_secs(1),
                "the wake-up slack must be at most 1 s",
            ),
            (
                self.replicas <= MAX_REPLICAS,
                "a schedule can wait for at most 16 replicas",
            ),
            (
                within(self.replica_timeout, ms, Duration::from_secs(60)),
                "the replica timeout must be from 1 ms to 60 s",
            ),
            (
                self.partitions
                    .is_none_or(|n| (1..=MAX_PARTITIONS).contains(&n)),
                "a queue has from 1 to 1024 partitions",
            ),
            (
                self.replicas == 0 || self.replica_timeout < self.io_timeout,
                "the replica timeout must be shorter than the I/O timeout (a wait is one reply)",
            ),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, why)) => Err(QueueError::Config(why)),
            None => Ok(()),
        }
    }

    /// How long an answer kept for a retry lives (ms): longer than any
    /// retry of the call can come (the retry window, plus one attempt's
    /// timeout on each side, plus slack for clocks and scheduling).
    pub(super) fn answer_ttl_ms(&self) -> u64 {
        let window = self.retry_for + self.io_timeout * 2 + Duration::from_secs(5);
        u64::try_from(window.as_millis()).unwrap_or(u64::MAX)
    }
}

/// Whole microseconds of `d` (every duration here is checked first).
pub(super) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
