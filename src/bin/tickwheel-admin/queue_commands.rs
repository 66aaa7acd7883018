//! The commands on a Redis queue. Every listing is one page of the
//! library's paged calls (O(log n + page) in Redis), never a scan; bulk
//! changes (`requeue --all`, `purge dead`) go a bounded batch per call.

use std::collections::HashSet;
use std::time::{Instant, SystemTime};

use serde_json::Value;
use tickwheel::redis::{Cancelled, Cursor, JobInfo, Listed, Page, Queue, QueueError, MAX_PAGE};

use crate::args::{Command, Listing, Purgeable};
use crate::output::{escape, millis, preview, rfc3339, Out};
use crate::watch;

/// Runs `command` on `queue`.
pub(crate) fn run(queue: &Queue, command: Command, out: &Out) -> Result<(), String> {
    match command {
        Command::Stats => stats(queue, out),
        Command::Ls { what, limit, after } => ls(queue, what, usize::from(limit), after, out),
        Command::Show { id } => show(queue, &id, out),
        Command::Cancel { id } => cancel(queue, &id, out),
        Command::Requeue { id: Some(id), .. } => requeue_one(queue, &id, out),
        Command::Requeue { id: None, .. } => requeue_all(queue, out),
        Command::Purge {
            what: Purgeable::Dead,
        } => purge_dead(queue, out),
        Command::Schedules => schedules(queue, out),
        Command::Unschedule { key } => unschedule(queue, &key, out),
        Command::Watch { every, once, count } => {
            watch::run(queue, every, if once { Some(1) } else { count }, out)
        }
    }
}

fn failed(err: QueueError) -> String {
    err.to_string()
}

fn schedules(queue: &Queue, out: &Out) -> Result<(), String> {
    for s in queue.schedules().map_err(failed)? {
        out.record(&[
            ("type", "schedule".into()),
            ("key", s.key.into()),
            ("timetable", s.timetable.into()),
            ("version", s.version.into()),
            ("made_until", rfc3339(s.made_until).into()),
        ]);
    }
    Ok(())
}

fn unschedule(queue: &Queue, key: &str, out: &Out) -> Result<(), String> {
    let removed = queue.remove_schedule(key).map_err(failed)?;
    out.record(&[
        ("type", "unschedule".into()),
        ("key", key.into()),
        ("removed", removed.into()),
    ]);
    Ok(())
}

/// When the earliest waiting job is due, as far as [`next_due`] read.
#[derive(Clone, Copy, Debug)]
pub(crate) enum NextDue {
    At(SystemTime),
    /// No job waits.
    Nothing,
    /// More jobs in flight lie ahead of the waiting ones than it reads (it
    /// once said nothing, as if none waited).
    Unknown,
}

impl NextDue {
    /// For `--json` (and text `key=value`): the time, null, or "unknown".
    pub(crate) fn value(self) -> Value {
        match self {
            NextDue::At(t) => rfc3339(t).into(),
            NextDue::Nothing => Value::Null,
            NextDue::Unknown => "unknown".into(),
        }
    }

    /// For `watch`'s screen.
    pub(crate) fn text(self) -> String {
        match self {
            NextDue::At(t) => rfc3339(t),
            NextDue::Nothing => "-".to_owned(),
            NextDue::Unknown => format!("unknown (over {} jobs in flight ahead)", PAGES * MAX_PAGE),
        }
    }
}

/// Most pages without a waiting job `next_due` reads.
const PAGES: usize = 100;

