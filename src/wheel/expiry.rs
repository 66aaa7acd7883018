//! The time side of [`Wheel`]: moving `now`, catching up with it
//! (invariant 7), taking due timers, cascades, and the next event from the
//! bitmaps.

use core::fmt;
use core::iter::FusedIterator;

use super::entry::seq_before;
use super::geometry::{next_occupied, overflow_sweep_at, slot_start};
use super::list::ListId;
use super::state::{Expired, Wheel};
use crate::key::TimerKey;
use crate::Tick;

/// How many timers `Wheel::next_expiration` reads in a slot above level
/// 0 to name their earliest deadline instead of the slot's start. A
/// tickless driver then wakes once for a lone far timer instead of once per
/// level it passes through (three at 1 µs ticks for a deadline seconds
/// away), and a full slot, whose walk wakes the driver for many timers at
/// once, costs no more than the bitmaps.
const SLOT_PEEK: usize = 8;

/// When and which list: a slot to process, or the overflow sweep.
type Event = (Tick, ListId);

impl<T> Wheel<T> {
    /// A tick no later than the earliest pending timer's effective deadline,
    /// or `None` if the wheel is empty. A value `≤ now()` means a timer is
    /// due now.
    ///
    /// It is that deadline exactly when the earliest timers are in level 0,
    /// or in a slot of a higher level that holds at most 8 timers (read to
    /// find their earliest deadline). Behind
    /// a fuller slot it is the slot's start, where a walk moves its timers
    /// closer: a wake-up shared by all of them.
    ///
    /// Polling at the returned tick always makes progress: it fires a timer
    /// or moves [`now`](Self::now) forward (possibly only cascading timers
    /// closer to their slot, or filing again a timer whose deadline a lazy
    /// [`reset`](Self::reset) moved later), so a tickless driver can sleep
    /// exactly until then. O(levels), from the bitmaps, plus at most 8
    /// timers read.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// assert_eq!(wheel.next_expiration(), None);
    /// wheel.insert(40, ());
    /// assert_eq!(wheel.next_expiration(), Some(40));
    /// wheel.advance(40).for_each(drop);
    /// wheel.insert(100_000, ()); // three levels up, alone in its slot
    /// assert_eq!(wheel.next_expiration(), Some(100_000));
    /// ```
    pub fn next_expiration(&self) -> Option<Tick> {
        if self.is_empty() {
            return None;
        }
        if let Some((_, deadline)) = self.peek() {
            return Some(deadline);
        }
        // Nothing due, so the cursor is at `now` (invariant 7) and every
        // event lies after it: advancing to either moves time.
        let (slot, sweep) = if self.cancelled_len == 0 {
            (self.next_slot_event(), self.overflow_event())
        } else {
            self.next_live_events()
        };
        let slot = slot.map(|(start, list)| self.earliest_in_slot(start, list));
        match (slot, sweep) {
            (Some(slot), Some((sweep, _))) => Some(slot.min(sweep)),
            (slot, sweep) => slot.or(sweep.map(|(at, _)| at)),
        }
    }

