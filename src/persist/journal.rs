//! The journal file: the sync policy, opening errors, appending records
//! under one lock, the executor that writes `done` after each run, the
//! background flusher, replaying a file into the jobs it holds, and when
//! to compact it (`compaction.rs` writes, syncs and renames the new file).
//! `durable.rs` decides what is written when; `format.rs` how.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use core::time::Duration;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Instant, SystemTime};

use super::compaction::compact;
use super::format::{self, Damage, Record};
use super::handle::Found;
use super::keys::Keys;
use super::lock::JournalLock;
#[cfg(feature = "metrics")]
use super::published::JournalMetrics;
use crate::event::event;
use crate::metrics::metric;
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

/// The journal as replayed: the jobs still pending and the highest id used.
/// Replay folds the file's records into it, and every append folds its
/// record in too, so at run time it is what a replay of the file would
/// give: compaction writes it out.
#[derive(Default)]
pub(super) struct Folded {
    /// Per id, in schedule order.
    pub(super) pending: BTreeMap<u64, Pending>,
    pub(super) max_id: u64,
    /// Bytes the pending jobs take as schedule records.
    live_len: u64,
}

/// A pending job as the journal holds it.
pub(super) struct Pending {
    pub(super) due: SystemTime,
    /// The user's key, for a keyed job.
    pub(super) key: Option<String>,
    /// The encoded value.
    pub(super) payload: Vec<u8>,
}

impl Pending {
    fn len(&self) -> u64 {
        format::schedule_len(self.key.as_ref().map(String::len), self.payload.len())
    }
}

impl Folded {
    pub(super) fn apply(&mut self, record: Record) {
        let (id, job) = match record {
            Record::Schedule { id, due, payload } => (
                id,
                Pending {
                    due,
                    key: None,
                    payload,
                },
            ),
            Record::Keyed {
                id,
                due,
                key,
                payload,
            } => (
                id,
                Pending {
                    due,
                    key: Some(key),
                    payload,
                },
            ),
            Record::Reset { id, due } => {
                if let Some(job) = self.pending.get_mut(&id) {
                    job.due = due;
                }
                return;
            }
            Record::Cancel { id } | Record::Done { id } => {
                self.max_id = self.max_id.max(id);
                if let Some(job) = self.pending.remove(&id) {
                    self.live_len -= job.len();
                }
                return;
            }
            Record::Watermark { id } => {
                self.max_id = self.max_id.max(id);
                return;
            }
        };
        self.max_id = self.max_id.max(id);
        self.live_len += job.len();
        if let Some(old) = self.pending.insert(id, job) {
            self.live_len -= old.len();
        }
    }
}

/// The journal file compacts itself when it is larger than this and more
/// than twice the size of its pending jobs' records.
pub(super) const COMPACT_FLOOR: u64 = 1 << 20;

/// The open journal: the file, what it holds, and its sync state.
pub(super) struct Log {
    state: Mutex<Journal>,
    pub(super) sync: SyncPolicy,
    /// How many appends the disk has, for `SyncPolicy::Always`; held while
    /// syncing, so one fsync covers every append written before it began
    /// (group commit).
    synced: Mutex<u64>,
    /// Written since the last sync (for `SyncPolicy::Every`).
    dirty: AtomicBool,
    /// Records that could not be written (disk full, ...) from the
    /// driver thread, where nobody can be told.
    write_errors: AtomicU64,
    /// The journal's path, as events name it.
    name: String,
    /// Compactions that failed at run time (the journal kept growing).
    pub(super) compaction_failures: AtomicU64,
    pub(super) stop: AtomicBool,
    compact_floor: AtomicU64,
    /// The journal's one owner is this log until [`unlock`](Self::unlock).
    lock: Mutex<Option<JournalLock>>,
    /// The thread that syncs for `SyncPolicy::Every`, once started.
    flusher: OnceLock<Thread>,
    /// The journal's metric handles (feature `metrics`).
    #[cfg(feature = "metrics")]
    pub(super) metrics: JournalMetrics,
}

