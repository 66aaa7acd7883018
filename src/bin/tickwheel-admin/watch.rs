//! `watch`: the queue's counts refreshed in place, with what this process
//! can see of lateness (how overdue the due jobs still waiting are, from
//! the head of the listing) and a sparkline of the live count over the
//! last minute. Each refresh costs the counts (a pipeline per partition),
//! one page of 100, and the search for the next due time, bounded by that
//! page's earliest (see `next_due`).

use alloc::collections::VecDeque;
use core::time::Duration;
use std::io::IsTerminal;
use std::time::{Instant, SystemTime};

use serde_json::Value;
use tickwheel::redis::Queue;

use crate::output::{millis, Out};
use crate::queue_commands::{next_due, NextDue};

/// How far back the sparkline goes.
const HISTORY: Duration = Duration::from_secs(60);
/// Due jobs sampled from the head of the listing for lateness.
const SAMPLE: usize = 100;
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// One refresh's numbers.
struct Frame {
    live: u64,
    dead: u64,
    /// Per second, since the last refresh (`None` on the first).
    live_rate: Option<f64>,
    dead_rate: Option<f64>,
    /// How late the sampled due-but-waiting jobs are, sorted.
    overdue: Vec<Duration>,
    /// How late the most overdue waiting job is, in every partition.
    most_overdue: Option<Duration>,
    /// More due jobs than the sample holds.
    more_due: bool,
    next_due: NextDue,
}

/// Refreshes every `every`, `count` times (for ever if `None`).
pub(crate) fn run(
    queue: &Queue,
    every: Duration,
    count: Option<u64>,
    out: &Out,
) -> Result<(), String> {
    let ansi = !out.json && std::io::stdout().is_terminal();
    let mut last: Option<(Instant, u64, u64)> = None;
    repeat(every, count, |now, spark| {
        let frame = read(queue, now, last).map_err(|e| e.to_string())?;
        last = Some((now, frame.live, frame.dead));
        let line = spark.push(now, frame.live);
        show(&frame, &line, ansi, out);
        Ok(())
    })
}

/// Calls `step` every `every`, `count` times (for ever if `None`), with
/// the refresh's instant and the sparkline's history.
pub(crate) fn repeat(
    every: Duration,
    count: Option<u64>,
    mut step: impl FnMut(Instant, &mut Spark) -> Result<(), String>,
) -> Result<(), String> {
    let mut spark = Spark(VecDeque::new());
    let mut shown = 0u64;
    loop {
        let now = Instant::now();
        step(now, &mut spark)?;
        shown += 1;
        if count.is_some_and(|count| shown >= count) {
            return Ok(());
        }
        std::thread::sleep(every.saturating_sub(now.elapsed()));
    }
}

/// A count over the last [`HISTORY`], drawn as a sparkline.
pub(crate) struct Spark(VecDeque<(Instant, u64)>);

impl Spark {
    /// Adds `n` at `now`, forgets what is older than the history, and
    /// draws the rest.
    pub(crate) fn push(&mut self, now: Instant, n: u64) -> String {
        self.0.push_back((now, n));
        while self
            .0
            .front()
            .is_some_and(|&(t, _)| now.duration_since(t) > HISTORY)
        {
            self.0.pop_front();
        }
        sparkline(self.0.iter().map(|&(_, n)| n))
    }
}

