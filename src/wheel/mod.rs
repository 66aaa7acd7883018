//! The hierarchical hashed timing wheel.
//!
//! # Algorithm
//!
//! A hashed, hierarchical timing wheel (Varghese & Lauck, *Hashed and
//! Hierarchical Timing Wheels*, 1987), laid out like Kafka's and tokio's:
//! `L` levels of `S = 2^b` slots. With the default `b = 6, L = 6`:
//!
//! | level | ticks per slot | level spans     | at 1 ms ticks |
//! |-------|----------------|-----------------|---------------|
//! | 0     | 1              | 64              | 64 ms         |
//! | 1     | 64             | 4 096           | ~4 s          |
//! | 2     | 4 096          | 262 144         | ~4 min        |
//! | 3     | 262 144        | 16 777 216      | ~4.6 h        |
//! | 4     | 16 777 216     | 1 073 741 824   | ~12 days      |
//! | 5     | 1 073 741 824  | 68 719 476 736  | ~2.2 years    |
//!
//! `b ≤ 6` so that one `u64` bitmap records which slots of a level are
//! occupied; the next occupied slot is found with a rotate and a
//! `trailing_zeros`, never a scan. Slot indices are bit fields of the
//! deadline, `(deadline >> b·k) & (S − 1)`: a mask, never a modulo.
//!
//! ## Where a timer is filed
//!
//! The wheel keeps a cursor `elapsed` (every slot up to it has been
//! processed) and the user-visible `now ≥ elapsed`. A timer with deadline
//! `d > elapsed` is filed by the highest bit in which `d` and `elapsed`
//! differ: level `k = bit / b`, slot `(d >> b·k) & (S − 1)`. So level `k`
//! holds deadlines in the same `2^(b·(k+1))`-tick block as `elapsed` but not
//! in its current slot, and **the current slot of every level is empty**.
//!
//! The top level is a ring rather than a block: it takes any deadline whose
//! top-level slot is less than one rotation ahead, including deadlines just
//! past a `2^(b·L)` boundary. A deadline further ahead goes to the
//! **overflow list**, which remembers a lower bound of its deadlines. The
//! whole `u64` range works: nothing is clamped.
//!
//! Timers that are due (deadline ≤ `elapsed`) wait in the **due list**, in
//! the order they will be yielded. A timer inserted or reset to a deadline
//! `≤ now` counts as due at `now` (its *effective* deadline): it joins the
//! back of the due list, or, if the cursor still lags behind `now` because
//! the caller stopped iterating early, the **late list**, which follows the
//! due list once the cursor reaches `now`.
//!
//! ## Moving time
//!
//! `poll`/`advance` set `now` and then, lazily, one step per due timer:
//!
//! 1. If the due list is non-empty, pop its front.
//! 2. Otherwise find the next *event* from the bitmaps: the earlier of the
//!    first occupied slot of the lowest non-empty level (every slot of level
//!    `k` starts before any slot of level `k + 1`) and the overflow sweep,
//!    the sweep first on a tie. If it is after `now`, set
//!    `elapsed = now` (and append the late list to the due list); there is
//!    nothing more to do.
//! 3. Otherwise move `elapsed` to the event's time `t` and process it: a
//!    level-0 slot is appended whole to the due list (O(1)); a higher slot
//!    **cascades**: each of its timers is re-filed relative to `t`, landing
//!    in a lower level or in the due list; the overflow list is swept the
//!    same way, keeping what is still too far ahead.
//!
//! A jump of any size therefore costs one bitmap step per event plus the
//! timers touched, never a loop over ticks. The touches are bounded per
//! timer: a cascade re-files each timer into a strictly lower level (or the
//! due list), so a timer cascades at most once per level, `L − 1` times in
//! its life. The overflow list is the exception: a sweep re-files all of it
//! and keeps what is still too far ahead, so a timer there is re-filed once
//! per sweep until it enters the top level. Sweeps come at most once per
//! top-level slot (`2^(b·(L−1))` ticks), and only deadlines about a span
//! (`2^(b·L)` ticks) or more ahead wait for them.
//!
//! ## Costs
//!
//! Insert stores a timer and files it with a table lookup, a mask and a
//! list append; cancel and reset find it by key and unlink it in O(1) (see
//! [`Wheel`] for the table). Two things make these bounds amortized rather
//! than worst case:
//!
//! - The timers live in one `Vec`, so an insert that finds it full grows it
//!   and moves every timer: O(n). Within [`Wheel::capacity`] (reserved with
//!   [`Wheel::with_capacity`] or [`Wheel::reserve`]) no insert allocates.
//! - A cancel of a due timer, or a reset, may have to restore invariant 7
//!   below: it then processes events up to `now`, the work the next `poll`
//!   would have done. That work is paid for by the timers it moves, each at
//!   most once per level (and once per overflow sweep).
//!
//! ## Invariants
//!
//! 1. `elapsed ≤ now`; both only grow.
//! 2. A timer in a slot of level `k` has `d > elapsed` and sits where
//!    `geometry::place` puts `d` relative to `elapsed`. Moving
//!    `elapsed` forward never changes that place without processing the slot
//!    first, because `elapsed` only ever lands on the earliest event.
//! 3. Bit `s` of `occupied[k]` is set iff slot `s` of level `k` is non-empty.
//! 4. Every overflow deadline is at least `overflow_min`, and its top-level
//!    block is at least one full rotation ahead of `elapsed`'s. The bound
//!    may be stale-low after a cancel (a sweep then just refreshes it) but
//!    is reset whenever the list empties, and a sweep is processed before a
//!    slot due at the same tick, so no sweep is ever pending at or behind
//!    `elapsed` when a timer is filed.
//! 5. The due list holds timers with effective deadline ≤ `elapsed` in
//!    non-decreasing effective deadline, FIFO among equals. The late list
//!    holds timers made due at `now` while earlier ones were still in the
//!    wheel; it is appended to the due list once no event `≤ now` is left,
//!    and settled before `now` moves again.
//! 6. Every list is in insertion (or last reset) order, and cascades keep
//!    that order, so timers that end in the same level-0 slot come out
//!    first in, first out.
//! 7. Between calls, the due list is empty only if the cursor has caught
//!    up: `elapsed == now` and the late list is empty. Every operation that
//!    moves `now` or takes the last due timer (a poll, a cancel of a due
//!    timer, a reset) restores this at once (`catch_up`), doing the work
//!    the next `poll` would have done anyway. So [`Wheel::peek`] is a plain
//!    read, and a `next_expiration() ≤ now` always means a timer is due:
//!    polling there fires or moves time.
//!
//! The consequences callers see: expiry in non-decreasing effective
//! deadline, FIFO on ties, never before the deadline, never skipped, and
//! [`Wheel::next_expiration`] never later than the earliest pending
//! effective deadline.

