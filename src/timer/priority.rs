//! Priorities: which of the timers due at the same tick is handed over
//! first.
//!
//! A handle made by [`Timer::with_priority`] files its timers with a
//! priority (0, the default, to 255). Within one slack class the order of
//! hand-over is by deadline (a tick), then by priority, highest first,
//! then first in, first out, which the wheel keeps for equal deadlines: a
//! priority never lets a timer pass one due at an earlier tick, and never
//! fires one early. Classes go over one after another, least slack first
//! (`driver.rs`), so a precise timer never waits behind a batch of loose
//! ones: a priority orders timers of one slack, not a precise timer
//! against a loose one due at the same tick.
//!
//! A wheel entry has no room for a priority (a one-shot of a two-word
//! value is 16 bytes; a field would make it 24 for every timer), so a
//! shard keeps the priorities of the timers that have one beside its
//! wheels ([`Ranks`], by class and key), made on the first: set when one
//! is filed, read when a repeating one fires, dropped when one fires,
//! is cancelled or drained.
//!
//! The driver takes due timers out of every shard in rounds, merges each
//! round (a stable sort on deadline and priority) and hands over what no
//! shard's later timers can precede (`driver.rs`). For the order to hold
//! across rounds, a shard's part of one must not end inside a tick:
//! a shard that has ever held a timer with a priority has its batches run
//! on past their size limit to the end of the last timer's tick. So 10,000
//! timers due at one tick go over in one batch, in priority order.
//!
//! Cost: nothing for a timer without a priority, and for a shard that never
//! held one, one check per batch and per cancel. A timer with one costs a
//! map insert and remove; once a shard held one, its part of a round may
//! grow to a whole tick's timers.
//! `benches/timer_priority.rs` measures both.
//!
//! Across shards, equal deadlines and priorities keep no order: timers
//! scheduled from different threads live in different shards, and a
//! first-in order between threads is not defined without a shared counter,
//! which every schedule would pay for.

use alloc::boxed::Box;
use std::collections::HashMap;

use super::shard::{Shard, Wheels};
use super::{Executor, Timer};
use crate::{Tick, TimerKey};

impl<T: Send + 'static, E: Executor<T>> Timer<T, E> {
    /// A handle to the same timer whose timers carry `priority`: among the
    /// timers of one slack due at the same tick, those of higher priority
    /// are handed to the executor first; within one priority, first in,
    /// first out (for timers scheduled from one thread). A priority never
    /// moves a timer ahead of one due at an earlier tick, nor makes it
    /// fire early. The handle keeps this one's slack;
    /// [`with_slack`](Self::with_slack) keeps the priority. Timers of
    /// different slack found due together go least slack first, whatever
    /// their priority (a precise timer never waits behind a batch of loose
    /// ones). Timers without a priority (0) cost nothing more.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::ManualClock;
    /// use tickwheel::Timer;
    ///
    /// let clock = ManualClock::new();
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// let timer = Timer::builder().clock(clock.clone()).executor(tx).build()?;
    /// let due = Duration::from_millis(5);
    /// timer.schedule(due, "routine")?;
    /// timer.with_priority(9).schedule(due, "refund")?;
    /// timer.with_priority(9).schedule(due, "refund, second")?;
    /// timer.with_priority(3).schedule(due, "reminder")?;
    /// clock.advance(Duration::from_millis(10));
    /// let order: Vec<&str> = rx.iter().take(4).collect();
    /// assert_eq!(order, ["refund", "refund, second", "reminder", "routine"]);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_priority(&self, priority: u8) -> Self {
        let mut timer = self.clone();
        timer.priority = priority;
        timer
    }

    /// The priority of timers scheduled through this handle: 0 unless it
    /// came from [`with_priority`](Self::with_priority).
    ///
    /// ```
    /// let timer = tickwheel::Timer::new()?;
    /// assert_eq!(timer.priority(), 0);
    /// assert_eq!(timer.with_priority(7).priority(), 7);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn priority(&self) -> u8 {
        self.priority
    }
}

/// Orders a batch of due timers for hand-over: by deadline, then priority,
/// highest first; stable, so first in, first out within both.
pub(super) fn order<F>(batch: &mut [F], key: impl Fn(&F) -> (Tick, u8)) {
    batch.sort_by_key(|fire| {
        let (deadline, priority) = key(fire);
        (deadline, core::cmp::Reverse(priority))
    });
}

