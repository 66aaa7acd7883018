//! `tokio_util::time::DelayQueue`, driven the way its users drive it: on a
//! current-thread runtime, here with the clock paused so that one tick is
//! exactly `tokio::time::advance(1 ms)`.
//!
//! Every call that creates or resets the queue's `Sleep` needs the runtime
//! context, so the caller holds `runtime.enter()` for as long as the peer
//! lives (see `compare.rs`). Each tick is one `block_on`: advance the paused
//! clock (the runtime's time driver then fires the queue's `Sleep`), then
//! drain `poll_expired` until it is `Pending`.
//!
//! # The key hole, and what this wrapper does about it
//!
//! A `DelayQueue` key is a bare slab index: once its item has expired, the
//! index is reused by a later insert, and `try_remove(old_key)` would remove
//! that *other* item. To give every peer the same semantics ("a stale key
//! cancels nothing"), each item carries a unique `id` next to its value and
//! the wrapper's key is `(Key, id)`. `cancel` removes by index and, if the
//! removed item has another `id`, puts it straight back (the slab hands out
//! the same index again, asserted) and reports `None`. That costs one extra
//! `insert_at` per stale cancel; [`DelayQueuePeer::reinserted`] counts them.
//!
//! `DelayQueue` has no `contains`/`get`, so `reset` cannot detect a stale
//! key: it is only ever called with live keys (workload W3).

use core::future::poll_fn;
use core::task::Poll;
use core::time::Duration;

use tokio::runtime::Runtime;
use tokio::time::Instant;
use tokio_util::time::delay_queue::{DelayQueue, Key};

use super::Peer;

/// One tick.
const TICK: Duration = Duration::from_millis(1);

/// A paused current-thread runtime with the time driver on.
pub(crate) fn paused_runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

/// The wrapper's key: the queue's slab index plus the item's unique id.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct DqKey {
    key: Key,
    id: u64,
}

/// A `DelayQueue<(value, id)>` with tick ↔ `Instant` conversion.
pub(crate) struct DelayQueuePeer<'rt> {
    runtime: &'rt Runtime,
    queue: DelayQueue<(u64, u64)>,
    /// The paused clock's reading at tick 0.
    origin: Instant,
    now: u64,
    next_id: u64,
    reinserted: u64,
}

impl<'rt> DelayQueuePeer<'rt> {
    /// An empty queue at tick 0. Call inside `runtime.enter()`.
    #[allow(
        dead_code,
        reason = "memory.rs measures the unreserved queue; compare.rs reserves"
    )]
    pub(crate) fn new(runtime: &'rt Runtime) -> Self {
        Self::with_capacity(runtime, 0)
    }

    /// An empty queue at tick 0 whose slab has room for `capacity` items
    /// (`DelayQueue::with_capacity`). Call inside `runtime.enter()`.
    pub(crate) fn with_capacity(runtime: &'rt Runtime, capacity: usize) -> Self {
        DelayQueuePeer {
            runtime,
            queue: DelayQueue::with_capacity(capacity),
            origin: Instant::now(),
            now: 0,
            next_id: 0,
            reinserted: 0,
        }
    }

    /// Stale cancels whose slab index had been reused and whose item had to
    /// be put back.
    pub(crate) fn reinserted(&self) -> u64 {
        self.reinserted
    }

    #[inline]
    fn instant(&self, tick: u64) -> Instant {
        self.origin + Duration::from_millis(tick)
    }
}

impl Peer for DelayQueuePeer<'_> {
    type Key = DqKey;

    #[inline]
    fn insert(&mut self, deadline: u64, value: u64) -> DqKey {
        let id = self.next_id;
        self.next_id += 1;
        let key = self.queue.insert_at((value, id), self.instant(deadline));
        DqKey { key, id }
    }

    #[inline]
    fn cancel(&mut self, key: DqKey) -> Option<u64> {
        let removed = self.queue.try_remove(&key.key)?;
        let deadline = removed.deadline();
        let (value, id) = removed.into_inner();
        if id == key.id {
            return Some(value);
        }
        // The index now belongs to a later item: put it back.
        let again = self.queue.insert_at((value, id), deadline);
        assert_eq!(again, key.key, "slab reuses the index it just freed");
        self.reinserted += 1;
        None
    }

    #[inline]
    fn reset(&mut self, key: DqKey, deadline: u64) -> bool {
        self.queue.reset_at(&key.key, self.instant(deadline));
        true
    }

    fn advance(&mut self, now: u64, mut fired: impl FnMut(u64)) {
        while self.now < now {
            self.now += 1;
            let queue = &mut self.queue;
            let fired = &mut fired;
            self.runtime.block_on(async {
                tokio::time::advance(TICK).await;
                poll_fn(|cx| {
                    while let Poll::Ready(Some(expired)) = queue.poll_expired(cx) {
                        fired(expired.into_inner().0);
                    }
                    Poll::Ready(())
                })
                .await;
            });
        }
    }
}