/// The earliest waiting job, or `known` (a due time already seen) if none
/// is earlier. The pending listing goes partition after partition, each
/// in due order, so its first job is only its first partition's earliest:
/// this reads on, each page bounded below the earliest found so far, so
/// a partition's later jobs end its part of the listing at once. Pages
/// holding only jobs in flight (which share the order) count towards
/// [`PAGES`]; a page with a waiting job makes the bound earlier.
pub(crate) fn next_due(queue: &Queue, known: Option<SystemTime>) -> Result<NextDue, QueueError> {
    let mut best = known;
    let mut after: Option<Cursor> = None;
    let mut idle = 0;
    loop {
        let page = match best {
            Some(best) => queue.pending(..best, MAX_PAGE, after.as_ref())?,
            None => queue.pending(.., MAX_PAGE, after.as_ref())?,
        };
        // A page may span partitions: its first job need not be earliest.
        match page.jobs.iter().map(|job| job.due).min() {
            Some(due) => best = Some(due),
            None => idle += 1,
        }
        match page.next {
            Some(next) if idle < PAGES => after = Some(next),
            Some(_) => return Ok(NextDue::Unknown),
            None => return Ok(best.map_or(NextDue::Nothing, NextDue::At)),
        }
    }
}

fn stats(queue: &Queue, out: &Out) -> Result<(), String> {
    let (live, dead) = queue.len().map_err(failed)?;
    let next = next_due(queue, None).map_err(failed)?;
    out.record(&[
        ("type", "stats".into()),
        ("live", live.into()),
        ("dead", dead.into()),
        ("next_due", next.value()),
    ]);
    Ok(())
}

fn job_fields(job: &Listed) -> Vec<(&'static str, Value)> {
    vec![
        ("type", "job".into()),
        ("id", job.id.clone().into()),
        ("due", rfc3339(job.due).into()),
        ("at", rfc3339(job.at).into()),
        ("attempts", job.attempts.into()),
        ("size", job.payload.len().into()),
        ("preview", preview(&job.payload).into()),
    ]
}

fn ls(
    queue: &Queue,
    what: Listing,
    limit: usize,
    after: Option<String>,
    out: &Out,
) -> Result<(), String> {
    let after: Option<Cursor> = after.map(|text| text.parse().map_err(failed)).transpose()?;
    let after = after.as_ref();
    let limit = limit.min(MAX_PAGE);
    let started = Instant::now();
    let page: Page = match what {
        Listing::Pending => queue.pending(.., limit, after),
        Listing::Due => queue.pending(..=SystemTime::now(), limit, after),
        Listing::Inflight => queue.in_flight(limit, after),
        Listing::Dead => queue.dead(limit, after),
    }
    .map_err(failed)?;
    let elapsed = started.elapsed();
    for job in &page.jobs {
        out.record(&job_fields(job));
    }
    out.record(&[
        ("type", "page".into()),
        ("count", page.jobs.len().into()),
        ("next", page.next.as_ref().map(ToString::to_string).into()),
        ("elapsed_ms", millis(elapsed)),
    ]);
    Ok(())
}

fn show_fields(job: &JobInfo) -> Vec<(&'static str, Value)> {
    vec![
        ("type", "job".into()),
        ("id", job.id.clone().into()),
        ("state", job.state.to_string().into()),
        ("due", rfc3339(job.due).into()),
        ("at", job.at.map(rfc3339).into()),
        ("attempts", job.attempts.into()),
        ("fence", job.fence.into()),
        ("size", job.payload.len().into()),
        ("payload", escape(&job.payload).into()),
    ]
}

fn show(queue: &Queue, id: &str, out: &Out) -> Result<(), String> {
    match queue.job(id).map_err(failed)? {
        Some(job) => {
            out.record(&show_fields(&job));
            Ok(())
        }
        None => Err(format!(
            "no job {id:?} (never scheduled, or ended and forgotten after the retention)"
        )),
    }
}

