//! Retention on a schedule of its own: every process that holds a queue
//! forgets, in bounded steps, the jobs that ended more than the retention
//! ago, so ended ids never pile up, whether or not anything is claimed.
//!
//! The trimmer runs `trim.lua` (at most [`TRIM_LIMIT`] ids a call, again
//! at once while calls come back full), then sleeps until the oldest id
//! left is due to go, but at least [`min_gap`] and at most [`MAX_GAP`]. A
//! job this process ends wakes it if it slept with nothing to wait for.
//! An id ended by a live process is therefore forgotten between the
//! retention and the retention plus one gap after it ended; one ended by a
//! process that has since gone, within [`MAX_GAP`] more, by whichever
//! process sweeps first.

use core::time::Duration;

use super::counters::bump;
use super::link::Io;
use super::lua::lua;
use super::ops::{array, int};
use super::options::micros;

lua!(TRIM, "trim.lua");

/// The most ids one trim forgets.
pub(super) const TRIM_LIMIT: usize = 1000;
/// The longest a trimmer sleeps: it bounds how long ids ended by a
/// process that has gone outlive the retention. An idle sweep costs two
/// commands.
pub(super) const MAX_GAP: Duration = Duration::from_secs(300);

/// The shortest sleep between trims: an eighth of the retention, from
/// 10 ms to 10 s, so a steady stream of ended jobs costs a trim per gap,
/// not one per job.
pub(super) fn min_gap(retention: Duration) -> Duration {
    (retention / 8).clamp(Duration::from_millis(10), Duration::from_secs(10))
}

/// Trims partition `part`'s ended ids (one trimmer per partition).
pub(super) async fn trimmer(io: Io, part: usize) {
    let ctx = &io.ctx;
    let retention = ctx.options.retention;
    let gap = min_gap(retention);
    loop {
        let mut cmd = TRIM.command(&ctx.parts().get(part).fixed);
        cmd.arg(micros(retention)).arg(TRIM_LIMIT);
        let sleep = match io.script(&TRIM, &cmd).await.and_then(array) {
            Ok(reply) => {
                let trimmed = reply.first().and_then(int).unwrap_or(0);
                let oldest = reply.get(1).and_then(int).unwrap_or(-1);
                let now = reply.get(2).and_then(int).unwrap_or(0);
                bump(&ctx.counters.trimmed, trimmed.max(0) as u64);
                if trimmed as usize >= TRIM_LIMIT {
                    continue;
                }
                if oldest < 0 {
                    None
                } else {
                    let left = oldest
                        .saturating_add(micros(retention) as i64)
                        .saturating_sub(now);
                    Some(Duration::from_micros(left.max(0) as u64).clamp(gap, MAX_GAP))
                }
            }
            Err(_) => Some(gap.max(Duration::from_millis(500))),
        };
        match sleep {
            Some(sleep) => tokio::time::sleep(sleep).await,
            None => {
                // Nothing ended: wait for this process to end a job (then
                // its id is due to go a retention later), or the longest gap.
                let woken = tokio::time::timeout(
                    MAX_GAP,
                    ctx.trim_wake
                        .get()
                        .map(|w| &w[part])
                        .expect("made with the partitions")
                        .notified(),
                )
                .await;
                if woken.is_ok() {
                    tokio::time::sleep(retention.clamp(gap, MAX_GAP)).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_follows_the_retention_within_bounds() {
        assert_eq!(
            min_gap(Duration::from_millis(500)),
            Duration::from_micros(62_500)
        );
        assert_eq!(min_gap(Duration::ZERO), Duration::from_millis(10));
        assert_eq!(
            min_gap(Duration::from_secs(86_400)),
            Duration::from_secs(10)
        );
    }
}
