//! The key side of [`Wheel`]: adding, finding, moving and removing timers,
//! and handing every timer back at once.

use super::entry::{Entry, NO_HINT};
use super::iter::{Drain, Iter};
use super::state::{Wheel, CANCEL_BATCH};
use crate::error::CapacityError;
use crate::key::TimerKey;
use crate::Tick;

impl<T> Wheel<T> {
    /// Schedules `value` at `deadline` and returns its key.
    ///
    /// A deadline at or before [`now`](Self::now) counts as `now`: the timer
    /// is due at the next poll, after the timers already due. `deadline`
    /// itself is kept and reported.
    ///
    /// O(1) amortized. The timers are stored in one `Vec`, and an insert that
    /// finds it full grows it, moving every timer: O(n) for that insert.
    /// While [`len`](Self::len) is below [`capacity`](Self::capacity) (see
    /// [`with_capacity`](Self::with_capacity) and [`reserve`](Self::reserve))
    /// an insert does not allocate and is O(1) worst case.
    ///
    /// # Panics
    ///
    /// If the wheel already holds [`MAX_TIMERS`](Self::MAX_TIMERS) timers.
    /// [`try_insert`](Self::try_insert) returns the value instead.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let key = wheel.insert(250, "close unpaid order #17");
    /// assert_eq!(wheel.deadline(key), Some(250));
    /// ```
    #[inline]
    #[track_caller]
    pub fn insert(&mut self, deadline: Tick, value: T) -> TimerKey {
        match self.try_insert(deadline, value) {
            Ok(key) => key,
            Err(_) => full(),
        }
    }

    /// Like [`insert`](Self::insert), but hands the value back if the wheel
    /// is full. The same cost: O(1) amortized, O(1) worst case below
    /// [`capacity`](Self::capacity).
    ///
    /// # Errors
    ///
    /// [`CapacityError`] holding `value` if the wheel already holds
    /// [`MAX_TIMERS`](Self::MAX_TIMERS) timers.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let key = wheel.try_insert(9, 'x').unwrap();
    /// assert_eq!(wheel.get(key), Some(&'x'));
    /// ```
    #[inline]
    pub fn try_insert(&mut self, deadline: Tick, value: T) -> Result<TimerKey, CapacityError<T>> {
        let mut next = self.nodes.entries.next_index();
        if next >= self.nodes.entries.capacity().min(Self::MAX_TIMERS) && self.cancelled_len > 0 {
            // No free node left, but cancelled timers awaiting their batched
            // unlink still hold some: release those rather than grow (or
            // refuse), so that `capacity()` timers fit without allocating.
            self.unlink_cancelled();
            next = self.nodes.entries.next_index();
        }
        if next >= Self::MAX_TIMERS {
            return Err(CapacityError::new(value));
        }
        let stamp = self.stamps.take();
        let index = self.nodes.entries.insert(Entry {
            deadline,
            stamp,
            ahead: NO_HINT,
            value,
        });
        self.file_new(index, deadline);
        Ok(TimerKey { index, stamp })
    }

    /// Schedules `value` to fire at some tick of `[deadline, deadline +
    /// slack]`, chosen by [`coalesce`](super::coalesce) so that timers with
    /// overlapping windows share a tick, and a tickless driver wakes once
    /// for them. The timer's deadline, as [`deadline`](Self::deadline) and
    /// [`Expired`](super::Expired) report it, is that tick. Zero slack is
    /// [`insert`](Self::insert). Same cost and panics as `insert`.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// // Three timers due at 1000, 1010 and 1020 that may each be 30 late.
    /// for deadline in [1_000, 1_010, 1_020] {
    ///     wheel.insert_with_slack(deadline, 30, deadline);
    /// }
    /// // One wake-up fires all three, each inside its window.
    /// assert_eq!(wheel.next_expiration(), Some(1_024));
    /// assert_eq!(wheel.advance(1_024).count(), 3);
    /// ```
    #[track_caller]
    pub fn insert_with_slack(&mut self, deadline: Tick, slack: Tick, value: T) -> TimerKey {
        self.insert(super::coalesce(deadline, slack), value)
    }

