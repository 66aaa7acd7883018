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

pub(crate) mod binary_heap;
pub(crate) mod btree_map;
pub(crate) mod hhwt;
pub(crate) mod lean_heap;
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
