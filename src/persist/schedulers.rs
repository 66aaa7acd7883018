//! Job schedulers on a [`DurableTimer`](super::DurableTimer): recurring
//! jobs whose timetable ([`Schedule`]) lives in the journal.
//!
//! # Data
//!
//! A scheduler is one journal job (record kind 7, `format.rs`): its key,
//! timetable and payload, and `due`, the instant of its run still to
//! complete. The timer holds at most one run per scheduler, the job for
//! that instant.
//!
//! # Runs
//!
//! When a run fires, the handler runs; when it returns, the journal gets
//! `reset(id, next)` for the next instant ([`Schedule::next_due`]: one
//! found more than [`MISSED_AFTER`](crate::schedule::MISSED_AFTER) late
//! follows the timetable's [`Missed`](crate::schedule::Missed)), and the
//! timer gets the next run. So the journal holds one link of the chain at
//! any time: a run whose handler had not returned at a crash runs again at
//! the next open (at least once), and no restart can lose the chain or
//! make two runs for one instant beyond that one. A timetable with no
//! instant left ends its scheduler with `done`. A run whose handler
//! panics does not complete (the journal keeps its instant, so a restart
//! runs it again), but the next run is scheduled all the same: one bad run
//! does not stop a scheduler.
//!
//! # Opening
//!
//! A scheduler's journaled instant found more than `MISSED_AFTER` late
//! (everything was down) follows `Missed` the same way: the first instant
//! still within the grace, the latest missed, or each missed one in turn.
//! Nothing is written at open; the journal moves when a run completes.
//! Two records under one key (a crash inside an upsert that replaced one)
//! leave the newer; the older is written off.
//!
//! # Changing and removing
//!
//! Upserts and removes take turns (one lock, held across their journal
//! writes; no user code runs under it). An upsert whose timetable or
//! payload differs writes the new scheduler, schedules its first run, then
//! cancels the old one (a crash in between leaves both, and the next open
//! keeps the newer); an identical upsert writes nothing. A run of a
//! replaced or removed scheduler that is in flight finishes and makes no
//! next run: the registry below no longer names its id.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::ops::Bound;
use core::panic::AssertUnwindSafe;
use core::time::Duration;
use std::panic;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use super::format::Record;
use super::job::{Job, RunAndRecord};
use super::journal::Log;
use crate::event::event;
use crate::schedule::Schedule;
use crate::timer::{Timer, TimerHandle};

/// The timer of a durable timer, as its executor sees it.
pub(super) type Inner<T> = Timer<Job<T>, RunAndRecord<T>>;

/// Every scheduler of a durable timer, by key.
pub(super) struct Schedulers<T: Send + 'static> {
    table: Mutex<BTreeMap<Arc<str>, Entry>>,
    /// Upserts and removes take turns.
    pub(super) changes: Mutex<()>,
    /// The timer, for the driver to schedule each next run; set once the
    /// timer is built, taken when it stops (the executor would otherwise
    /// keep its own driver alive).
    pub(super) timer: Mutex<Option<Inner<T>>>,
}

/// A scheduler as the registry holds it (its value travels with its run,
/// in the timer).
pub(super) struct Entry {
    /// Its journal id.
    pub(super) id: u64,
    pub(super) schedule: Arc<Schedule>,
    /// The encoded value, to tell an identical upsert.
    pub(super) payload: Vec<u8>,
    /// The instant (µs since the epoch) of the run scheduled or running.
    pub(super) instant: i64,
    /// The run in the timer; `None` while it runs.
    pub(super) handle: Option<TimerHandle>,
}

impl<T: Send + 'static> Default for Schedulers<T> {
    fn default() -> Self {
        Schedulers {
            table: Mutex::new(BTreeMap::new()),
            changes: Mutex::new(()),
            timer: Mutex::new(None),
        }
    }
}

/// `t` in µs since the epoch (negative before it).
pub(super) fn micros(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_micros()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_micros()).map_or(i64::MIN, |b| -b),
    }
}

/// The wall-clock time of `micros` since the epoch.
pub(super) fn wall_at(micros: i64) -> SystemTime {
    let d = Duration::from_micros(micros.unsigned_abs());
    if micros >= 0 {
        UNIX_EPOCH + d
    } else {
        UNIX_EPOCH - d
    }
}

