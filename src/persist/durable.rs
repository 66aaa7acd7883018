//! [`DurableTimer`]: delayed jobs that survive a crash, through an
//! append-only journal of schedule, cancel, reset and done records in a
//! file the user names (format in `format.rs`).
//!
//! The guarantee and the order of writes are stated on [`DurableTimer`],
//! where users read them. The file side is in `journal.rs`; cancel and
//! reset in `turns.rs`; keyed jobs (by a name of the caller's) in
//! `keyed.rs`; the file's upkeep (size, compaction, unreported failures)
//! in `upkeep.rs`.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use std::io;
use std::path::Path;
use std::thread::JoinHandle;
use std::time::SystemTime;

use super::compaction::remove_stale_temps;
use super::format::{Record, MAX_PAYLOAD};
use super::handle::{DurableHandle, Recovery};
use super::job::job_policy;
use super::journal::{
    inspect, io_at, replay, spawn_flusher, Job, JournalError, Log, RunAndRecord, SyncPolicy,
};
use super::keys::Keys;
use super::lock::{journal_path, JournalLock};
use super::payload::Payload;
use super::recurring::sort_pending;
use super::schedulers::Schedulers;
use super::turns::Turns;
use super::{MisfirePolicy, Outcome, PendingJob, Snapshot};
use crate::event::event;
use crate::metrics::metric;
use crate::timer::{Clock, ScheduleError, ScheduleErrorKind, SystemClock, Timer};

/// Delayed jobs that survive a crash: a [`Timer`] whose every schedule,
/// cancel, reset and completed run is written to a journal (format in
/// `src/persist/format.rs`).
///
/// # What is written when
///
/// | call | journal | then |
/// |------|---------|------|
/// | `schedule` | `schedule(id, due, payload)` | the job joins the timer; `schedule` returns |
/// | `cancel` | the job is held (it cannot fire), then `cancel(id)` | the job leaves the timer |
/// | `reset` | the job is held (it cannot fire), then `reset(id, due)` | the job moves |
/// | a job fires | nothing | the handler runs, and when it returns: `done(id)` |
/// | `open` | a compacted file: the id watermark and the pending jobs | the jobs are restored |
/// | the file outgrows its jobs | the same compaction, at run time | appends go on in the new file |
///
/// Intent is written before the timer acts, and `done` only after the
/// handler has returned. So, with [`SyncPolicy::Always`], **every job
/// whose `schedule` returned is, after a crash, either run (its handler
/// returned and `done` was written), cancelled, or restored and run
/// later: delivery is at least once.** A job whose handler ran, or was
/// running, when the process died, without its `done` reaching the disk,
/// runs again after the restart, and so does a job whose handler
/// panicked (it never completed). A cancel holds its job (it can no
/// longer fire) before it writes, so a job whose cancel was journaled
/// never runs, before or after a crash; a cancel that came too late (the
/// job had been taken to run) writes nothing and answers `None`.
///
/// With [`SyncPolicy::Every`] the same holds for a process crash (the
/// kernel keeps what was written), and a machine crash loses at most the
/// records of the last interval; [`SyncPolicy::Never`] leaves it to the
/// operating system.
///
/// # Opening
///
/// [`DurableTimer::open`] replays the journal (skipping and reporting any
/// torn or damaged record), compacts it to the jobs still pending (written
/// to a new file, synced, then renamed over the old one), and restores
/// them with a [`MisfirePolicy`]. Jobs the policy discards or dead-letters
/// are written off as cancelled (the dead letters are handed back); jobs
/// it spreads or reschedules are journaled at their new time, so the next
/// open does not take them for missed again.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::persist::{DurableTimer, MisfirePolicy, SyncPolicy};
///
/// let dir = std::env::temp_dir().join(format!("tickwheel-durable-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("orders.journal");
/// let (tx, closed) = std::sync::mpsc::channel();
/// let tx = std::sync::Mutex::new(tx);
/// let (orders, _) = DurableTimer::open(&path, SyncPolicy::Always, &MisfirePolicy::default(), move |order: u64| {
///     tx.lock().unwrap().send(order).unwrap();
/// })?;
/// let unpaid = orders.schedule(Duration::from_millis(5), 17)?;
/// let paid = orders.schedule(Duration::from_secs(900), 18)?;
/// assert_eq!(orders.cancel(paid), Some(18));
/// assert_eq!(closed.recv_timeout(Duration::from_secs(5))?, 17);
/// # let _ = unpaid;
/// drop(orders);
/// // Nothing left to restore: 17 ran, 18 was cancelled.
/// let (again, recovery) = DurableTimer::<u64>::open(&path, SyncPolicy::Always, &MisfirePolicy::default(), |_| {})?;
/// assert!(recovery.outcomes.is_empty());
/// # drop(again);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DurableTimer<T: Send + 'static> {
    pub(super) timer: Timer<Job<T>, RunAndRecord<T>>,
    pub(super) log: Arc<Log>,
    pub(super) next_id: AtomicU64,
    flusher: Option<JoinHandle<()>>,
    /// Keyed jobs by key (`keyed.rs`).
    pub(super) keys: Arc<Keys>,
    /// Job schedulers by key (`schedulers.rs`).
    pub(super) schedulers: Arc<Schedulers<T>>,
    /// Cancels and resets take turns per job (`turns.rs`).
    pub(super) turns: Turns,
}

