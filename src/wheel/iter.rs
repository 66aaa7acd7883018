//! The iterators over a wheel's stored timers, returned by
//! [`Wheel::drain`](super::Wheel::drain) and
//! [`Wheel::iter`](super::Wheel::iter): thin wrappers over the arena's.
//! ([`Advance`](super::Advance), which steps the wheel itself, lives beside
//! [`Wheel`](super::Wheel).)

use core::iter::FusedIterator;

use super::arena::{DrainEntries, Entries};
use crate::{Tick, TimerKey};

/// Every timer taken out of a wheel, as `(deadline, value)`: see
/// [`Wheel::drain`](super::Wheel::drain).
///
/// ```
/// let mut wheel = tickwheel::Wheel::new();
/// wheel.insert(4, 'q');
/// let mut drain = wheel.drain();
/// assert_eq!(drain.len(), 1);
/// assert_eq!(drain.next(), Some((4, 'q')));
/// ```
pub struct Drain<'a, T> {
    inner: DrainEntries<'a, T>,
    remaining: usize,
}

impl<'a, T> Drain<'a, T> {
    pub(super) fn new(inner: DrainEntries<'a, T>, remaining: usize) -> Self {
        Drain { inner, remaining }
    }
}

impl<T> Iterator for Drain<'_, T> {
    type Item = (Tick, T);

    #[inline]
    fn next(&mut self) -> Option<(Tick, T)> {
        let entry = self.inner.next()?;
        self.remaining -= 1;
        Some((entry.deadline, entry.value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<T> ExactSizeIterator for Drain<'_, T> {}
impl<T> FusedIterator for Drain<'_, T> {}

impl<T> core::fmt::Debug for Drain<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Drain")
            .field("remaining", &self.remaining)
            .finish()
    }
}

/// Every pending timer's key, deadline and value: see
/// [`Wheel::iter`](super::Wheel::iter).
///
/// ```
/// let mut wheel = tickwheel::Wheel::new();
/// wheel.insert(8, 80);
/// let total: i32 = wheel.iter().map(|(_, _, v)| v).sum();
/// assert_eq!(total, 80);
/// ```
pub struct Iter<'a, T> {
    inner: Entries<'a, T>,
    remaining: usize,
}

impl<'a, T> Iter<'a, T> {
    pub(super) fn new(inner: Entries<'a, T>, remaining: usize) -> Self {
        Iter { inner, remaining }
    }
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = (TimerKey, Tick, &'a T);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let (index, entry) = self.inner.next()?;
        self.remaining -= 1;
        let key = TimerKey {
            index,
            stamp: entry.stamp,
        };
        Some((key, entry.deadline, &entry.value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {}
impl<T> FusedIterator for Iter<'_, T> {}

impl<T> Clone for Iter<'_, T> {
    fn clone(&self) -> Self {
        Iter {
            inner: self.inner.clone(),
            remaining: self.remaining,
        }
    }
}

impl<T> core::fmt::Debug for Iter<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Iter")
            .field("remaining", &self.remaining)
            .finish()
    }
}
