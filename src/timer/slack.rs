//! Per-timer slack in the `Timer`: [`Timer::with_slack`], slack classes,
//! and when the driver must wake for them.
//!
//! # The rule
//!
//! A timer with deadline `d` and slack `s` may fire anywhere in its
//! window `[d, d + s]`. Timers with the same slack form a *class*; each
//! shard keeps one wheel per class in use, and every timer is filed at its
//! exact deadline in its class's wheel.
//!
//! The driver wakes at the earliest window end: over the classes, the
//! earliest deadline `d_c` in a class's wheels, plus `wake_after(c)` =
//! `s_c − lead_c`. At each wake it fires every timer of every class whose
//! deadline has passed. So one wake-up serves every timer whose window has
//! opened by then, whatever its class, and the next one comes only when a
//! window is about to close: the greedy schedule, which needs the fewest
//! wake-ups of any that keeps each timer inside its window.
//!
//! `lead_c` = min(`s_c` / 8, 20 µs) wakes the driver a little before the
//! window closes, because the OS wakes a thread late: on the benchmark VM,
//! 6–12 µs at the median with the kernel's own timer slack turned off
//! (`driver.rs`). A class of zero slack wakes at the exact deadline.
//!
//! Why not file each timer at a tick shared with others inside its window
//! (the core's [`coalesce`](crate::wheel::coalesce), which the first
//! version used): its ticks sit on a grid of powers of two, and a window
//! that is not a power of two long either misses the grid now and then
//! (a timer that then takes a wake-up of its own) or is not used to its
//! end. Run P3 in `docs/benchmarks.md`: with 1 ms of slack, 1,604 wake-ups
//! a second against 977 for a 1 ms tick. Classes cost one lock hold per
//! shard and a few wheels, not a word per timer: the slack is the class's,
//! and the deadline in the wheel is the one asked for.
//!
//! Classes are registered as handles ask for them
//! ([`Timer::with_slack`](super::Timer::with_slack)) and never removed; at
//! most [`MAX_CLASSES`]. Class 0 has zero slack, class 1 the builder's
//! default (unless that is zero too). Past the limit a new slack shares the
//! class with the largest slack below it: a narrower window, never a wider
//! one.

use core::time::Duration;

use super::executor::Executor;
use super::sync::{Arc, AtomicU64, AtomicUsize, Mutex, Ordering};
use super::Timer;

/// Most slack classes one timer keeps.
pub(super) const MAX_CLASSES: usize = 16;

/// The registry of a timer's slack classes.
pub(super) struct Classes {
    /// Slack of class `i`, in ticks; classes `0..len` are in use and
    /// never change.
    slack: [AtomicU64; MAX_CLASSES],
    len: AtomicUsize,
    /// Taken to register a class.
    register: Mutex<()>,
    /// The largest lead, in ticks (20 µs).
    max_lead: u64,
}

/// A class's index, its slack and how long after a deadline the driver
/// must wake for it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Class {
    pub(super) index: u16,
    pub(super) slack: u64,
    pub(super) wake_after: u64,
}

impl Classes {
    /// The most a class's wake-up leads the end of its windows.
    pub(super) const MAX_LEAD: core::time::Duration = core::time::Duration::from_micros(20);

    /// Class 0 with zero slack, and class 1 with `default` ticks (if not
    /// zero); `max_lead` is 20 µs in ticks.
    pub(super) fn new(default: u64, max_lead: u64) -> Self {
        let classes = Classes {
            slack: core::array::from_fn(|_| AtomicU64::new(0)),
            len: AtomicUsize::new(1),
            register: Mutex::new(()),
            max_lead,
        };
        classes.class_of(default);
        classes
    }

    /// The class of timers with `slack` ticks, registered if new.
    pub(super) fn class_of(&self, slack: u64) -> u16 {
        if let Some(index) = self.find(slack) {
            return index;
        }
        let _register = self.register.lock();
        let len = self.len.load(Ordering::Acquire);
        if let Some(index) = self.find(slack) {
            return index;
        }
        if len == MAX_CLASSES {
            // Full: the largest slack below, which class 0 (zero) bounds.
            return (0..len)
                .filter(|&i| self.slack[i].load(Ordering::Relaxed) <= slack)
                .max_by_key(|&i| self.slack[i].load(Ordering::Relaxed))
                .unwrap_or(0) as u16;
        }
        self.slack[len].store(slack, Ordering::Relaxed);
        // Publishes the slack with the length.
        self.len.store(len + 1, Ordering::Release);
        len as u16
    }

    fn find(&self, slack: u64) -> Option<u16> {
        let len = self.len.load(Ordering::Acquire);
        (0..len)
            .find(|&i| self.slack[i].load(Ordering::Relaxed) == slack)
            .map(|i| i as u16)
    }

    /// Class `index` (one handed out by `class_of`).
    #[inline]
    pub(super) fn get(&self, index: u16) -> Class {
        let slack = self.slack[usize::from(index)].load(Ordering::Relaxed);
        let lead = (slack / 8).min(self.max_lead);
        Class {
            index,
            slack,
            wake_after: slack - lead,
        }
    }