/// The timer's deadline for the instant `at` (µs), with the timer's clock
/// at `now` and the wall clock at `wall`: at once if it has passed.
pub(super) fn deadline_of(now: Instant, wall: SystemTime, at: i64) -> Instant {
    let ahead = wall_at(at).duration_since(wall).unwrap_or(Duration::ZERO);
    // Instants are at most ~142 years ahead (`Schedule::check`).
    now.checked_add(ahead).unwrap_or(now)
}

impl<T: Send + 'static> Schedulers<T> {
    /// Files `entry` under `key` and schedules its run with `schedule`
    /// (given the run's job), under the registry's lock, so that the run
    /// cannot fire before its scheduler is filed. Returns the entry it
    /// replaced, or the timer's refusal.
    pub(super) fn file<E>(
        &self,
        key: &Arc<str>,
        mut entry: Entry,
        schedule: impl FnOnce() -> Result<TimerHandle, E>,
    ) -> Result<Option<Entry>, E> {
        let mut table = self.table.lock();
        entry.handle = Some(schedule()?);
        Ok(table.insert(Arc::clone(key), entry))
    }

    /// Takes `key`'s scheduler out of the registry, if it has id `id`.
    pub(super) fn take(&self, key: &str, id: u64) -> Option<Entry> {
        let mut table = self.table.lock();
        if table.get(key)?.id != id {
            return None;
        }
        table.remove(key)
    }

    /// The id of `key`'s scheduler, if there is one.
    pub(super) fn id_of(&self, key: &str) -> Option<u64> {
        self.table.lock().get(key).map(|entry| entry.id)
    }

    /// Whether `key`'s scheduler has this timetable and encoded value.
    pub(super) fn holds(&self, key: &str, schedule: &Schedule, payload: &[u8]) -> bool {
        self.table
            .lock()
            .get(key)
            .is_some_and(|e| *e.schedule == *schedule && e.payload == payload)
    }

    /// Up to `limit` schedulers after `after` (all if `None`), in key
    /// order: key, id, timetable and the instant of the next run.
    pub(super) fn page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Vec<(Arc<str>, u64, Arc<Schedule>, i64)> {
        let table = self.table.lock();
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        table
            .range::<str, _>((from, Bound::Unbounded))
            .take(limit)
            .map(|(key, e)| (Arc::clone(key), e.id, Arc::clone(&e.schedule), e.instant))
            .collect()
    }

    /// Runs scheduler `key`'s run `id` through `handler`, then journals
    /// and schedules its next run (module docs) with `next_value`. A panic
    /// in the handler goes on to the driver once the next run is
    /// scheduled.
    pub(super) fn run(&self, run: Run<'_, T>, handler: &dyn Fn(T), log: &Log) {
        let Run {
            key,
            id,
            value,
            next_value,
        } = run;
        let instant = self
            .table
            .lock()
            .get_mut(key)
            .filter(|e| e.id == id)
            .map(|entry| {
                entry.handle = None;
                entry.instant
            });
        let Some(instant) = instant else {
            // Removed or replaced after this run left the timer and before
            // it began: the removal cancelled it (it once ran anyway, after
            // `remove_schedule` had answered, outside any `ScheduledRun`).
            return;
        };
        let ran = {
            let _current = CurrentRun::enter(key, instant);
            panic::catch_unwind(AssertUnwindSafe(|| handler(value)))
        };
        self.next(key, id, next_value, ran.is_ok(), log);
        if let Err(panic) = ran {
            panic::resume_unwind(panic);
        }
    }

    /// After run `id` of `key` (`completed` if its handler returned).
    fn next(&self, key: &Arc<str>, id: u64, value: T, completed: bool, log: &Log) {
        let (schedule, instant) = {
            let table = self.table.lock();
            match table.get(key) {
                Some(e) if e.id == id => (Arc::clone(&e.schedule), e.instant),
                // Replaced or removed meanwhile: it makes no next run.
                _ => return,
            }
        };
        // Taken when the timer stops: the journal keeps the scheduler, and
        // a completed run moves it past this instant (a clean drop during
        // a run once left it, and the next open ran the instant again);
        // the next open schedules from there, by the missed policy.
        let Some(timer) = self.timer.lock().clone() else {
            if completed {
                let record = match schedule.next_after(instant) {
                    Some(next) => Record::Reset {
                        id,
                        due: wall_at(next),
                    },
                    None => Record::Done { id },
                };
                if log.append(record).is_err() {
                    log.write_failed();
                }
            }
            return;
        };
        let (now, wall) = timer.clock_now();
        let Some(next) = schedule.next_due(instant, micros(wall)) else {
            // No instant left: the scheduler ends (after a panicked run,
            // at the next open, which runs it again).
            if self.take(key, id).is_some() && completed && log.append(Record::Done { id }).is_err()
            {
                log.write_failed();
            }
            return;
        };
        let due = wall_at(next);
        if completed && log.append(Record::Reset { id, due }).is_err() {
            // The journal keeps this run's instant: a restart runs it again.
            log.write_failed();
        }
        let job = Job {
            id,
            key: Some(Arc::clone(key)),
            value,
            recurring: true,
        };
        let mut table = self.table.lock();
        let Some(entry) = table.get_mut(key).filter(|e| e.id == id) else {
            return;
        };
        match timer.schedule_at(deadline_of(now, wall, next), job) {
            Ok(handle) => {
                entry.handle = Some(handle);
                entry.instant = next;
            }
            Err(err) if err.is_shutdown() => {
                // A clean stop during the run: the journal keeps the
                // scheduler, and the next open resumes it. Not an error.
                event!(
                    debug,
                    "a job scheduler stopped with its timer; the next open resumes it",
                    journal = log.name(),
                    key = &**key
                );
            }
            Err(err) => {
                // Full: the journal keeps the scheduler, and the next open
                // resumes it.
                event!(
                    error,
                    "a job scheduler's next run could not be scheduled",
                    journal = log.name(),
                    key = &**key,
                    reason = err.kind()
                );
            }
        }
    }
}

