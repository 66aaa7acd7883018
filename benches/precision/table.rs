//! The rows of the precision bench: lateness and fires outside the window
//! per class of timers, the run's cost, the printed table and the smoke
//! test's checks.

use core::time::Duration;

use super::{Peer, Plan, Run};

/// How far past its window a tickwheel timer may fire in the smoke test
/// before it fails: loose, the machine is shared and noisy.
const SMOKE_MARGIN: Duration = Duration::from_millis(50);

/// `Stats::in_window` and `Stats::overshoot.count()` of a tickwheel run.
pub(crate) struct WindowStats {
    pub(crate) in_window: u64,
    pub(crate) overshoot: u64,
}

/// Lateness of one class of timers, in ns.
pub(crate) struct Lateness {
    timers: usize,
    p50: i64,
    p99: i64,
    max: i64,
    early: usize,
    /// Fires later than the class's window; `None` without windows.
    outside: Option<usize>,
}

/// Nearest-rank percentiles of `samples`, and how many are later than
/// `window` (tick + slack), if the timers have one.
fn lateness(mut samples: Vec<i64>, window: Option<Duration>) -> Lateness {
    samples.sort_unstable();
    let rank = |q: f64| samples[((samples.len() as f64 * q).ceil() as usize).max(1) - 1];
    let outside = window.map(|window| {
        let window = i64::try_from(window.as_nanos()).expect("window fits in i64 ns");
        samples.iter().filter(|&&late| late > window).count()
    });
    Lateness {
        timers: samples.len(),
        p50: rank(0.50),
        p99: rank(0.99),
        max: samples[samples.len() - 1],
        early: samples.iter().filter(|&&late| late < 0).count(),
        outside,
    }
}

fn ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// A printed row.
pub(crate) struct Row {
    round: usize,
    workload: &'static str,
    peer: &'static str,
    /// `all`, `coarse` or `precise`.
    class: &'static str,
    /// Tick + slack of the class's timers; `None` for the heap.
    window: Option<Duration>,
    lateness: Lateness,
    /// Whole-run figures; `None` on a mixed run's precise row.
    run: Option<RunCost>,
}

struct RunCost {
    timers: usize,
    cpu: Duration,
    wakeups: u64,
    span: Duration,
    stats: Option<WindowStats>,
}

/// The rows of one run: one for `uniform`, coarse and precise for `mixed`.
pub(crate) fn rows(round: usize, peer: Peer, plan: &Plan, run: Run) -> Vec<Row> {
    let cost = RunCost {
        timers: run.late.len(),
        cpu: run.cpu,
        wakeups: run.wakeups,
        span: run.span,
        stats: run.stats,
    };
    let row = |class, precise, samples, run| {
        let window = peer.window(precise);
        Row {
            round,
            workload: plan.name,
            peer: peer.name,
            class,
            window,
            lateness: lateness(samples, window),
            run,
        }
    };
    if !plan.precise.contains(&true) {
        return vec![row("all", false, run.late, Some(cost))];
    }
    let (precise, coarse): (Vec<_>, Vec<_>) = run
        .late
        .iter()
        .zip(&plan.precise)
        .partition(|(_, &precise)| precise);
    let samples = |class: Vec<(&i64, &bool)>| class.into_iter().map(|(&late, _)| late).collect();
    vec![
        row("coarse", false, samples(coarse), Some(cost)),
        row("precise", true, samples(precise), None),
    ]
}

/// Prints `table` as markdown.
pub(crate) fn print(table: &[Row]) {
    println!(
        "| round | workload | peer | timers | window (ms) | lateness p50 (ms) | p99 (ms) \
         | max (ms) | early | outside window | CPU (ms) | CPU / timer (µs) | wake-ups \
         | wake-ups / s | Stats in / over |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in table {
        let late = &row.lateness;
        let workload = if row.class == "all" {
            row.workload.to_owned()
        } else {
            format!("{}: {}", row.workload, row.class)
        };
        let window = row.window.map_or_else(
            || "—".to_owned(),
            |window| format!("{:.3}", window.as_secs_f64() * 1e3),
        );
        let outside = late.outside.map_or_else(
            || "—".to_owned(),
            |outside| {
                format!(
                    "{outside} ({:.1} %)",
                    outside as f64 * 100.0 / late.timers as f64
                )
            },
        );
        let cost = row.run.as_ref().map_or_else(
            || "— | — | — | — | —".to_owned(),
            |run| {
                let cpu_ms = run.cpu.as_secs_f64() * 1e3;
                let stats = run.stats.as_ref().map_or_else(
                    || "—".to_owned(),
                    |stats| format!("{} / {}", stats.in_window, stats.overshoot),
                );
                format!(
                    "{cpu_ms:.1} | {:.2} | {} | {:.0} | {stats}",
                    cpu_ms * 1e3 / run.timers as f64,
                    run.wakeups,
                    run.wakeups as f64 / run.span.as_secs_f64()
                )
            },
        );
        println!(
            "| {} | {workload} | {} | {} | {window} | {} | {} | {} | {} | {outside} | {cost} |",
            row.round,
            row.peer,
            late.timers,
            ms(late.p50),
            ms(late.p99),
            ms(late.max),
            late.early,
        );
    }
}

/// The smoke test's checks (every timer fired exactly once is checked by
/// each run): no early fire, and no tickwheel timer later than its window
/// plus `SMOKE_MARGIN`.
pub(crate) fn check_smoke(table: &[Row]) {
    for row in table {
        let what = format!("{} {} {}", row.workload, row.class, row.peer);
        assert_eq!(row.lateness.early, 0, "{what}: timers fired early");
        if let Some(window) = row.window {
            let limit = window + SMOKE_MARGIN;
            let max = Duration::from_nanos(row.lateness.max.unsigned_abs());
            assert!(
                max <= limit,
                "{what}: a timer fired {max:?} after its deadline, more than its window \
                 (tick + slack) + {SMOKE_MARGIN:?} = {limit:?}"
            );
        }
    }
}
