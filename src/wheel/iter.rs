//! The iterators returned by [`Wheel`](super::Wheel).

use core::iter::FusedIterator;

use super::arena::{DrainEntries, Entries};
use super::{Expired, Wheel};
use crate::{Tick, TimerKey};

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

impl<T> core::fmt::Debug for Advance<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Advance")
            .field("wheel", &self.wheel)
            .finish()
    }
}

/// Every timer taken out of a wheel, as `(deadline, value)`: see
/// [`Wheel::drain`].
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

/// Every pending timer's key, deadline and value: see [`Wheel::iter`].
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
