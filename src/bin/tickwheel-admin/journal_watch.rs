//! `watch` on a journal: what the file holds, refreshed in place, read
//! without its lock (`persist::JournalSummary`), so it shows a journal
//! while the process that owns it runs, and never writes to it. Each
//! refresh reads the file once (a journal compacts itself to at most
//! twice its pending jobs past 1 MiB).

use core::time::Duration;
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Instant, SystemTime};

use tickwheel::persist::JournalSummary;

use crate::output::{millis, rfc3339, Out};
use crate::watch::repeat;

/// Refreshes every `every`, `count` times (for ever if `None`).
pub(crate) fn run(
    path: &Path,
    every: Duration,
    count: Option<u64>,
    out: &Out,
) -> Result<(), String> {
    let ansi = !out.json && std::io::stdout().is_terminal();
    let mut last: Option<(Instant, u64)> = None;
    repeat(every, count, |now, spark| {
        let wall = SystemTime::now();
        let summary = JournalSummary::read(path, wall).map_err(|e| e.to_string())?;
        let rate = last.and_then(|(then, pending)| {
            let secs = now.duration_since(then).as_secs_f64();
            (secs > 0.0).then(|| (summary.pending as f64 - pending as f64) / secs)
        });
        last = Some((now, summary.pending));
        let line = spark.push(now, summary.pending);
        show(&summary, wall, rate, &line, ansi, out);
        Ok(())
    })
}

fn show(
    s: &JournalSummary,
    wall: SystemTime,
    rate: Option<f64>,
    sparkline: &str,
    ansi: bool,
    out: &Out,
) {
    let overdue = s
        .oldest_due
        .map(|t| wall.duration_since(t).unwrap_or(Duration::ZERO));
    // A torn tail is a record being written: not damage to report.
    let damaged = s.damage.iter().filter(|d| !d.at_end).count();
    if out.json {
        out.record(&[
            ("type", "watch".into()),
            ("pending", s.pending.into()),
            ("pending_per_s", rate.into()),
            ("keyed", s.keyed.into()),
            ("schedulers", s.schedulers.into()),
            ("due", s.due.into()),
            ("overdue_max_ms", overdue.map(millis).into()),
            ("next_due", s.next_due.map(rfc3339).into()),
            ("journal_bytes", s.bytes.into()),
            ("damaged", damaged.into()),
            ("sparkline", sparkline.into()),
        ]);
        return;
    }
    let mut text = String::new();
    if ansi {
        // Home and clear, so each refresh replaces the last.
        text.push_str("\x1b[H\x1b[2J");
    }
    text.push_str(&format!(
        "pending {} ({})   keyed {}   schedulers {}\n",
        s.pending,
        rate.map_or("-".to_owned(), |r| format!("{r:+.1}/s")),
        s.keyed,
        s.schedulers
    ));
    text.push_str(&format!(
        "due, not done {}   most overdue {}\n",
        s.due,
        overdue.map_or("-".to_owned(), |d| format!(
            "{:.1} ms",
            d.as_secs_f64() * 1e3
        ))
    ));
    text.push_str(&format!(
        "next due {}\njournal {} bytes, {} damaged stretches\npending, last minute {sparkline}\n",
        s.next_due.map_or("-".to_owned(), rfc3339),
        s.bytes,
        damaged
    ));
    crate::output::write_out(&text);
}
