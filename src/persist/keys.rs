//! Keyed jobs: the user's key (an order id) to the pending job that holds
//! it, so that a job can be cancelled or moved by the name it was given,
//! in this process or after a restart.
//!
//! A key names at most one pending job. `schedule_keyed` reserves the key
//! before it writes the record, so two callers racing for one key cannot
//! both write one; the reservation becomes the job's handle once the timer
//! has the job, or goes if the schedule fails. A key is freed when its job
//! is cancelled, is taken to run, or was written off at restore. A slot
//! whose job has gone without freeing it (it fired between the timer
//! taking it and the handle being filed) is recognised by its stale
//! handle and reused. The table's lock is held for table operations only:
//! never across the journal's I/O, never while user code runs.

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
    /// A schedule under this key is being written.
    Reserved,
    /// The job that holds the key.
    Held(DurableHandle),
}

impl Keys {
    /// Reserves `key` for a new job: `false` if a pending job holds it or
    /// another schedule has reserved it. `pending` says whether a held
    /// job is still pending.
    pub(super) fn reserve(&self, key: &Arc<str>, pending: impl Fn(DurableHandle) -> bool) -> bool {
        let mut table = self.table.lock();
        match table.get(&**key) {
            Some(Slot::Reserved) => false,
            Some(&Slot::Held(handle)) if pending(handle) => false,
            _ => {
                table.insert(Arc::clone(key), Slot::Reserved);
                true
            }
        }
    }

    /// Files the job that a reservation was for.
    pub(super) fn hold(&self, key: &Arc<str>, handle: DurableHandle) {
        self.table
            .lock()
            .insert(Arc::clone(key), Slot::Held(handle));
    }

    /// Gives up a reservation whose schedule failed.
    pub(super) fn unreserve(&self, key: &str) {
        let mut table = self.table.lock();
        if matches!(table.get(key), Some(Slot::Reserved)) {
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

    /// Frees `key` if job `id` holds it.
    pub(super) fn release(&self, key: &str, id: u64) {
        let mut table = self.table.lock();
        if matches!(table.get(key), Some(Slot::Held(handle)) if handle.id == id) {
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
