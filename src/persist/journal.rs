//! The open journal file ([`Log`]): the sync policy, appending records
//! under one lock, the background flusher, and when to compact it
//! (`compaction.rs` writes, syncs and renames the new file). What the
//! records add up to is in `folded.rs`, reading a file back in
//! `replay.rs`, the executor that writes `done` after each run in
//! `job.rs`, opening errors in `error.rs`. `durable.rs` decides what is
//! written when; `format.rs` how.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Bound;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use core::time::Duration;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Instant, SystemTime};

use super::compaction::compact;
use super::folded::Folded;
use super::format::{self, Record};
use super::lock::JournalLock;
#[cfg(feature = "metrics")]
use super::published::JournalMetrics;
use crate::event::event;
use crate::metrics::metric;

// `durable.rs` opens and replays the journal through this module.
pub(super) use super::error::{io_at, JournalError};
#[cfg(test)]
use super::faults::Faults;
pub(super) use super::job::{Job, RunAndRecord};
pub(super) use super::replay::{inspect, replay};

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
    /// At most this long after a record is written, by a background thread
    /// that sleeps while nothing is written, whatever the interval. Zero
    /// syncs as soon as that thread runs; an interval too long for the
    /// clock to add (as `Duration::MAX`) syncs only when the timer is
    /// dropped.
    Every(Duration),
    /// Never explicitly: the operating system writes back when it likes.
    Never,
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
    #[cfg(test)]
    pub(super) faults: Faults,
}

/// Why a record's append failed.
#[derive(Debug)]
pub(super) enum AppendError {
    /// Nothing of the record is in the journal: the write failed (disk
    /// full, ...), and whatever part of it was written is cut off again.
    Unwritten,
    /// The record is written and in effect (compaction keeps it), but the
    /// disk did not confirm it (`SyncPolicy::Always`'s fsync failed). It
    /// lies where [`Placed`] says.
    Unsynced(Placed),
}

