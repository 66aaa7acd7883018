//! A pending timer ([`Entry`]) and its sequence number, which orders
//! timers with equal deadlines.

use core::num::NonZeroU32;

use crate::Tick;

/// A pending timer (its list links are beside it, in its
/// [`Node`](super::node::Node)).
#[derive(Debug)]
pub(crate) struct Entry<T> {
    /// The deadline as asked for at insert or last reset.
    pub(crate) deadline: Tick,
    /// Matched against a key's stamp (see `key.rs`).
    pub(crate) stamp: NonZeroU32,
    /// A prefetch hint: an entry about `LOOKAHEAD` places further down the
    /// same list, as of when that entry was appended. Never trusted for
    /// anything but warming the cache: after cancels it may name an entry
    /// elsewhere, a vacant node, or nothing ([`NO_HINT`]). Once the timer
    /// is reset it holds the reset's sequence number instead (see
    /// [`Entry::seq`]).
    pub(crate) ahead: u32,
    pub(crate) value: T,
}

/// Set in [`Entry::ahead`] when it holds the sequence number of the
/// timer's last reset rather than a prefetch hint.
pub(super) const RESET_SEQ: u32 = 1 << 31;

/// [`Entry::ahead`] naming no entry: above every index (indices stay below
/// `Wheel::MAX_TIMERS`), without the [`RESET_SEQ`] bit.
pub(crate) const NO_HINT: u32 = !RESET_SEQ;

/// Sequence numbers, and so the order of timers with equal deadlines, are
/// the low 31 bits of the wheel's stamp counter, which every insert and
/// reset advances.
pub(crate) const SEQ_MASK: u32 = !RESET_SEQ;

/// `true` if sequence number `a` was taken before `b` (within 2³⁰).
#[inline]
pub(crate) fn seq_before(a: u32, b: u32) -> bool {
    let ahead = b.wrapping_sub(a) & SEQ_MASK;
    ahead != 0 && ahead < 1 << 30
}

impl<T> Entry<T> {
    /// When the timer was inserted or last reset: its stamp if it was never
    /// reset, else the sequence number its last reset stored in `ahead`.
    /// The order of timers with equal deadlines (first in, first out), as a
    /// 31-bit counter value.
    #[inline]
    pub(crate) fn seq(&self) -> u32 {
        if self.ahead & RESET_SEQ != 0 {
            self.ahead & SEQ_MASK
        } else {
            self.stamp.get() & SEQ_MASK
        }
    }

    /// Records a reset taking stamp-counter value `seq`, giving up the
    /// prefetch hint for good (a reset timer rarely sits in a long walk).
    #[inline]
    pub(crate) fn set_reset_seq(&mut self, seq: u32) {
        self.ahead = RESET_SEQ | (seq & SEQ_MASK);
    }
}
