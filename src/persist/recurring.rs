//! Job schedulers on a [`DurableTimer`]: `upsert_schedule`,
//! `remove_schedule` and `schedules`, and their restoration at open. How
//! the runs go is in `schedulers.rs`.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use std::time::SystemTime;

use super::durable::DurableTimer;
use super::folded::Folded;
use super::format::{payload_room, Named, Record, MAX_KEY, MAX_TIMETABLE};
use super::job::Job;
use super::payload::Payload;
use super::schedulers::{
    deadline_of, first_at_open, micros, newest_per_key, wall_at, Entry, Found,
};
use super::{PendingJob, Recovery};
use crate::event::event;
use crate::schedule::{Schedule, Upserted};
use crate::timer::{ScheduleError, ScheduleErrorKind};

/// A job scheduler of a [`DurableTimer`], as
/// [`DurableTimer::schedules`] lists it.
///
/// ```
/// fn show(s: &tickwheel::persist::JournaledSchedule) -> String {
///     format!("{} ({}) next {:?}", s.key, s.timetable, s.next)
/// }
/// # let _ = show;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JournaledSchedule {
    /// The key it was upserted under.
    pub key: String,
    /// Its timetable, as it reads: `every 30s` or
    /// `cron "0 30 18 * * Mon-Fri" America/New_York`.
    pub timetable: String,
    /// The instant of its next run (or of the run in progress).
    pub next: SystemTime,
    /// Its journal id: a new one at each change.
    pub id: u64,
}

