//! The errors of restart safety: why a journal could not be opened
//! ([`JournalError`], and the I/O error that names its file), and why a
//! restore stopped ([`RestoreError`], which hands back every job not
//! restored).

use alloc::format;
use alloc::vec::Vec;
use core::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::format;
use super::outcome::{Jobs, RestoreReport};
use super::{PendingJob, Snapshot};
use crate::timer::ScheduleErrorKind;

/// Why a journal could not be opened.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("tickwheel-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("not-a-journal.txt");
/// std::fs::write(&path, "hello")?;
/// let err = tickwheel::persist::DurableTimer::<u64>::open(
///     &path,
///     tickwheel::persist::SyncPolicy::Always,
///     &Default::default(),
///     |_| {},
/// )
/// .unwrap_err();
/// assert!(err.to_string().contains("not a tickwheel journal"));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum JournalError {
    /// The file exists but does not start like a journal.
    NotAJournal(PathBuf),
    /// The journal was written in another format version.
    Version {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u32,
    },
    /// Reading, writing or renaming failed.
    Io(io::Error),
    /// The timer could not be started.
    Build(crate::timer::BuildError),
    /// Another `DurableTimer`, in this process or another, has the journal
    /// open. Two owners would overwrite each other's records and hand out
    /// the same ids, so a journal has one owner at a time.
    Locked {
        /// The journal.
        path: PathBuf,
        /// The owner's process id, where the lock file names it.
        owner: Option<u32>,
    },
}

impl fmt::Display for JournalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JournalError::NotAJournal(path) => {
                write!(f, "{} is not a tickwheel journal", path.display())
            }
            JournalError::Version { path, found } => write!(
                f,
                "{} has journal format version {found}, this crate reads {:?}",
                path.display(),
                format::READS
            ),
            JournalError::Io(err) => write!(f, "journal i/o failed: {err}"),
            JournalError::Build(err) => write!(f, "could not start the timer: {err}"),
            JournalError::Locked { path, owner } => {
                write!(f, "{} is open in another DurableTimer", path.display())?;
                match owner {
                    Some(pid) if *pid == std::process::id() => f.write_str(" in this process"),
                    Some(pid) => write!(f, " (process {pid})"),
                    None => Ok(()),
                }
            }
        }
    }
}

impl core::error::Error for JournalError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            JournalError::Io(err) => Some(err),
            JournalError::Build(err) => Some(err),
            _ => None,
        }
    }
}

impl From<io::Error> for JournalError {
    fn from(err: io::Error) -> Self {
        JournalError::Io(err)
    }
}

/// An I/O error that says which file it was about.
pub(super) fn io_at(path: &Path, err: io::Error) -> JournalError {
    JournalError::Io(io::Error::new(
        err.kind(),
        format!("{}: {err}", path.display()),
    ))
}

/// Why [`Timer::restore`](crate::timer::Timer::restore) stopped. Nothing
/// is lost: the jobs restored so far are in `restored`, and the rest,
/// untouched, in `remaining`. A restore takes the jobs in due order, so
/// the ones restored are the earliest due; each list keeps the snapshot's
/// order.
///
/// ```
/// use std::time::SystemTime;
/// use tickwheel::persist::{MisfirePolicy, Snapshot};
///
/// let (timer, _fired) = tickwheel::timer::delay_queue::<u8>()?;
/// let alien = Snapshot { version: 99, taken_at: SystemTime::now(), jobs: Vec::new() };
/// let err = timer.restore(alien, &MisfirePolicy::default()).unwrap_err();
/// assert_eq!(err.to_string(), "snapshot has format version 99, this crate reads 1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Like the timer's `ScheduleError`, it is an error whatever `T` is, and
/// its `Debug` hides the values: it gives the reason, the outcomes so far
/// and how many jobs each list holds.
#[non_exhaustive]
pub struct RestoreError<T> {
    /// What went wrong.
    pub reason: RestoreFailure,
    /// What was restored before it did: an outcome per job restored, in
    /// the snapshot's order.
    pub restored: RestoreReport<T>,
    /// The jobs not restored, as they were in the snapshot, in its order.
    pub remaining: Vec<PendingJob<T>>,
}

/// The reason in a [`RestoreError`].
///
/// ```
/// use std::time::SystemTime;
/// use tickwheel::persist::{MisfirePolicy, RestoreFailure, Snapshot};
///
/// let (timer, _fired) = tickwheel::timer::delay_queue::<u8>()?;
/// let alien = Snapshot { version: 99, taken_at: SystemTime::now(), jobs: Vec::new() };
/// let err = timer.restore(alien, &MisfirePolicy::default()).unwrap_err();
/// assert_eq!(err.reason, RestoreFailure::Version { found: 99 });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RestoreFailure {
    /// The snapshot was written in another format version.
    Version {
        /// The snapshot's version.
        found: u32,
    },
    /// The timer refused a job: it is full or shut down, or a repeating
    /// job has a zero period (a snapshot made by hand; the timer never
    /// takes one).
    Schedule(ScheduleErrorKind),
}

impl<T> fmt::Display for RestoreError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            RestoreFailure::Version { found } => write!(
                f,
                "snapshot has format version {found}, this crate reads {}",
                Snapshot::<T>::VERSION
            ),
            RestoreFailure::Schedule(kind) => write!(
                f,
                "restore stopped with {} jobs left: {kind}",
                self.remaining.len()
            ),
        }
    }
}

impl<T> fmt::Debug for RestoreError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestoreError")
            .field("reason", &self.reason)
            .field("restored", &self.restored)
            .field("remaining", &Jobs(self.remaining.len()))
            .finish()
    }
}

impl<T> core::error::Error for RestoreError<T> {}
