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
//! process. The lock file holds the owner's process id, read only to name
//! the owner in a second opener's error; it is never deleted (deleting it
//! would let two openers lock two different files).

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
}

impl Drop for JournalLock {
    /// Unlocks before closing: a child process forked at this moment holds
    /// the same open file until it execs, and closing alone would leave
    /// the lock held through it.
    fn drop(&mut self) {
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
        file.set_len(0).map_err(at)?;
        file.write_all(format!("{}\n", std::process::id()).as_bytes())
            .map_err(at)?;
        Ok(JournalLock { file })
    }
}

/// `<journal>.lock`, beside the journal.
fn lock_path(journal: &Path) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}
