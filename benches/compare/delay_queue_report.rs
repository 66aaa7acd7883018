//! [`DelayQueueReport`]: tokio's `DelayQueue` as a peer that reports, when
//! dropped, how many stale cancels hit a reused slab index.

use core::cell::Cell;

use crate::peers::tokio_delay_queue::{DelayQueuePeer, DqKey};
use crate::peers::Peer;

/// A `DelayQueuePeer` that adds its count of put-back items to a total when
/// dropped (outside the timed region).
pub(crate) struct DelayQueueReport<'rt, 'c> {
    inner: DelayQueuePeer<'rt>,
    total: &'c Cell<u64>,
}

impl<'rt, 'c> DelayQueueReport<'rt, 'c> {
    pub(crate) fn new(inner: DelayQueuePeer<'rt>, total: &'c Cell<u64>) -> Self {
        DelayQueueReport { inner, total }
    }
}

impl Drop for DelayQueueReport<'_, '_> {
    fn drop(&mut self) {
        self.total.set(self.total.get() + self.inner.reinserted());
    }
}

impl Peer for DelayQueueReport<'_, '_> {
    type Key = DqKey;

    #[inline]
    fn insert(&mut self, deadline: u64, value: u64) -> DqKey {
        self.inner.insert(deadline, value)
    }

    #[inline]
    fn cancel(&mut self, key: DqKey) -> Option<u64> {
        self.inner.cancel(key)
    }

    #[inline]
    fn reset(&mut self, key: DqKey, deadline: u64) -> bool {
        self.inner.reset(key, deadline)
    }

    fn advance(&mut self, now: u64, fired: impl FnMut(u64)) {
        self.inner.advance(now, fired);
    }
}
