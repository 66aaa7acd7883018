//! The journal file's upkeep, on [`DurableTimer`]: its size, compaction,
//! and the failures no caller could be told of.

use core::sync::atomic::Ordering;
use std::io;

use super::DurableTimer;

impl<T: Send + 'static> DurableTimer<T> {
    /// Records that could not be written or synced where the call could
    /// not say so: a `done` after a run (the job may run again after a
    /// restart), the background flusher's syncs, and the cancels, resets
    /// and scheduler removals that answered `None` or `false` because the
    /// journal could not take them (a full disk).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-errors-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Never, &Default::default(), |_| {})?;
    /// assert_eq!(jobs.write_errors(), 0);
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_errors(&self) -> u64 {
        self.log.write_errors()
    }

    /// Compactions that failed while the timer ran (no room for the new
    /// file, a directory that turned read-only, ...). A failed compaction
    /// fails nothing else: the call whose record triggered it has its
    /// record and succeeds, the journal keeps growing, and compaction is
    /// tried again once the file has grown by half.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-cfail-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Never, &Default::default(), |_| {})?;
    /// assert_eq!(jobs.compaction_failures(), 0);
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compaction_failures(&self) -> u64 {
        self.log.compaction_failures.load(Ordering::Relaxed)
    }

    /// Rewrites the journal now to the jobs still pending (and those taken
    /// to run whose `done` is not written yet), as [`open`](Self::open)
    /// does. There is rarely a need: the journal compacts itself when it
    /// is larger than the [compaction floor](Self::set_compaction_floor)
    /// and more than twice the size of its pending jobs, which keeps it
    /// bounded at an amortized O(1) cost per record. Schedules, cancels and
    /// resets wait while it runs.
    ///
    /// # Errors
    ///
    /// The file could not be written, synced or renamed; the journal
    /// keeps appending to the old file.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-compact-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Never, &Default::default(), |_| {})?;
    /// for order in 0..100 {
    ///     let job = jobs.schedule(std::time::Duration::from_secs(900), order)?;
    ///     jobs.cancel(job);
    /// }
    /// let before = jobs.journal_len();
    /// jobs.compact()?;
    /// assert!(jobs.journal_len() < before);
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact(&self) -> io::Result<()> {
        self.log.compact()
    }

    /// The journal file's size in bytes.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-len-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Never, &Default::default(), |_| {})?;
    /// let empty = jobs.journal_len();
    /// jobs.schedule(std::time::Duration::from_secs(900), 17)?;
    /// assert!(jobs.journal_len() > empty);
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn journal_len(&self) -> u64 {
        self.log.len()
    }

    /// Sets the size in bytes below which the journal never compacts
    /// itself (default 1 MiB). Above it, an append that finds the file
    /// more than twice the size of its pending jobs compacts it. Each
    /// compaction syncs the new file and its directory, whatever the
    /// [`SyncPolicy`](super::SyncPolicy): a floor near zero with few jobs
    /// pending compacts at nearly every append, so keep it at tens of KiB
    /// or more (the bytes written stay amortized O(1) a record; the syncs
    /// do not).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-floor-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Never, &Default::default(), |_| {})?;
    /// jobs.set_compaction_floor(64 << 10);
    /// for order in 0..10_000 {
    ///     let job = jobs.schedule(std::time::Duration::from_secs(900), order)?;
    ///     jobs.cancel(job);
    /// }
    /// assert!(jobs.journal_len() <= 64 << 10);
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_compaction_floor(&self, bytes: u64) {
        self.log.set_compact_floor(bytes);
    }
}
