//! Compaction's files: the new journal written beside the old one, synced
//! and renamed over it, under a name no other compaction uses, and the
//! leftovers of a crashed owner removed under the lock. When to compact
//! is `journal.rs`'s decision.

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::folded::Folded;
use super::format::{self, Record};
use super::lock::lock_path;

/// Writes a new journal holding only the pending jobs of `folded` (and the
/// id watermark) next to `path`, syncs it and renames it over `path`;
/// returns it open for appending, with its length.
///
/// The new file gets a name of its own (`<path>.compacting-<pid>-<n>`),
/// created only if nothing has it, so compaction never overwrites a file
/// it did not create; it is removed if anything fails. It is opened for
/// appending before the rename, so the handle that comes back is the
/// renamed file's: no reopen can fail after the journal was replaced.
pub(super) fn compact(path: &Path, folded: &Folded) -> io::Result<(File, u64)> {
    let mut bytes = Vec::from(format::header());
    format::encode(&Record::Watermark { id: folded.max_id }, &mut bytes);
    for (&id, job) in &folded.pending {
        format::encode_schedule(id, job.due, job.named(), &job.payload, &mut bytes);
    }
    let fresh = temp_path(path);
    let mut file = OpenOptions::new()
        .append(true)
        .create_new(true)
        .open(&fresh)?;
    // Locked before it is the journal, for as long as it is (the handle
    // is the appender's): a second owner through a hard link is refused
    // (`lock.rs`). Where locks fail, the path's lock file still stands.
    #[cfg(unix)]
    let _ = fs4::FileExt::try_lock(&file);
    let replaced = file
        .write_all(&bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| fs::rename(&fresh, path));
    if let Err(err) = replaced {
        let _ = fs::remove_file(&fresh);
        return Err(err);
    }
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        // The rename itself must survive a crash.
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok((file, bytes.len() as u64))
}

/// A compaction file name for `path` that no other compaction uses.
fn temp_path(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut name = path.as_os_str().to_owned();
    name.push(format!(
        "{TEMP_INFIX}{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    PathBuf::from(name)
}

const TEMP_INFIX: &str = ".compacting-";

/// Removes compaction files that a crashed owner of the journal at `path`
/// left behind. Only the lock's holder calls it, and only names of the
/// form [`temp_path`] makes are touched, unless a journal has that name
/// (its `.lock` file says so).
pub(super) fn remove_stale_temps(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut prefix = name.to_owned();
    prefix.push(TEMP_INFIX);
    let prefix = prefix.to_string_lossy().into_owned();
    for entry in entries.flatten() {
        let entry_name = entry.file_name();
        let entry_name = entry_name.to_string_lossy();
        let ours = entry_name
            .strip_prefix(prefix.as_str())
            .is_some_and(|rest| {
                rest.split_once('-').is_some_and(|(pid, n)| {
                    !pid.is_empty()
                        && !n.is_empty()
                        && pid.bytes().all(|b| b.is_ascii_digit())
                        && n.bytes().all(|b| b.is_ascii_digit())
                })
            });
        // A journal of that name has a `.lock` beside it; a temp never does.
        let journal = lock_path(&entry.path()).exists();
        if ours && !journal && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = fs::remove_file(entry.path());
        }
    }
}
