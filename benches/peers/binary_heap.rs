//! The classic baseline: a binary min-heap of deadlines with **lazy
//! cancellation**, over a generational slot table.
//!
//! - A timer lives in a slot of `slots`; its key is `(index, gen)`. Freeing
//!   a slot bumps `gen`, so old keys stop matching.
//! - Each heap entry names a slot and the slot's *version* `seq` when the
//!   entry was pushed. `seq` comes from one global counter, so it also orders
//!   ties first in, first out.
//! - `cancel` frees the slot at once and leaves its heap entry behind;
//!   `reset` gives the slot a new `seq` and pushes a new entry. A popped
//!   entry whose `seq` no longer matches its slot is stale and skipped.
//! - Stale entries are compacted away (`retain` + rebuild, O(n)) once they
//!   outnumber the live timers, so memory and heap depth stay bounded at
//!   O(1) amortised per cancel or reset.
//!
//! Insert and reset are O(log n) (O(1) on average for pushes), expiry is
//! O(log n) per timer.

use alloc::collections::binary_heap::{BinaryHeap, PeekMut};
use core::cmp::Ordering;

use super::Peer;

/// A slot's `seq` while it is free: the counter starts at 1.
const VACANT: u64 = 0;

/// One entry of the heap: 24 bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
struct HeapEntry {
    deadline: u64,
    seq: u64,
    index: u32,
}

impl Ord for HeapEntry {
    /// Reversed, so that std's max-heap pops the earliest `(deadline, seq)`.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        (other.deadline, other.seq).cmp(&(self.deadline, self.seq))
    }
}

impl PartialOrd for HeapEntry {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

struct Slot<T> {
    /// The version of the heap entry that is live for this slot, or
    /// `VACANT`.
    seq: u64,
    /// Bumped every time the slot is freed; part of the key.
    gen: u32,
    value: Option<T>,
}

/// A key: slot index and the slot's generation when the timer was inserted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct HeapKey {
    index: u32,
    gen: u32,
}

/// A binary heap of timers with lazy cancellation.
pub(crate) struct HeapTimers<T> {
    heap: BinaryHeap<HeapEntry>,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    next_seq: u64,
    live: usize,
}

impl<T> HeapTimers<T> {
    /// Compact once the heap holds more than this many entries per live timer
    /// (plus a small floor so tiny heaps are never compacted).
    const STALE_FACTOR: usize = 2;
    const COMPACT_FLOOR: usize = 1024;

    pub(crate) fn new() -> Self {
        HeapTimers {
            heap: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            next_seq: 1,
            live: 0,
        }
    }

    /// Room for `capacity` live timers without reallocating: the heap, the
    /// slot table and the free list (which never holds more indices than
    /// there are slots) each get `capacity` entries. Stale heap entries may
    /// still grow the heap, up to the compaction bound.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        HeapTimers {
            heap: BinaryHeap::with_capacity(capacity),
            slots: Vec::with_capacity(capacity),
            free: Vec::with_capacity(capacity),
            next_seq: 1,
            live: 0,
        }
    }

    #[inline]
    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    #[inline]
    fn slot_mut(&mut self, key: HeapKey) -> Option<&mut Slot<T>> {
        self.slots
            .get_mut(key.index as usize)
            .filter(|slot| slot.gen == key.gen && slot.seq != VACANT)
    }

    /// Frees a slot and returns its value.
    #[inline]
    fn release(&mut self, index: u32) -> T {
        let slot = &mut self.slots[index as usize];
        slot.seq = VACANT;
        slot.gen = slot.gen.wrapping_add(1);
        self.free.push(index);
        self.live -= 1;
        slot.value.take().expect("a live slot holds a value")
    }

    #[inline]
    fn maybe_compact(&mut self) {
        if self.heap.len() > Self::STALE_FACTOR * self.live + Self::COMPACT_FLOOR {
            let slots = &self.slots;
            self.heap.retain(|e| slots[e.index as usize].seq == e.seq);
        }
    }

    pub(crate) fn insert(&mut self, deadline: u64, value: T) -> HeapKey {
        let seq = self.take_seq();
        let index = match self.free.pop() {
            Some(index) => {
                let slot = &mut self.slots[index as usize];
                slot.seq = seq;
                slot.value = Some(value);
                index
            }
            None => {
                let index = u32::try_from(self.slots.len()).expect("fewer than 2^32 timers");
                self.slots.push(Slot {
                    seq,
                    gen: 0,
                    value: Some(value),
                });
                index
            }
        };
        self.live += 1;
        self.heap.push(HeapEntry {
            deadline,
            seq,
            index,
        });
        HeapKey {
            index,
            gen: self.slots[index as usize].gen,
        }
    }

    pub(crate) fn cancel(&mut self, key: HeapKey) -> Option<T> {
        self.slot_mut(key)?;
        let value = self.release(key.index);
        self.maybe_compact();
        Some(value)
    }

    pub(crate) fn reset(&mut self, key: HeapKey, deadline: u64) -> bool {
        let seq = self.next_seq;
        let Some(slot) = self.slot_mut(key) else {
            return false;
        };
        slot.seq = seq;
        self.next_seq += 1;
        self.heap.push(HeapEntry {
            deadline,
            seq,
            index: key.index,
        });
        self.maybe_compact();
        true
    }

    /// Pops every live timer with `deadline <= now`, skipping stale entries.
    pub(crate) fn expire(&mut self, now: u64, mut fired: impl FnMut(u64, T)) {
        loop {
            let entry = match self.heap.peek_mut() {
                Some(top) if top.deadline <= now => PeekMut::pop(top),
                _ => break,
            };
            if self.slots[entry.index as usize].seq == entry.seq {
                let value = self.release(entry.index);
                fired(entry.deadline, value);
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.live
    }
}

impl Peer for HeapTimers<u64> {
    type Key = HeapKey;

    #[inline]
    fn insert(&mut self, deadline: u64, value: u64) -> HeapKey {
        HeapTimers::insert(self, deadline, value)
    }

    #[inline]
    fn cancel(&mut self, key: HeapKey) -> Option<u64> {
        HeapTimers::cancel(self, key)
    }

    #[inline]
    fn reset(&mut self, key: HeapKey, deadline: u64) -> bool {
        HeapTimers::reset(self, key, deadline)
    }

    #[inline]
    fn advance(&mut self, now: u64, mut fired: impl FnMut(u64)) {
        self.expire(now, |_, value| fired(value));
    }
}

/// A quick behavioural check (bench targets have no test harness), run by
/// `compare.rs` before measuring: FIFO ties, stale keys, slot reuse, and
/// compaction keeping the heap bounded.
pub(crate) fn self_check() {
    let mut timers = HeapTimers::new();
    let a = timers.insert(5, 'a');
    timers.insert(5, 'b');
    let c = timers.insert(3, 'c');
    assert_eq!(timers.cancel(c), Some('c'));
    assert_eq!(timers.cancel(c), None);
    assert!(timers.reset(a, 5)); // now behind 'b'
    let d = timers.insert(4, 'd'); // reuses c's slot
    assert_eq!(timers.cancel(c), None);
    let mut order = Vec::new();
    timers.expire(10, |_, v| order.push(v));
    assert_eq!(order, ['d', 'b', 'a']);
    assert!(!timers.reset(d, 20));
    for i in 0..5_000 {
        let key = timers.insert(100 + i, 'x');
        assert!(timers.reset(key, 200 + i));
        assert_eq!(timers.cancel(key), Some('x'));
    }
    assert!(timers.heap.len() <= HeapTimers::<char>::COMPACT_FLOOR);
    assert_eq!(timers.len(), 0);
}