    /// The next slot event and overflow sweep, passing over lists that
    /// hold only cancelled timers awaiting their batched unlink (they still
    /// mark their slots: `next_expiration` once named a cancelled timer's
    /// tick, where nothing fires). Bounded: each list is read up to its
    /// first live timer, so at most `CANCEL_BATCH` vacant nodes in all.
    #[cold]
    #[inline(never)]
    fn next_live_events(&self) -> (Option<Event>, Option<Event>) {
        let g = self.geometry;
        let mut slot = None;
        'levels: for level in 0..g.levels() {
            let mut occupied = self.occupied[level as usize];
            let current = ((self.elapsed >> g.shift(level)) & g.mask()) as u32;
            while let Some(distance) = next_occupied(occupied, current, g.slot_bits()) {
                let index = (current + distance) & g.mask() as u32;
                let list = self.lists.slot(level, index);
                if self.nodes.holds_live(list) {
                    slot = Some((slot_start(g, self.elapsed, level, distance), list));
                    break 'levels;
                }
                occupied &= !(1 << index);
            }
        }
        let live = |&(_, list): &Event| self.nodes.holds_live(list);
        (slot, self.overflow_event().filter(live))
    }

    /// The earliest deadline in the slot `list` starting at `start` (the
    /// first occupied slot of the lowest non-empty level), if it holds at
    /// most [`SLOT_PEEK`] timers; else `start`. Capped at the slot's end,
    /// before which no other slot's timer is due: a timer of level `k`
    /// shares every bit above level `k`'s with `elapsed` (it would be
    /// higher up otherwise), so later slots of its level, and every slot of
    /// the levels above, start at or after this slot's end (invariant 2).
    /// A lazily moved timer can be due after the end; the end still bounds
    /// it from below, and polling there files it again.
    fn earliest_in_slot(&self, start: Tick, list: ListId) -> Tick {
        let Some((level, _)) = self.lists.as_slot(list) else {
            return start;
        };
        if level == 0 {
            return start;
        }
        let width = 1u64 << self.geometry.shift(level);
        let mut earliest = start.saturating_add(width);
        let mut next = self.nodes.first(list);
        for _ in 0..SLOT_PEEK {
            let Some(index) = next else {
                return earliest;
            };
            // A cancelled timer awaiting its unlink has no entry.
            if let Some(entry) = self.nodes.entries.get(index) {
                earliest = earliest.min(entry.deadline);
            }
            next = self.nodes.after(index);
        }
        if next.is_none() {
            earliest
        } else {
            start
        }
    }

    /// Moves time forward to `now` (a smaller `now` than the current one is
    /// treated as the current one) and returns the next due timer, if any.
    ///
    /// Call it until it returns `None` to handle everything due. Timers come
    /// out in non-decreasing effective deadline, first in first out on ties.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// wheel.insert(5, 'b');
    /// wheel.insert(2, 'a');
    /// wheel.insert(5, 'c');
    /// let mut order = String::new();
    /// while let Some(expired) = wheel.poll(10) {
    ///     order.push(expired.value);
    /// }
    /// assert_eq!(order, "abc");
    /// ```
    pub fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        self.move_time(now);
        self.next_due()
    }

    /// Moves time forward to `now` without taking any timer: those due by
    /// then wait for [`poll`](Self::poll), [`peek`](Self::peek) or
    /// [`advance`](Self::advance). A smaller `now` than the current one is
    /// ignored.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// wheel.insert(5, "due");
    /// wheel.set_now(9);
    /// assert_eq!(wheel.now(), 9);
    /// assert_eq!(wheel.peek().map(|(_, deadline)| deadline), Some(5));
    /// ```
    pub fn set_now(&mut self, now: Tick) {
        self.move_time(now);
    }

    /// The key and deadline of the timer the next [`poll`](Self::poll) at
    /// the current time would return, without removing it or moving time;
    /// `None` if nothing is due at [`now`](Self::now).
    ///
    /// The timer stays first in line until it is taken with
    /// [`cancel`](Self::cancel) or moved with [`reset`](Self::reset). This is
    /// how periodic work re-arms itself in place, keeping its key:
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let heartbeat = wheel.insert(100, "ping");
    /// let mut runs = Vec::new();
    /// for now in [100, 250, 310] {
    ///     wheel.set_now(now);
    ///     while let Some((key, deadline)) = wheel.peek() {
    ///         runs.push(deadline);
    ///         wheel.reset(key, deadline + 100); // fixed rate: no drift
    ///     }
    /// }
    /// assert_eq!(runs, [100, 200, 300]);
    /// assert!(wheel.contains(heartbeat)); // same key, next run at 400
    /// ```
    pub fn peek(&self) -> Option<(TimerKey, Tick)> {
        let index = self.nodes.first(self.lists.due)?;
        let entry = self.nodes.entries.entry(index);
        let key = TimerKey {
            index,
            stamp: entry.stamp,
        };
        Some((key, entry.deadline))
    }

    /// Moves time forward to `now` and returns an iterator over the timers
    /// due by then, in expiry order.
    ///
    /// The iterator is lazy: each step does only the work for the next
    /// timer. Dropping it part-way leaves the rest due, so a caller can cap
    /// a burst and continue later.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// for i in 0..10 {
    ///     wheel.insert(i, i);
    /// }
    /// let first_three: Vec<_> = wheel.advance(100).take(3).map(|e| e.value).collect();
    /// assert_eq!(first_three, [0, 1, 2]);
    /// assert_eq!(wheel.len(), 7);
    /// assert_eq!(wheel.advance(100).count(), 7);
    /// ```
    pub fn advance(&mut self, now: Tick) -> Advance<'_, T> {
        self.move_time(now);
        Advance::new(self)
    }

    /// Moves `now` forward (never back) and catches up (invariant 7).
    pub(super) fn move_time(&mut self, now: Tick) {
        if now <= self.now {
            return;
        }
        if !self.nodes.is_empty(self.lists.late) {
            // Late timers are due at the old `now`, after everything filed
            // up to it and before anything after it.
            self.settle();
        }
        self.now = now;
        self.catch_up();
    }

    /// Processes every event up to `now`, so that `elapsed == now` and
    /// everything due is in the due list.
    pub(super) fn settle(&mut self) {
        while self.process_next_event() {}
        self.elapsed = self.now;
        self.nodes.append(self.lists.due, self.lists.late);
    }

    /// Takes the first due timer, then readies the next (invariant 7).
    pub(super) fn next_due(&mut self) -> Option<Expired<T>> {
        let index = self.nodes.first(self.lists.due)?;
        self.nodes.prefetch_ahead_of(index);
        let emptied = self.nodes.unlink(index).is_some();
        let entry = self.nodes.entries.take(index);
        if emptied {
            // Only now can the due list need refilling (invariant 7); out
            // of line, so that the common step keeps its registers.
            self.catch_up_cold();
        }
        Some(Expired {
            key: TimerKey {
                index,
                stamp: entry.stamp,
            },
            deadline: entry.deadline,
            value: entry.value,
        })
    }

    /// Restores invariant 7: while the due list is empty, processes events
    /// up to `now`; once none is left, the cursor is at `now` and the late
    /// list joins the due list. The same steps the next `poll` would take,
    /// done now so that queries need not.
    ///
    /// O(1) when the cursor is already at `now` (the common case after a
    /// reset or cancel): every event then lies after it (invariants 2 and
    /// 4), so there is nothing to process.
    #[inline]
    pub(super) fn catch_up(&mut self) {
        let due = self.lists.due;
        if !self.nodes.is_empty(due) {
            return;
        }
        if self.elapsed < self.now {
            while self.process_next_event() {
                if !self.nodes.is_empty(due) {
                    return;
                }
            }
            self.elapsed = self.now;
        } else {
            debug_assert!(
                self.next_event().map_or(true, |(at, _)| at > self.now),
                "an event at or before now {} with the cursor there",
                self.now
            );
        }
        self.nodes.append(due, self.lists.late);
    }

    /// `catch_up` kept out of line, for the paths where it is rarely
    /// needed: a reset or cancel of a due timer, and the `next_due` step
    /// that took the last due timer. Inlined, its loop made every reset
    /// about 1.7 times slower (W3 in `benches/compare.rs`), taken or not;
    /// called after every `next_due` step, it cost expiry 329 instead of
    /// 272 instructions a timer (W1 under callgrind, run K).
    #[cold]
    #[inline(never)]
    pub(super) fn catch_up_cold(&mut self) {
        self.catch_up();
    }

    /// Processes the next event if it is due by `now`; `false` if there is
    /// none.
    pub(super) fn process_next_event(&mut self) -> bool {
        // A walk must not meet cancelled timers.
        if self.cancelled_len > 0 {
            self.unlink_cancelled();
        }
        let Some((at, list)) = self.next_event() else {
            return false;
        };
        if at > self.now {
            return false;
        }
        debug_assert!(
            at >= self.elapsed,
            "event at {at} behind the cursor {}",
            self.elapsed
        );
        self.elapsed = at;
        match self.lists.as_slot(list) {
            Some((level, slot)) => {
                self.occupied[level as usize] &= !(1 << slot);
                if level == 0 && (!self.lazy || self.due_in_order(list)) {
                    self.nodes.append(self.lists.due, list);
                } else {
                    self.cascade(list);
                }
            }
            None => {
                self.overflow_min = Tick::MAX;
                self.cascade(list);
            }
        }
        true
    }

    /// Re-files every timer of `list` relative to `elapsed`, in order: a
    /// cascade, or a level-0 slot coming due in a wheel with lazy resets.
    /// Timers due at `elapsed` join the due list; if resets may have been
    /// lazy, in sequence order (see `file_due_in_order`).
    pub(super) fn cascade(&mut self, list: ListId) {
        let Some(chain) = self.nodes.take(list) else {
            return;
        };
        let lazy = self.lazy;
        let mut due = core::mem::take(&mut self.batch);
        let mut index = chain.first;
        loop {
            // Read the successor before re-linking overwrites it.
            let (next, deadline) = self.nodes.walk_step(index);
            if lazy && deadline <= self.elapsed {
                due.push(index);
            } else {
                self.refile(index, deadline);
            }
            if index == chain.last {
                break;
            }
            index = next;
        }
        if !due.is_empty() {
            self.file_due_in_order(&mut due);
        }
        self.batch = due;
    }

    /// `true` if every timer of level-0 `list` is due at `elapsed` (none
    /// was moved on by a lazy reset) and they are in sequence order, so
    /// that the list can join the due list whole. A read-only walk: the
    /// timers are about to be yielded, and the walk warms the cache for
    /// that.
    fn due_in_order(&self, list: ListId) -> bool {
        let nodes = &self.nodes;
        let mut next = nodes.first(list);
        let mut previous: Option<u32> = None;
        while let Some(index) = next {
            nodes.prefetch_ahead_of(index);
            let entry = nodes.entries.entry(index);
            let seq = entry.seq();
            if entry.deadline > self.elapsed || previous.is_some_and(|p| !seq_before(p, seq)) {
                return false;
            }
            previous = Some(seq);
            next = nodes.after(index);
        }
        true
    }

    /// The earliest event: the time and list of the next slot to process, or
    /// of the overflow sweep.
    pub(super) fn next_event(&self) -> Option<(Tick, ListId)> {
        let slot = self.next_slot_event();
        match (slot, self.overflow_event()) {
            // On a tie the sweep goes first. Processing the slot first would
            // leave the cursor on the sweep's tick with the sweep pending; a
            // `poll` could return there, and a timer inserted next would be
            // filed into the top ring ahead of an older overflow timer with
            // the same deadline.
            (Some(slot), Some(sweep)) => Some(if sweep.0 <= slot.0 { sweep } else { slot }),
            (slot, sweep) => slot.or(sweep),
        }
    }

    /// The first occupied slot of the lowest non-empty level: every slot of
    /// level `k` starts before any slot of level `k + 1` (invariant 2).
    #[inline]
    pub(super) fn next_slot_event(&self) -> Option<(Tick, ListId)> {
        let g = self.geometry;
        let level = (0..g.levels()).find(|&level| self.occupied[level as usize] != 0)?;
        let current = ((self.elapsed >> g.shift(level)) & g.mask()) as u32;
        let distance = next_occupied(self.occupied[level as usize], current, g.slot_bits())?;
        let slot = (current + distance) & g.mask() as u32;
        Some((
            slot_start(g, self.elapsed, level, distance),
            self.lists.slot(level, slot),
        ))
    }

    pub(super) fn overflow_event(&self) -> Option<(Tick, ListId)> {
        let overflow = self.lists.overflow;
        if self.nodes.is_empty(overflow) {
            return None;
        }
        Some((
            overflow_sweep_at(self.geometry, self.overflow_min),
            overflow,
        ))
    }
}

