//! [`JournalSummary`]: what a journal file holds, read without taking it
//! from its owner.

use alloc::vec::Vec;
use std::io;
use std::path::Path;
use std::time::SystemTime;

use super::decode::Damage;
use super::error::{io_at, JournalError};
use super::handle::Found;
use super::replay::{inspect, replay};

/// What a journal file holds, read without its lock and without writing a
/// byte: safe beside the process that owns it, for a live view
/// (`tickwheel-admin --journal PATH watch`) or a health check. A record
/// being appended as it is read shows as a torn tail (a [`Damage`] with
/// `at_end`), and a compaction that replaces the file as it is read leaves
/// the reader with the whole old file.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("tickwheel-summary-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// use std::time::{Duration, SystemTime};
/// use tickwheel::persist::{DurableTimer, JournalSummary, SyncPolicy};
///
/// let path = dir.join("orders.journal");
/// let (orders, _) = DurableTimer::<u64>::open(&path, SyncPolicy::Always, &Default::default(), |_| {})?;
/// orders.schedule_keyed("order 1017", Duration::from_secs(900), 1017)?;
/// orders.schedule(Duration::from_secs(60), 1018)?;
/// // Read while `orders` holds the journal.
/// let summary = JournalSummary::read(&path, SystemTime::now())?;
/// assert_eq!((summary.pending, summary.keyed, summary.due), (2, 1, 0));
/// assert!(summary.next_due.is_some());
/// # drop(orders); std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JournalSummary {
    /// Pending jobs: one-shot jobs, keyed or not, and job schedulers.
    pub pending: u64,
    /// Of them, keyed jobs ([`DurableTimer::schedule_keyed`](super::DurableTimer::schedule_keyed)).
    pub keyed: u64,
    /// Of them, job schedulers ([`DurableTimer::upsert_schedule`](super::DurableTimer::upsert_schedule)).
    pub schedulers: u64,
    /// Pending jobs due at `now` or before: running or about to while the
    /// owner runs; missed, if it is down.
    pub due: u64,
    /// The earliest due time among those.
    pub oldest_due: Option<SystemTime>,
    /// The earliest due time after `now`.
    pub next_due: Option<SystemTime>,
    /// The file's size in bytes.
    pub bytes: u64,
    /// Stretches that did not decode (a torn tail while the owner
    /// writes is `at_end`).
    pub damage: Vec<Damage>,
}

impl JournalSummary {
    /// Reads the journal at `path`, with due times judged at `now`.
    ///
    /// # Errors
    ///
    /// [`JournalError`] if nothing is at `path`, or it is not a journal
    /// (or one of another format version), or it cannot be read. An empty
    /// file reads as a journal with nothing in it, as `open` takes it (a
    /// journal whose creation was cut short).
    ///
    /// ```
    /// let missing = tickwheel::persist::JournalSummary::read("/nonexistent/j", std::time::SystemTime::now());
    /// assert!(missing.is_err());
    /// ```
    pub fn read(path: impl AsRef<Path>, now: SystemTime) -> Result<JournalSummary, JournalError> {
        let path = path.as_ref();
        if inspect(path)? == Found::Nothing {
            let err = io::Error::new(io::ErrorKind::NotFound, "no journal here");
            return Err(io_at(path, err));
        }
        let replayed = replay(path)?;
        let mut summary = JournalSummary {
            pending: 0,
            keyed: 0,
            schedulers: 0,
            due: 0,
            oldest_due: None,
            next_due: None,
            bytes: std::fs::metadata(path).map_or(0, |meta| meta.len()),
            damage: replayed.damage,
        };
        for job in replayed.folded.pending.values() {
            summary.pending += 1;
            match (&job.key, &job.timetable) {
                (Some(_), Some(_)) => summary.schedulers += 1,
                (Some(_), None) => summary.keyed += 1,
                _ => {}
            }
            if job.due <= now {
                summary.due += 1;
                summary.oldest_due = Some(summary.oldest_due.map_or(job.due, |t| t.min(job.due)));
            } else {
                summary.next_due = Some(summary.next_due.map_or(job.due, |t| t.min(job.due)));
            }
        }
        Ok(summary)
    }
}