    /// Every class, least slack first: the order a pass fires them in, so
    /// that a timer with little slack never waits behind a batch of
    /// timers with much.
    pub(super) fn by_slack(&self) -> ([Class; MAX_CLASSES], usize) {
        let len = self.len.load(Ordering::Acquire);
        let mut classes = [self.get(0); MAX_CLASSES];
        for (index, class) in classes.iter_mut().enumerate().take(len) {
            *class = self.get(index as u16);
        }
        classes[..len].sort_unstable_by_key(|class| class.slack);
        (classes, len)
    }
}

impl<T: Send + 'static, E: Executor<T>> Timer<T, E> {
    /// A handle to the same timer whose schedules (one-shot and repeating)
    /// carry `slack`: each may fire anywhere in `[deadline, deadline +
    /// slack]`, never before. Make one per kind of timer and keep it:
    /// `Duration::ZERO` for timers that must fire as close to their
    /// deadline as the platform allows, a few milliseconds for timeouts
    /// that only need to fire eventually.
    ///
    /// The driver wakes as few times as it can while firing every timer
    /// inside its window: it wakes just before the earliest window closes
    /// and fires every timer whose deadline has passed, whatever its slack
    /// (the rule, and why, are in the module `slack.rs`). A timer with
    /// less slack costs its own wake-up and no one else's. A timer keeps
    /// its slack across [`reset`](Self::reset)s; the slack of a fixed-rate
    /// timer's run never moves the next run, which stays on its grid.
    ///
    /// Slack is counted in whole ticks, rounded down: a slack below one
    /// tick is zero. Timers with the same slack form a class; a timer keeps
    /// at most 16 classes, shared by all its handles and never freed, and
    /// past that a new slack shares the class of the largest slack below
    /// it (a narrower window, never a wider one): check
    /// [`slack`](Self::slack) on the returned handle when slacks are
    /// computed per timer. Clones of the returned handle
    /// keep its slack. Every handle reaches the same timers: cancel, reset
    /// and stop through any of them. [`Stats::in_window`] and
    /// [`Stats::overshoot`] report how runs kept to their windows.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::Timer;
    ///
    /// let timer = Timer::new()?; // slack: tickwheel::timer::DEFAULT_SLACK
    /// let precise = timer.with_slack(Duration::ZERO);
    /// let relaxed = timer.with_slack(Duration::from_millis(50));
    /// assert_eq!(precise.slack(), Duration::ZERO);
    ///
    /// precise.run_after(Duration::from_micros(250), || println!("on the dot"))?;
    /// let idle = relaxed.run_after(Duration::from_secs(30), || println!("idle: close"))?;
    /// timer.reset(idle, Duration::from_secs(30)); // still 50 ms of slack
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    ///
    /// [`Stats::in_window`]: super::Stats::in_window
    /// [`Stats::overshoot`]: super::Stats::overshoot
    #[must_use]
    pub fn with_slack(&self, slack: Duration) -> Self {
        let shared = &self.owner.shared;
        Timer {
            owner: Arc::clone(&self.owner),
            class: shared.classes.class_of(shared.time.slack_ticks(slack)),
        }
    }

    /// The slack of timers scheduled through this handle: the builder's
    /// [`slack`](super::Builder::slack), or the one given to
    /// [`with_slack`](Self::with_slack), in whole ticks.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::builder().slack(Duration::from_micros(100)).build()?;
    /// assert_eq!(timer.slack(), Duration::from_micros(100));
    /// assert_eq!(timer.with_slack(Duration::ZERO).slack(), Duration::ZERO);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn slack(&self) -> Duration {
        let shared = &self.owner.shared;
        shared
            .time
            .duration_of(shared.classes.get(self.class).slack)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn classes_are_found_registered_and_capped() {
        let classes = Classes::new(1_000, 20);
        assert_eq!(classes.class_of(0), 0);
        assert_eq!(classes.class_of(1_000), 1);
        let c = classes.class_of(100);
        assert_eq!(c, 2);
        assert_eq!(classes.class_of(100), 2, "found again");
        for slack in 3..MAX_CLASSES as u64 {
            assert_eq!(classes.class_of(slack * 10_000), slack as u16);
        }
        // Full: 150 shares the class of 100, the largest slack below it.
        assert_eq!(classes.class_of(150), 2);
        let (order, len) = classes.by_slack();
        assert_eq!(len, MAX_CLASSES);
        assert!(order[..len].windows(2).all(|w| w[0].slack <= w[1].slack));
    }

    #[test]
    fn the_driver_wakes_a_little_before_a_window_closes() {
        let classes = Classes::new(1_000, 20);
        assert_eq!(classes.get(0).wake_after, 0, "zero slack: exact");
        assert_eq!(classes.get(1).wake_after, 980, "lead capped at 20");
        let small = classes.class_of(80);
        assert_eq!(classes.get(small).wake_after, 70, "lead an eighth");
    }
}
