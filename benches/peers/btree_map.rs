//! An ordered map as a timer queue: `BTreeMap<(deadline, seq), index>` over
//! a generational slot table that remembers each live timer's map key, so
//! cancel and reset are an exact remove (+ insert). `seq` is a global
//! counter, so equal deadlines come out first in, first out.
//!
//! Every operation is O(log n); nothing is lazy.

use alloc::collections::BTreeMap;

use super::Peer;

/// A slot's `seq` while it is free: the counter starts at 1.
const VACANT: u64 = 0;

struct Slot<T> {
    deadline: u64,
    seq: u64,
    gen: u32,
    value: Option<T>,
}

/// A key: slot index and the slot's generation when the timer was inserted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct BTreeKey {
    index: u32,
    gen: u32,
}

/// Timers ordered by `(deadline, seq)` in a B-tree.
pub(crate) struct BTreeTimers<T> {
    map: BTreeMap<(u64, u64), u32>,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    next_seq: u64,
}

impl<T> BTreeTimers<T> {
    /// An empty structure with nothing reserved.
    #[allow(
        dead_code,
        reason = "memory.rs measures the unreserved table; compare.rs reserves"
    )]
    pub(crate) fn new() -> Self {
        Self::with_capacity(0)
    }

    /// Room for `capacity` live timers in the slot table and the free list.
    /// The map itself cannot reserve: `BTreeMap` has no `with_capacity`,
    /// it allocates its nodes one at a time.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        BTreeTimers {
            map: BTreeMap::new(),
            slots: Vec::with_capacity(capacity),
            free: Vec::with_capacity(capacity),
            next_seq: 1,
        }
    }

    #[inline]
    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    #[inline]
    fn live(&self, key: BTreeKey) -> Option<&Slot<T>> {
        self.slots
            .get(key.index as usize)
            .filter(|slot| slot.gen == key.gen && slot.seq != VACANT)
    }

    #[inline]
    fn release(&mut self, index: u32) -> T {
        let slot = &mut self.slots[index as usize];
        slot.seq = VACANT;
        slot.gen = slot.gen.wrapping_add(1);
        self.free.push(index);
        slot.value.take().expect("a live slot holds a value")
    }

    pub(crate) fn insert(&mut self, deadline: u64, value: T) -> BTreeKey {
        let seq = self.take_seq();
        let index = match self.free.pop() {
            Some(index) => {
                let slot = &mut self.slots[index as usize];
                slot.deadline = deadline;
                slot.seq = seq;
                slot.value = Some(value);
                index
            }
            None => {
                let index = u32::try_from(self.slots.len()).expect("fewer than 2^32 timers");
                self.slots.push(Slot {
                    deadline,
                    seq,
                    gen: 0,
                    value: Some(value),
                });
                index
            }
        };
        self.map.insert((deadline, seq), index);
        BTreeKey {
            index,
            gen: self.slots[index as usize].gen,
        }
    }

    pub(crate) fn cancel(&mut self, key: BTreeKey) -> Option<T> {
        let slot = self.live(key)?;
        self.map.remove(&(slot.deadline, slot.seq));
        Some(self.release(key.index))
    }

    pub(crate) fn reset(&mut self, key: BTreeKey, deadline: u64) -> bool {
        let Some(slot) = self.live(key) else {
            return false;
        };
        self.map.remove(&(slot.deadline, slot.seq));
        let seq = self.take_seq();
        let slot = &mut self.slots[key.index as usize];
        slot.deadline = deadline;
        slot.seq = seq;
        self.map.insert((deadline, seq), key.index);
        true
    }

    /// Removes and yields every timer with `deadline <= now`, in order.
    pub(crate) fn expire(&mut self, now: u64, mut fired: impl FnMut(u64, T)) {
        while let Some(first) = self.map.first_entry() {
            let deadline = first.key().0;
            if deadline > now {
                break;
            }
            let index = first.remove();
            let value = self.release(index);
            fired(deadline, value);
        }
    }
}

impl Peer for BTreeTimers<u64> {
    type Key = BTreeKey;

    #[inline]
    fn insert(&mut self, deadline: u64, value: u64) -> BTreeKey {
        BTreeTimers::insert(self, deadline, value)
    }

    #[inline]
    fn cancel(&mut self, key: BTreeKey) -> Option<u64> {
        BTreeTimers::cancel(self, key)
    }

    #[inline]
    fn reset(&mut self, key: BTreeKey, deadline: u64) -> bool {
        BTreeTimers::reset(self, key, deadline)
    }

    #[inline]
    fn advance(&mut self, now: u64, mut fired: impl FnMut(u64)) {
        self.expire(now, |_, value| fired(value));
    }
}