    /// Cancels the timer. Returns its value if it was pending, `None` if the
    /// key is stale (fired, cancelled, or from another wheel).
    ///
    /// A timer not yet due (deadline after [`now`](Self::now)) is cancelled
    /// in O(1): its value comes out at once and its unlink joins a batch of
    /// at most 32, done together. A due timer (deadline ≤ `now`) is unlinked
    /// at once; if it was the last one due, the wheel then catches up
    /// (invariant 7 of the [module docs](crate::wheel)): it processes events
    /// up to `now` until a timer is due or none is left, the work the next
    /// [`poll`](Self::poll) would have done. That call then costs as much as
    /// such a poll, O(levels + timers cascaded); each timer cascades at most
    /// once per level, so cancel is O(1) amortized (see [`Wheel`]).
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let key = wheel.insert(15 * 60_000, "refund");
    /// assert_eq!(wheel.cancel(key), Some("refund"));
    /// assert_eq!(wheel.cancel(key), None);
    /// assert!(wheel.is_empty());
    /// ```
    #[inline]
    pub fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let deadline = self.entry(key)?.deadline;
        if deadline <= self.now {
            // Possibly in the due or late list, which must hold only live
            // timers: unlink now.
            self.unlink(key.index);
            let value = self.nodes.entries.take(key.index).value;
            self.catch_up_cold();
            return Some(value);
        }
        // In a slot or the overflow list: the value comes out now, the
        // unlink joins a batch (see `unlink_cancelled`). The links were
        // loaded with the stamp, so the neighbours can start loading now.
        let entry = self.nodes.entries.take_reserved(key.index);
        self.nodes.prefetch_neighbours(key.index);
        self.cancelled[self.cancelled_len] = key.index;
        self.cancelled_len += 1;
        if self.cancelled_len == CANCEL_BATCH {
            self.unlink_cancelled();
        }
        Some(entry.value)
    }

    /// Moves a pending timer to `deadline`, as if it were cancelled and
    /// inserted again (so it goes after timers already at that deadline), but
    /// keeping its key. Returns `false` and does nothing if the key is stale.
    ///
    /// A reset to a deadline no earlier than the current one, of a timer not
    /// yet due (the idle-timeout case), is lazy: it writes the deadline and
    /// leaves the timer where it is filed, which comes due no later; the
    /// timer is filed again then (see the [module docs](crate::wheel)). O(1)
    /// worst case, one cache miss.
    ///
    /// Any other reset unlinks and re-files the timer at once, in O(1). If
    /// afterwards no timer is due (it moved the last due timer into the
    /// future, say), the wheel catches up as [`cancel`](Self::cancel) does:
    /// O(levels) to find that no event is due by [`now`](Self::now), or else
    /// the work the next [`poll`](Self::poll) would have done. O(1) amortized
    /// (see [`Wheel`]).
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let idle = wheel.insert(100, "idle");
    /// assert!(wheel.reset(idle, 500));
    /// assert_eq!(wheel.advance(499).count(), 0);
    /// assert_eq!(wheel.advance(500).count(), 1);
    /// assert!(!wheel.reset(idle, 900)); // fired: stale
    /// ```
    #[inline]
    pub fn reset(&mut self, key: TimerKey, deadline: Tick) -> bool {
        let now = self.now;
        let Some(entry) = self
            .nodes
            .entries
            .get_mut(key.index)
            .filter(|entry| entry.stamp == key.stamp)
        else {
            // A stale key takes no stamp: it would bring the wrap-around
            // of live keys closer.
            return false;
        };
        // Stamps and sequence numbers share one counter (see `Entry::seq`).
        entry.set_reset_seq(self.stamps.take().get());
        if entry.deadline > now && deadline >= entry.deadline {
            // Not yet due, and no earlier: the timer may stay where it is
            // filed, which comes due no later than its new deadline; when
            // it does, the walk files it again (see the module docs).
            entry.deadline = deadline;
            self.lazy = true;
            return true;
        }
        let was_due = entry.deadline <= now;
        entry.deadline = deadline;
        self.move_now(key.index, deadline, was_due);
        true
    }

    /// The rest of a [`reset`](Self::reset) that is not lazy, out of line
    /// so that the lazy one, the idle-timeout case, inlines small.
    #[inline(never)]
    fn move_now(&mut self, index: u32, deadline: Tick, was_due: bool) {
        self.unlink(index);
        self.file_new(index, deadline);
        if was_due {
            // It may have been the last due timer (invariant 7). A timer
            // in a slot leaves the due list as it was.
            self.catch_up_cold();
        }
    }

    /// [`reset`](Self::reset) to some tick of `[deadline, deadline +
    /// slack]`, chosen as [`insert_with_slack`](Self::insert_with_slack)
    /// does. Returns `false` and does nothing if the key is stale.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let idle = wheel.insert(100, "idle");
    /// assert!(wheel.reset_with_slack(idle, 5_000, 1_000));
    /// let at = wheel.deadline(idle).unwrap();
    /// assert!((5_000..=6_000).contains(&at));
    /// ```
    pub fn reset_with_slack(&mut self, key: TimerKey, deadline: Tick, slack: Tick) -> bool {
        self.reset(key, super::coalesce(deadline, slack))
    }

    /// The deadline of a pending timer, as asked for.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let key = wheel.insert(77, ());
    /// assert_eq!(wheel.deadline(key), Some(77));
    /// ```
    pub fn deadline(&self, key: TimerKey) -> Option<Tick> {
        self.entry(key).map(|entry| entry.deadline)
    }

    /// A reference to a pending timer's value.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let key = wheel.insert(5, String::from("job"));
    /// assert_eq!(wheel.get(key).map(String::as_str), Some("job"));
    /// ```
    pub fn get(&self, key: TimerKey) -> Option<&T> {
        self.entry(key).map(|entry| &entry.value)
    }

    /// A mutable reference to a pending timer's value.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let key = wheel.insert(5, 1);
    /// *wheel.get_mut(key).unwrap() += 1;
    /// assert_eq!(wheel.cancel(key), Some(2));
    /// ```
    pub fn get_mut(&mut self, key: TimerKey) -> Option<&mut T> {
        self.entry_mut(key).map(|entry| &mut entry.value)
    }

    /// `true` if the key's timer is pending.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let key = wheel.insert(1, ());
    /// assert!(wheel.contains(key));
    /// wheel.poll(1);
    /// assert!(!wheel.contains(key));
    /// ```
    pub fn contains(&self, key: TimerKey) -> bool {
        self.entry(key).is_some()
    }

    /// Starts loading the key's timer into the cache, and reads nothing: a
    /// hint before a batch of [`cancel`](Self::cancel)s of timers in no
    /// particular order, so that their cache misses overlap instead of
    /// following one another. A stale or foreign key is harmless.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let keys: Vec<_> = (0..64).map(|i| wheel.insert(100 + i, i)).collect();
    /// keys.iter().for_each(|&key| wheel.prefetch(key));
    /// assert!(keys.iter().all(|&key| wheel.cancel(key).is_some()));
    /// ```
    #[inline]
    pub fn prefetch(&self, key: TimerKey) {
        self.nodes.entries.prefetch(key.index);
    }

    /// Removes every pending timer and returns an iterator over their
    /// `(deadline, value)` pairs, in no particular order. For shutdown or a
    /// snapshot to persist.
    ///
    /// The wheel is empty as soon as this returns; dropping the iterator
    /// part-way drops the values it has not yielded, as `Vec::drain` does.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// wheel.insert(10, "a");
    /// wheel.insert(20, "b");
    /// let mut all: Vec<_> = wheel.drain().collect();
    /// all.sort();
    /// assert_eq!(all, [(10, "a"), (20, "b")]);
    /// assert!(wheel.is_empty());
    /// ```
    pub fn drain(&mut self) -> Drain<'_, T> {
        self.forget_lists();
        let remaining = self.nodes.entries.len();
        Drain::new(self.nodes.entries.drain(), remaining)
    }

    /// Drops every pending timer. Keys stay stale forever; the clock is kept.
    ///
    /// If a value's `Drop` panics, the remaining values are still dropped
    /// and the wheel is left empty and usable.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let key = wheel.insert(10, ());
    /// wheel.clear();
    /// assert!(wheel.is_empty() && !wheel.contains(key));
    /// ```
    pub fn clear(&mut self) {
        self.forget_lists();
        // The arena's drain resets its bookkeeping before dropping anything,
        // so a panicking `Drop` cannot leave it inconsistent.
        drop(self.nodes.entries.drain());
    }

    /// An iterator over every pending timer's key, deadline and value, in no
    /// particular order.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let key = wheel.insert(3, "x");
    /// let all: Vec<_> = wheel.iter().collect();
    /// assert_eq!(all, [(key, 3, &"x")]);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter::new(self.nodes.entries.iter(), self.nodes.entries.len())
    }

    #[inline]
    pub(super) fn entry(&self, key: TimerKey) -> Option<&Entry<T>> {
        self.nodes
            .entries
            .get(key.index)
            .filter(|entry| entry.stamp == key.stamp)
    }

    #[inline]
    pub(super) fn entry_mut(&mut self, key: TimerKey) -> Option<&mut Entry<T>> {
        self.nodes
            .entries
            .get_mut(key.index)
            .filter(|entry| entry.stamp == key.stamp)
    }
}