struct Journal {
    /// Shared with a syncer, which fsyncs outside the lock.
    file: Arc<File>,
    path: PathBuf,
    folded: Folded,
    /// Bytes in the file.
    len: u64,
    /// Appends so far.
    appends: u64,
    /// After a failed compaction, the size at which to try again.
    retry_at: u64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Log {
    /// Compacts the journal at `path` to `folded` and opens it for
    /// appending.
    pub(super) fn open(
        path: &Path,
        folded: Folded,
        sync: SyncPolicy,
        lock: JournalLock,
    ) -> io::Result<Log> {
        let (file, len) = compact(path, &folded)?;
        let name = format!("{}", path.display());
        #[cfg(feature = "metrics")]
        let metrics = {
            let metrics = JournalMetrics::register(&name);
            metrics.compactions.increment(1);
            metrics.size.set(len as f64);
            metrics
        };
        Ok(Log {
            state: Mutex::new(Journal {
                file: Arc::new(file),
                path: path.to_path_buf(),
                folded,
                len,
                appends: 0,
                retry_at: 0,
            }),
            sync,
            synced: Mutex::new(0),
            dirty: AtomicBool::new(false),
            write_errors: AtomicU64::new(0),
            name,
            compaction_failures: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            compact_floor: AtomicU64::new(COMPACT_FLOOR),
            lock: Mutex::new(Some(lock)),
            flusher: OnceLock::new(),
            #[cfg(feature = "metrics")]
            metrics,
        })
    }

    /// Counts a record that could not be written (disk full, ...), where
    /// no caller can be told: `write_errors`, and an event.
    pub(super) fn write_failed(&self) {
        self.write_errors.fetch_add(1, Ordering::Relaxed);
        metric!(self.metrics.write_errors.increment(1));
        event!(
            error,
            "a journal record could not be written",
            journal = self.name
        );
    }

    /// Records that could not be written so far.
    pub(super) fn write_errors(&self) -> u64 {
        self.write_errors.load(Ordering::Relaxed)
    }

    /// Lets another timer open the journal: the owner has stopped writing.
    pub(super) fn unlock(&self) {
        drop(lock(&self.lock).take());
    }

    /// Appends one record and syncs as the policy says; compacts the file
    /// when it has grown past the floor and is mostly finished jobs.
    pub(super) fn append(&self, record: Record) -> io::Result<()> {
        let mut bytes = Vec::with_capacity(64);
        format::encode(&record, &mut bytes);
        let (appended, _published) = {
            let mut journal = lock(&self.state);
            let mut file: &File = &journal.file;
            if let Err(err) = file.write_all(&bytes) {
                // A partial write leaves a torn record, which a replay
                // skips; later records still decode after it.
                journal.len = file.metadata().map_or(journal.len, |meta| meta.len());
                return Err(err);
            }
            journal.len += bytes.len() as u64;
            journal.appends += 1;
            journal.folded.apply(record);
            let floor = self.compact_floor.load(Ordering::Relaxed);
            let mut compacted = None;
            if journal.len > floor.max(journal.retry_at)
                && journal.len > 2 * journal.folded.live_len
            {
                let done = self.compact_locked(&mut journal).is_ok();
                if !done {
                    // The record is written, so this call succeeded; the
                    // file stays as it was. Try again once it has grown
                    // by half.
                    self.compaction_failures.fetch_add(1, Ordering::Relaxed);
                    journal.retry_at = journal.len + journal.len / 2;
                }
                compacted = Some(done);
            }
            // For the metrics, published after the lock.
            (journal.appends, (journal.len, compacted))
        };
        metric!(self.publish(_published.0, _published.1));
        match self.sync {
            SyncPolicy::Always => self.sync_through(appended),
            SyncPolicy::Every(_) => {
                if !self.dirty.swap(true, Ordering::AcqRel) {
                    if let Some(flusher) = self.flusher.get() {
                        flusher.unpark();
                    }
                }
                Ok(())
            }
            SyncPolicy::Never => Ok(()),
        }
    }

    /// Returns once the disk has append number `appended`: syncs unless
    /// another thread's fsync, begun after that append, already covered it.
    fn sync_through(&self, appended: u64) -> io::Result<()> {
        let mut synced = lock(&self.synced);
        if *synced >= appended {
            return Ok(());
        }
        let (file, upto) = {
            let journal = lock(&self.state);
            (Arc::clone(&journal.file), journal.appends)
        };
        file.sync_data()?;
        *synced = upto;
        Ok(())
    }

    /// Syncs everything written so far.
    pub(super) fn sync_all(&self) -> io::Result<()> {
        self.dirty.store(false, Ordering::Release);
        let appended = lock(&self.state).appends;
        let mut synced = lock(&self.synced);
        let file = Arc::clone(&lock(&self.state).file);
        file.sync_data()?;
        *synced = (*synced).max(appended);
        Ok(())
    }

    pub(super) fn sync_if_dirty(&self) {
        if self.dirty.swap(false, Ordering::AcqRel) {
            let file = Arc::clone(&lock(&self.state).file);
            if file.sync_data().is_err() {
                self.write_failed();
            }
        }
    }

    /// Rewrites the file to the pending jobs now.
    pub(super) fn compact(&self) -> io::Result<()> {
        let (done, _len) = {
            let mut journal = lock(&self.state);
            (self.compact_locked(&mut journal), journal.len)
        };
        // A failure is the caller's to handle: it counts as a failed
        // compaction only when no caller is told (in `append`).
        metric!(self.publish(_len, done.is_ok().then_some(true)));
        done
    }

    /// Publishes the file's size, and a compaction's result if there was
    /// one (`Some(true)`: done), with no lock held.
    #[cfg(feature = "metrics")]
    fn publish(&self, len: u64, compacted: Option<bool>) {
        let m = &self.metrics;
        m.size.set(len as f64);
        match compacted {
            Some(true) => m.compactions.increment(1),
            Some(false) => m.compaction_failures.increment(1),
            None => {}
        }
    }

    pub(super) fn set_compact_floor(&self, bytes: u64) {
        self.compact_floor.store(bytes, Ordering::Relaxed);
    }

    /// The file's size in bytes.
    pub(super) fn len(&self) -> u64 {
        lock(&self.state).len
    }

    fn compact_locked(&self, journal: &mut Journal) -> io::Result<()> {
        let (file, len) = compact(&journal.path, &journal.folded)?;
        // The compacted file was synced whole: nothing written so far
        // needs another fsync.
        journal.file = Arc::new(file);
        journal.len = len;
        journal.retry_at = 0;
        Ok(())
    }
}

/// Starts the thread that syncs for [`SyncPolicy::Every`]. It sleeps
/// until an append makes the journal dirty, then waits out the interval
/// (so one fsync covers every record of the interval) and syncs: an idle
/// journal costs no wake-ups, whatever the interval. A zero interval syncs
/// as soon as the thread runs; one too long for the clock to add (as
/// `Duration::MAX`) syncs only when the timer is dropped.
pub(super) fn spawn_flusher(log: Arc<Log>, every: Duration) -> io::Result<JoinHandle<()>> {
    let thread = thread::Builder::new()
        .name(String::from("tickwheel-journal-sync"))
        .spawn({
            let log = Arc::clone(&log);
            move || {
                while !log.stop.load(Ordering::Acquire) {
                    if !log.dirty.load(Ordering::Acquire) {
                        thread::park();
                        continue;
                    }
                    let deadline = Instant::now().checked_add(every);
                    while !log.stop.load(Ordering::Acquire) {
                        match deadline.map(|d| d.saturating_duration_since(Instant::now())) {
                            Some(Duration::ZERO) => break,
                            Some(left) => thread::park_timeout(left),
                            None => thread::park(),
                        }
                    }
                    log.sync_if_dirty();
                }
                log.sync_if_dirty();
            }
        })?;
    // Appends wake it on the first record after a sync.
    let _ = log.flusher.set(thread.thread().clone());
    Ok(thread)
}

/// What a journal file holds.
pub(super) struct Replayed {
    pub(super) folded: Folded,
    pub(super) damage: Vec<Damage>,
}

/// An I/O error that says which file it was about.
pub(super) fn io_at(path: &Path, err: io::Error) -> JournalError {
    JournalError::Io(io::Error::new(
        err.kind(),
        format!("{}: {err}", path.display()),
    ))
}

/// What is at `path`, judged from its header only: checked before the
/// lock is taken, so that a foreign file or a directory is refused without
/// a lock file appearing beside it.
pub(super) fn inspect(path: &Path) -> Result<Found, JournalError> {
    if path.as_os_str().is_empty() {
        return Err(JournalError::Io(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a journal path must not be empty",
        )));
    }
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(err) => return Err(io_at(path, err)),
    };
    if meta.is_dir() {
        let err = io::Error::new(io::ErrorKind::InvalidInput, "is a directory");
        return Err(io_at(path, err));
    }
    if meta.len() == 0 {
        return Ok(Found::EmptyFile);
    }
    let mut header = [0u8; 8];
    let mut file = File::open(path).map_err(|err| io_at(path, err))?;
    let mut got = 0;
    while got < header.len() {
        match file.read(&mut header[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(io_at(path, err)),
        }
    }
    if got < header.len() || &header[..4] != format::MAGIC {
        return Err(JournalError::NotAJournal(path.to_path_buf()));
    }
    let found = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if !format::READS.contains(&found) {
        return Err(JournalError::Version {
            path: path.to_path_buf(),
            found,
        });
    }
    Ok(Found::Journal)
}

