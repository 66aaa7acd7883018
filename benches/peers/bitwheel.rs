//! `bitwheel` 0.6: a hierarchical wheel **without cascading** (`BitWheel<T,
//! 3, 1, 65_536, 8>`: the crate's `PreciseWheel` shape, 3 gears of 64 slots
//! at 1 ms, 8 probes, with each slot's fixed capacity raised from 32 to
//! 65,536 so that 10^6 timers fit).
//!
//! How it works, and what that means for the comparison:
//!
//! - Every slot is a fixed array allocated and written at construction
//!   (3 × 64 × 65,536 entries of 32 bytes: 384 MiB), so no insert faults a
//!   page in, and capacity cannot be asked for: it is the type. A slot
//!   that is full makes `insert` probe the next ones (up to 8), then fail;
//!   the adapter panics on a failure, and no workload here hits one. The
//!   crate's own `PreciseWheel` (32 a slot, 6,144 timers in all) could not
//!   hold the workloads.
//! - **It fires early.** A timer stays in the gear its delay picks and
//!   fires when that gear's slot comes up, at the *start* of the slot: a
//!   delay of 64 to 4,095 ticks fires up to 63 ticks early, 4,096 to
//!   262,143 ticks up to 4,095 early (its README calls this coarser
//!   resolution; it is early, not late). The workloads count these fires;
//!   they also make bitwheel's outcome differ from the exact peers', which
//!   the run reports and does not treat as an error for this peer.
//! - Handles (`TimerHandle`) are move-only, so this peer is [`Timers`]
//!   only, like nexus-timer. Worse, `cancel` decides that a timer has fired
//!   by comparing its *deadline* with the current tick; a timer that fired
//!   early still looks pending, and cancelling it removes whatever occupies
//!   its entry now (another timer, or a vacant entry, which the crate
//!   declares unreachable: undefined behaviour). The workloads never
//!   cancel the handle of a fired timer, so they never take that path.
//! - Time is an `Instant`: tick `t` is `epoch + t ms` (a 128-bit division
//!   per conversion, `as_millis`). Firing calls `Timer::fire` on each
//!   expired value with a `Vec` as context, which the adapter drains.

use core::time::Duration;
use std::time::Instant;

use ::bitwheel::timer::{BitWheel, Timer, TimerHandle};

use super::Timers;

/// Each slot's fixed capacity: enough for 10^6 timers with delays up to
/// 65,536 ticks (about 62,500 land in each of 16 slots of gear 2).
const SLOT_CAP: usize = 65_536;

/// The value a timer carries; firing pushes it to the context.
pub(crate) struct Fire(u64);

impl Timer for Fire {
    type Context = Vec<u64>;

    #[inline]
    fn fire(&mut self, due: &mut Vec<u64>) {
        due.push(self.0);
    }
}

type Wheel = BitWheel<Fire, 3, 1, SLOT_CAP, 8>;

/// The wheel (boxed: its gears are inline arrays), its epoch and a reusable
/// buffer for `poll`.
pub(crate) struct BitWheelPeer {
    wheel: Box<Wheel>,
    epoch: Instant,
    due: Vec<u64>,
}

impl BitWheelPeer {
    /// A wheel; its capacity is fixed by its type, so the hint is unused.
    pub(crate) fn new() -> Self {
        let epoch = Instant::now();
        BitWheelPeer {
            wheel: Wheel::boxed_with_epoch(epoch),
            epoch,
            due: Vec::with_capacity(4096),
        }
    }

    #[inline]
    fn instant(&self, tick: u64) -> Instant {
        self.epoch + Duration::from_millis(tick)
    }
}

impl Timers for BitWheelPeer {
    type Handle = TimerHandle;

    #[inline]
    fn schedule(&mut self, deadline: u64, value: u64) -> TimerHandle {
        let at = self.instant(deadline);
        match self.wheel.insert(at, Fire(value)) {
            Ok(handle) => handle,
            Err(_) => panic!("bitwheel: slot and its 8 probes full at tick {deadline}"),
        }
    }

    #[inline]
    fn cancel_pending(&mut self, handle: TimerHandle) -> Option<u64> {
        self.wheel.cancel(handle).map(|Fire(value)| value)
    }

    fn poll(&mut self, now: u64, mut fired: impl FnMut(u64)) {
        let at = self.instant(now);
        self.wheel.poll(at, &mut self.due);
        for value in self.due.drain(..) {
            fired(value);
        }
    }
}
