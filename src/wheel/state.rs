//! The [`Wheel`] itself: its fields (what each one means is the algorithm's
//! bookkeeping, described in the [module docs](super)), the numbering of its
//! lists, its constructors and its size. Operations live beside it:
//! `timers.rs` (insert, cancel, reset, lookups), `expiry.rs` (moving time),
//! `filing.rs` (where a timer goes).

use core::fmt;

use super::entry::NO_HINT;
use super::geometry::Geometry;
use super::list::{ListId, Nodes};
use crate::key::{Stamps, TimerKey};
use crate::Tick;

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
/// | [`reset`](Self::reset) to a later deadline, of a timer not yet due | O(1): one write to the timer's own node |
/// | [`cancel`](Self::cancel) of a due timer, other [`reset`](Self::reset)s | O(1) amortized: O(levels) plus catch-up |
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
    pub(super) nodes: Nodes<T>,
    /// Bit `s` of `occupied[k]`: slot `s` of level `k` is non-empty.
    pub(super) occupied: [u64; Geometry::MAX_LEVELS as usize],
    pub(super) geometry: Geometry,
    pub(super) lists: Lists,
    pub(super) level_by_bit: [u8; 64],
    /// The user-visible time.
    pub(super) now: Tick,
    /// The cursor: every event up to here has been processed. `≤ now`.
    pub(super) elapsed: Tick,
    /// A lower bound of the overflow list's deadlines (stale after cancels).
    pub(super) overflow_min: Tick,
    pub(super) stamps: Stamps,
    /// Some reset was lazy (see `Wheel::reset`): a slot may hold timers
    /// whose deadline moved on, so slots are walked when they come due.
    pub(super) lazy: bool,
    /// Reused buffer for the timers a walk makes due.
    pub(super) batch: alloc::vec::Vec<u32>,
    /// Cancelled timers still linked into a slot or the overflow list (never
    /// the due or late list), their values gone and their arena nodes held
    /// off the free list; unlinked in a batch by `unlink_cancelled` before
    /// any list walk, and before the arena would grow.
    pub(super) cancelled: [u32; CANCEL_BATCH],
    pub(super) cancelled_len: usize,
}

/// Cancels whose unlink is batched. Enough that their cache misses overlap
/// (the CPU keeps a few dozen in flight), few enough that a flush is a
/// short, constant amount of work.
pub(super) const CANCEL_BATCH: usize = 32;

/// Room for `timers` timers plus a full batch of cancelled nodes awaiting
/// their unlink (none for none). Without it, a wheel filled to its capacity
/// has no free node at a churn's next insert, which must then unlink the
/// batch at once: one node at a time, each insert waiting on the misses the
/// batch exists to overlap (W4 at capacity live + 1 ran 186-209 ns a step
/// against 142-154 ns with room to spare, `docs/benchmarks.md`).
pub(super) fn with_batch_room(timers: usize) -> usize {
    if timers == 0 {
        0
    } else {
        timers.saturating_add(CANCEL_BATCH)
    }
}

impl<T> Wheel<T> {
    /// The most timers a wheel holds at once: 2³¹ − 1. Keys address entries
    /// with 31 bits; the 32nd tells an entry's prefetch hint from its
    /// sequence number (see the module docs).
    ///
    /// ```
    /// assert_eq!(tickwheel::Wheel::<()>::MAX_TIMERS, (1 << 31) - 1);
    /// ```
    pub const MAX_TIMERS: usize = NO_HINT as usize;

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
    /// before it allocates again, and for 32 more (a batch of cancelled
    /// timers awaiting their unlink, so that churn at full capacity keeps
    /// its cancels batched; a `capacity` of 0 allocates nothing).
    ///
    /// The room is written once here, so the first `capacity` inserts
    /// neither allocate nor fault a page in (a first write to fresh memory
    /// faults, and at 10⁶ timers that was about half of an insert's time).
    /// The cost moves here: O(`capacity`) time, and the memory is resident
    /// at once (32 bytes a timer for a `u64` payload). If the capacity is
    /// only a bound rarely reached, use [`new`](Self::new) and let the
    /// wheel grow.
    ///
    /// # Panics
    ///
    /// If the room's size in bytes overflows `usize`, as
    /// `Vec::with_capacity` does (and, like any allocation, the process
    /// aborts if the memory is not there).
    ///
    /// ```
    /// let mut wheel = tickwheel::Wheel::with_capacity(1_000);
    /// let capacity = wheel.capacity();
    /// assert!(capacity >= 1_000);
    /// for tick in 0..1_000 {
    ///     wheel.insert(tick, ());
    /// }
    /// assert_eq!(wheel.capacity(), capacity); // the same storage, not regrown
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        Self::with_geometry_and_capacity(Geometry::DEFAULT, capacity)
    }

    /// An empty wheel of the given shape and capacity, its room written
    /// once as [`with_capacity`](Self::with_capacity) does.
    ///
    /// # Panics
    ///
    /// As [`with_capacity`](Self::with_capacity).
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
            nodes: Nodes::new(lists.count(), with_batch_room(capacity)),
            lists,
            occupied: [0; Geometry::MAX_LEVELS as usize],
            geometry,
            level_by_bit: geometry.level_by_bit(),
            now: 0,
            elapsed: 0,
            overflow_min: Tick::MAX,
            stamps: Stamps::new(),
            lazy: false,
            batch: alloc::vec::Vec::new(),
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

    /// Makes room for at least `additional` more timers (and a batch of
    /// cancels, as [`with_capacity`](Self::with_capacity)), so that the next
    /// `additional` inserts do not allocate. If it allocates, it writes the
    /// new room once, as [`with_capacity`](Self::with_capacity) does, so
    /// those inserts do not fault a page in either.
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
        self.nodes.entries.reserve(with_batch_room(additional));
    }

    /// Returns unused memory at the end of the entry storage, and the
    /// scratch room that walking a slot of many due timers grew (4 bytes a
    /// timer of the largest such burst). Storage freed in the middle is
    /// reused by later inserts instead (keys stay valid, so entries are
    /// never moved).
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
        // Empty between calls (`cascade` clears it), but as large as the
        // most due timers one walk gathered.
        self.batch.shrink_to_fit();
    }
}

/// Numbering of the lists: the slots level by level, then the overflow,
/// due and late lists.
#[derive(Debug, Clone, Copy)]
pub(super) struct Lists {
    pub(super) slot_bits: u32,
    pub(super) levels: u32,
    pub(super) overflow: ListId,
    pub(super) due: ListId,
    pub(super) late: ListId,
}

impl Lists {
    pub(super) fn new(geometry: Geometry) -> Self {
        let overflow = geometry.levels() << geometry.slot_bits();
        Lists {
            slot_bits: geometry.slot_bits(),
            levels: geometry.levels(),
            overflow,
            due: overflow + 1,
            late: overflow + 2,
        }
    }

    pub(super) fn count(self) -> u32 {
        self.late + 1
    }

    #[inline]
    pub(super) fn slot(self, level: u32, slot: u32) -> ListId {
        (level << self.slot_bits) + slot
    }

    #[inline]
    pub(super) fn as_slot(self, list: ListId) -> Option<(u32, u32)> {
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
