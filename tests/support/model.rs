//! The reference model shared by `tests/wheel/against_model.rs` and the fuzz target
//! (`fuzz/fuzz_targets/wheel_ops.rs`): every pending timer under its
//! effective deadline (`max(deadline, now at insert/reset)`) and a global
//! sequence number, so a poll yields the smallest `(effective deadline,
//! seq)` due by `now`, and `now` never goes back.

use alloc::collections::BTreeMap;
use std::collections::HashMap;

use tickwheel::Tick;

#[derive(Default)]
pub(crate) struct Model {
    pub(crate) now: Tick,
    seq: u64,
    pub(crate) queue: BTreeMap<(Tick, u64), u32>,
    /// value → (queue key, deadline as asked)
    pub(crate) pending: HashMap<u32, ((Tick, u64), Tick)>,
}

impl Model {
    pub(crate) fn insert(&mut self, deadline: Tick, value: u32) {
        let at = (deadline.max(self.now), self.seq);
        self.seq += 1;
        self.queue.insert(at, value);
        self.pending.insert(value, (at, deadline));
    }

    pub(crate) fn cancel(&mut self, value: u32) -> Option<u32> {
        let (at, _) = self.pending.remove(&value)?;
        self.queue.remove(&at);
        Some(value)
    }

    pub(crate) fn reset(&mut self, value: u32, deadline: Tick) -> bool {
        if self.cancel(value).is_none() {
            return false;
        }
        self.insert(deadline, value);
        true
    }

    pub(crate) fn poll(&mut self, now: Tick) -> Option<(Tick, u32)> {
        self.now = self.now.max(now);
        let (&at, _) = self
            .queue
            .iter()
            .next()
            .filter(|(at, _)| at.0 <= self.now)?;
        let value = self.queue.remove(&at).unwrap();
        let (_, deadline) = self.pending.remove(&value).unwrap();
        Some((deadline, value))
    }

    pub(crate) fn earliest(&self) -> Option<Tick> {
        self.queue.keys().next().map(|at| at.0)
    }

    /// Forgets every pending timer (what `Wheel::clear` and a full drain do).
    pub(crate) fn clear(&mut self) {
        self.queue.clear();
        self.pending.clear();
    }
}
