//! Lars Kroll's `hierarchical_hash_wheel_timer`: its cancellable four-level
//! byte wheel (`wheels::cancellable::QuadWheelWithOverflow`), 256 slots per
//! level, one `tick()` per millisecond.
//!
//! How it works, and what that means for the comparison:
//!
//! - Every timer is an `Rc<Entry>` held in an `FxHashMap<Id, Rc<Entry>>`; the
//!   wheel's slots (one `Vec` each) hold `Weak` pointers. Ids are chosen by
//!   the caller; this wrapper hands out `0, 1, 2, …`, never reused.
//! - `cancel(&id)` only removes the map entry: O(1), but **lazy**. The dead
//!   `Weak` stays in its slot, and keeps the `Rc` allocation alive, until the
//!   wheel ticks past that slot (or the wheel is dropped).
//! - `cancel` returns `Result<(), _>`, not the value. The wrapper's key
//!   carries the value, so a successful cancel reports it from the key.
//! - There is **no reset**: it is cancel + insert of a fresh `Rc` under the
//!   same id, with the value from the key (as a caller that owns its value
//!   would). Each reset therefore allocates and leaves a dead `Weak` behind.
//! - `tick()` returns a freshly allocated `Vec` of the expired entries.
//! - Delays are relative to the wheel's own tick count and must be ≥ 1 tick.

use alloc::rc::Rc;
use core::time::Duration;

use hierarchical_hash_wheel_timer::wheels::cancellable::{
    CancellableTimerEntry, QuadWheelWithOverflow,
};

use super::Peer;

/// What the wheel stores, behind an `Rc`: 16 bytes.
#[derive(Debug)]
pub(crate) struct Entry {
    id: u64,
    value: u64,
}

impl CancellableTimerEntry for Entry {
    type Id = u64;

    fn id(&self) -> &u64 {
        &self.id
    }
}

/// The wrapper's key: the timer's id, plus its value (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct HhwtKey {
    id: u64,
    value: u64,
}

/// The cancellable quad wheel, with the tick count it has reached.
pub(crate) struct HhwtPeer {
    wheel: QuadWheelWithOverflow<Entry>,
    now: u64,
    next_id: u64,
}

impl HhwtPeer {
    pub(crate) fn new() -> Self {
        HhwtPeer {
            wheel: QuadWheelWithOverflow::new(),
            now: 0,
            next_id: 0,
        }
    }

    #[inline]
    fn schedule(&mut self, id: u64, value: u64, deadline: u64) {
        assert!(
            deadline > self.now,
            "hhwt takes delays of at least one tick"
        );
        let delay = Duration::from_millis(deadline - self.now);
        self.wheel
            .insert_ref_with_delay(Rc::new(Entry { id, value }), delay)
            .expect("a delay of at least one tick is accepted");
    }
}

impl Peer for HhwtPeer {
    type Key = HhwtKey;

    #[inline]
    fn insert(&mut self, deadline: u64, value: u64) -> HhwtKey {
        let id = self.next_id;
        self.next_id += 1;
        self.schedule(id, value, deadline);
        HhwtKey { id, value }
    }

    #[inline]
    fn cancel(&mut self, key: HhwtKey) -> Option<u64> {
        self.wheel.cancel(&key.id).ok().map(|()| key.value)
    }

    #[inline]
    fn reset(&mut self, key: HhwtKey, deadline: u64) -> bool {
        if self.wheel.cancel(&key.id).is_err() {
            return false;
        }
        self.schedule(key.id, key.value, deadline);
        true
    }

    fn advance(&mut self, now: u64, mut fired: impl FnMut(u64)) {
        while self.now < now {
            self.now += 1;
            for entry in self.wheel.tick() {
                fired(entry.value);
            }
        }
    }
}
