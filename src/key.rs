//! [`TimerKey`]: the handle to a pending timer, and the stamps that keep old
//! handles from matching new timers.
//!
//! # Reuse rules
//!
//! A key is an arena index plus a 32-bit *stamp*. Every insert takes the next
//! stamp from the wheel's counter; the stamp is stored in the entry and never
//! changes while the timer is pending (a reset keeps it). When a timer fires or
//! is cancelled its arena node is freed and may be reused by a later insert,
//! which gets a later stamp, so the old key no longer matches. Resets advance
//! the same counter: its values also order timers with equal deadlines (see
//! `Entry::seq` in `wheel/entry.rs`).
//!
//! The counter is 32 bits and skips zero, so an old key can only match a new
//! timer if that timer reuses the same arena node *and* was inserted exactly
//! a multiple of 2³² − 1 inserts and resets after the old one. That is the
//! wrap-around bound: a key kept for fewer than 4,294,967,295 later inserts
//! and resets is never confused with another timer.
//!
//! Each wheel starts its counter at a different point (consecutive wheels are
//! spread about 2³²/φ apart), so a key from another wheel is rejected unless
//! the two counters have run into each other's range: after about 10⁹
//! inserts and resets for two wheels made one after the other. That is a
//! heuristic, not a guarantee (8 bytes leave no room for a wheel's
//! identity): keep each key with its wheel. A stale reset takes no stamp.

use core::num::NonZeroU32;

/// A handle to a pending timer in a [`Wheel`](crate::Wheel).
///
/// Keys are `Copy`, 8 bytes, and cheap to store next to whatever the timer
/// guards (a connection, an order). A key whose timer has fired or been
/// cancelled is *stale*: every operation given a stale key returns `None` or
/// `false` and touches nothing, even when its index has been reused (see the
/// module docs for the exact wrap-around bound).
///
/// ```
/// use tickwheel::Wheel;
///
/// let mut wheel = Wheel::new();
/// let key = wheel.insert(10, "close connection");
/// assert_eq!(core::mem::size_of_val(&key), 8);
/// assert_eq!(wheel.cancel(key), Some("close connection"));
/// assert_eq!(wheel.cancel(key), None); // stale now
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TimerKey {
    pub(crate) index: u32,
    pub(crate) stamp: NonZeroU32,
}

impl TimerKey {
    /// Packs the key into a `u64`, for storage in an atomic or a foreign table.
    ///
    /// The result is never zero, so `0` can serve as "no key".
    ///
    /// ```
    /// use tickwheel::{TimerKey, Wheel};
    ///
    /// let mut wheel = Wheel::new();
    /// let key = wheel.insert(5, ());
    /// let bits = key.to_bits();
    /// assert_ne!(bits, 0);
    /// assert_eq!(TimerKey::from_bits(bits), Some(key));
    /// ```
    pub const fn to_bits(self) -> u64 {
        ((self.stamp.get() as u64) << 32) | self.index as u64
    }

    /// Rebuilds a key from [`to_bits`](Self::to_bits). Returns `None` for `0`
    /// and for any value no key packs to.
    ///
    /// A rebuilt key is checked like any other: if its timer is gone, the
    /// wheel treats it as stale.
    ///
    /// ```
    /// use tickwheel::TimerKey;
    ///
    /// assert_eq!(TimerKey::from_bits(0), None);
    /// // No wheel holds an arena index past `MAX_TIMERS`.
    /// assert_eq!(TimerKey::from_bits(0x1_FFFF_FFFF), None);
    /// ```
    pub const fn from_bits(bits: u64) -> Option<Self> {
        let index = bits as u32;
        if index as usize >= crate::wheel::MAX_INDEX {
            return None;
        }
        match NonZeroU32::new((bits >> 32) as u32) {
            Some(stamp) => Some(TimerKey { index, stamp }),
            None => None,
        }
    }
}

/// The per-wheel stamp counter.
#[derive(Debug, Clone)]
pub(crate) struct Stamps {
    next: NonZeroU32,
}

impl Stamps {
    /// A counter starting at a point no recent wheel started at.
    pub(crate) fn new() -> Self {
        Stamps {
            next: NonZeroU32::new(seed()).unwrap_or(NonZeroU32::MIN),
        }
    }

    /// The stamp [`take`](Self::take) returns next.
    #[inline]
    pub(crate) fn peek(&self) -> u32 {
        self.next.get()
    }

    /// Takes the next stamp, skipping zero on wrap-around.
    #[inline]
    pub(crate) fn take(&mut self) -> NonZeroU32 {
        let stamp = self.next;
        self.next = NonZeroU32::new(stamp.get().wrapping_add(1)).unwrap_or(NonZeroU32::MIN);
        stamp
    }
}

/// Spreads successive wheels' starting stamps by the golden ratio (the
/// Fibonacci-hashing constant), so that their stamp ranges stay far apart.
#[cfg(target_has_atomic = "32")]
fn seed() -> u32 {
    use core::sync::atomic::{AtomicU32, Ordering};
    static WHEELS: AtomicU32 = AtomicU32::new(0);
    let n = WHEELS.fetch_add(1, Ordering::Relaxed);
    n.wrapping_mul(0x9E37_79B9).wrapping_add(1)
}

/// Without atomics every wheel starts at 1; foreign keys are then only as
/// distinct as the wheels' insert histories.
#[cfg(not(target_has_atomic = "32"))]
fn seed() -> u32 {
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_skip_zero_on_wrap() {
        let mut stamps = Stamps {
            next: NonZeroU32::new(u32::MAX).unwrap(),
        };
        assert_eq!(stamps.take().get(), u32::MAX);
        assert_eq!(stamps.take().get(), 1);
        assert_eq!(stamps.take().get(), 2);
    }

    #[test]
    fn bits_round_trip() {
        let key = TimerKey {
            index: 0x5EAD_BEEF,
            stamp: NonZeroU32::new(0x1234_5678).unwrap(),
        };
        assert_eq!(TimerKey::from_bits(key.to_bits()), Some(key));
        assert_eq!(TimerKey::from_bits(0xFFFF_FFFF), None);
    }

    #[test]
    fn successive_wheels_start_far_apart() {
        let a = Stamps::new().take().get();
        let b = Stamps::new().take().get();
        assert!(a.abs_diff(b) > 1 << 20, "{a} vs {b}");
    }
}
