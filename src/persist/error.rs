//! Why a journal could not be opened ([`JournalError`]), and the I/O error
//! that names its file.

use alloc::format;
use core::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::format;

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
