//! [`DurableTimer`]: delayed jobs that survive a crash, through an
//! append-only journal of schedule, cancel, reset and done records in a
//! file the user names (format in `format.rs`).
//!
//! The guarantee and the order of writes are stated on [`DurableTimer`],
//! where users read them.

use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
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
use super::{MisfirePolicy, Outcome, PendingJob, Snapshot};
use crate::timer::{
    Clock, Executor, Expired, Rejected, ScheduleError, ScheduleErrorKind, SystemClock, Timer,
    TimerHandle,
};

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

/// How a job's value is stored in the journal.
///
/// ```
/// use tickwheel::persist::Payload;
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct OrderId(u64);
///
/// impl Payload for OrderId {
///     fn encode(&self) -> Vec<u8> {
///         self.0.to_le_bytes().to_vec()
///     }
///     fn decode(bytes: &[u8]) -> Option<Self> {
///         Some(OrderId(u64::from_le_bytes(bytes.try_into().ok()?)))
///     }
/// }
/// assert_eq!(OrderId::decode(&OrderId(7).encode()), Some(OrderId(7)));
/// ```
pub trait Payload: Sized {
    /// The bytes to store.
    fn encode(&self) -> Vec<u8>;
    /// The value back from stored bytes; `None` if they are not one.
    fn decode(bytes: &[u8]) -> Option<Self>;
}

impl Payload for Vec<u8> {
    fn encode(&self) -> Vec<u8> {
        self.clone()
    }
    fn decode(bytes: &[u8]) -> Option<Self> {
        Some(bytes.to_vec())
    }
}

impl Payload for String {
    fn encode(&self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }
    fn decode(bytes: &[u8]) -> Option<Self> {
        String::from_utf8(bytes.to_vec()).ok()
    }
}

