//! [`JournaledJob`]: a pending job as the journal holds it, keyed or not,
//! and [`DurableTimer::journaled`], which pages through them.

use alloc::string::String;
use alloc::vec::Vec;
use std::time::SystemTime;

use super::durable::DurableTimer;
use super::payload::Payload;

/// A pending job as the journal holds it: what the next
/// [`open`](DurableTimer::open) would restore, as
/// [`DurableTimer::journaled`] lists it.
///
/// ```
/// fn show(job: &tickwheel::persist::JournaledJob) -> String {
///     format!("#{} {:?} due {:?}", job.id, job.key, job.due)
/// }
/// # let _ = show;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JournaledJob {
    /// Its journal id ([`DurableHandle::id`](super::DurableHandle::id)):
    /// ids grow in schedule order.
    pub id: u64,
    /// The key it was scheduled under, if any.
    pub key: Option<String>,
    /// `true` for a job scheduler
    /// ([`upsert_schedule`](DurableTimer::upsert_schedule)): its key is
    /// the scheduler's, and `due` the instant of its run still to
    /// complete.
    pub recurring: bool,
    /// When it is due, by the wall clock, as the journal recorded it.
    pub due: SystemTime,
}

impl<T> DurableTimer<T>
where
    T: Payload + Clone + Send + Sync + 'static,
{
    /// Pending jobs as the journal holds them, keyed or not, in id
    /// (schedule) order: at most `limit`, with ids above `after` (from the
    /// first if `None`). Pass the last id of a page to get the next; a page
    /// shorter than `limit` is the last. O(log n + limit) however many jobs
    /// are pending, under the journal's lock for that long (no user code
    /// runs).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-journaled-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Never, &Default::default(), |_| {})?;
    /// use std::time::Duration;
    /// jobs.schedule(Duration::from_secs(900), 1)?;
    /// jobs.schedule_keyed("order 2", Duration::from_secs(900), 2)?;
    /// let page = jobs.journaled(None, 10);
    /// assert_eq!(page.len(), 2);
    /// assert_eq!(page[0].key, None);
    /// assert_eq!(page[1].key.as_deref(), Some("order 2"));
    /// assert!(jobs.journaled(Some(page[1].id), 10).is_empty());
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn journaled(&self, after: Option<u64>, limit: usize) -> Vec<JournaledJob> {
        self.log
            .page(after, limit)
            .into_iter()
            .map(|(id, key, due, recurring)| JournaledJob {
                id,
                key,
                due,
                recurring,
            })
            .collect()
    }
}