std::thread_local! {
    /// The scheduler run whose handler this thread is running.
    static CURRENT: RefCell<Option<(Arc<str>, i64)>> = const { RefCell::new(None) };
}

/// Marks this thread as running a scheduler's run until dropped.
struct CurrentRun;

impl CurrentRun {
    fn enter(key: &Arc<str>, instant: i64) -> CurrentRun {
        CURRENT.with(|current| *current.borrow_mut() = Some((Arc::clone(key), instant)));
        CurrentRun
    }
}

impl Drop for CurrentRun {
    fn drop(&mut self) {
        CURRENT.with(|current| current.borrow_mut().take());
    }
}

/// Which run of a job scheduler a handler is running
/// ([`DurableTimer::upsert_schedule`](super::DurableTimer::upsert_schedule)):
/// the scheduler's key and the instant the run is for, which is not the
/// time it runs (a run made up after a restart runs late).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("tickwheel-current-run-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// use std::time::Duration;
/// use tickwheel::persist::{DurableTimer, ScheduledRun, SyncPolicy};
/// use tickwheel::schedule::Schedule;
///
/// let (tx, runs) = std::sync::mpsc::channel();
/// let tx = std::sync::Mutex::new(tx);
/// let (jobs, _) = DurableTimer::open(dir.join("j"), SyncPolicy::Never, &Default::default(), move |_: u64| {
///     tx.lock().unwrap().send(ScheduledRun::current()).unwrap();
/// })?;
/// jobs.upsert_schedule("tick", &Schedule::every(Duration::from_millis(50)), 1)?;
/// let run = runs.recv_timeout(Duration::from_secs(5))?.expect("a scheduler's run");
/// assert_eq!(run.key, "tick");
/// let since_epoch = run.instant.duration_since(std::time::UNIX_EPOCH)?;
/// assert_eq!(since_epoch.as_micros() % 50_000, 0);
/// // Outside a scheduler's run, there is none.
/// assert_eq!(ScheduledRun::current(), None);
/// # drop(jobs); std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduledRun {
    /// The scheduler's key.
    pub key: String,
    /// The instant of its timetable this run is for.
    pub instant: SystemTime,
}

