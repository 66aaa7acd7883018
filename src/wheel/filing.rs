//! Where a timer goes: filing a new, reset or cascading timer into its
//! slot, the overflow list, or the due and late lists; unlinking, including
//! the batch of cancelled timers.

use super::entry::{seq_before, SEQ_MASK};
use super::geometry::{place, Geometry, Place};
use super::list::ListId;
use super::state::Wheel;
use crate::Tick;

impl<T> Wheel<T> {
    /// Files a newly inserted or reset timer: into the wheel if it is in the
    /// future, else behind everything already due at `now`.
    #[inline]
    pub(super) fn file_new(&mut self, index: u32, deadline: Tick) {
        let list = if deadline > self.now {
            self.wheel_list(deadline)
        } else if self.elapsed == self.now && self.nodes.is_empty(self.lists.late) {
            self.lists.due
        } else {
            // Timers up to `now` are not all in the due list yet: queue
            // behind them.
            self.lists.late
        };
        self.nodes.push_back(list, index);
    }

    /// Files `batch`, timers due at `elapsed` taken out of their lists, at
    /// the back of the due list in sequence order: first inserted or reset,
    /// first out. A walk gathers them in list order, which is already
    /// sequence order unless a timer reset lazily was filed again behind
    /// timers filed after its reset; only then is the batch sorted.
    pub(super) fn file_due_in_order(&mut self, batch: &mut alloc::vec::Vec<u32>) {
        let entries = &self.nodes.entries;
        // Ages from the counter's next value, in 31 bits (see `Entry::seq`):
        // exact for timers inserted or reset within 2^31 inserts and resets
        // of each other.
        let next = self.stamps.peek();
        let age = |index: &u32| next.wrapping_sub(entries.entry(*index).seq()) & SEQ_MASK;
        let seq = |index: u32| entries.entry(index).seq();
        if !batch
            .windows(2)
            .all(|pair| seq_before(seq(pair[0]), seq(pair[1])))
        {
            batch.sort_unstable_by_key(|index| core::cmp::Reverse(age(index)));
        }
        for &index in batch.iter() {
            self.nodes.push_back(self.lists.due, index);
        }
        batch.clear();
    }

    /// Re-files a cascading timer, whose deadline is `deadline`, relative to
    /// the new `elapsed`.
    #[inline]
    pub(super) fn refile(&mut self, index: u32, deadline: Tick) {
        let list = if deadline <= self.elapsed {
            self.lists.due
        } else {
            self.wheel_list(deadline)
        };
        self.nodes.push_back(list, index);
    }

    /// The slot (marking it occupied) or the overflow list (lowering its
    /// bound) for a deadline after `elapsed`.
    #[inline]
    pub(super) fn wheel_list(&mut self, deadline: Tick) -> ListId {
        match place(self.geometry, &self.level_by_bit, self.elapsed, deadline) {
            Place::Slot(level, slot) => {
                self.occupied[level as usize] |= 1 << slot;
                self.lists.slot(level, slot)
            }
            Place::Overflow => {
                self.overflow_min = self.overflow_min.min(deadline);
                self.lists.overflow
            }
        }
    }

    /// Unlinks the batch of cancelled timers and frees their nodes.
    ///
    /// Unlinking writes a timer's two list neighbours; after a random cancel
    /// both are usually cache misses. `cancel` prefetched them, and up to
    /// `CANCEL_BATCH` cancels later they have arrived: the misses of a
    /// batch overlap instead of stalling each cancel. Unlinked in cancel
    /// order.
    pub(super) fn unlink_cancelled(&mut self) {
        for i in 0..self.cancelled_len {
            let index = self.cancelled[i];
            self.unlink(index);
            self.nodes.entries.release(index);
        }
        self.cancelled_len = 0;
    }

    #[inline]
    pub(super) fn unlink(&mut self, index: u32) {
        if let Some(emptied) = self.nodes.unlink(index) {
            if let Some((level, slot)) = self.lists.as_slot(emptied) {
                self.occupied[level as usize] &= !(1 << slot);
            } else if emptied == self.lists.overflow {
                // With the list empty there is no sweep to keep `elapsed`
                // from passing the old bound; a stale one would then lie
                // behind the cursor.
                self.overflow_min = Tick::MAX;
            }
        }
    }

    /// Empties every list and bitmap, leaving the entries to be dropped or
    /// drained by the caller.
    pub(super) fn forget_lists(&mut self) {
        self.cancelled_len = 0;
        self.lazy = false;
        self.nodes.reset_lists();
        self.occupied = [0; Geometry::MAX_LEVELS as usize];
        self.overflow_min = Tick::MAX;
        self.elapsed = self.now;
    }
}