/// Reads and folds the journal at `path` (none: empty).
pub(super) fn replay(path: &Path) -> Result<Replayed, JournalError> {
    let mut replayed = Replayed {
        folded: Folded::default(),
        damage: Vec::new(),
    };
    let mut bytes = Vec::new();
    match File::open(path) {
        Ok(mut file) => {
            file.read_to_end(&mut bytes)
                .map_err(|err| io_at(path, err))?;
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(replayed),
        Err(err) => return Err(io_at(path, err)),
    }
    if bytes.is_empty() {
        return Ok(replayed);
    }
    if bytes.len() < 8 || &bytes[..4] != format::MAGIC {
        return Err(JournalError::NotAJournal(path.to_path_buf()));
    }
    let version = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    if !format::READS.contains(&version) {
        return Err(JournalError::Version {
            path: path.to_path_buf(),
            found: version,
        });
    }
    let (records, damage) = format::decode_all(&bytes[8..], 8, version);
    replayed.damage = damage;
    for record in records {
        replayed.folded.apply(record);
    }
    Ok(replayed)
}

/// A job inside the timer: its journal id, its key if it has one, and
/// its value.
#[derive(Clone)]
pub(super) struct Job<T> {
    pub(super) id: u64,
    pub(super) key: Option<Arc<str>>,
    pub(super) value: T,
}

/// Runs each fired job's handler on the driver thread, then writes `done`.
pub(super) struct RunAndRecord<T> {
    pub(super) handler: Box<dyn Fn(T) + Send + Sync>,
    pub(super) log: Arc<Log>,
    pub(super) keys: Arc<Keys>,
}

impl<T: Send + 'static> Executor<Job<T>> for RunAndRecord<T> {
    fn execute(&self, fired: Expired<Job<T>>) -> Result<(), Rejected<Job<T>>> {
        let Job { id, key, value } = fired.value;
        // Taken to run: no longer pending, so its key is free (a cancel by
        // key now finds nothing, as a cancel by handle would get `None`).
        if let Some(key) = key {
            self.keys.release(&key, id);
        }
        // A panicking handler propagates to the driver, which counts it;
        // `done` is then not written and the job runs again after a
        // restart (at least once).
        (self.handler)(value);
        if self.log.append(Record::Done { id }).is_err() {
            self.log.write_failed();
        }
        Ok(())
    }
}
