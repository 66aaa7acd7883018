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
//! `lead_c` wakes the driver a little before the window closes, because
//! the OS wakes a thread late, by how much depending on the machine and
//! its load: 6–12 µs at the median on the benchmark VM with the kernel's
//! own timer slack off (`driver.rs`); 0.6–0.8 ms at p99 and 1.4–2.8 ms at
//! p99.5 on a 2-core VM with a busy thread on each core (and builds of
//! other processes besides). No fixed lead
//! fits both, so the driver learns it (`latency.rs`): after each timed
//! sleep that ran to its end it records how late it woke, and keeps a
//! decaying estimate of the 99.5th percentile, `L`. Then
//!
//! `lead_c` = min(`s_c`, max(min(`s_c` / 8, 20 µs), `L` + 10 µs))
//!
//! The 10 µs cover the pass's own work before the hand-off. Before
//! anything is learned, or on a clock that is never late (a manual clock
//! driven to each wake-up), or when the builder says not to learn
//! (`Builder::learn_lead(false)`: a timer whose slack is there to batch
//! wake-ups, such as the Redis consumer's), the lead is min(`s_c` / 8,
//! 20 µs). A class
//! whose slack is below `L` wakes at its earliest deadline, as a class of
//! zero slack always does. However early it wakes, the driver fires only
//! timers whose deadline has passed: nothing fires early.
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
//! ([`Timer::with_slack`](super::Timer::with_slack)) and never removed,
//! and there is a class for any slack, so none can run out:
//!
//! | slack asked, in ticks | class | its slack |
//! |---|---|---|
//! | 0 | class 0 | 0 |
//! | `2^k` | the power of two `k` | `2^k` |
//! | one of the first [`EXACT`] other slacks asked for (the builder's default first) | an exact class | the slack asked |
//! | any other, in `[2^k, 2^(k+1))` | the power of two `k` | `2^k` |
//!
//! So a program with a few slacks gets each exactly, and one that computes
//! a slack per timer (a tenth of its delay, say) gets at least half of
//! each, never more: rounding goes down, so a window never widens. At most
//! 1 + 16 + 64 classes, and a pass visits only those registered, least
//! slack first ([`BySlack`]), not all 81.

use core::time::Duration;

use super::executor::Executor;
use super::sync::{Arc, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};
use super::Timer;

/// Slacks (other than zero and powers of two) that keep their exact
/// value: the first ones asked for, the builder's default first.
pub(super) const EXACT: usize = 16;

/// Power-of-two classes, one per bit of a `u64` slack.
const POWERS: usize = 64;

/// Most slack classes one timer can have: zero, [`EXACT`], [`POWERS`].
pub(super) const MAX_CLASSES: usize = 1 + EXACT + POWERS;

/// The registry of a timer's slack classes.
///
/// Class indices are handed out in the order classes are registered, so
/// classes `0..len` are the ones in use. A class is written once, under
/// `register`, and published by a release store of what names it (`len`,
/// `exact_len`, `powers[k]`).
pub(super) struct Classes {
    /// Slack of class `i`, in ticks; classes `0..len` are in use and
    /// never change.
    slack: [AtomicU64; MAX_CLASSES],
    len: AtomicUsize,
    /// The exact classes, `0..exact_len` of them.
    exact: [AtomicUsize; EXACT],
    exact_len: AtomicUsize,
    /// The class of slack `2^k`, by `k`; 0 (zero slack's) until registered.
    powers: [AtomicUsize; POWERS],
    /// Taken to register a class.
    register: Mutex<()>,
    /// The largest fixed lead, in ticks (20 µs).
    max_lead: u64,
    /// The lead learned from the OS's lateness, in ticks (`latency.rs`);
    /// written by the driver. Any value is safe: it moves wake-ups inside
    /// windows, never a timer's firing before its deadline.
    learned: AtomicU64,
    /// `Builder::learn_lead(false)`: the learned lead is not used.
    fixed: AtomicBool,
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

