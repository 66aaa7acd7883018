//! Keyed jobs: the user's key (an order id) to the pending job that holds
//! it, so that a job can be cancelled or moved by the name it was given,
//! in this process or after a restart.
//!
//! A key names at most one pending job. `schedule_keyed` reserves the key
//! for the new job's id before it writes the record, so two callers racing
//! for one key cannot both write one; the reservation becomes the job's
//! handle once the timer has the job, or goes if the schedule fails. A key
//! is freed when its job is cancelled, is taken to run, or was written off
//! at restore. A job can be taken to run before its handle is filed (its
//! delay was shorter than the journal's write): the release then frees the
//! reservation, since it names the same id, and the late filing finds the
//! slot gone or another job's and leaves it. So a handler that schedules
//! under its own job's key always finds it free. The table's lock is held
//! for table operations only: never across the journal's I/O, never while
//! user code runs.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Bound;

use parking_lot::Mutex;

use super::handle::DurableHandle;

/// Ordered by key, so a listing pages in O(log n + page).
#[derive(Default)]
pub(super) struct Keys {
    table: Mutex<BTreeMap<Arc<str>, Slot>>,
}

#[derive(Clone, Copy)]
enum Slot {
    /// A schedule of job `id` under this key is being written.
    Reserved(u64),
    /// The job that holds the key.
    Held(DurableHandle),
}

impl Keys {
    /// Reserves `key` for new job `id`: `false` if a pending job holds it
    /// or another schedule has reserved it. `pending` says whether a held
    /// job is still pending (one whose release was missed is not).
    pub(super) fn reserve(
        &self,
        key: &Arc<str>,
        id: u64,
        pending: impl Fn(DurableHandle) -> bool,
    ) -> bool {
        let mut table = self.table.lock();
        match table.get(&**key) {
            Some(Slot::Reserved(_)) => false,
            Some(&Slot::Held(handle)) if pending(handle) => false,
            _ => {
                table.insert(Arc::clone(key), Slot::Reserved(id));
                true
            }
        }
    }

    /// Files the job that `key`'s reservation was for, unless the job was
    /// taken to run first (the reservation is gone, or is another's).
    pub(super) fn hold(&self, key: &str, handle: DurableHandle) {
        let mut table = self.table.lock();
        if let Some(slot) = table.get_mut(key) {
            if matches!(*slot, Slot::Reserved(id) if id == handle.id) {
                *slot = Slot::Held(handle);
            }
        }
    }

    /// Gives up job `id`'s reservation: its schedule failed.
    pub(super) fn unreserve(&self, key: &str, id: u64) {
        let mut table = self.table.lock();
        if matches!(table.get(key), Some(&Slot::Reserved(held)) if held == id) {
            table.remove(key);
        }
    }

    /// The job holding `key`, if one does.
    pub(super) fn get(&self, key: &str) -> Option<DurableHandle> {
        match self.table.lock().get(key) {
            Some(&Slot::Held(handle)) => Some(handle),
            _ => None,
        }
    }

    /// Frees `key` if job `id` holds or has reserved it.
    pub(super) fn release(&self, key: &str, id: u64) {
        let mut table = self.table.lock();
        let ours = match table.get(key) {
            Some(&Slot::Held(handle)) => handle.id == id,
            Some(&Slot::Reserved(held)) => held == id,
            None => false,
        };
        if ours {
            table.remove(key);
        }
    }

    /// Up to `limit` held keys after `after` (all if `None`), in key
    /// order, each with its job, for which `pending` says the job is
    /// still pending.
    pub(super) fn page(
        &self,
        after: Option<&str>,
        limit: usize,
        pending: impl Fn(DurableHandle) -> bool,
    ) -> Vec<(Arc<str>, DurableHandle)> {
        let table = self.table.lock();
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        table
            .range::<str, _>((from, Bound::Unbounded))
            .filter_map(|(key, slot)| match *slot {
                Slot::Held(handle) if pending(handle) => Some((Arc::clone(key), handle)),
                _ => None,
            })
            .take(limit)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timer::Timer;
    use core::time::Duration;

    /// A job taken to run between its reservation and its filing (its
    /// delay shorter than the journal's write) frees the key at once: the
    /// handler's schedule under that key gets it, and the late filing
    /// leaves the new reservation alone.
    #[test]
    fn a_job_run_before_it_is_filed_frees_its_key_for_its_handler() {
        let timer = Timer::new().unwrap();
        let first = DurableHandle {
            handle: timer.run_after(Duration::from_secs(3600), || ()).unwrap(),
            id: 1,
        };
        let retry = DurableHandle {
            handle: timer.run_after(Duration::from_secs(3600), || ()).unwrap(),
            id: 2,
        };
        let key: Arc<str> = Arc::from("order");
        let keys = Keys::default();
        let pending = |_: DurableHandle| true;
        assert!(keys.reserve(&key, 1, pending));
        keys.release(&key, 1); // job 1 taken to run, its handler starts
        assert!(keys.reserve(&key, 2, pending), "the handler's retry");
        keys.hold(&key, first); // job 1's schedule files it, late
        assert_eq!(keys.get(&key), None, "the retry's reservation stands");
        keys.hold(&key, retry);
        assert_eq!(keys.get(&key), Some(retry));
        keys.release(&key, 1);
        assert_eq!(keys.get(&key), Some(retry), "job 1 no longer has it");
        keys.unreserve(&key, 2);
        assert_eq!(
            keys.get(&key),
            Some(retry),
            "a filed job is not a reservation"
        );
        keys.release(&key, 2);
        assert_eq!(keys.get(&key), None);
    }
}
