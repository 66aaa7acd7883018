//! Keyed jobs on a [`DurableTimer`]: scheduled, cancelled and reset by a
//! name of the caller's (an order id), which the journal keeps, so the
//! job can still be cancelled after a restart. The registry of keys is
//! `keys.rs`; the record is `Record::Keyed` (`format.rs`).

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use core::time::Duration;
use std::time::{Instant, SystemTime};

use super::durable::DurableTimer;
use super::format::{Record, MAX_KEY, MAX_PAYLOAD};
use super::handle::DurableHandle;
use super::job::Job;
use super::payload::Payload;
use crate::metrics::metric;
use crate::timer::{ScheduleError, ScheduleErrorKind};

/// A pending keyed job, as [`DurableTimer::keyed`] lists it.
///
/// ```
/// fn show(job: &tickwheel::persist::KeyedJob) -> String {
///     format!("{} due {:?}", job.key, job.due)
/// }
/// # let _ = show;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyedJob {
    /// The key it was scheduled under.
    pub key: String,
    /// When it is due, by the wall clock (its deadline on the timer's
    /// clock, read now).
    pub due: SystemTime,
    /// Its handle, for [`cancel`](DurableTimer::cancel) and
    /// [`reset`](DurableTimer::reset).
    pub handle: DurableHandle,
}