    /// Class 0 with zero slack, and the class of `default` ticks; `max_lead`
    /// is 20 µs in ticks.
    pub(super) fn new(default: u64, max_lead: u64) -> Self {
        let classes = Classes {
            slack: core::array::from_fn(|_| AtomicU64::new(0)),
            len: AtomicUsize::new(1),
            exact: core::array::from_fn(|_| AtomicUsize::new(0)),
            exact_len: AtomicUsize::new(0),
            powers: core::array::from_fn(|_| AtomicUsize::new(0)),
            register: Mutex::new(()),
            max_lead,
            learned: AtomicU64::new(0),
            fixed: AtomicBool::new(false),
        };
        classes.class_of(default);
        classes
    }

    /// The class of timers with `slack` ticks (the table in the module
    /// docs), registered if new.
    pub(super) fn class_of(&self, slack: u64) -> u16 {
        if slack == 0 {
            return 0;
        }
        if slack.is_power_of_two() {
            return self.power(slack.ilog2());
        }
        if let Some(index) = self.find_exact(slack) {
            return index;
        }
        {
            let _register = self.register.lock();
            if let Some(index) = self.find_exact(slack) {
                return index;
            }
            let exact = self.exact_len.load(Ordering::Relaxed);
            if exact < EXACT {
                let index = self.push(slack);
                self.exact[exact].store(usize::from(index), Ordering::Relaxed);
                // Publishes the class with the count.
                self.exact_len.store(exact + 1, Ordering::Release);
                return index;
            }
        }
        // Every exact class taken: round down to a power of two.
        self.power(slack.ilog2())
    }

    fn find_exact(&self, slack: u64) -> Option<u16> {
        let exact = self.exact_len.load(Ordering::Acquire);
        self.exact[..exact]
            .iter()
            .map(|index| index.load(Ordering::Relaxed))
            .find(|&index| self.slack[index].load(Ordering::Relaxed) == slack)
            .map(|index| index as u16)
    }

    /// The class of slack `2^k` ticks, registered if new.
    fn power(&self, k: u32) -> u16 {
        let cell = &self.powers[k as usize];
        let index = cell.load(Ordering::Acquire);
        if index != 0 {
            return index as u16;
        }
        let _register = self.register.lock();
        let index = cell.load(Ordering::Relaxed);
        if index != 0 {
            return index as u16;
        }
        let index = self.push(1 << k);
        // Publishes the class with its index.
        cell.store(usize::from(index), Ordering::Release);
        index
    }

    /// Registers a class of `slack` ticks; under `register`. There is
    /// room: each class of zero, [`EXACT`] and [`POWERS`] is pushed once.
    fn push(&self, slack: u64) -> u16 {
        let len = self.len.load(Ordering::Relaxed);
        self.slack[len].store(slack, Ordering::Relaxed);
        // Publishes the slack with the length.
        self.len.store(len + 1, Ordering::Release);
        len as u16
    }

    /// Class `index` (one handed out by `class_of`).
    #[inline]
    pub(super) fn get(&self, index: u16) -> Class {
        let slack = self.slack[usize::from(index)].load(Ordering::Relaxed);
        Class {
            index,
            slack,
            wake_after: slack - self.lead(slack),
        }
    }

    /// How long before its windows close a class of `slack` ticks wakes
    /// the driver (the rule): zero for zero slack.
    #[inline]
    fn lead(&self, slack: u64) -> u64 {
        let fixed = (slack / 8).min(self.max_lead);
        let learned = self.learned.load(Ordering::Relaxed);
        fixed.max(learned).min(slack)
    }

    /// The lead the driver has learned, in ticks (`latency.rs`); ignored
    /// after [`keep_fixed_lead`](Self::keep_fixed_lead).
    pub(super) fn learn_lead(&self, ticks: u64) {
        if !self.fixed.load(Ordering::Relaxed) {
            self.learned.store(ticks, Ordering::Relaxed);
        }
    }