/// Where an appended record lies: bytes `start..end` of the file the
/// journal had at `generation`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Placed {
    generation: u64,
    start: u64,
    end: u64,
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
    /// Files the journal has had since it opened: a compaction makes a
    /// new one.
    generation: u64,
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
        appendable: Option<u64>,
        sync: SyncPolicy,
        lock: JournalLock,
    ) -> io::Result<Log> {
        let (file, len, compacted) = match compact(path, &folded) {
            Ok((file, len)) => (file, len, true),
            // No room for the new file (a full disk): a journal in this
            // crate's format goes on as it is, its torn tail cut off, so
            // that a restart still runs what is due. Compaction is tried
            // again once the file has grown by half.
            Err(err) => {
                let Some(end) = appendable else {
                    return Err(err);
                };
                let file = OpenOptions::new().append(true).open(path)?;
                file.set_len(end)?;
                (file, end, false)
            }
        };
        let name = format!("{}", path.display());
        #[cfg(feature = "metrics")]
        let metrics = {
            let metrics = JournalMetrics::register(&name);
            if compacted {
                metrics.compactions.increment(1);
            } else {
                metrics.compaction_failures.increment(1);
            }
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
                retry_at: if compacted { 0 } else { len + len / 2 },
                generation: 0,
            }),
            sync,
            synced: Mutex::new(0),
            dirty: AtomicBool::new(false),
            write_errors: AtomicU64::new(0),
            name,
            compaction_failures: AtomicU64::new(u64::from(!compacted)),
            stop: AtomicBool::new(false),
            compact_floor: AtomicU64::new(COMPACT_FLOOR),
            lock: Mutex::new(Some(lock)),
            flusher: OnceLock::new(),
            #[cfg(feature = "metrics")]
            metrics,
            #[cfg(test)]
            faults: Faults::default(),
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

    /// The journal's path, as events name it.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// Records that could not be written so far.
    pub(super) fn write_errors(&self) -> u64 {
        self.write_errors.load(Ordering::Relaxed)
    }

    /// Lets another timer open the journal: the owner has stopped writing.
    /// The journal file's own lock (`lock.rs`) goes explicitly too, not at
    /// close: a child forked now would hold the open file until it execs.
    pub(super) fn unlock(&self) {
        #[cfg(unix)]
        let _ = fs4::FileExt::unlock(&*lock(&self.state).file);
        drop(lock(&self.lock).take());
    }

    /// Appends a job's schedule record: `false` if the job must be
    /// refused. One written but not synced is written off, so that an
    /// `Err` still means the job never runs.
    pub(super) fn append_job(&self, id: u64, record: Record) -> bool {
        match self.append(record) {
            Ok(()) => true,
            Err(AppendError::Unsynced(placed)) => {
                self.write_off_placed(id, Some(placed));
                false
            }
            Err(AppendError::Unwritten) => false,
        }
    }

    /// Appends the record of a call that cannot say why it failed (a
    /// cancel, a reset, a scheduler's removal): `true` if the call may go
    /// ahead, its record in effect (written, if perhaps not synced);
    /// `false` if nothing of it is in the journal, so acting now would be
    /// undone by the next open. A failure counts in `write_errors`.
    pub(super) fn append_or_refuse(&self, record: Record) -> bool {
        match self.append(record) {
            Ok(()) => true,
            Err(err) => {
                self.write_failed();
                matches!(err, AppendError::Unsynced(_))
            }
        }
    }

    /// Takes job `id` out of the journal when it must not run again (its
    /// schedule record was not synced, the timer refused it, or `open`
    /// discarded or dead-lettered it): a cancel record.
    pub(super) fn write_off(&self, id: u64) {
        self.write_off_placed(id, None);
    }

    /// [`write_off`](Self::write_off), knowing where the job's record lies
    /// if it is the one just appended. If even the cancel cannot be
    /// written (counted), the job's record must still go, or the next open
    /// runs a job whose call was refused: cut off if it is still the
    /// file's last, else by compacting now, unless a compaction failed
    /// since the file last grew by half. Only then does the file keep it
    /// (the failure counted in `compaction_failures`).
    fn write_off_placed(&self, id: u64, placed: Option<Placed>) {
        if let Err(AppendError::Unwritten) = self.append(Record::Cancel { id }) {
            self.write_failed();
            let mut journal = lock(&self.state);
            journal.folded.apply(Record::Cancel { id });
            let last =
                placed.filter(|p| p.generation == journal.generation && p.end == journal.len);
            let cut = last.is_some_and(|p| journal.file.set_len(p.start).is_ok());
            if let (true, Some(p)) = (cut, last) {
                journal.len = p.start;
            } else if journal.len > journal.retry_at && self.compact_locked(&mut journal).is_err() {
                // As after a failed compaction on append: not again until
                // the file has grown by half (a full disk once made every
                // write-off of an `open` compact, and fail, in turn).
                self.compaction_failures.fetch_add(1, Ordering::Relaxed);
                journal.retry_at = journal.len + journal.len / 2;
            }
        }
    }

    /// Appends one record and syncs as the policy says; compacts the file
    /// when it has grown past the floor and is mostly finished jobs.
    pub(super) fn append(&self, record: Record) -> Result<(), AppendError> {
        let mut bytes = Vec::with_capacity(64);
        format::encode(&record, &mut bytes);
        let (appended, placed, _published) = {
            let mut journal = lock(&self.state);
            let start = journal.len;
            let generation = journal.generation;
            let mut file: &File = &journal.file;
            #[cfg(test)]
            let injected = self.faults.write.swap(false, Ordering::AcqRel);
            #[cfg(not(test))]
            let injected = false;
            if injected || file.write_all(&bytes).is_err() {
                // Cut off what part of the record got written (the file
                // is in append mode): nothing of it stays. If that fails
                // too, the torn record stays, and a replay skips it.
                let _ = file.set_len(journal.len);
                journal.len = file.metadata().map_or(journal.len, |meta| meta.len());
                return Err(AppendError::Unwritten);
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
            let placed = Placed {
                generation,
                start,
                end: start + bytes.len() as u64,
            };
            // For the metrics, published after the lock.
            (journal.appends, placed, (journal.len, compacted))
        };
        metric!(self.publish(_published.0, _published.1));
        match self.sync {
            SyncPolicy::Always => self
                .sync_through(appended)
                .map_err(|_| AppendError::Unsynced(placed)),
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
        #[cfg(test)]
        if self.faults.sync_then_write.swap(false, Ordering::AcqRel) {
            self.faults.write.store(true, Ordering::Release);
            return Err(io::Error::other("an fsync failure injected by a test"));
        }
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

    /// Up to `limit` pending jobs with ids above `after`, in id order:
    /// (id, key, due), from the folded state.
    pub(super) fn page(
        &self,
        after: Option<u64>,
        limit: usize,
    ) -> Vec<(u64, Option<String>, SystemTime, bool)> {
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        lock(&self.state)
            .folded
            .pending
            .range((from, Bound::Unbounded))
            .take(limit)
            .map(|(&id, job)| (id, job.key.clone(), job.due, job.timetable.is_some()))
            .collect()
    }

    fn compact_locked(&self, journal: &mut Journal) -> io::Result<()> {
        let (file, len) = compact(&journal.path, &journal.folded)?;
        // The compacted file was synced whole: nothing written so far
        // needs another fsync.
        journal.file = Arc::new(file);
        journal.len = len;
        journal.retry_at = 0;
        journal.generation += 1;
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