mod arena;
pub(crate) mod geometry;
mod iter;
pub(crate) mod list;

use core::fmt;
use core::iter::FusedIterator;

use crate::error::CapacityError;
use crate::key::{Stamps, TimerKey};
use crate::Tick;

use arena::Entry;
pub use geometry::Geometry;
use geometry::{next_occupied, overflow_sweep_at, place, slot_start, Place};
pub use iter::{Drain, Iter};
use list::{ListId, Nodes, SENTINEL_BASE};

/// A fired timer: what [`Wheel::poll`] and [`Wheel::advance`] yield.
///
/// `deadline` is the deadline that was asked for, so `now - deadline` is how
/// late the timer was handled.
///
/// ```
/// use tickwheel::Wheel;
///
/// let mut wheel = Wheel::new();
/// let key = wheel.insert(3, "retry");
/// let fired = wheel.poll(10).unwrap();
/// assert_eq!((fired.key, fired.deadline, fired.value), (key, 3, "retry"));
/// ```
///
/// The std layer's `timer::Expired` (feature `std`) is the same
/// struct with a timer handle and an `Instant` in place of the key and tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired<T, K = TimerKey, D = Tick> {
    /// The key the timer had; stale from now on.
    pub key: K,
    /// The deadline that was asked for at insert or last reset.
    pub deadline: D,
    /// The timer's value.
    pub value: T,
}