    /// Keeps the fixed lead, min(slack / 8, 20 µs), whatever is learned
    /// (`Builder::learn_lead(false)`).
    pub(super) fn keep_fixed_lead(&self) {
        self.fixed.store(true, Ordering::Relaxed);
    }
}

/// The classes in use, least slack first: the order a pass fires them in,
/// so that a timer with little slack never waits behind a batch of timers
/// with much. The driver keeps one and sorts again only when a class has
/// been registered since.
pub(super) struct BySlack {
    order: [u16; MAX_CLASSES],
    len: usize,
}

impl BySlack {
    pub(super) fn new() -> Self {
        BySlack {
            order: [0; MAX_CLASSES],
            len: 0,
        }
    }

    /// The indices of every class in use, least slack first.
    pub(super) fn update(&mut self, classes: &Classes) -> &[u16] {
        let len = classes.len.load(Ordering::Acquire);
        if len != self.len {
            for (index, slot) in self.order[..len].iter_mut().enumerate() {
                *slot = index as u16;
            }
            self.order[..len].sort_unstable_by_key(|&index| {
                classes.slack[usize::from(index)].load(Ordering::Relaxed)
            });
            self.len = len;
        }
        &self.order[..self.len]
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
    /// Any slack works, and the one in force never exceeds the one asked
    /// for; [`slack`](Self::slack) on the returned handle reports it:
    ///
    /// - Slack is counted in whole ticks, rounded down: a slack below one
    ///   [tick](super::Builder::tick) is zero.
    /// - Timers with the same slack form a class, shared by all the
    ///   timer's handles and never freed. Zero, a power of two ticks, and
    ///   the first 16 other slacks asked for (the builder's default among
    ///   them) keep their exact value. Past those, a slack rounds down to a
    ///   power of two ticks: at least half of it, never more (with the
    ///   default 1 µs tick, 100 ms becomes 65.536 ms). So a slack computed
    ///   per timer is safe, though its window may narrow. A slack longer
    ///   than [`MAX_SLACK`](super::MAX_SLACK) (an hour) is an hour.
    ///
    /// Clones of the returned handle keep its slack. Every handle reaches
    /// the same timers: cancel, reset and stop through any of them.
    /// [`Stats::in_window`] and [`Stats::overshoot`] report how runs kept
    /// to their windows.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::Timer;
    ///
    /// let timer = Timer::new()?; // slack: tickwheel::timer::DEFAULT_SLACK
    /// let precise = timer.with_slack(Duration::ZERO);
    /// let relaxed = timer.with_slack(Duration::from_millis(50));
    /// assert_eq!(precise.slack(), Duration::ZERO);
    /// assert_eq!(relaxed.slack(), Duration::from_millis(50));
    /// for quarter in 1..=40 {
    ///     // Slacks computed per timer: past the first few, they round down.
    ///     let slack = Duration::from_millis(quarter) / 4;
    ///     let handle = timer.with_slack(slack);
    ///     assert!(handle.slack() <= slack && handle.slack() >= slack / 2);
    /// }
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
            priority: self.priority,
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
    fn slacks_get_exact_classes_then_powers_of_two() {
        let classes = Classes::new(1_000, 20);
        assert_eq!(classes.class_of(0), 0);
        assert_eq!(classes.class_of(1_000), 1, "the default: exact");
        assert_eq!(classes.class_of(100), 2);
        assert_eq!(classes.class_of(100), 2, "found again");
        assert_eq!(classes.get(classes.class_of(4_096)).slack, 4_096);
        // The other exact classes: 14 more.
        for slack in 2..EXACT as u64 {
            let class = classes.class_of(slack * 1_000 + 1);
            assert_eq!(classes.get(class).slack, slack * 1_000 + 1);
        }
        assert_eq!(classes.class_of(2_001), classes.class_of(2_001));
        // Past them: the power of two below, which 4,096 already has.
        assert_eq!(classes.get(classes.class_of(150)).slack, 128);
        assert_eq!(classes.class_of(5_000), classes.class_of(4_096));
        assert_eq!(classes.get(classes.class_of(u64::MAX)).slack, 1 << 63);
        // Any slack at all fits, in at least half of it.
        let mut slack = 3u64;
        while slack < u64::MAX / 3 {
            let got = classes.get(classes.class_of(slack)).slack;
            assert!(got <= slack && got > slack / 2, "{slack}: {got}");
            slack = slack * 3 + 1;
        }
        let len = classes.len.load(Ordering::Relaxed);
        assert!(len <= MAX_CLASSES);
        let mut by_slack = BySlack::new();
        let order = by_slack.update(&classes);
        assert_eq!(order.len(), len);
        let slacks: alloc::vec::Vec<u64> = order.iter().map(|&i| classes.get(i).slack).collect();
        assert!(slacks.windows(2).all(|w| w[0] < w[1]), "{slacks:?}");
        let more = classes.class_of(6);
        assert!(by_slack.update(&classes).contains(&more), "sorted again");
    }

    #[test]
    fn the_driver_wakes_a_little_before_a_window_closes() {
        let classes = Classes::new(1_000, 20);
        assert_eq!(classes.get(0).wake_after, 0, "zero slack: exact");
        assert_eq!(classes.get(1).wake_after, 980, "lead capped at 20");
        let small = classes.class_of(80);
        assert_eq!(classes.get(small).wake_after, 70, "lead an eighth");
    }

    #[test]
    fn the_learned_lead_is_clamped_between_the_fixed_one_and_the_slack() {
        let classes = Classes::new(1_000, 20);
        let small = classes.class_of(80);
        classes.learn_lead(300);
        assert_eq!(classes.get(1).wake_after, 700, "learned");
        assert_eq!(classes.get(small).wake_after, 0, "at most the slack");
        assert_eq!(classes.get(0).wake_after, 0, "zero slack: exact");
        classes.learn_lead(5);
        assert_eq!(classes.get(1).wake_after, 980, "at least the fixed lead");
        assert_eq!(classes.get(small).wake_after, 70);
        classes.learn_lead(u64::MAX);
        assert_eq!(classes.get(1).wake_after, 0);
        assert_eq!(classes.get(0).wake_after, 0);
    }

    #[test]
    fn a_fixed_lead_ignores_what_is_learned() {
        // `Builder::learn_lead(false)`: slack that batches wake-ups keeps
        // doing so however late the OS is.
        let classes = Classes::new(1_000, 20);
        classes.keep_fixed_lead();
        classes.learn_lead(900);
        assert_eq!(classes.get(1).wake_after, 980, "the fixed lead");
    }

    /// The estimator's lead, published as the driver does, moves a class's
    /// wake-up: 1 ms of slack wakes about 0.3 ms before its windows close
    /// when the OS is that late, and at its deadline when it is later.
    #[test]
    fn a_learned_lead_moves_a_class_wake_up() {
        use super::super::latency::WakeLatency;
        let classes = Classes::new(1_000, 20); // 1 µs ticks
        let mut latency = WakeLatency::new();
        for _ in 0..1_000 {
            latency.record(Duration::from_micros(250));
        }
        let lead = latency.lead().as_micros() as u64;
        assert!((260..330).contains(&lead), "{lead} µs");
        classes.learn_lead(lead);
        assert_eq!(classes.get(1).wake_after, 1_000 - lead);
        for _ in 0..1_000 {
            latency.record(Duration::from_millis(3));
        }
        classes.learn_lead(latency.lead().as_micros() as u64);
        assert_eq!(classes.get(1).wake_after, 0, "wakes at the deadline");
    }
}