impl Payload for u64 {
    fn encode(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn decode(bytes: &[u8]) -> Option<Self> {
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }
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

/// What [`DurableTimer::open`] found and did.
///
/// ```
/// fn log(recovery: &tickwheel::persist::Recovery<u64>) {
///     println!(
///         "restored {} jobs, {} damaged stretches skipped",
///         recovery.outcomes.len(),
///         recovery.damage.len()
///     );
/// }
/// # let _ = log;
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Recovery<T> {
    /// Per restored job: its id and what the misfire policy did with it.
    pub outcomes: Vec<(u64, Outcome)>,
    /// Missed jobs the policy dead-lettered, handed back (and written off
    /// in the journal).
    pub dead_letters: Vec<PendingJob<T>>,
    /// Stretches of the file that did not decode and were skipped.
    pub damage: Vec<Damage>,
    /// Jobs whose stored payload did not decode, as `(id, bytes)`; written
    /// off in the journal.
    pub undecodable: Vec<(u64, Vec<u8>)>,
}

/// A handle to a durable job: for [`DurableTimer::cancel`] and
/// [`DurableTimer::reset`]. `id` is the job's id in the journal, stable
/// across restarts.
///
/// ```
/// # fn f(h: tickwheel::persist::DurableHandle) -> u64 {
/// h.id()
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DurableHandle {
    handle: TimerHandle,
    id: u64,
}

impl DurableHandle {
    /// The job's id in the journal.
    ///
    /// ```
    /// # fn f(h: tickwheel::persist::DurableHandle) -> u64 { h.id() }
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }
}

/// A job inside the timer: its journal id and value.
#[derive(Clone)]
struct Job<T> {
    id: u64,
    value: T,
}

/// The open journal file and its sync state.
struct Log {
    file: Mutex<File>,
    sync: SyncPolicy,
    /// Written since the last sync (for `SyncPolicy::Every`).
    dirty: AtomicBool,
    /// Records that could not be written (disk full, ...) from the
    /// driver thread, where nobody can be told.
    write_errors: AtomicU64,
    stop: AtomicBool,
}

impl Log {
    fn lock(&self) -> MutexGuard<'_, File> {
        self.file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Appends one record and syncs as the policy says.
    fn append(&self, record: &Record) -> io::Result<()> {
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

    fn sync_if_dirty(&self) {
        if self.dirty.swap(false, Ordering::AcqRel) && self.lock().sync_data().is_err() {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Runs each fired job's handler on the driver thread, then writes `done`.
struct RunAndRecord<T> {
    handler: Box<dyn Fn(T) + Send + Sync>,
    log: Arc<Log>,
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

/// Delayed jobs that survive a crash: a [`Timer`] whose every schedule,
/// cancel, reset and completed run is written to a journal (format in
/// `src/persist/format.rs`).
///
/// # What is written when
///
/// | call | journal | then |
/// |------|---------|------|
/// | `schedule` | `schedule(id, due, payload)` | the job joins the timer; `schedule` returns |
/// | `cancel` | `cancel(id)` | the job leaves the timer (if it has not fired) |
/// | `reset` | `reset(id, due)` | the job moves |
/// | a job fires | nothing | the handler runs, and when it returns: `done(id)` |
/// | `open` | a compacted file: the id watermark and the pending jobs | the jobs are restored |
///
/// Intent is written before the timer acts, and `done` only after the
/// handler has returned. So, with [`SyncPolicy::Always`], **every job
/// whose `schedule` returned is, after a crash, either run (its handler
/// returned and `done` was written), cancelled, or restored and run
/// later: delivery is at least once.** A job whose handler ran, or was
/// running, when the process died, without its `done` reaching the disk,
/// runs again after the restart, and so does a job whose handler
/// panicked (it never completed). A cancel that found its job pending is
/// journaled before the timer acts, so that job stays cancelled after a
/// crash (even if the fire wins the race that follows); a cancel that came
/// too late (the job had been taken to run) writes nothing.
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
/// are written off as cancelled; the dead letters are handed back.
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
    timer: Timer<Job<T>, RunAndRecord<T>>,
    log: Arc<Log>,
    next_id: AtomicU64,
    flusher: Option<JoinHandle<()>>,
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
    /// start. Damaged records are not an error: they are skipped and
    /// reported in [`Recovery::damage`].
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
        let path = path.as_ref();
        let replayed = replay(path)?;
        let mut recovery = Recovery {
            outcomes: Vec::new(),
            dead_letters: Vec::new(),
            damage: replayed.damage,
            undecodable: Vec::new(),
        };
        let mut jobs = Vec::new();
        let mut live = Vec::new();
        for (id, (due, payload)) in replayed.pending {
            match T::decode(&payload) {
                Some(value) => {
                    live.push(Record::Schedule { id, due, payload });
                    jobs.push(PendingJob {
                        due,
                        repeat: None,
                        value: Job { id, value },
                    });
                }
                None => recovery.undecodable.push((id, payload)),
            }
        }
        let file = compact(path, replayed.max_id, &live)?;
        let log = Arc::new(Log {
            file: Mutex::new(file),
            sync,
            dirty: AtomicBool::new(false),
            write_errors: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let timer = Timer::builder()
            .clock(clock)
            .executor(RunAndRecord {
                handler: Box::new(handler),
                log: Arc::clone(&log),
            })
            .build()
            .map_err(JournalError::Build)?;
        let flusher = match sync {
            SyncPolicy::Every(every) => Some(spawn_flusher(Arc::clone(&log), every)?),
            _ => None,
        };
        let durable = DurableTimer {
            timer,
            log,
            next_id: AtomicU64::new(replayed.max_id.saturating_add(1)),
            flusher,
        };
        let ids: Vec<u64> = jobs.iter().map(|job| job.value.id).collect();
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
        for (&id, outcome) in ids.iter().zip(&report.outcomes) {
            if matches!(outcome, Outcome::Discarded | Outcome::DeadLettered) {
                durable.log.append(&Record::Cancel { id })?;
            }
            recovery.outcomes.push((id, *outcome));
        }
        for (id, _) in &recovery.undecodable {
            durable.log.append(&Record::Cancel { id: *id })?;
        }
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
    /// [`ScheduleError`] with the value: the timer is full or shut down, or
    /// the journal could not be written ([`ScheduleErrorKind::Journal`]).
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
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (now, wall) = self.timer.clock_now();
        let due = wall.checked_add(delay).unwrap_or(wall);
        let deadline = now.checked_add(delay).unwrap_or(now);
        let record = Record::Schedule {
            id,
            due,
            payload: value.encode(),
        };
        if self.log.append(&record).is_err() {
            return Err(ScheduleError::new(ScheduleErrorKind::Journal, value));
        }
        match self.timer.schedule_at(deadline, Job { id, value }) {
            Ok(handle) => Ok(DurableHandle { handle, id }),
            Err(err) => {
                // Written off, so a restart does not resurrect it.
                let _ = self.log.append(&Record::Cancel { id });
                Err(err.map(|job| job.value))
            }
        }
    }

    /// Cancels a job: `Some(value)` if it will never run, `None` if it has
    /// run or is running, or the handle is stale. The cancel is in the
    /// journal before the timer acts, so a cancelled job never comes back
    /// after a restart.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-cancel-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Always, &Default::default(), |_| {})?;
    /// let job = jobs.schedule(std::time::Duration::from_secs(900), 17)?;
    /// assert_eq!(jobs.cancel(job), Some(17));
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(&self, handle: DurableHandle) -> Option<T> {
        if !self.timer.is_pending(handle.handle) {
            return None;
        }
        if self.log.append(&Record::Cancel { id: handle.id }).is_err() {
            self.log.write_errors.fetch_add(1, Ordering::Relaxed);
        }
        self.timer.cancel(handle.handle).map(|job| job.value)
    }

    /// Moves a pending job to `delay` from now; `false` if it has run, is
    /// running, or the handle is stale.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-reset-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Always, &Default::default(), |_| {})?;
    /// let job = jobs.schedule(std::time::Duration::from_secs(900), 17)?;
    /// assert!(jobs.reset(job, std::time::Duration::from_secs(1800)));
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&self, handle: DurableHandle, delay: Duration) -> bool {
        if !self.timer.is_pending(handle.handle) {
            return false;
        }
        let (now, wall) = self.timer.clock_now();
        let due = wall.checked_add(delay).unwrap_or(wall);
        if self
            .log
            .append(&Record::Reset { id: handle.id, due })
            .is_err()
        {
            self.log.write_errors.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        self.timer
            .reset_at(handle.handle, now.checked_add(delay).unwrap_or(now))
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

    /// Records that could not be written from the driver thread (a `done`
    /// after a run) or synced by the background flusher. Each such job may
    /// run again after a restart.
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
        self.log.write_errors.load(Ordering::Relaxed)
    }
}

impl<T: Send + 'static> Drop for DurableTimer<T> {
    /// Stops the timer (pending jobs stay in the journal for the next
    /// open), stops the flusher and syncs the journal.
    fn drop(&mut self) {
        drop(self.timer.shutdown_unfired());
        self.log.stop.store(true, Ordering::Release);
        if let Some(flusher) = self.flusher.take() {
            flusher.thread().unpark();
            let _ = flusher.join();
        }
        if self.log.lock().sync_data().is_err() {
            self.log.write_errors.fetch_add(1, Ordering::Relaxed);
        }
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

fn spawn_flusher(log: Arc<Log>, every: Duration) -> io::Result<JoinHandle<()>> {
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

/// The misfire policy for jobs wrapped with their ids: the same settings;
/// a reschedule function sees the job without its id.
fn job_policy<T: Clone + Send + Sync + 'static>(
    policy: &MisfirePolicy<T>,
) -> MisfirePolicy<Job<T>> {
    use super::OnMissed;
    let on_missed = match policy.on_missed.clone() {
        OnMissed::FireNow => OnMissed::FireNow,
        OnMissed::Spread(window) => OnMissed::Spread(window),
        OnMissed::Discard => OnMissed::Discard,
        OnMissed::DeadLetter => OnMissed::DeadLetter,
        OnMissed::Reschedule(pick) => OnMissed::Reschedule(Arc::new(
            move |job: &PendingJob<Job<T>>, now: SystemTime| {
                let plain = PendingJob {
                    due: job.due,
                    repeat: job.repeat,
                    value: job.value.value.clone(),
                };
                pick(&plain, now)
            },
        )),
    };
    MisfirePolicy {
        threshold: policy.threshold,
        on_missed,
        max_catch_up: policy.max_catch_up,
    }
}

/// What a journal file holds.
struct Replayed {
    pending: BTreeMap<u64, (SystemTime, Vec<u8>)>,
    max_id: u64,
    damage: Vec<Damage>,
}

/// Reads and folds the journal at `path` (none: empty).
fn replay(path: &Path) -> Result<Replayed, JournalError> {
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
fn compact(path: &Path, max_id: u64, live: &[Record]) -> io::Result<File> {
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