fn read(
    queue: &Queue,
    now: Instant,
    last: Option<(Instant, u64, u64)>,
) -> Result<Frame, tickwheel::redis::QueueError> {
    let (live, dead) = queue.len()?;
    let wall = SystemTime::now();
    let page = queue.pending(..=wall, SAMPLE, None)?;
    let mut overdue: Vec<Duration> = page
        .jobs
        .iter()
        .map(|job| wall.duration_since(job.due).unwrap_or(Duration::ZERO))
        .collect();
    overdue.sort();
    let (live_rate, dead_rate) = match last {
        Some((then, l, d)) => {
            let secs = now.duration_since(then).as_secs_f64();
            let per_second = |a: u64, b: u64| (secs > 0.0).then(|| (a as f64 - b as f64) / secs);
            (per_second(live, l), per_second(dead, d))
        }
        None => (None, None),
    };
    // The sample's earliest bounds the search: only earlier jobs, in
    // partitions the sample did not reach, are read.
    let next_due = next_due(queue, page.jobs.iter().map(|job| job.due).min())?;
    // The sample is the head of the listing, partition after partition:
    // the most overdue job of a later partition may lie past it (`max`
    // once showed partition 0's), but it is the earliest due of all.
    let earliest = match next_due {
        NextDue::At(due) => wall.duration_since(due).ok(),
        NextDue::Nothing | NextDue::Unknown => None,
    };
    Ok(Frame {
        live,
        dead,
        live_rate,
        dead_rate,
        more_due: page.next.is_some() && overdue.len() == SAMPLE,
        next_due,
        most_overdue: overdue.last().copied().max(earliest),
        overdue,
    })
}

/// The `q`-quantile of sorted `values` (nearest rank).
fn quantile(values: &[Duration], q: f64) -> Option<Duration> {
    if values.is_empty() {
        return None;
    }
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    Some(values[rank - 1])
}

/// One bar per value, scaled from the smallest to the largest.
fn sparkline(values: impl Iterator<Item = u64> + Clone) -> String {
    let (lo, hi) = values
        .clone()
        .fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
    values
        .map(|v| {
            let span = hi.saturating_sub(lo).max(1);
            BARS[((v - lo) * (BARS.len() as u64 - 1) / span) as usize]
        })
        .collect()
}

fn show(frame: &Frame, sparkline: &str, ansi: bool, out: &Out) {
    let p50 = quantile(&frame.overdue, 0.5);
    let p99 = quantile(&frame.overdue, 0.99);
    let max = frame.most_overdue;
    if out.json {
        out.record(&[
            ("type", "watch".into()),
            ("live", frame.live.into()),
            ("dead", frame.dead.into()),
            ("live_per_s", frame.live_rate.into()),
            ("dead_per_s", frame.dead_rate.into()),
            ("due_waiting", frame.overdue.len().into()),
            ("due_waiting_more", frame.more_due.into()),
            ("overdue_p50_ms", p50.map(millis).unwrap_or(Value::Null)),
            ("overdue_p99_ms", p99.map(millis).unwrap_or(Value::Null)),
            ("overdue_max_ms", max.map(millis).unwrap_or(Value::Null)),
            ("next_due", frame.next_due.value()),
            ("sparkline", sparkline.into()),
        ]);
        return;
    }
    let ms = |d: Option<Duration>| {
        d.map_or("-".to_owned(), |d| {
            format!("{:.1} ms", d.as_secs_f64() * 1e3)
        })
    };
    let rate = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{r:+.1}/s"));
    let mut text = String::new();
    if ansi {
        // Home and clear, so each refresh replaces the last.
        text.push_str("\x1b[H\x1b[2J");
    }
    text.push_str(&format!(
        "live {} ({})   dead {} ({})\n",
        frame.live,
        rate(frame.live_rate),
        frame.dead,
        rate(frame.dead_rate)
    ));
    text.push_str(&format!(
        "due, waiting {}{}   overdue p50 {}  p99 {}  max {}\n",
        frame.overdue.len(),
        if frame.more_due { "+" } else { "" },
        ms(p50),
        ms(p99),
        ms(max)
    ));
    text.push_str(&format!(
        "next due {}\nlive, last minute {sparkline}\n",
        frame.next_due.text()
    ));
    crate::output::write_out(&text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparklines_scale_between_the_extremes() {
        assert_eq!(sparkline([0, 7, 14].into_iter()), "▁▄█");
        assert_eq!(sparkline([5, 5].into_iter()), "▁▁");
        assert_eq!(sparkline([].into_iter()), "");
    }

    #[test]
    fn quantiles_take_the_nearest_rank() {
        let ms: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile(&ms, 0.5), Some(Duration::from_millis(50)));
        assert_eq!(quantile(&ms, 0.99), Some(Duration::from_millis(99)));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
