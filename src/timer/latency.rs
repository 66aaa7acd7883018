//! How late the OS wakes the driver, learned from the driver's own timed
//! sleeps: the lead by which a slack class's wake-up comes before its
//! windows close (`slack.rs`, the rule).
//!
//! Each timed sleep that ran to the instant it aimed for is one sample:
//! how long after that instant the driver was running again. Sleeps cut
//! short by an unpark or a spurious wake-up say nothing about it and are
//! not counted. The samples go into a histogram of [`BUCKETS`] log-linear
//! buckets (four to each doubling, so a bucket's upper edge is at most
//! 25 % above any sample in it), from under 1 µs to 67 ms and above. The
//! estimate is the upper edge of the bucket that holds the
//! [`QUANTILE`]: a sample at most that late, in all but the last 0.5 %.
//! Every [`DECAY`] samples the counts are halved, so the histogram
//! follows the machine as its load changes, with a memory of the last few
//! thousand sleeps, and a burst of lateness fades.
//!
//! The histogram is the driver thread's own (a local of its loop): no
//! lock, no atomics, no allocation. Recording costs an add and a scan of
//! the buckets from the top; the driver publishes the lead (`Classes`)
//! only when it moves.

use core::time::Duration;

/// Buckets: `[0, 1024)` ns, then four per doubling from `2^10` to `2^26`
/// ns (about 1 µs to 67 ms); the last also holds everything later.
pub(super) const BUCKETS: usize = 1 + 4 * 16;

/// The quantile estimated, in parts per thousand: a late wake-up misses
/// the windows that close while it is late, several timers at a time, so
/// the lead covers all but the latest 0.5 % of wake-ups.
pub(super) const QUANTILE: u32 = 995;

/// Samples after which every count is halved.
pub(super) const DECAY: u32 = 4096;

/// Added to the estimate: the driver's own work between waking and
/// handing over the timer whose window closes first (reading the clock,
/// locking the shards, collecting).
pub(super) const MARGIN: Duration = Duration::from_micros(10);

/// A decaying histogram of the driver's wake-up lateness.
#[derive(Debug, Clone)]
pub(super) struct WakeLatency {
    counts: [u32; BUCKETS],
    total: u32,
}

impl WakeLatency {
    pub(super) fn new() -> Self {
        WakeLatency {
            counts: [0; BUCKETS],
            total: 0,
        }
    }

    /// Records a timed sleep that returned `late` after the instant it
    /// aimed for.
    pub(super) fn record(&mut self, late: Duration) {
        self.counts[bucket_of(late)] += 1;
        self.total += 1;
        if self.total >= DECAY {
            self.total = 0;
            for count in &mut self.counts {
                *count /= 2;
                self.total += *count;
            }
        }
    }

    /// How late the OS wakes the driver: the [`QUANTILE`] of the samples
    /// (the upper edge of its bucket), zero before any.
    pub(super) fn estimate(&self) -> Duration {
        // Samples allowed above the estimate; none while there are few.
        let allowed = self.total * (1000 - QUANTILE) / 1000;
        let mut above = 0;
        for (bucket, &count) in self.counts.iter().enumerate().rev() {
            above += count;
            if above > allowed {
                return upper_edge(bucket);
            }
        }
        Duration::ZERO
    }

    /// The lead a slack class's wake-up needs: the estimate plus
    /// [`MARGIN`], zero before any sample (the fixed lead then stands).
    pub(super) fn lead(&self) -> Duration {
        if self.total == 0 {
            return Duration::ZERO;
        }
        self.estimate() + MARGIN
    }
}

fn bucket_of(late: Duration) -> usize {
    let nanos = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
    if nanos < 1 << 10 {
        return 0;
    }
    let doubling = nanos.ilog2(); // 10 and up
    let quarter = (nanos >> (doubling - 2)) & 3;
    (1 + 4 * (doubling as usize - 10) + quarter as usize).min(BUCKETS - 1)
}

fn upper_edge(bucket: usize) -> Duration {
    if bucket == 0 {
        return Duration::from_nanos(1 << 10);
    }
    let doubling = 10 + (bucket as u32 - 1) / 4;
    let quarter = (bucket as u64 - 1) % 4;
    Duration::from_nanos((4 + quarter + 1) << (doubling - 2))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn buckets_are_quarters_of_each_doubling() {
        assert_eq!(bucket_of(Duration::ZERO), 0);
        assert_eq!(bucket_of(Duration::from_nanos(1_023)), 0);
        assert_eq!(bucket_of(Duration::from_nanos(1_024)), 1);
        assert_eq!(bucket_of(Duration::from_nanos(1_280)), 2);
        assert_eq!(bucket_of(Duration::from_secs(5)), BUCKETS - 1);
        for nanos in (0..70_000_000u64).step_by(997) {
            let late = Duration::from_nanos(nanos);
            let bucket = bucket_of(late);
            let edge = upper_edge(bucket);
            assert!(late < edge || bucket == BUCKETS - 1, "{late:?}");
            if bucket > 0 && bucket < BUCKETS - 1 {
                assert!(late >= upper_edge(bucket - 1), "{late:?}");
                assert!(edge.as_nanos() * 4 <= late.as_nanos() * 5 + 4, "{late:?}");
            }
        }
        assert_eq!(upper_edge(BUCKETS - 1), Duration::from_nanos(1 << 26));
    }

    #[test]
    fn the_estimate_is_a_high_quantile_that_follows_the_load() {
        let mut latency = WakeLatency::new();
        assert_eq!(latency.lead(), Duration::ZERO, "nothing learned yet");
        latency.record(300 * US);
        // One sample: its own bucket, [262.144, 327.68) µs.
        assert_eq!(latency.estimate(), Duration::from_nanos(327_680));
        for _ in 0..999 {
            latency.record(50 * US);
        }
        // 50 µs is in [49.152, 57.344) µs; 0.1 % later is within 0.5 %.
        assert_eq!(latency.estimate(), Duration::from_nanos(57_344));
        assert_eq!(latency.lead(), Duration::from_nanos(57_344) + MARGIN);
        for _ in 0..3 {
            latency.record(800 * US);
        }
        assert_eq!(latency.estimate(), Duration::from_nanos(57_344), "0.4 %");
        for _ in 0..10 {
            latency.record(800 * US);
        }
        // 13 of 1,013 wake-ups were 800 µs late: more than 0.5 %.
        assert_eq!(latency.estimate(), Duration::from_nanos(917_504));
        // The load goes away: the late ones fade as the counts halve.
        for _ in 0..4 * DECAY {
            latency.record(20 * US);
        }
        assert_eq!(latency.estimate(), Duration::from_nanos(20_480));
        assert!(latency.total < DECAY);
    }
}
