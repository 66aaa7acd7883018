//! The timer structures the benchmarks compare, behind one small trait, and
//! the deterministic inputs every one of them is fed.
//!
//! Every peer stores `u64` values and counts time in abstract ticks (1 ms for
//! the peers that want durations). The workloads (`benches/workloads/`) are
//! written once, generically over [`Peer`], so each peer runs exactly the
//! same operation sequence with exactly the same bookkeeping around it.
//!
//! | module                | structure                                                                     |
//! |-----------------------|-------------------------------------------------------------------------------|
//! | [`tickwheel`]         | `tickwheel::Wheel<u64>`, the crate under test                                 |
//! | [`binary_heap`]       | `BinaryHeap` with lazy cancellation over a generational slot table, FIFO ties |
//! | [`lean_heap`]         | the same with 16-byte `(deadline, slot << 32 \| gen)` entries: no FIFO ties   |
//! | [`btree_map`]         | `BTreeMap<(deadline, seq), index>` over a generational slot table             |
//! | [`tokio_delay_queue`] | `tokio_util::time::DelayQueue` on a paused current-thread runtime             |
//! | [`hhwt`]              | `hierarchical_hash_wheel_timer`'s cancellable quad wheel                      |
//! | [`nexus_timer`]       | `nexus_timer::BoundedWheel`: slab written at construction, move-only handles  |
//! | [`bitwheel`]          | `bitwheel::BitWheel`: no cascading, fixed slots; **fires early** (see there)  |
//!
//! Two traits: [`Peer`] (copyable keys, every workload W1–W4) and
//! [`Timers`] (handles that may be move-only, the server-loop workloads of
//! `workloads/server.rs`). Every `Peer` is `Timers` too; nexus-timer's and
//! bitwheel's handles cannot be copied, so those two are `Timers` only.

pub(crate) mod binary_heap;
#[allow(
    dead_code,
    reason = "memory.rs, tail.rs and instructions.rs use the Peer peers only"
)]
pub(crate) mod bitwheel;
pub(crate) mod btree_map;
pub(crate) mod hhwt;
pub(crate) mod lean_heap;
#[allow(
    dead_code,
    reason = "memory.rs, tail.rs and instructions.rs use the Peer peers only"
)]
pub(crate) mod nexus_timer;
mod rng;
pub(crate) mod tickwheel;
pub(crate) mod tokio_delay_queue;

/// What a workload needs from a timer structure.
///
/// Time starts at tick 0 and only moves forward through
/// [`advance`](Peer::advance). Keys of fired or cancelled timers must be safe
/// to pass back in: `cancel` then returns `None` and touches nothing else.
pub(crate) trait Peer {
    /// The handle [`insert`](Peer::insert) returns.
    type Key: Copy;

    /// Schedules `value` at tick `deadline` (always after the current tick in
    /// these workloads).
    fn insert(&mut self, deadline: u64, value: u64) -> Self::Key;

    /// Cancels a pending timer and returns its value; `None` if the key's
    /// timer has fired or been cancelled.
    fn cancel(&mut self, key: Self::Key) -> Option<u64>;

    /// Moves a pending timer to `deadline`; `false` if the key is stale.
    fn reset(&mut self, key: Self::Key, deadline: u64) -> bool;

    /// Moves time forward to tick `now` and hands every value due by then to
    /// `fired`, in expiry order.
    fn advance(&mut self, now: u64, fired: impl FnMut(u64));
}

/// What the server-loop workloads need: a handle per timer that the caller
/// owns and may not be able to copy. A server keeps the handle beside its
/// connection, cancels it at most once, and gives it back when its timer
/// fires (nexus-timer must be told, or the fired entry is never freed).
pub(crate) trait Timers {
    /// What [`schedule`](Timers::schedule) returns.
    type Handle;

    /// Schedules `value` at tick `deadline` (after the current tick).
    fn schedule(&mut self, deadline: u64, value: u64) -> Self::Handle;

    /// Schedules a timer nobody will cancel, by the structure's cheapest
    /// means (dropping a copyable key; nexus-timer's `schedule_forget`).
    fn schedule_forget(&mut self, deadline: u64, value: u64) {
        drop(self.schedule(deadline, value));
    }

    /// Cancels the pending timer `handle` names; `None` only if a peer lost
    /// it. Never called with the handle of a timer that has fired.
    fn cancel_pending(&mut self, handle: Self::Handle) -> Option<u64>;

    /// Gives back the handle of a timer that has fired.
    fn release_fired(&mut self, handle: Self::Handle) {
        drop(handle);
    }

    /// Moves time to tick `now`, handing every value due by then to `fired`.
    fn poll(&mut self, now: u64, fired: impl FnMut(u64));
}

impl<P: Peer> Timers for P {
    type Handle = P::Key;

    #[inline]
    fn schedule(&mut self, deadline: u64, value: u64) -> P::Key {
        self.insert(deadline, value)
    }

    #[inline]
    fn cancel_pending(&mut self, handle: P::Key) -> Option<u64> {
        self.cancel(handle)
    }

    #[inline]
    fn poll(&mut self, now: u64, fired: impl FnMut(u64)) {
        self.advance(now, fired);
    }
}

pub(crate) use rng::Rng;

impl Rng {
    /// Uniform in `1..=MAX_DELAY`.
    #[inline]
    pub(crate) fn delay(&mut self) -> u64 {
        1 + self.below(MAX_DELAY)
    }
}

/// Delays are uniform in `1..=MAX_DELAY` ticks (65.5 s at 1 ms ticks).
pub(crate) const MAX_DELAY: u64 = 65_536;

/// `n` delays uniform in `1..=MAX_DELAY`, from a fixed seed.
pub(crate) fn delays(seed: u64, n: usize) -> Vec<u64> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.delay()).collect()
}

/// `n` indices uniform in `0..bound`, from a fixed seed.
pub(crate) fn indices(seed: u64, n: usize, bound: usize) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.below(bound as u64) as u32).collect()
}

/// A uniformly random permutation of `0..n` (Fisher–Yates), from a fixed
/// seed.
pub(crate) fn permutation(seed: u64, n: usize) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    let mut order: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}