/// `insert`'s panic, out of line so that the inlined insert stays small.
#[cold]
#[inline(never)]
#[track_caller]
fn full() -> ! {
    panic!(
        "tickwheel: the wheel is full ({} timers)",
        crate::Wheel::<()>::MAX_TIMERS
    )
}

#[cfg(test)]
mod tests {
    use super::super::state::CANCEL_BATCH;
    use super::super::Wheel;
    use crate::Tick;
    use alloc::vec::Vec;

    #[test]
    fn inserts_below_capacity_do_not_allocate_while_cancels_are_batched() {
        let mut wheel = Wheel::with_capacity(4);
        let capacity = wheel.capacity();
        let keys: Vec<_> = (0..capacity)
            .map(|i| wheel.insert(100 + i as Tick, i))
            .collect();
        // Not yet due: the unlink is batched and the node stays held.
        assert_eq!(wheel.cancel(keys[0]), Some(0));
        assert_eq!(wheel.cancelled_len, 1);
        assert!(wheel.len() < wheel.capacity());
        let key = wheel.insert(7, capacity);
        assert_eq!(wheel.capacity(), capacity, "the insert grew the storage");
        assert_eq!(key.index, keys[0].index);
        assert!(!wheel.contains(keys[0]));
        let fired: Vec<_> = wheel.advance(Tick::MAX).map(|e| e.value).collect();
        let mut want = alloc::vec![capacity];
        want.extend(1..capacity);
        assert_eq!(fired, want);
    }