impl<T> DurableTimer<T>
where
    T: Payload + Clone + Send + Sync + 'static,
{
    /// Opens (or creates) the journal at `path`, replays and compacts it,
    /// and restores its pending jobs under `misfire`. `handler` runs each
    /// job when it fires, on the timer's driver thread (hand slow work
    /// off); when it returns, the job is recorded as done.
    ///
    /// # Errors
    ///
    /// [`JournalError`] if the file is not a journal, has another format
    /// version, cannot be read, written or renamed, or the timer cannot
    /// start; [`JournalError::Locked`] if another `DurableTimer`, in this
    /// process or another, has it open (a journal has one owner, held by
    /// an operating-system lock on `<path>.lock` for the timer's life).
    /// Damaged records are not an error: they are skipped and reported in
    /// [`Recovery::damage`]. Nor is a disk too full for the compacted
    /// file: a journal in the current format is then appended to as it is
    /// (counted in [`compaction_failures`](Self::compaction_failures)), so
    /// a restart still runs what is due.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-open-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let (jobs, recovery) = tickwheel::persist::DurableTimer::<String>::open(
    ///     dir.join("jobs.journal"),
    ///     tickwheel::persist::SyncPolicy::Every(std::time::Duration::from_millis(10)),
    ///     &Default::default(),
    ///     |job| println!("run {job}"),
    /// )?;
    /// assert!(recovery.damage.is_empty());
    /// # drop(jobs);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(
        path: impl AsRef<Path>,
        sync: SyncPolicy,
        misfire: &MisfirePolicy<T>,
        handler: impl Fn(T) + Send + Sync + 'static,
    ) -> Result<(Self, Recovery<T>), JournalError> {
        Self::open_with_clock(path, sync, misfire, SystemClock, handler)
    }

    /// [`open`](Self::open) with the timer on `clock` (a `ManualClock` in
    /// tests).
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-clock-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// use tickwheel::persist::{DurableTimer, SyncPolicy};
    /// use tickwheel::timer::SystemClock;
    ///
    /// let (jobs, _) = DurableTimer::<u64>::open_with_clock(
    ///     dir.join("j"), SyncPolicy::Never, &Default::default(), SystemClock, |_| {},
    /// )?;
    /// # drop(jobs);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_with_clock(
        path: impl AsRef<Path>,
        sync: SyncPolicy,
        misfire: &MisfirePolicy<T>,
        clock: impl Clock,
        handler: impl Fn(T) + Send + Sync + 'static,
    ) -> Result<(Self, Recovery<T>), JournalError> {
        let path = &journal_path(path.as_ref())?;
        // A foreign file or a directory is refused before anything is
        // created beside it.
        let found = inspect(path)?;
        // Before reading: nobody else may write while we replay.
        let lock = JournalLock::acquire(path)?;
        remove_stale_temps(path);
        let replayed = replay(path)?;
        for damage in &replayed.damage {
            event!(
                warn,
                "journal damage skipped (its records are lost)",
                journal = path.display(),
                offset = damage.offset,
                len = damage.len
            );
        }
        let mut folded = replayed.folded;
        let mut recovery = Recovery {
            outcomes: Vec::new(),
            dead_letters: Vec::new(),
            damage: replayed.damage,
            undecodable: Vec::new(),
            found,
            keys: Vec::new(),
            schedules: Vec::new(),
        };
        let (jobs, schedulers) = sort_pending(path, &mut folded, &mut recovery);
        let next_id = folded.max_id.saturating_add(1);
        let log = Log::open(path, folded, replayed.appendable, sync, lock);
        let log = Arc::new(log.map_err(|err| io_at(path, err))?);
        metric!({
            let m = &log.metrics;
            m.damaged.increment(recovery.damage.len() as u64);
            m.damaged_bytes
                .increment(recovery.damage.iter().map(|d| d.len).sum());
            m.undecodable.increment(recovery.undecodable.len() as u64);
        });
        let keys = Arc::new(Keys::default());
        let recurring = Arc::new(Schedulers::default());
        let builder = Timer::builder().clock(clock).executor(RunAndRecord {
            handler: Box::new(handler),
            log: Arc::clone(&log),
            keys: Arc::clone(&keys),
            schedulers: Arc::clone(&recurring),
            clone: T::clone,
        });
        #[cfg(feature = "metrics")]
        let builder = builder.publish(log.metrics.timer());
        let timer = builder.build().map_err(JournalError::Build)?;
        *recurring.timer.lock() = Some(timer.clone());
        let mut durable = DurableTimer {
            timer,
            log,
            next_id: AtomicU64::new(next_id),
            flusher: None,
            keys,
            schedulers: recurring,
            turns: Turns::default(),
        };
        if let SyncPolicy::Every(every) = sync {
            // Spawned once the timer is owned: if it fails, dropping
            // `durable` stops the timer and unlocks the journal (the
            // schedulers' handle on the timer would otherwise keep both).
            durable.flusher = Some(spawn_flusher(Arc::clone(&durable.log), every)?);
        }
        let ids: Vec<(u64, Option<Arc<str>>)> = jobs
            .iter()
            .map(|job| (job.value.id, job.value.key.clone()))
            .collect();
        let policy = job_policy(misfire);
        let snapshot = Snapshot {
            version: Snapshot::<Job<T>>::VERSION,
            taken_at: SystemTime::UNIX_EPOCH,
            jobs,
        };
        let report = durable
            .timer
            .restore(snapshot, &policy)
            .map_err(|err| JournalError::Io(io::Error::other(err.to_string())))?;
        metric!(durable.log.metrics.restored(&report.outcomes));
        // Two restored jobs share a key when one had been taken to run (its
        // key free again) and its handler scheduled the next under that key
        // before the crash. The key names the later, as it did then; the
        // earlier runs again without one.
        let mut owners: BTreeMap<Arc<str>, u64> = BTreeMap::new();
        for ((id, key), outcome) in ids.iter().zip(&report.outcomes) {
            if let (Some(key), Some(_)) = (key, outcome.handle()) {
                let owner = owners.entry(Arc::clone(key)).or_insert(*id);
                *owner = (*owner).max(*id);
            }
        }
        for ((id, key), outcome) in ids.into_iter().zip(&report.outcomes) {
            let key = key.filter(|key| owners.get(key) == Some(&id));
            if matches!(outcome, Outcome::Discarded | Outcome::DeadLettered) {
                // Not fatal on a full disk: at worst the next open hands
                // the job over again (at least once).
                durable.log.write_off(id);
            }
            if let Outcome::Spread(_, due) | Outcome::Rescheduled(_, due) = *outcome {
                // The policy's new time, kept: otherwise each open took the
                // job for missed again, and restarts more often than its
                // delay starved it. On a full disk, as above.
                durable.log.append_or_refuse(Record::Reset { id, due });
            }
            if let (Some(key), Some(handle)) = (key, outcome.handle()) {
                let handle = DurableHandle { handle, id };
                if durable
                    .keys
                    .reserve(&key, id, |held| durable.timer.is_pending(held.handle))
                {
                    durable.keys.hold(&key, handle);
                    // Restored and fired before it was reserved (a missed
                    // job fires at once): its release found nothing.
                    if !durable.timer.is_pending(handle.handle) {
                        durable.keys.release(&key, id);
                    }
                }
                recovery.keys.push((String::from(&*key), id));
            }
            recovery.outcomes.push((id, *outcome));
        }
        durable.restore_schedulers(schedulers, &mut recovery);
        recovery.dead_letters = report
            .dead_letters
            .into_iter()
            .map(|job| PendingJob {
                due: job.due,
                repeat: None,
                value: job.value.value,
            })
            .collect();
        Ok((durable, recovery))
    }

    /// Schedules `value` to run after `delay`; the journal has the job
    /// (synced, with [`SyncPolicy::Always`]) before this returns.
    ///
    /// # Errors
    ///
    /// [`ScheduleError`] with the value: the timer is full or shut down;
    /// the journal could not be written ([`ScheduleErrorKind::Journal`]);
    /// the value encodes to more than [`MAX_PAYLOAD`](super::MAX_PAYLOAD) bytes
    /// ([`ScheduleErrorKind::TooLarge`]); or `delay` takes the due time past
    /// what the clock can represent, as `Duration::MAX` does
    /// ([`ScheduleErrorKind::OutOfRange`]). A refused job never runs. If
    /// its record was written (but not synced) and then its cancel record
    /// cannot be written either, the record is cut off the file's end, or
    /// the file is compacted without it; only if that fails too (counted
    /// in [`compaction_failures`](Self::compaction_failures)) may the next
    /// `open` bring it back.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-sched-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Always, &Default::default(), |_| {})?;
    /// let job = jobs.schedule(std::time::Duration::from_secs(900), 17)?;
    /// assert_eq!(jobs.pending(), 1);
    /// # let _ = job; drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule(&self, delay: Duration, value: T) -> Result<DurableHandle, ScheduleError<T>> {
        let (now, wall) = self.timer.clock_now();
        let (Some(due), Some(deadline)) = (wall.checked_add(delay), now.checked_add(delay)) else {
            // Never run it now: a job that cannot be given a time is refused.
            return Err(ScheduleError::new(ScheduleErrorKind::OutOfRange, value));
        };
        let payload = value.encode();
        if payload.len() > MAX_PAYLOAD {
            return Err(ScheduleError::new(ScheduleErrorKind::TooLarge, value));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let record = Record::Schedule { id, due, payload };
        if !self.log.append_job(id, record) {
            return Err(ScheduleError::new(ScheduleErrorKind::Journal, value));
        }
        match self.timer.schedule_at(
            deadline,
            Job {
                id,
                key: None,
                value,
                recurring: false,
            },
        ) {
            Ok(handle) => {
                metric!(self.log.metrics.scheduled.increment(1));
                Ok(DurableHandle { handle, id })
            }
            Err(err) => {
                // Written off, so a restart does not resurrect it.
                self.log.write_off(id);
                Err(err.map(|job| job.value))
            }
        }
    }

    /// Jobs pending in the timer.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-pending-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Never, &Default::default(), |_| {})?;
    /// assert_eq!(jobs.pending(), 0);
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pending(&self) -> usize {
        self.timer.pending()
    }
}

impl<T: Send + 'static> Drop for DurableTimer<T> {
    /// Stops the timer (pending jobs stay in the journal for the next
    /// open), stops the flusher and syncs the journal.
    fn drop(&mut self) {
        // The executor's handle on its own timer goes first.
        drop(self.schedulers.timer.lock().take());
        drop(self.timer.shutdown_unfired());
        self.log.stop.store(true, Ordering::Release);
        if let Some(flusher) = self.flusher.take() {
            flusher.thread().unpark();
            let _ = flusher.join();
        }
        if self.log.sync_all().is_err() {
            self.log.write_failed();
        }
        // The driver has stopped, so nothing writes any more.
        self.log.unlock();
    }
}

impl<T: Send + 'static> fmt::Debug for DurableTimer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableTimer")
            .field("timer", &self.timer)
            .field("sync", &self.log.sync)
            .finish_non_exhaustive()
    }
}