impl<T> DurableTimer<T>
where
    T: Payload + Clone + Send + Sync + 'static,
{
    /// Schedules `value` to run after `delay` under `key`, a name of the
    /// caller's (an order id) by which [`cancel_key`](Self::cancel_key)
    /// and [`reset_key`](Self::reset_key) find the job, in this process
    /// or, after a restart, in the next one that opens the journal. A key
    /// names at most one pending job; it is free again once its job is
    /// cancelled or taken to run. Otherwise as [`schedule`](Self::schedule).
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule), and
    /// [`ScheduleErrorKind::KeyExists`] with the value if a pending job
    /// has `key`; [`ScheduleErrorKind::TooLarge`] if the key is longer
    /// than [`MAX_KEY`](super::MAX_KEY) bytes or key and value together
    /// do not fit a record.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-keyed-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// use std::time::Duration;
    /// use tickwheel::persist::{DurableTimer, MisfirePolicy, SyncPolicy};
    /// use tickwheel::timer::ScheduleErrorKind;
    ///
    /// let path = dir.join("orders.journal");
    /// let (orders, _) = DurableTimer::open(&path, SyncPolicy::Always, &MisfirePolicy::default(), |_: u64| {})?;
    /// orders.schedule_keyed("order 1017", Duration::from_secs(900), 1017)?;
    /// let again = orders.schedule_keyed("order 1017", Duration::from_secs(900), 1017).unwrap_err();
    /// assert_eq!(again.kind(), ScheduleErrorKind::KeyExists);
    /// drop(orders);
    ///
    /// // After a restart: paid, so the close is cancelled by its key.
    /// let (orders, recovery) = DurableTimer::open(&path, SyncPolicy::Always, &MisfirePolicy::default(), |_: u64| {})?;
    /// assert_eq!(recovery.keys[0].0, "order 1017");
    /// assert_eq!(orders.cancel_key("order 1017"), Some(1017));
    /// # drop(orders); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule_keyed(
        &self,
        key: &str,
        delay: Duration,
        value: T,
    ) -> Result<DurableHandle, ScheduleError<T>> {
        let (now, wall) = self.timer.clock_now();
        let (Some(due), Some(deadline)) = (wall.checked_add(delay), now.checked_add(delay)) else {
            return Err(ScheduleError::new(ScheduleErrorKind::OutOfRange, value));
        };
        let payload = value.encode();
        if key.len() > MAX_KEY || payload.len() + 2 + key.len() > MAX_PAYLOAD {
            return Err(ScheduleError::new(ScheduleErrorKind::TooLarge, value));
        }
        let key: Arc<str> = Arc::from(key);
        // An id lost to a refused reservation leaves a gap, which the
        // journal allows.
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if !self
            .keys
            .reserve(&key, id, |held| self.timer.is_pending(held.handle))
        {
            return Err(ScheduleError::new(ScheduleErrorKind::KeyExists, value));
        }
        let record = Record::Keyed {
            id,
            due,
            key: String::from(&*key),
            payload,
        };
        if !self.log.append_job(id, record) {
            self.keys.unreserve(&key, id);
            return Err(ScheduleError::new(ScheduleErrorKind::Journal, value));
        }
        let job = Job {
            id,
            key: Some(Arc::clone(&key)),
            value,
            recurring: false,
        };
        match self.timer.schedule_at(deadline, job) {
            Ok(handle) => {
                metric!(self.log.metrics.scheduled.increment(1));
                let handle = DurableHandle { handle, id };
                // Not filed if it was taken to run already (`keys.rs`).
                self.keys.hold(&key, handle);
                Ok(handle)
            }
            Err(err) => {
                self.log.write_off(id);
                self.keys.unreserve(&key, id);
                Err(err.map(|job| job.value))
            }
        }
    }

    /// Cancels the pending job scheduled under `key`: `Some(value)` if it
    /// will never run, `None` if no pending job has the key (it ran, is
    /// running, was cancelled, or never was) or the journal cannot take the
    /// cancel, as [`cancel`](Self::cancel) says. Works after a restart: the
    /// key is in the journal.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-cancel-key-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Never, &Default::default(), |_| {})?;
    /// jobs.schedule_keyed("order 18", std::time::Duration::from_secs(900), 18)?;
    /// assert_eq!(jobs.cancel_key("order 18"), Some(18));
    /// assert_eq!(jobs.cancel_key("order 18"), None);
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel_key(&self, key: &str) -> Option<T> {
        self.cancel(self.keys.get(key)?)
    }

    /// Moves the pending job scheduled under `key` to `delay` from now;
    /// `false` if no pending job has the key, or as
    /// [`reset`](Self::reset) says.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-reset-key-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Never, &Default::default(), |_| {})?;
    /// jobs.schedule_keyed("session 7", std::time::Duration::from_secs(60), 7)?;
    /// assert!(jobs.reset_key("session 7", std::time::Duration::from_secs(120)));
    /// assert!(!jobs.reset_key("session 8", std::time::Duration::from_secs(120)));
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset_key(&self, key: &str, delay: Duration) -> bool {
        self.keys
            .get(key)
            .is_some_and(|handle| self.reset(handle, delay))
    }

    /// The pending job scheduled under `key`, or `None` if no pending job
    /// has it. O(log n).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-keyed-job-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Never, &Default::default(), |_| {})?;
    /// jobs.schedule_keyed("order 19", std::time::Duration::from_secs(900), 19)?;
    /// assert_eq!(jobs.keyed_job("order 19").unwrap().key, "order 19");
    /// assert!(jobs.keyed_job("order 20").is_none());
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keyed_job(&self, key: &str) -> Option<KeyedJob> {
        let handle = self.keys.get(key)?;
        let (now, wall) = self.timer.clock_now();
        self.keyed_at(now, wall, Arc::from(key), handle)
    }

    /// `key`'s job with its due time by the wall clock (`wall` at `now`),
    /// or `None` if it has fired.
    fn keyed_at(
        &self,
        now: Instant,
        wall: SystemTime,
        key: Arc<str>,
        handle: DurableHandle,
    ) -> Option<KeyedJob> {
        // A cancel or reset in progress holds the job at the end of time:
        // its turn first, so the due time read is the job's own.
        let deadline = {
            let _turn = self.turns.take(handle.id);
            self.timer.deadline(handle.handle)?
        };
        let due = match deadline.checked_duration_since(now) {
            Some(ahead) => wall.checked_add(ahead)?,
            None => wall.checked_sub(now.duration_since(deadline))?,
        };
        Some(KeyedJob {
            key: String::from(&*key),
            due,
            handle,
        })
    }

    /// Pending keyed jobs in key order (bytes): at most `limit`, after
    /// `after` (from the first if `None`). Pass the last key of a page to
    /// get the next; a page shorter than `limit` is the last. O(log n +
    /// limit) however many jobs are pending.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-keyed-list-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Never, &Default::default(), |_| {})?;
    /// use std::time::Duration;
    /// for order in 1..=5 {
    ///     jobs.schedule_keyed(&format!("order {order}"), Duration::from_secs(900), order)?;
    /// }
    /// let first = jobs.keyed(None, 2);
    /// assert_eq!(first.iter().map(|j| j.key.as_str()).collect::<Vec<_>>(), ["order 1", "order 2"]);
    /// let rest = jobs.keyed(Some(&first[1].key), 10);
    /// assert_eq!(rest.len(), 3);
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keyed(&self, after: Option<&str>, limit: usize) -> Vec<KeyedJob> {
        let (now, wall) = self.timer.clock_now();
        let mut page = Vec::new();
        let mut from: Option<Arc<str>> = after.map(Arc::from);
        loop {
            let want = limit - page.len();
            let held = self.keys.page(from.as_deref(), want, |held| {
                self.timer.is_pending(held.handle)
            });
            let more = held.len() == want && want > 0;
            from = held.last().map(|(key, _)| Arc::clone(key));
            // A job that fired since the table was read is not listed; the
            // page is filled from past it, or a short page would not be
            // the last, as promised.
            page.extend(
                held.into_iter()
                    .filter_map(|(key, handle)| self.keyed_at(now, wall, key, handle)),
            );
            if page.len() == limit || !more {
                return page;
            }
        }
    }
}
