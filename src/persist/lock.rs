//! One owner per journal: an exclusive lock on `<journal>.lock`, held for
//! the timer's life.
//!
//! The lock is the operating system's (`flock` on Unix, `LockFileEx` on
//! Windows, through `fs4`), so it goes with its owner however the owner
//! ends: a SIGKILLed process leaves no stale lock. It is taken on a file
//! beside the journal, never on the journal itself, because compaction
//! renames a new file over the journal and a lock on the old file would no
//! longer guard the path. Locks belong to an open file, not a process, so
//! a second `open` in the same process is refused like one in another
//! process.
//!
//! The lock file holds the owner's process id, read only to name the owner
//! in a second opener's error. It is never deleted (deleting it would let
//! two openers lock two different files), and a file of that name that
//! holds anything else is somebody's own: `open` refuses it rather than
//! overwrite it. A journal opened through a symbolic link is the link's
//! target ([`journal_path`]), so the lock file and compaction's rename
//! name one file whichever path was given. A hard link has no target to
//! follow, so on Unix the journal file itself is locked as well: the one
//! found at open, and each one compaction writes.

use alloc::borrow::ToOwned;
use alloc::format;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::error::{io_at, JournalError};

/// An exclusive lock on a journal, released when dropped.
#[derive(Debug)]
pub(super) struct JournalLock {
    file: File,
    /// The journal file found at open, locked too (Unix): a hard link to
    /// it has a lock file of its own name, so only a lock on the file
    /// itself refuses a second owner through the link. Compaction locks
    /// each file it writes (`compaction.rs`) for the same reason.
    journal: Option<File>,
}

impl Drop for JournalLock {
    /// Unlocks before closing: a child process forked at this moment holds
    /// the same open file until it execs, and closing alone would leave
    /// the lock held through it.
    fn drop(&mut self) {
        if let Some(journal) = &self.journal {
            let _ = fs4::FileExt::unlock(journal);
        }
        let _ = fs4::FileExt::unlock(&self.file);
    }
}

impl JournalLock {
    /// Locks the journal at `journal`, or says who holds it.
    pub(super) fn acquire(journal: &Path) -> Result<JournalLock, JournalError> {
        let path = lock_path(journal);
        let at = |err| io_at(&path, err);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(at)?;
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => {}
            Err(fs4::TryLockError::WouldBlock) => {
                let mut text = alloc::string::String::new();
                let owner = file
                    .read_to_string(&mut text)
                    .ok()
                    .and_then(|_| text.trim().parse().ok());
                return Err(JournalError::Locked {
                    path: journal.to_path_buf(),
                    owner,
                });
            }
            Err(fs4::TryLockError::Error(err)) => return Err(at(err)),
        }
        // Ours holds a process id or nothing (a crash while creating it);
        // anything else is somebody's file, not to be overwritten.
        let mut text = alloc::vec::Vec::new();
        file.read_to_end(&mut text).map_err(at)?;
        if text.len() > 32 || !text.iter().all(|b| b.is_ascii_digit() || *b == b'\n') {
            let err = std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "exists and is not a journal's lock file; move it or open another path",
            );
            return Err(at(err));
        }
        file.set_len(0).map_err(at)?;
        std::io::Seek::rewind(&mut file).map_err(at)?;
        file.write_all(format!("{}\n", std::process::id()).as_bytes())
            .map_err(at)?;
        let journal_file = lock_journal_file(journal)?;
        Ok(JournalLock {
            file,
            journal: journal_file,
        })
    }
}

/// Locks the journal file itself, if there is one (a regular file: a
/// FIFO or device would block an open, and is refused later anyway), or
/// says it is taken: through a hard link, by another owner.
#[cfg(unix)]
fn lock_journal_file(journal: &Path) -> Result<Option<File>, JournalError> {
    if !std::fs::symlink_metadata(journal).is_ok_and(|meta| meta.is_file()) {
        return Ok(None);
    }
    let Ok(file) = File::open(journal) else {
        return Ok(None); // the replay says why
    };
    match fs4::FileExt::try_lock(&file) {
        Ok(()) => Ok(Some(file)),
        Err(fs4::TryLockError::WouldBlock) => Err(JournalError::Locked {
            path: journal.to_path_buf(),
            owner: None,
        }),
        Err(fs4::TryLockError::Error(_)) => Ok(None), // no locks here: the path's lock stands
    }
}

/// Windows locks are mandatory: one on the journal would stop its own
/// appends. The lock file alone guards it there.
#[cfg(not(unix))]
fn lock_journal_file(_journal: &Path) -> Result<Option<File>, JournalError> {
    Ok(None)
}

/// The file a journal path names: `path` with its symbolic links followed
/// (a dangling link names the file it would create). Without this, `j` and
/// a link to it would lock two different files, and compaction would
/// replace the link rather than the journal.
pub(super) fn journal_path(path: &Path) -> Result<PathBuf, JournalError> {
    let mut file = path.to_path_buf();
    // Linux's own limit on links followed in one lookup.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&file) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&file).map_err(|err| io_at(&file, err))?;
                file = match file.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(file),
        }
    }
    let err = std::io::Error::new(std::io::ErrorKind::InvalidInput, "too many symbolic links");
    Err(io_at(path, err))
}

/// `<journal>.lock`, beside the journal.
pub(super) fn lock_path(journal: &Path) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}