/// A hierarchical hashed timing wheel over abstract `u64` ticks.
///
/// It has no clock and no threads: the caller says what time it is with
/// [`poll`](Self::poll) or [`advance`](Self::advance), and asks
/// [`next_expiration`](Self::next_expiration) how long it may sleep. See the
/// [module docs](crate::wheel) for the algorithm and its invariants.
///
/// | operation | cost |
/// |-----------|------|
/// | [`insert`](Self::insert), [`try_insert`](Self::try_insert) | O(1) amortized; O(1) worst case while [`len`](Self::len) < [`capacity`](Self::capacity) |
/// | [`cancel`](Self::cancel) of a timer not yet due | O(1) |
/// | [`cancel`](Self::cancel) of a due timer, [`reset`](Self::reset) | O(1) amortized: O(levels) plus catch-up |
/// | [`next_expiration`](Self::next_expiration) | O(levels) |
/// | [`poll`](Self::poll), one step of [`advance`](Self::advance) | O(levels + timers cascaded) |
///
/// - **Growth.** Timers live in one `Vec`. An insert that finds it full
///   reallocates it and moves every timer: O(n). Below
///   [`capacity`](Self::capacity), which [`with_capacity`](Self::with_capacity)
///   and [`reserve`](Self::reserve) set ahead, an insert never allocates.
/// - **Batched unlinks.** Cancelling a timer that is not yet due (deadline
///   after [`now`](Self::now)) takes its value at once and defers its unlink
///   to a batch of at most 32, unlinked together by the 32nd such cancel or
///   by the next operation that needs the lists exact: bounded work, paid
///   for by those cancels.
/// - **Catch-up.** When a cancel of a due timer (deadline ≤ `now`) or a
///   reset leaves no timer due, the wheel restores invariant 7 of the
///   [module docs](crate::wheel) at once: it processes events up to `now`
///   until a timer is due or none is left. That is exactly the work the next
///   [`poll`](Self::poll) would have done, and a single call may do a lot
///   of it; but a cascade moves each timer to a strictly lower level, so a
///   timer cascades at most once per level in its life (a timer in the
///   overflow list, a span or more ahead, also once per overflow sweep).
///   Charged to the timers moved, cancel and reset are O(1) amortized, not
///   worst case.
///
/// ```
/// use tickwheel::Wheel;
///
/// let mut wheel = Wheel::new();
/// let idle = wheel.insert(30_000, "idle timeout");
/// wheel.insert(100, "retransmit");
///
/// // A packet arrived at tick 50: push the idle timeout back.
/// wheel.advance(50).for_each(drop);
/// assert!(wheel.reset(idle, 50 + 30_000));
///
/// let fired: Vec<_> = wheel.advance(1_000).map(|e| e.value).collect();
/// assert_eq!(fired, ["retransmit"]);
/// // A tickless driver sleeps until `next_expiration`: never past the idle
/// // timeout's 30_050 (it may be earlier, when timers move down a level).
/// let mut fired = Vec::new();
/// while let Some(next) = wheel.next_expiration() {
///     fired.extend(wheel.advance(next).map(|e| (e.deadline, e.value)));
/// }
/// assert_eq!(fired, [(30_050, "idle timeout")]);
/// ```
pub struct Wheel<T> {
    nodes: Nodes<T>,
    /// Bit `s` of `occupied[k]`: slot `s` of level `k` is non-empty.
    occupied: [u64; Geometry::MAX_LEVELS as usize],
    geometry: Geometry,
    lists: Lists,
    level_by_bit: [u8; 64],
    /// The user-visible time.
    now: Tick,
    /// The cursor: every event up to here has been processed. `≤ now`.
    elapsed: Tick,
    /// A lower bound of the overflow list's deadlines (stale after cancels).
    overflow_min: Tick,
    stamps: Stamps,
    /// Cancelled timers still linked into a slot or the overflow list (never
    /// the due or late list), their values gone and their arena nodes held
    /// off the free list; unlinked in a batch by `unlink_cancelled` before
    /// any list walk, and before the arena would grow.
    cancelled: [u32; CANCEL_BATCH],
    cancelled_len: usize,
}

/// Cancels whose unlink is batched. Enough that their cache misses overlap
/// (the CPU keeps a few dozen in flight), few enough that a flush is a
/// short, constant amount of work.
const CANCEL_BATCH: usize = 32;

impl<T> Wheel<T> {
    /// The most timers a wheel holds at once: keys address entries with 32
    /// bits, less a few values that name internal lists.
    ///
    /// ```
    /// assert!(tickwheel::Wheel::<()>::MAX_TIMERS > 4_000_000_000);
    /// ```
    pub const MAX_TIMERS: usize = SENTINEL_BASE as usize;

    /// An empty wheel of the default [`Geometry`], at tick 0.
    ///
    /// ```
    /// let wheel: tickwheel::Wheel<u32> = tickwheel::Wheel::new();
    /// assert_eq!((wheel.now(), wheel.len()), (0, 0));
    /// ```
    pub fn new() -> Self {
        Self::with_geometry_and_capacity(Geometry::DEFAULT, 0)
    }

