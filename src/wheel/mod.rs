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
//!    same way, keeping what is still too far ahead. Once a reset has been
//!    lazy (below), a level-0 slot is first read through: if every timer in
//!    it is due and in sequence order it still joins whole, else it is
//!    walked like a cascade.
//!
//! ## Lazy resets
//!
//! Servers reset an idle timeout on every packet, almost always to a later
//! deadline. Such a reset (new deadline ≥ the current one, timer not yet
//! due) only writes the timer's deadline and sequence number: the timer
//! stays filed where it was. That place comes due no later than the new
//! deadline, so the timer is never late; when it comes due, the walk finds
//! the deadline moved on and files the timer again, relative to the walk's
//! `t`. The reset touches one node, the timer's own: one cache miss, where
//! unlinking and relinking touches its two neighbours and the list's tail
//! as well. A reset to an earlier deadline, or of a due timer, moves it at
//! once. (tokio's wheel moves later deadlines lazily the same way.)
//!
//! First in, first out among equal deadlines then needs a record of when
//! each timer was inserted or last reset: its *sequence number*, a 31-bit
//! value of the wheel's stamp counter, which inserts and resets both
//! advance (a timer never reset is ordered by its stamp; a reset one keeps
//! the number in the node's prefetch-hint field, which it gives up, so a
//! node stays at `24 + size_of::<T>()` bytes). A lazily moved timer is
//! filed again later than its reset, possibly behind timers filed after its
//! reset; so the timers a walk makes due at `t` (all with deadline `t`)
//! leave in sequence order. The walk checks that order as it goes and sorts
//! only when it is broken: O(k log k) for those k timers, paid only where a
//! lazily moved timer was filed again behind younger ones. Sequence numbers
//! compare correctly between timers inserted or reset less than 2³⁰
//! inserts and resets apart.
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
//!   [`Wheel::with_capacity`] or [`Wheel::reserve`], which write the room
//!   once) no insert allocates or faults a page in.
//! - A cancel of a due timer, or a reset, may have to restore invariant 7
//!   below: it then processes events up to `now`, the work the next `poll`
//!   would have done. That work is paid for by the timers it moves, each at
//!   most once per level (and once per overflow sweep).
//!
//! ## Invariants
//!
//! 1. `elapsed ≤ now`; both only grow.
//! 2. A timer in a slot of level `k` was filed for a deadline `f > elapsed`
//!    and sits where `geometry::place` puts `f` relative to `elapsed`; its
//!    deadline is `d ≥ f` (`d > f` only after a lazy reset). Moving
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
//! 6. Until the first lazy reset, every list is in insertion (or last
//!    reset) order and cascades keep that order, so timers that end in the
//!    same level-0 slot come out first in, first out. After it, the timers
//!    a walk makes due leave in sequence-number order (see *Lazy resets*).
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
//!
//! Timers filed on different levels still leave in deadline order, each
//! at its own tick:
//!
//! ```
//! use tickwheel::Wheel;
//!
//! let mut wheel = Wheel::new();
//! wheel.insert(1 << 30, "level 5");
//! wheel.insert(5_000, "level 2"); // 4 096 ≤ 5 000 < 262 144
//! wheel.insert(5, "level 0");
//! assert_eq!(wheel.next_expiration(), Some(5));
//! let fired: Vec<_> = wheel.advance(1 << 30).map(|e| (e.deadline, e.value)).collect();
//! assert_eq!(fired, [(5, "level 0"), (5_000, "level 2"), (1 << 30, "level 5")]);
//! ```

mod aligned_vec;
mod arena;
mod entry;
mod expiry;
mod filing;
pub(crate) mod geometry;
mod iter;
pub(crate) mod list;
mod node;
mod prefetch;
mod slack;
mod state;
mod timers;

/// Arena indices are below this (`Wheel::MAX_TIMERS`): a key naming one
/// at or past it was never made.
pub(crate) const MAX_INDEX: usize = entry::NO_HINT as usize;

pub use expiry::Advance;
pub use geometry::Geometry;
pub use iter::{Drain, Iter};
pub use slack::coalesce;
pub use state::{Expired, Wheel};
