//! The commands on a journal, through `DurableTimer` with the payloads as
//! raw bytes. The tool opens the journal as its one owner would (so a
//! journal a running process holds is refused with the library's lock
//! error, and the file is not touched), but on a frozen clock: to that
//! timer every job lies in the future, so opening it for a look never runs
//! a job, even one that is overdue.

use std::path::Path;
use std::time::{Instant, SystemTime};

use tickwheel::persist::{DurableTimer, MisfirePolicy, SyncPolicy};
use tickwheel::timer::Clock;

use crate::args::{Command, Listing};
use crate::output::{escape, millis, rfc3339, Out};

/// A clock that never moves, whose wall clock reads the Unix epoch: every
/// job's due time is after it, so none is missed and none falls due.
/// Due times read back through it are the journal's own (wall clock plus
/// the distance to the deadline, both frozen).
struct Frozen {
    at: Instant,
}

impl Clock for Frozen {
    fn now(&self) -> Instant {
        self.at
    }

    fn sleep_until(&self, _deadline: Option<Instant>) {
        // Nothing ever falls due: sleep until unparked (shutdown).
        std::thread::park();
    }

    fn wall_now(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH
    }
}

type Journal = DurableTimer<Vec<u8>>;

fn open(path: &Path) -> Result<Journal, String> {
    // `open` would create a journal where there is none: refuse instead.
    if !path.is_file() {
        return Err(format!("no journal at {}", path.display()));
    }
    let (journal, _recovery) = DurableTimer::open_with_clock(
        path,
        SyncPolicy::Always,
        &MisfirePolicy::default(),
        Frozen { at: Instant::now() },
        |_: Vec<u8>| {},
    )
    .map_err(|err| err.to_string())?;
    Ok(journal)
}

/// Runs `command` on the journal at `path`.
pub(crate) fn run(path: &Path, command: Command, out: &Out) -> Result<(), String> {
    let unsupported = |what: &str| Err(format!("{what} is for a Redis queue, not a journal"));
    match command {
        Command::Stats => {
            let journal = open(path)?;
            out.record(&[
                ("type", "stats".into()),
                ("pending", journal.pending().into()),
                ("journal_bytes", journal.journal_len().into()),
            ]);
            Ok(())
        }
        Command::Ls {
            what: Listing::Pending,
            limit,
            after,
        } => {
            let after = after
                .map(|id| {
                    id.parse::<u64>()
                        .map_err(|_| format!("a journal's cursor is a job id, not {id:?}"))
                })
                .transpose()?;
            let journal = open(path)?;
            let started = Instant::now();
            let jobs = journal.journaled(after, usize::from(limit));
            let elapsed = started.elapsed();
            for job in &jobs {
                out.record(&[
                    ("type", "job".into()),
                    ("key", job.key.clone().into()),
                    ("due", rfc3339(job.due).into()),
                    ("id", job.id.into()),
                    ("recurring", job.recurring.into()),
                ]);
            }
            // A short page is the last (`DurableTimer::journaled`).
            let next = (jobs.len() == usize::from(limit))
                .then(|| jobs.last().map(|job| job.id.to_string()))
                .flatten();
            out.record(&[
                ("type", "page".into()),
                ("count", jobs.len().into()),
                ("next", next.into()),
                ("elapsed_ms", millis(elapsed)),
            ]);
            Ok(())
        }
        Command::Ls { .. } => unsupported("listing due, in-flight or dead jobs"),
        Command::Show { id } => {
            let journal = open(path)?;
            let job = journal
                .keyed_job(&id)
                .ok_or_else(|| format!("no pending job under key {id:?}"))?;
            out.record(&[
                ("type", "job".into()),
                ("key", job.key.clone().into()),
                ("state", "pending".into()),
                ("due", rfc3339(job.due).into()),
                ("id", job.handle.id().into()),
            ]);
            Ok(())
        }
        Command::Cancel { id } => {
            let journal = open(path)?;
            let cancelled = journal.cancel_key(&id);
            out.record(&[
                ("type", "cancel".into()),
                ("key", id.into()),
                (
                    "outcome",
                    if cancelled.is_some() {
                        "cancelled"
                    } else {
                        "unknown"
                    }
                    .into(),
                ),
                ("payload", cancelled.as_deref().map(escape).into()),
            ]);
            Ok(())
        }
        Command::Requeue { .. } => unsupported("requeue"),
        Command::Purge { .. } => unsupported("purge"),
        Command::Watch { every, once, count } => {
            crate::journal_watch::run(path, every, if once { Some(1) } else { count }, out)
        }
        Command::Schedules => {
            let journal = open(path)?;
            let mut after: Option<String> = None;
            loop {
                let page = journal.schedules(after.as_deref(), 1000);
                for s in &page {
                    out.record(&[
                        ("type", "schedule".into()),
                        ("key", s.key.clone().into()),
                        ("timetable", s.timetable.clone().into()),
                        ("id", s.id.into()),
                        ("next", rfc3339(s.next).into()),
                    ]);
                }
                match page.last() {
                    Some(last) if page.len() == 1000 => after = Some(last.key.clone()),
                    _ => return Ok(()),
                }
            }
        }
        Command::Unschedule { key } => {
            let journal = open(path)?;
            let removed = journal.remove_schedule(&key);
            out.record(&[
                ("type", "unschedule".into()),
                ("key", key.into()),
                ("removed", removed.into()),
            ]);
            Ok(())
        }
    }
}