    /// An empty wheel of the given shape, at tick 0.
    ///
    /// ```
    /// use tickwheel::{Geometry, Wheel};
    ///
    /// let mut wheel = Wheel::with_geometry(Geometry::new(2, 2)?);
    /// wheel.insert(1_000, "far past the 16-tick span");
    /// assert_eq!(wheel.advance(999).count(), 0);
    /// assert_eq!(wheel.advance(1_000).count(), 1);
    /// # Ok::<(), tickwheel::GeometryError>(())
    /// ```
    pub fn with_geometry(geometry: Geometry) -> Self {
        Self::with_geometry_and_capacity(geometry, 0)
    }

    /// An empty wheel of the default shape with room for `capacity` timers
    /// before it allocates again.
    ///
    /// ```
    /// let wheel: tickwheel::Wheel<()> = tickwheel::Wheel::with_capacity(1_000);
    /// assert!(wheel.capacity() >= 1_000);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        Self::with_geometry_and_capacity(Geometry::DEFAULT, capacity)
    }

    /// An empty wheel of the given shape and capacity.
    ///
    /// ```
    /// use tickwheel::{Geometry, Wheel};
    ///
    /// let wheel: Wheel<u8> = Wheel::with_geometry_and_capacity(Geometry::new(4, 3)?, 64);
    /// assert_eq!(wheel.geometry().span(), 1 << 12);
    /// # Ok::<(), tickwheel::GeometryError>(())
    /// ```
    pub fn with_geometry_and_capacity(geometry: Geometry, capacity: usize) -> Self {
        let lists = Lists::new(geometry);
        Wheel {
            nodes: Nodes::new(lists.count(), capacity),
            lists,
            occupied: [0; Geometry::MAX_LEVELS as usize],
            geometry,
            level_by_bit: geometry.level_by_bit(),
            now: 0,
            elapsed: 0,
            overflow_min: Tick::MAX,
            stamps: Stamps::new(),
            cancelled: [0; CANCEL_BATCH],
            cancelled_len: 0,
        }
    }

    /// Moves the clock of this wheel to `start`, for wheels whose ticks do
    /// not start at 0. Timers already in the wheel with deadlines up to
    /// `start` become due, exactly as with [`advance`](Self::advance).
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new().starting_at(1_000_000);
    /// assert_eq!(wheel.now(), 1_000_000);
    /// wheel.insert(1_000_010, ());
    /// assert_eq!(wheel.next_expiration(), Some(1_000_010));
    /// ```
    #[must_use]
    pub fn starting_at(mut self, start: Tick) -> Self {
        self.set_now(start);
        self
    }

    /// The shape of this wheel.
    ///
    /// ```
    /// let wheel: tickwheel::Wheel<()> = tickwheel::Wheel::new();
    /// assert_eq!(wheel.geometry(), tickwheel::Geometry::DEFAULT);
    /// ```
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The current time: the largest tick given to [`poll`](Self::poll),
    /// [`advance`](Self::advance) or [`starting_at`](Self::starting_at).
    ///
    /// ```
    /// let mut wheel: tickwheel::Wheel<()> = tickwheel::Wheel::new();
    /// wheel.poll(42);
    /// wheel.poll(7); // time never goes back
    /// assert_eq!(wheel.now(), 42);
    /// ```
    pub fn now(&self) -> Tick {
        self.now
    }

    /// Number of pending timers, due ones not yet yielded included.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// wheel.insert(1, ());
    /// assert_eq!(wheel.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.nodes.entries.len()
    }

    /// `true` if no timer is pending.
    ///
    /// ```
    /// let wheel: tickwheel::Wheel<()> = tickwheel::Wheel::new();
    /// assert!(wheel.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.nodes.entries.len() == 0
    }

    /// Number of timers the wheel holds without allocating: up to this many,
    /// an insert is O(1) worst case (see [`insert`](Self::insert)).
    ///
    /// ```
    /// let wheel: tickwheel::Wheel<()> = tickwheel::Wheel::with_capacity(10);
    /// assert!(wheel.capacity() >= 10);
    /// ```
    pub fn capacity(&self) -> usize {
        self.nodes.entries.capacity()
    }

    /// Makes room for at least `additional` more timers, so that the next
    /// `additional` inserts do not allocate.
    ///
    /// # Panics
    ///
    /// If the new capacity overflows `usize` (as `Vec::reserve` does).
    ///
    /// ```
    /// let mut wheel: tickwheel::Wheel<()> = tickwheel::Wheel::new();
    /// wheel.reserve(100);
    /// assert!(wheel.capacity() >= 100);
    /// ```
    pub fn reserve(&mut self, additional: usize) {
        self.nodes.entries.reserve(additional);
    }

    /// Returns unused memory at the end of the entry storage. Storage freed
    /// in the middle is reused by later inserts instead (keys stay valid, so
    /// entries are never moved).
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::with_capacity(1_000);
    /// let key = wheel.insert(5, ());
    /// wheel.shrink_to_fit();
    /// assert!(wheel.capacity() < 1_000);
    /// assert!(wheel.contains(key));
    /// ```
    pub fn shrink_to_fit(&mut self) {
        // Nodes awaiting a batched unlink are vacant but must not join the
        // free list the arena rebuilds: unlink and release them first.
        self.unlink_cancelled();
        self.nodes.entries.shrink_to_fit();
    }

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
    #[track_caller]
    pub fn insert(&mut self, deadline: Tick, value: T) -> TimerKey {
        match self.try_insert(deadline, value) {
            Ok(key) => key,
            Err(_) => panic!("tickwheel: the wheel is full ({} timers)", Self::MAX_TIMERS),
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
            ahead: u32::MAX,
            value,
        });
        self.file_new(index, deadline);
        Ok(TimerKey { index, stamp })
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
    pub fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let deadline = self.entry(key)?.deadline;
        if deadline <= self.now {
            // Possibly in the due or late list, which must hold only live
            // timers: unlink now.
            self.unlink(key.index);
            let value = self.nodes.entries.take(key.index).value;
            self.catch_up();
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
    /// The unlink and re-filing are O(1). If afterwards no timer is due (it
    /// moved the last due timer into the future, say), the wheel catches up
    /// as [`cancel`](Self::cancel) does: O(levels) to find that no event is
    /// due by [`now`](Self::now), or else the work the next
    /// [`poll`](Self::poll) would have done. O(1) amortized (see
    /// [`Wheel`]).
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// let idle = wheel.insert(100, "idle");
    /// assert!(wheel.reset(idle, 500));
    /// assert_eq!(wheel.advance(499).count(), 0);
    /// assert_eq!(wheel.advance(500).count(), 1);
    /// assert!(!wheel.reset(idle, 900)); // fired: stale
    /// ```
    pub fn reset(&mut self, key: TimerKey, deadline: Tick) -> bool {
        let Some(entry) = self.entry_mut(key) else {
            return false;
        };
        entry.deadline = deadline;
        self.unlink(key.index);
        self.file_new(key.index, deadline);
        self.catch_up();
        true
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

    /// A tick no later than the earliest pending timer's effective deadline,
    /// or `None` if the wheel is empty. A value `≤ now()` means a timer is
    /// due now.
    ///
    /// Polling at the returned tick always makes progress: it fires a timer
    /// or moves [`now`](Self::now) forward (possibly only cascading timers
    /// closer to their slot), so a tickless driver can sleep exactly until
    /// then. O(levels), from the bitmaps.
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::new();
    /// assert_eq!(wheel.next_expiration(), None);
    /// wheel.insert(40, ());
    /// assert_eq!(wheel.next_expiration(), Some(40));
    /// ```
    pub fn next_expiration(&self) -> Option<Tick> {
        // Cancelled timers awaiting their batched unlink still mark their
        // slots; they may make the answer earlier (a lower bound, and
        // advancing there unlinks them), but never make an empty wheel look
        // busy.
        if self.is_empty() {
            return None;
        }
        if let Some((_, deadline)) = self.peek() {
            return Some(deadline);
        }
        // Nothing due, so the cursor is at `now` (invariant 7) and every
        // event lies after it: advancing to this one moves time.
        self.next_event().map(|(at, _)| at)
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

    // ---- internals ----------------------------------------------------

    #[inline]
    fn entry(&self, key: TimerKey) -> Option<&Entry<T>> {
        self.nodes
            .entries
            .get(key.index)
            .filter(|entry| entry.stamp == key.stamp)
    }

    #[inline]
    fn entry_mut(&mut self, key: TimerKey) -> Option<&mut Entry<T>> {
        self.nodes
            .entries
            .get_mut(key.index)
            .filter(|entry| entry.stamp == key.stamp)
    }

    /// Files a newly inserted or reset timer: into the wheel if it is in the
    /// future, else behind everything already due at `now`.
    #[inline]
    fn file_new(&mut self, index: u32, deadline: Tick) {
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

    /// Re-files a cascading timer relative to the new `elapsed`.
    #[inline]
    fn refile(&mut self, index: u32) {
        let deadline = self.nodes.entries.entry(index).deadline;
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
    fn wheel_list(&mut self, deadline: Tick) -> ListId {
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
    fn unlink_cancelled(&mut self) {
        for i in 0..self.cancelled_len {
            let index = self.cancelled[i];
            self.unlink(index);
            self.nodes.entries.release(index);
        }
        self.cancelled_len = 0;
    }

    #[inline]
    fn unlink(&mut self, index: u32) {
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

    /// Moves `now` forward (never back) and catches up (invariant 7).
    fn move_time(&mut self, now: Tick) {
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
    fn settle(&mut self) {
        while self.process_next_event() {}
        self.elapsed = self.now;
        self.nodes.append(self.lists.due, self.lists.late);
    }

    /// Takes the first due timer, then readies the next (invariant 7).
    fn next_due(&mut self) -> Option<Expired<T>> {
        let index = self.nodes.first(self.lists.due)?;
        self.nodes.prefetch_ahead_of(index);
        self.nodes.unlink(index);
        let entry = self.nodes.entries.take(index);
        self.catch_up();
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
    #[inline]
    fn catch_up(&mut self) {
        let due = self.lists.due;
        if !self.nodes.is_empty(due) {
            return;
        }
        while self.process_next_event() {
            if !self.nodes.is_empty(due) {
                return;
            }
        }
        self.elapsed = self.now;
        self.nodes.append(due, self.lists.late);
    }

    /// Processes the next event if it is due by `now`; `false` if there is
    /// none.
    fn process_next_event(&mut self) -> bool {
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
                if level == 0 {
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

    /// Re-files every timer of `list` relative to `elapsed`, in order.
    fn cascade(&mut self, list: ListId) {
        let Some(chain) = self.nodes.take(list) else {
            return;
        };
        let mut index = chain.first;
        loop {
            // Read the successor before re-linking overwrites it.
            let next = self.nodes.next_of(index);
            self.nodes.prefetch_ahead_of(index);
            self.refile(index);
            if index == chain.last {
                break;
            }
            index = next;
        }
    }

    /// The earliest event: the time and list of the next slot to process, or
    /// of the overflow sweep.
    fn next_event(&self) -> Option<(Tick, ListId)> {
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
    fn next_slot_event(&self) -> Option<(Tick, ListId)> {
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

    fn overflow_event(&self) -> Option<(Tick, ListId)> {
        let overflow = self.lists.overflow;
        if self.nodes.is_empty(overflow) {
            return None;
        }
        Some((
            overflow_sweep_at(self.geometry, self.overflow_min),
            overflow,
        ))
    }

    /// Empties every list and bitmap, leaving the entries to be dropped or
    /// drained by the caller.
    fn forget_lists(&mut self) {
        self.cancelled_len = 0;
        self.nodes.reset_lists();
        self.occupied = [0; Geometry::MAX_LEVELS as usize];
        self.overflow_min = Tick::MAX;
        self.elapsed = self.now;
    }
}

/// Numbering of the lists: the slots level by level, then the overflow,
/// due and late lists.
#[derive(Debug, Clone, Copy)]
struct Lists {
    slot_bits: u32,
    levels: u32,
    overflow: ListId,
    due: ListId,
    late: ListId,
}

impl Lists {
    fn new(geometry: Geometry) -> Self {
        let overflow = geometry.levels() << geometry.slot_bits();
        Lists {
            slot_bits: geometry.slot_bits(),
            levels: geometry.levels(),
            overflow,
            due: overflow + 1,
            late: overflow + 2,
        }
    }

    fn count(self) -> u32 {
        self.late + 1
    }

    #[inline]
    fn slot(self, level: u32, slot: u32) -> ListId {
        (level << self.slot_bits) + slot
    }

    #[inline]
    fn as_slot(self, list: ListId) -> Option<(u32, u32)> {
        let level = list >> self.slot_bits;
        (level < self.levels).then(|| (level, list & ((1 << self.slot_bits) - 1)))
    }
}

impl<T> Default for Wheel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for Wheel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wheel")
            .field("geometry", &self.geometry)
            .field("now", &self.now)
            .field("len", &self.len())
            .field("next_expiration", &self.next_expiration())
            .finish_non_exhaustive()
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
    fn new(wheel: &'a mut Wheel<T>) -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;
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