/// The timers due by a given tick, in expiry order: see
/// [`Wheel::advance`].
///
/// Lazy: each `next` does only the work for one timer, and dropping the
/// iterator leaves the remaining timers due.
///
/// ```
/// let mut wheel = tickwheel::Wheel::new();
/// wheel.insert(1, "a");
/// let mut due = wheel.advance(1);
/// assert_eq!(due.next().map(|e| e.value), Some("a"));
/// assert!(due.next().is_none());
/// ```
#[must_use = "timers become due when the iterator is advanced, not before"]
pub struct Advance<'a, T> {
    wheel: &'a mut Wheel<T>,
}

impl<'a, T> Advance<'a, T> {
    pub(super) fn new(wheel: &'a mut Wheel<T>) -> Self {
        Advance { wheel }
    }
}

impl<T> Iterator for Advance<'_, T> {
    type Item = Expired<T>;

    #[inline]
    fn next(&mut self) -> Option<Expired<T>> {
        self.wheel.next_due()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.wheel.len()))
    }
}

// Once `next_due` returns `None`, nothing can become due until `now` moves,
// which needs `&mut Wheel` again.
impl<T> FusedIterator for Advance<'_, T> {}

impl<T> fmt::Debug for Advance<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Advance")
            .field("wheel", &self.wheel)
            .finish()
    }
}
