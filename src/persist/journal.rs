//! The journal file: the sync policy, opening errors, appending records
//! under one lock, the executor that writes `done` after each run, the
//! background flusher, replaying a file into the jobs
//! it holds, and compacting it (write, fsync, rename, fsync the directory).
//! `durable.rs` decides what is written when; `format.rs` how.

use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use core::time::Duration;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Instant, SystemTime};

use super::format::{self, Damage, Record};
use crate::timer::{Executor, Expired, Rejected};

/// When the journal is flushed to stable storage (`fsync`).
///
/// ```
/// use std::time::Duration;
/// use tickwheel::persist::SyncPolicy;
///
/// let group_commit = SyncPolicy::Every(Duration::from_millis(10));
/// # let _ = group_commit;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SyncPolicy {
    /// After every record, before the call that wrote it returns.
    Always,
    /// At most this long after a record is written, by a background thread.
    Every(Duration),
    /// Never explicitly: the operating system writes back when it likes.
    Never,
}

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
}

impl fmt::Display for JournalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JournalError::NotAJournal(path) => {
                write!(f, "{} is not a tickwheel journal", path.display())
            }
            JournalError::Version { path, found } => write!(
                f,
                "{} has journal format version {found}, this crate reads {}",
                path.display(),
                format::VERSION
            ),
            JournalError::Io(err) => write!(f, "journal i/o failed: {err}"),
            JournalError::Build(err) => write!(f, "could not start the timer: {err}"),
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

/// The open journal file and its sync state.
pub(super) struct Log {
    pub(super) file: Mutex<File>,
    pub(super) sync: SyncPolicy,
    /// Written since the last sync (for `SyncPolicy::Every`).
    pub(super) dirty: AtomicBool,
    /// Records that could not be written (disk full, ...) from the
    /// driver thread, where nobody can be told.
    pub(super) write_errors: AtomicU64,
    pub(super) stop: AtomicBool,
}

impl Log {
    pub(super) fn lock(&self) -> MutexGuard<'_, File> {
        self.file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Appends one record and syncs as the policy says.
    pub(super) fn append(&self, record: &Record) -> io::Result<()> {
        let mut bytes = Vec::with_capacity(64);
        format::encode(record, &mut bytes);
        let mut file = self.lock();
        file.write_all(&bytes)?;
        match self.sync {
            SyncPolicy::Always => file.sync_data()?,
            SyncPolicy::Every(_) => self.dirty.store(true, Ordering::Release),
            SyncPolicy::Never => {}
        }
        Ok(())
    }

    pub(super) fn sync_if_dirty(&self) {
        if self.dirty.swap(false, Ordering::AcqRel) && self.lock().sync_data().is_err() {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

pub(super) fn spawn_flusher(log: Arc<Log>, every: Duration) -> io::Result<JoinHandle<()>> {
    thread::Builder::new()
        .name(String::from("tickwheel-journal-sync"))
        .spawn(move || {
            let mut next = Instant::now() + every;
            while !log.stop.load(Ordering::Acquire) {
                let now = Instant::now();
                if now < next {
                    thread::park_timeout(next - now);
                    continue;
                }
                log.sync_if_dirty();
                next = Instant::now() + every;
            }
            log.sync_if_dirty();
        })
}

/// What a journal file holds.
pub(super) struct Replayed {
    pub(super) pending: BTreeMap<u64, (SystemTime, Vec<u8>)>,
    pub(super) max_id: u64,
    pub(super) damage: Vec<Damage>,
}

/// Reads and folds the journal at `path` (none: empty).
pub(super) fn replay(path: &Path) -> Result<Replayed, JournalError> {
    let mut replayed = Replayed {
        pending: BTreeMap::new(),
        max_id: 0,
        damage: Vec::new(),
    };
    let mut bytes = Vec::new();
    match File::open(path) {
        Ok(mut file) => {
            file.read_to_end(&mut bytes)?;
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(replayed),
        Err(err) => return Err(err.into()),
    }
    if bytes.is_empty() {
        return Ok(replayed);
    }
    if bytes.len() < 8 || &bytes[..4] != format::MAGIC {
        return Err(JournalError::NotAJournal(path.to_path_buf()));
    }
    let version = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    if version != format::VERSION {
        return Err(JournalError::Version {
            path: path.to_path_buf(),
            found: version,
        });
    }
    let (records, damage) = format::decode_all(&bytes[8..], 8);
    replayed.damage = damage;
    for record in records {
        match record {
            Record::Schedule { id, due, payload } => {
                replayed.max_id = replayed.max_id.max(id);
                replayed.pending.insert(id, (due, payload));
            }
            Record::Reset { id, due } => {
                if let Some(job) = replayed.pending.get_mut(&id) {
                    job.0 = due;
                }
            }
            Record::Cancel { id } | Record::Done { id } => {
                replayed.max_id = replayed.max_id.max(id);
                replayed.pending.remove(&id);
            }
            Record::Watermark { id } => replayed.max_id = replayed.max_id.max(id),
        }
    }
    Ok(replayed)
}

/// Writes a new journal holding only `live` (and the id watermark) next to
/// `path`, syncs it and renames it over `path`; returns it open for
/// appending.
pub(super) fn compact(path: &Path, max_id: u64, live: &[Record]) -> io::Result<File> {
    let mut bytes = Vec::from(format::header());
    format::encode(&Record::Watermark { id: max_id }, &mut bytes);
    for record in live {
        format::encode(record, &mut bytes);
    }
    let mut fresh = path.as_os_str().to_owned();
    fresh.push(".compacting");
    let fresh = PathBuf::from(fresh);
    {
        let mut file = File::create(&fresh)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
    }
    fs::rename(&fresh, path)?;
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        // The rename itself must survive a crash.
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    OpenOptions::new().append(true).open(path)
}

/// A job inside the timer: its journal id and value.
#[derive(Clone)]
pub(super) struct Job<T> {
    pub(super) id: u64,
    pub(super) value: T,
}

/// Runs each fired job's handler on the driver thread, then writes `done`.
pub(super) struct RunAndRecord<T> {
    pub(super) handler: Box<dyn Fn(T) + Send + Sync>,
    pub(super) log: Arc<Log>,
}

impl<T: Send + 'static> Executor<Job<T>> for RunAndRecord<T> {
    fn execute(&self, fired: Expired<Job<T>>) -> Result<(), Rejected<Job<T>>> {
        let id = fired.value.id;
        // A panicking handler propagates to the driver, which counts it;
        // `done` is then not written and the job runs again after a
        // restart (at least once).
        (self.handler)(fired.value.value);
        if self.log.append(&Record::Done { id }).is_err() {
            self.log.write_errors.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}