impl<T> Wheels<T> {
    /// Keeps the priority of a timer just filed with one.
    pub(super) fn rank(&mut self, class: u16, key: TimerKey, priority: u8) {
        self.ranks
            .get_or_insert_with(Box::default)
            .set(class, key, priority);
    }

    /// How many priorities are kept: those of the filed timers that have one.
    #[cfg(all(test, not(loom)))]
    pub(super) fn ranks_kept(&self) -> usize {
        self.ranks.as_ref().map_or(0, |ranks| ranks.len())
    }

    /// Forgets the priority of a timer that left its wheel.
    #[inline]
    pub(super) fn unrank(&mut self, class: u16, key: TimerKey) -> u8 {
        match self.ranks.as_deref_mut() {
            None => 0,
            Some(ranks) => ranks.take(class, key),
        }
    }

    /// The wheel of `class` and the priorities, borrowed together.
    #[inline]
    pub(super) fn wheel_and_ranks(
        &mut self,
        class: u16,
    ) -> Option<(&mut Shard<T>, Option<&mut Ranks>)> {
        let wheel = self.by_class.get_mut(usize::from(class))?.as_mut()?;
        Some((wheel, self.ranks.as_deref_mut()))
    }

    /// Forgets every priority (the wheels were drained).
    pub(super) fn forget_ranks(&mut self) {
        if let Some(ranks) = &mut self.ranks {
            ranks.clear();
        }
    }
}

/// A shard's priorities of the timers filed with one, by class and key.
#[derive(Default)]
pub(super) struct Ranks(HashMap<(u16, TimerKey), u8>);

impl Ranks {
    pub(super) fn set(&mut self, class: u16, key: TimerKey, priority: u8) {
        self.0.insert((class, key), priority);
    }

    /// A filed timer's priority (0: none).
    pub(super) fn get(&self, class: u16, key: TimerKey) -> u8 {
        self.0.get(&(class, key)).copied().unwrap_or(0)
    }

    /// The priority of a timer leaving its wheel, forgotten.
    pub(super) fn take(&mut self, class: u16, key: TimerKey) -> u8 {
        self.0.remove(&(class, key)).unwrap_or(0)
    }

    pub(super) fn clear(&mut self) {
        self.0.clear();
    }

    #[cfg(all(test, not(loom)))]
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use alloc::vec::Vec;
    use core::time::Duration;

    use super::super::{ManualClock, Timer};

    /// Priorities kept in all of a timer's shards.
    fn kept<T: Send + 'static, E: super::Executor<T>>(timer: &Timer<T, E>) -> usize {
        let shards = &timer.owner.shared.shards;
        shards
            .iter()
            .map(|cell| cell.lock.lock().ranks_kept())
            .sum()
    }

    /// A priority is kept exactly while its timer is filed: not after a
    /// cancel, a fire or a shutdown (a leak would grow the map forever
    /// under reset-and-cancel churn); a repeating timer's stays across runs.
    #[test]
    fn priorities_are_kept_only_while_their_timers_wait() {
        let clock = ManualClock::new();
        let (tx, rx) = crossbeam_channel::unbounded();
        let timer = Timer::builder()
            .clock(clock.clone())
            .executor(tx)
            .build()
            .unwrap();
        let ranked = timer.with_priority(5);
        let ms = Duration::from_millis(1);
        let handles: Vec<_> = (0..1_000u32)
            .map(|i| ranked.schedule(ms * (1 + i % 2) * 10, i).unwrap())
            .collect();
        let beat = ranked
            .schedule_repeating(ms * 10, ms * 10, super::super::MissedTicks::Skip, || 7)
            .unwrap();
        assert_eq!(kept(&timer), 1_001);
        for handle in handles.iter().step_by(4) {
            timer.cancel(*handle).unwrap();
        }
        assert_eq!(kept(&timer), 751);
        // The 10 ms half (even ids, 250 left after the cancels) fires,
        // with the first beat.
        clock.advance(ms * 10);
        for _ in 0..251 {
            rx.recv_timeout(Duration::from_secs(5)).unwrap();
        }
        timer.sync();
        assert_eq!(kept(&timer), 501);
        timer.cancel(beat).unwrap();
        assert_eq!(kept(&timer), 500);
        assert_eq!(timer.shutdown().len(), 500);
        assert_eq!(kept(&timer), 0);
    }
}