    #[test]
    fn at_most_a_batch_of_cancelled_nodes_waits_for_its_unlink() {
        // The bound on deferred unlinks: `CANCEL_BATCH` nodes, whatever the
        // number of cancels. The rest are unlinked and free for reuse.
        let mut wheel = Wheel::with_capacity(100);
        let keys: Vec<_> = (0..100u64).map(|i| wheel.insert(1_000 + i, i)).collect();
        for (n, &key) in keys.iter().enumerate() {
            assert!(wheel.cancel(key).is_some());
            assert!(wheel.cancelled_len < CANCEL_BATCH);
            assert_eq!(wheel.cancelled_len, (n + 1) % CANCEL_BATCH);
        }
        // Every node is back in use without growing the storage.
        let capacity = wheel.capacity();
        for i in 0..100u64 {
            wheel.insert(5_000 + i, i);
        }
        assert_eq!(wheel.capacity(), capacity);
        assert_eq!(wheel.advance(Tick::MAX).count(), 100);
    }

    #[test]
    fn with_capacity_holds_that_many_timers_in_place() {
        let n = if cfg!(miri) { 200 } else { 10_000 };
        let mut wheel = Wheel::with_capacity(n);
        let (capacity, start) = (wheel.capacity(), wheel.nodes.entries.as_ptr());
        assert!(capacity >= n);
        let keys: Vec<_> = (0..n as u64).map(|i| wheel.insert(i % 5_000, i)).collect();
        assert_eq!(wheel.capacity(), capacity, "no insert reallocated");
        assert_eq!(wheel.nodes.entries.as_ptr(), start, "nodes did not move");
        assert!(keys.iter().all(|&key| wheel.contains(key)));
        assert_eq!(wheel.advance(Tick::MAX).count(), n);
    }

    #[test]
    fn churn_at_capacity_keeps_its_cancels_batched() {
        // Filled to the capacity asked for, insert + cancel steps still
        // batch their unlinks (the room includes a batch) and never grow.
        let n = 100;
        let mut wheel = Wheel::with_capacity(n);
        let mut keys: Vec<_> = (0..n as u64).map(|i| wheel.insert(1_000 + i, i)).collect();
        let capacity = wheel.capacity();
        for step in 0..200u64 {
            let key = wheel.insert(2_000 + step, step);
            let old = keys.swap_remove((step as usize * 7) % keys.len());
            assert!(wheel.cancel(old).is_some());
            keys.push(key);
            assert_eq!(wheel.cancelled_len, (step as usize + 1) % CANCEL_BATCH);
        }
        assert_eq!(wheel.capacity(), capacity);
        assert_eq!(wheel.advance(Tick::MAX).count(), n);
    }

    #[test]
    fn reserved_room_survives_batched_cancels() {
        let mut wheel = Wheel::new();
        let keys: Vec<_> = (0..40u64).map(|i| wheel.insert(100 + i, i)).collect();
        for &key in &keys[..20] {
            wheel.cancel(key);
        }
        assert!(wheel.cancelled_len > 0);
        wheel.reserve(30);
        let capacity = wheel.capacity();
        assert!(capacity >= wheel.len() + 30);
        for i in 0..30 {
            wheel.insert(50, i);
        }
        assert_eq!(wheel.capacity(), capacity);
        assert_eq!(wheel.len(), 50);
    }
}