impl<T> DurableTimer<T>
where
    T: Payload + Clone + Send + Sync + 'static,
{
    /// Creates or changes the job scheduler `key`: `value` runs through
    /// the handler at each instant of `schedule`, every period or by a
    /// cron expression ([`Schedule`]), for as long as the journal lives.
    ///
    /// An upsert with the timetable and value the scheduler has already
    /// changes nothing ([`Upserted::Unchanged`]), so a service can upsert
    /// its schedulers at every start. A different one replaces the
    /// scheduler: its next run is cancelled (a run in progress finishes)
    /// and the new timetable's first instant after now is scheduled.
    ///
    /// Each run is journaled as done, and the next one scheduled, when its
    /// handler returns: a run cut short by a crash runs again at the next
    /// open, so a run can happen twice, around a crash, and never not at
    /// all. Instants that fell due while the journal was closed (more than
    /// [`MISSED_AFTER`](crate::schedule::MISSED_AFTER) late) follow the
    /// timetable's [`Missed`](crate::schedule::Missed), not the journal's
    /// [`MisfirePolicy`](super::MisfirePolicy). Scheduler keys are their
    /// own: a keyed job ([`schedule_keyed`](Self::schedule_keyed)) may
    /// have the same key.
    ///
    /// # Errors
    ///
    /// [`ScheduleError`] with the value: [`ScheduleErrorKind::OutOfRange`]
    /// for a period shorter than [`MIN_PERIOD`](crate::schedule::MIN_PERIOD)
    /// or longer than about 142 years, or a timetable with no instant left;
    /// [`ScheduleErrorKind::TooLarge`] for a key over
    /// [`MAX_KEY`](super::MAX_KEY) bytes, or key, timetable and value that
    /// do not fit a record; as [`schedule`](Self::schedule) for the
    /// journal and the timer. An `Err` changes nothing.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-upsert-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// use std::time::Duration;
    /// use tickwheel::persist::{DurableTimer, MisfirePolicy, SyncPolicy};
    /// use tickwheel::schedule::{Schedule, Upserted};
    ///
    /// let (tx, runs) = std::sync::mpsc::channel();
    /// let tx = std::sync::Mutex::new(tx);
    /// let (jobs, _) = DurableTimer::open(dir.join("jobs.journal"), SyncPolicy::Always, &MisfirePolicy::default(), move |job: String| {
    ///     tx.lock().unwrap().send(job).unwrap();
    /// })?;
    /// let every = Schedule::every(Duration::from_millis(20));
    /// assert_eq!(jobs.upsert_schedule("sweep", &every, "sweep".to_string())?, Upserted::Created);
    /// assert_eq!(jobs.upsert_schedule("sweep", &every, "sweep".to_string())?, Upserted::Unchanged);
    /// assert_eq!(runs.recv_timeout(Duration::from_secs(5))?, "sweep");
    /// assert_eq!(runs.recv_timeout(Duration::from_secs(5))?, "sweep");
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn upsert_schedule(
        &self,
        key: &str,
        schedule: &Schedule,
        value: T,
    ) -> Result<Upserted, ScheduleError<T>> {
        let refuse = |kind, value| Err(ScheduleError::new(kind, value));
        if schedule.check().is_err() {
            return refuse(ScheduleErrorKind::OutOfRange, value);
        }
        let timetable = schedule.encode();
        let payload = value.encode();
        let named = Named::Recurring(key, &timetable);
        if key.len() > MAX_KEY
            || timetable.len() > MAX_TIMETABLE
            || payload.len() > payload_room(named)
        {
            return refuse(ScheduleErrorKind::TooLarge, value);
        }
        let _turn = self.schedulers.changes.lock();
        if self.schedulers.holds(key, schedule, &payload) {
            return Ok(Upserted::Unchanged);
        }
        let (now, wall) = self.timer.clock_now();
        let Some(first) = schedule.next_after(micros(wall)) else {
            return refuse(ScheduleErrorKind::OutOfRange, value);
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let record = Record::Recurring {
            id,
            due: wall_at(first),
            key: String::from(key),
            timetable,
            payload: payload.clone(),
        };
        if !self.log.append_job(id, record) {
            return refuse(ScheduleErrorKind::Journal, value);
        }
        let key: Arc<str> = Arc::from(key);
        let entry = Entry {
            id,
            schedule: Arc::new(schedule.clone()),
            payload,
            instant: first,
            handle: None,
        };
        let job = Job {
            id,
            key: Some(Arc::clone(&key)),
            value,
            recurring: true,
        };
        let filed = self.schedulers.file(&key, entry, || {
            self.timer.schedule_at(deadline_of(now, wall, first), job)
        });
        let replaced = match filed {
            Ok(replaced) => replaced,
            Err(err) => {
                // Written off; the scheduler it would replace stands.
                self.log.write_off(id);
                return Err(err.map(|job| job.value));
            }
        };
        let Some(old) = replaced else {
            return Ok(Upserted::Created);
        };
        if self.log.append(Record::Cancel { id: old.id }).is_err() {
            // The next open keeps the newer of the two.
            self.log.write_failed();
        }
        if let Some(handle) = old.handle {
            self.timer.cancel(handle);
        }
        Ok(Upserted::Updated)
    }

    /// Removes the job scheduler `key`: `true` if there was one (its next
    /// run is cancelled; a run in progress finishes and makes no next
    /// one). The removal is in the journal before the timer acts; if the
    /// journal cannot take it (a full disk), the answer is `false` and the
    /// scheduler stays.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-unschedule-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Never, &Default::default(), |_| {})?;
    /// use tickwheel::schedule::Schedule;
    /// jobs.upsert_schedule("report", &Schedule::every(std::time::Duration::from_secs(3600)), 7)?;
    /// assert!(jobs.remove_schedule("report"));
    /// assert!(!jobs.remove_schedule("report"));
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_schedule(&self, key: &str) -> bool {
        let _turn = self.schedulers.changes.lock();
        let Some(id) = self.schedulers.id_of(key) else {
            return false;
        };
        if !self.log.append_or_refuse(Record::Cancel { id }) {
            return false; // the scheduler stays
        }
        if let Some(handle) = self.schedulers.take(key, id).and_then(|e| e.handle) {
            self.timer.cancel(handle);
        }
        true
    }

    /// The job schedulers in key order (bytes): at most `limit`, after
    /// `after` (from the first if `None`). Pass the last key of a page to
    /// get the next; a page shorter than `limit` is the last.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-schedules-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Never, &Default::default(), |_| {})?;
    /// use std::time::Duration;
    /// use tickwheel::schedule::Schedule;
    /// jobs.upsert_schedule("heartbeat", &Schedule::every(Duration::from_secs(30)), 1)?;
    /// let listed = jobs.schedules(None, 10);
    /// assert_eq!(listed[0].key, "heartbeat");
    /// assert_eq!(listed[0].timetable, "every 30s");
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedules(&self, after: Option<&str>, limit: usize) -> Vec<JournaledSchedule> {
        self.schedulers
            .page(after, limit)
            .into_iter()
            .map(|(key, id, schedule, instant)| JournaledSchedule {
                key: String::from(&*key),
                timetable: schedule.describe(),
                next: wall_at(instant),
                id,
            })
            .collect()
    }

    /// Schedules the schedulers found at open (module `schedulers.rs`,
    /// "Opening"), and lists them in `recovery`.
    pub(super) fn restore_schedulers(&self, found: Vec<Found<T>>, recovery: &mut Recovery<T>) {
        let (now, wall) = self.timer.clock_now();
        for f in found {
            let Some(first) = first_at_open(&f.schedule, micros(f.due), micros(wall)) else {
                // No instant left: it ended while the journal was closed.
                // Unwritten, the next open finds the same and tries again.
                if self.log.append(Record::Done { id: f.id }).is_err() {
                    self.log.write_failed();
                }
                continue;
            };
            let due = micros(f.due);
            if first != due {
                event!(
                    warn,
                    "a job scheduler's runs fell due while the journal was closed; its timetable's missed policy applies",
                    journal = self.log.name(),
                    key = f.key,
                    missed = alloc::format!("{:?}", f.schedule.missed_policy()),
                    late_s = micros(wall).saturating_sub(due) / 1_000_000
                );
            }
            let key: Arc<str> = Arc::from(f.key.as_str());
            let job = Job {
                id: f.id,
                key: Some(Arc::clone(&key)),
                value: f.value,
                recurring: true,
            };
            let entry = Entry {
                id: f.id,
                schedule: Arc::new(f.schedule),
                payload: f.payload,
                instant: first,
                handle: None,
            };
            let filed = self.schedulers.file(&key, entry, || {
                self.timer.schedule_at(deadline_of(now, wall, first), job)
            });
            match filed {
                Ok(_) => recovery.schedules.push((f.key, wall_at(first))),
                // A timer too small for its journal (or stopping): the
                // scheduler stays in the journal for an open that has room.
                // Not a write error: nothing failed to reach the file.
                Err(err) => event!(
                    error,
                    "a job scheduler could not be resumed: the timer refused its first run; the journal keeps it for the next open",
                    journal = self.log.name(),
                    key = f.key,
                    reason = err.kind()
                ),
            }
        }
    }
}

/// Sorts the pending jobs of a replayed journal: one-shot jobs to restore,
/// schedulers to restore, and (in `recovery`) what does not decode. The
/// undecodable and the older schedulers of a key are written off in
/// `folded`.
pub(super) fn sort_pending<T: Payload>(
    journal: &std::path::Path,
    folded: &mut Folded,
    recovery: &mut Recovery<T>,
) -> (Vec<PendingJob<Job<T>>>, Vec<Found<T>>) {
    let mut jobs = Vec::new();
    let mut found = Vec::new();
    for (&id, job) in &folded.pending {
        let Some(value) = T::decode(&job.payload) else {
            recovery.undecodable.push((id, job.payload.clone()));
            continue;
        };
        match (&job.timetable, &job.key) {
            (Some(text), Some(key)) => match Schedule::decode(text) {
                Some(schedule) => found.push(Found {
                    id,
                    key: key.clone(),
                    schedule,
                    value,
                    payload: job.payload.clone(),
                    due: job.due,
                }),
                // A timetable this build cannot read (a cron schedule
                // without feature `cron`): left in the journal, untouched,
                // for a build that can.
                None => event!(
                    error,
                    "a job scheduler's timetable cannot be read by this build (feature `cron`?); it stays in the journal, and does not run",
                    journal = journal.display(),
                    key = key,
                    id = id
                ),
            },
            _ => jobs.push(PendingJob {
                due: job.due,
                repeat: None,
                value: Job {
                    id,
                    key: job.key.as_deref().map(Arc::from),
                    value,
                    recurring: false,
                },
            }),
        }
    }
    let (found, stale) = newest_per_key(found);
    let written_off = recovery.undecodable.iter().map(|(id, _)| *id);
    for id in written_off.chain(stale).collect::<Vec<_>>() {
        folded.apply(Record::Cancel { id });
    }
    (jobs, found)
}
