//! `nexus-timer` 1.5: a hierarchical wheel over a slab (`BoundedWheel<u64>`,
//! its defaults: 1 ms ticks, 64 slots a level, 8x between levels, 7 levels).
//!
//! How it works, and what that means for the comparison:
//!
//! - `BoundedWheel::bounded(capacity, now)` allocates and writes its whole
//!   slab at construction, so its first `capacity` inserts never fault a
//!   page in. Construction is outside the timed part, like every peer's.
//! - A handle (`TimerHandle<u64>`) is an 8-byte pointer that can be neither
//!   copied nor dropped (dropping one is a bug its debug builds assert on):
//!   it must go back through `cancel` or `free`. So this peer is [`Timers`]
//!   only, never [`Peer`](super::Peer): W2, W3 and the W4 of `w4.rs` pass a
//!   key twice (a stale key must answer `None`), which a move-only handle
//!   cannot express without a side table that would cost it a cache miss a
//!   cancel.
//! - A fired timer whose handle is held stays in the slab (a "zombie" in
//!   the crate's words, not a timer that fires) until the handle comes back
//!   through `free`: [`Timers::release_fired`] does that. A timer nobody
//!   will cancel goes in with `schedule_forget` and is freed as it fires.
//! - Time is an `Instant`: tick `t` is `epoch + t ms`, converted by the
//!   crate (a 128-bit multiply by the reciprocal of the tick).
//! - `poll_and_rebalance` is the poll its docs recommend for steady
//!   polling: it collects due timers into a `Vec` and moves the rest of a
//!   due coarse slot down a level. Timers are not moved before that (no
//!   cascade on the way in).
//! - Checked by the workloads: no timer fired before its deadline and no
//!   cancelled timer fired (the counts are printed with every run).

use core::time::Duration;
use std::time::Instant;

use nexus_timer::{BoundedWheel, TimerHandle};

use super::Timers;

/// `BoundedWheel<u64>` with its epoch and a reusable buffer for `poll`.
pub(crate) struct NexusPeer {
    wheel: BoundedWheel<u64>,
    epoch: Instant,
    due: Vec<u64>,
}

impl NexusPeer {
    /// Room for `capacity` timers, written at construction.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        let epoch = Instant::now();
        NexusPeer {
            wheel: BoundedWheel::bounded(capacity.max(1), epoch),
            epoch,
            due: Vec::with_capacity(4096),
        }
    }

    #[inline]
    fn instant(&self, tick: u64) -> Instant {
        self.epoch + Duration::from_millis(tick)
    }
}

impl Timers for NexusPeer {
    type Handle = TimerHandle<u64>;

    #[inline]
    fn schedule(&mut self, deadline: u64, value: u64) -> TimerHandle<u64> {
        let at = self.instant(deadline);
        self.wheel.schedule(at, value)
    }

    #[inline]
    fn schedule_forget(&mut self, deadline: u64, value: u64) {
        let at = self.instant(deadline);
        self.wheel.schedule_forget(at, value);
    }

    #[inline]
    fn cancel_pending(&mut self, handle: TimerHandle<u64>) -> Option<u64> {
        self.wheel.cancel(handle)
    }

    #[inline]
    fn release_fired(&mut self, handle: TimerHandle<u64>) {
        self.wheel.free(handle);
    }

    fn poll(&mut self, now: u64, mut fired: impl FnMut(u64)) {
        let at = self.instant(now);
        self.wheel.poll_and_rebalance(at, &mut self.due);
        for value in self.due.drain(..) {
            fired(value);
        }
    }
}