fn cancel(queue: &Queue, id: &str, out: &Out) -> Result<(), String> {
    let (outcome, payload) = match queue.cancel(id).map_err(failed)? {
        Cancelled::Cancelled(payload) => ("cancelled", Some(escape(&payload))),
        Cancelled::InFlight => ("in flight", None),
        Cancelled::Delivered => ("delivered", None),
        Cancelled::Ended => ("ended", None),
        Cancelled::Unknown => ("unknown", None),
        _ => ("not cancelled", None),
    };
    out.record(&[
        ("type", "cancel".into()),
        ("id", id.into()),
        ("outcome", outcome.into()),
        ("payload", payload.into()),
    ]);
    Ok(())
}

fn requeue_one(queue: &Queue, id: &str, out: &Out) -> Result<(), String> {
    let requeued = queue.requeue(id).map_err(failed)?;
    out.record(&[
        ("type", "requeue".into()),
        ("id", id.into()),
        ("requeued", requeued.into()),
    ]);
    Ok(())
}

/// The dead letters there at the start: their ids are read first, a page
/// at a time, then each is requeued. Going a page at a time and
/// requeuing as it read never ended while the requeued jobs kept failing:
/// each went to the end of the dead set, ahead of the cursor, to be read
/// and requeued again. Holds the ids (tens of bytes each) while it runs.
fn requeue_all(queue: &Queue, out: &Out) -> Result<(), String> {
    let mut after: Option<Cursor> = None;
    let mut ids = Vec::new();
    let mut seen = HashSet::new();
    loop {
        let page = queue.dead(MAX_PAGE, after.as_ref()).map_err(failed)?;
        // A job requeued by another client may die again and be read twice.
        ids.extend(
            page.jobs
                .into_iter()
                .map(|job| job.id)
                .filter(|id| seen.insert(id.clone())),
        );
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let mut ids = ids.iter();
    let done = tally(|| match ids.next() {
        Some(id) => queue.requeue(id).map(|requeued| Some(u64::from(requeued))),
        None => Ok(None),
    });
    report(out, "requeue", "requeued", done)
}

fn purge_dead(queue: &Queue, out: &Out) -> Result<(), String> {
    let done = tally(|| match queue.purge_dead(MAX_PAGE)? {
        0 => Ok(None),
        n => Ok(Some(n as u64)),
    });
    report(out, "purge", "purged", done)
}

/// Sums what each call of `step` did until it answers `None`. A failure
/// keeps the sum so far: the calls before it changed the queue.
fn tally(
    mut step: impl FnMut() -> Result<Option<u64>, QueueError>,
) -> (u64, Result<(), QueueError>) {
    let mut sum = 0u64;
    loop {
        match step() {
            Ok(Some(n)) => sum += n,
            Ok(None) => return (sum, Ok(())),
            Err(err) => return (sum, Err(err)),
        }
    }
}

/// Prints what a bulk change did. When it stopped part-way, the record
/// still says how much it did (and `"stopped"` why), so an operator knows
/// what to re-run: the error alone once hid the count.
fn report(
    out: &Out,
    kind: &str,
    field: &str,
    (sum, done): (u64, Result<(), QueueError>),
) -> Result<(), String> {
    match done {
        Ok(()) => {
            out.record(&[("type", kind.into()), (field, sum.into())]);
            Ok(())
        }
        Err(err) => {
            let err = failed(err);
            out.record(&[
                ("type", kind.into()),
                (field, sum.into()),
                ("stopped", err.clone().into()),
            ]);
            Err(format!("{kind} stopped after {sum} {field}: {err}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bulk_change_that_fails_keeps_the_count_of_what_it_did() {
        let mut calls = 0;
        let (sum, done) = tally(|| {
            calls += 1;
            match calls {
                1 | 2 => Ok(Some(1000)),
                _ => Err(QueueError::Unavailable("down".into())),
            }
        });
        assert_eq!(sum, 2000);
        assert!(matches!(done, Err(QueueError::Unavailable(_))));
        let (sum, done) = tally({
            let mut left = vec![Some(3), Some(0), Some(4), None];
            move || Ok(left.remove(0))
        });
        assert_eq!((sum, done.is_ok()), (7, true));
    }
}