impl ScheduledRun {
    /// The run the calling handler is running, or `None` outside a job
    /// scheduler's run (a one-shot job's handler, or any other code).
    ///
    /// ```
    /// // Not inside a handler: no run.
    /// assert!(tickwheel::persist::ScheduledRun::current().is_none());
    /// ```
    #[must_use]
    pub fn current() -> Option<ScheduledRun> {
        CURRENT.with(|current| {
            current.borrow().as_ref().map(|(key, at)| ScheduledRun {
                key: String::from(&**key),
                instant: wall_at(*at),
            })
        })
    }
}

/// A scheduler's run, as the executor hands it over.
pub(super) struct Run<'a, T> {
    pub(super) key: &'a Arc<str>,
    pub(super) id: u64,
    pub(super) value: T,
    /// A copy, made before the handler runs, for the next run.
    pub(super) next_value: T,
}

/// A scheduler found in the journal at open.
pub(super) struct Found<T> {
    pub(super) id: u64,
    pub(super) key: String,
    pub(super) schedule: Schedule,
    pub(super) value: T,
    pub(super) payload: Vec<u8>,
    pub(super) due: SystemTime,
}

/// Of the schedulers found at open, those to restore (one per key, the
/// newest) and the ids to write off (older ones under a key restored).
pub(super) fn newest_per_key<T>(found: Vec<Found<T>>) -> (Vec<Found<T>>, Vec<u64>) {
    let mut by_key: BTreeMap<String, Found<T>> = BTreeMap::new();
    let mut stale = Vec::new();
    for f in found {
        match by_key.get(&f.key) {
            Some(held) if held.id > f.id => stale.push(f.id),
            _ => {
                if let Some(old) = by_key.insert(f.key.clone(), f) {
                    stale.push(old.id);
                }
            }
        }
    }
    (by_key.into_values().collect(), stale)
}

/// The instant to run first, for a scheduler whose journaled instant is
/// `due`, at `now` (µs): `due` itself unless it is missed, else what the
/// timetable's `Missed` makes of it; `None` if no instant is left.
pub(super) fn first_at_open(schedule: &Schedule, due: i64, now: i64) -> Option<i64> {
    if due >= now.saturating_sub(crate::schedule::MISSED_AFTER_MICROS) {
        return Some(due);
    }
    schedule.next_due(due - 1, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Missed;
    use alloc::vec;

    const S: i64 = 1_000_000;

    #[test]
    fn an_instant_missed_at_open_follows_the_policy() {
        let every = Schedule::every(Duration::from_secs(10));
        let now = 1_000 * S;
        // On time, or within the grace: it runs as it was.
        assert_eq!(first_at_open(&every, 1_000 * S, now), Some(1_000 * S));
        assert_eq!(
            first_at_open(&every, 990 * S, 990 * S + S / 2),
            Some(990 * S)
        );
        // Five minutes down, instants from 700 s missed.
        let down = 700 * S;
        assert_eq!(first_at_open(&every, down, now), Some(990 * S));
        let skip = every.clone().missed(Missed::Skip);
        assert_eq!(first_at_open(&skip, down, now), Some(1_000 * S));
        let all = every.missed(Missed::RunAll);
        assert_eq!(first_at_open(&all, down, now), Some(700 * S));
        // RunAll then steps through each missed instant in turn.
        assert_eq!(all.next_due(700 * S, now), Some(710 * S));
    }

    #[test]
    fn the_newest_record_of_a_key_wins() {
        let found = |id, key: &str| Found {
            id,
            key: key.into(),
            schedule: Schedule::every(Duration::from_secs(1)),
            value: (),
            payload: Vec::new(),
            due: UNIX_EPOCH,
        };
        let (keep, stale) = newest_per_key(vec![
            found(3, "a"),
            found(7, "a"),
            found(5, "b"),
            found(4, "a"),
        ]);
        let kept: Vec<_> = keep.iter().map(|f| (f.key.as_str(), f.id)).collect();
        assert_eq!(kept, [("a", 7), ("b", 5)]);
        let mut stale = stale;
        stale.sort_unstable();
        assert_eq!(stale, [3, 4]);
    }

    #[test]
    fn wall_time_round_trips_in_micros() {
        for t in [0, 1, -1, 1_772_884_800 * S + 123_456, -86_400 * S] {
            assert_eq!(micros(wall_at(t)), t);
        }
    }
}
