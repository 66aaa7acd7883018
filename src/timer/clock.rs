//! Where the driver gets the time, and how it sleeps.

#[cfg(any(feature = "test-util", all(loom, test)))]
use alloc::vec::Vec;
use core::time::Duration;
use std::time::{Instant, SystemTime};

use super::sync::thread;
#[cfg(any(feature = "test-util", all(loom, test)))]
use super::sync::{Arc, Mutex, Thread};

/// A monotonic clock the driver thread reads and sleeps on.
///
/// # Contract
///
/// - [`now`](Clock::now) is called from any thread (every `schedule` reads
///   it), must never go backwards, and should be cheap.
/// - [`sleep_until`](Clock::sleep_until) is called only by the driver
///   thread. It must return no later than shortly after `deadline` (`None`:
///   no deadline), and promptly once the driver thread is unparked
///   (`Thread::unpark`), including an unpark that came before the call. It
///   may return early; the driver re-checks. How late it returns after a
///   deadline, by [`now`](Clock::now), is what the driver learns and
///   then wakes that much ahead of a window's end (`Timer::with_slack`).
/// - Neither may panic.
///
/// [`SystemClock`] is the real one; `ManualClock` (feature `test-util`) moves
/// only when told to, for deterministic tests.
///
/// ```
/// use std::time::Instant;
/// use tickwheel::timer::{Clock, SystemClock};
///
/// let clock = SystemClock;
/// let before = Instant::now();
/// assert!(clock.now() >= before);
/// ```
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    ///
    /// ```
    /// use std::time::Instant;
    /// use tickwheel::timer::{Clock, SystemClock};
    ///
    /// let before = Instant::now();
    /// assert!(SystemClock.now() >= before);
    /// ```
    fn now(&self) -> Instant;

    /// Blocks the calling (driver) thread until `deadline`, an unpark, or
    /// a spurious wake-up, whichever comes first.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::{Clock, SystemClock};
    ///
    /// // It may wake early: callers sleep again until the deadline.
    /// let deadline = SystemClock.now() + Duration::from_millis(2);
    /// while SystemClock.now() < deadline {
    ///     SystemClock.sleep_until(Some(deadline));
    /// }
    /// ```
    fn sleep_until(&self, deadline: Option<Instant>);

    /// The wall-clock time now: how deadlines are expressed across
    /// processes (snapshots, restore). `Instant` never leaves the process.
    /// The default is `SystemTime::now()`.
    ///
    /// ```
    /// use std::time::SystemTime;
    /// use tickwheel::timer::{Clock, SystemClock};
    ///
    /// assert!(SystemClock.wall_now() > SystemTime::UNIX_EPOCH);
    /// ```
    fn wall_now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// The monotonic system clock (`Instant::now`); sleeps with
/// `thread::park_timeout`.
///
/// ```
/// use std::time::{Duration, Instant};
/// use tickwheel::timer::{Clock, SystemClock};
///
/// let start = Instant::now();
/// SystemClock.sleep_until(Some(start + Duration::from_millis(2)));
/// assert!(Instant::now() >= start); // may wake early; never fails
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep_until(&self, deadline: Option<Instant>) {
        match deadline {
            None => thread::park(),
            Some(deadline) => {
                let now = Instant::now();
                if deadline > now {
                    park_for(deadline - now);
                }
            }
        }
    }
}

/// The system clock, sleeping more precisely: it parks until `spin` before
/// each deadline, then busy-waits the rest. Trades CPU for lateness.
///
/// `park_timeout` oversleeps by the OS's timer slack plus scheduling delay:
/// about 0.1 ms typically on the benchmark VM, over 1 ms at p99 when the
/// machine is busy (`docs/benchmarks.md`). Spinning the last stretch
/// removes most of that, but the driver thread then burns up to `spin` of
/// CPU per wake-up: with a timer due every 1 ms tick and `spin` = 200 µs,
/// a fifth of a core. An unpark during the spin is noticed at the deadline,
/// so an earlier timer inserted then fires up to `spin` late.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::timer::SpinningClock;
/// use tickwheel::Timer;
///
/// let timer = Timer::builder()
///     .clock(SpinningClock::new(Duration::from_micros(200)))
///     .build()?;
/// # drop(timer);
/// # Ok::<(), tickwheel::timer::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SpinningClock {
    spin: Duration,
}

impl SpinningClock {
    /// The longest spin: while it spins the driver notices nothing (an
    /// earlier timer, a stop), so a longer one would hold up a shutdown
    /// and burn a core for as long.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::SpinningClock;
    ///
    /// // A spin of an hour spins 10 ms before each deadline.
    /// assert_eq!(SpinningClock::MAX_SPIN, Duration::from_millis(10));
    /// let clock = SpinningClock::new(Duration::from_secs(3_600));
    /// # let _ = clock;
    /// ```
    pub const MAX_SPIN: Duration = Duration::from_millis(10);

    /// Parks until `spin` before each deadline, then spins. A `spin` above
    /// [`MAX_SPIN`](Self::MAX_SPIN) spins that long.
    ///
    /// ```
    /// let clock = tickwheel::timer::SpinningClock::new(std::time::Duration::from_micros(500));
    /// # let _ = clock;
    /// ```
    pub fn new(spin: Duration) -> Self {
        SpinningClock {
            spin: spin.min(Self::MAX_SPIN),
        }
    }
}

impl Clock for SpinningClock {
    #[inline]
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep_until(&self, deadline: Option<Instant>) {
        let Some(deadline) = deadline else {
            thread::park();
            return;
        };
        let now = Instant::now();
        if let Some(until_spin) = deadline.checked_sub(self.spin) {
            if until_spin > now {
                park_for(until_spin - now);
                if Instant::now() < until_spin {
                    // Unparked early: the driver has something to do.
                    return;
                }
            }
        }
        while Instant::now() < deadline {
            core::hint::spin_loop();
        }
    }
}

#[cfg(not(all(loom, test)))]
fn park_for(duration: Duration) {
    thread::park_timeout(duration);
}

/// loom has no timed park; a model never relies on the system clock.
#[cfg(all(loom, test))]
fn park_for(_duration: Duration) {
    thread::yield_now();
}

/// A clock that moves only when [`advance`](ManualClock::advance) is
/// called, waking whoever sleeps on it. Cloning shares the time.
///
/// With it, driver tests are deterministic and take no wall-clock time:
/// schedule, advance, then wait for the executor to report.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::timer::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let t0 = clock.now();
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(clock.now() - t0, Duration::from_secs(5));
/// ```
#[cfg(any(feature = "test-util", all(loom, test)))]
#[derive(Debug, Clone)]
pub struct ManualClock {
    inner: Arc<Mutex<ManualState>>,
}

#[cfg(any(feature = "test-util", all(loom, test)))]
#[derive(Debug)]
struct ManualState {
    now: Instant,
    /// The wall-clock time at `now`: it moves with it.
    wall: SystemTime,
    /// Threads that have slept on this clock: woken on every advance.
    sleepers: Vec<Thread>,
    /// The sleeps in progress, by number, with the instant each waits for;
    /// an advance ends them all.
    asleep: Vec<(u64, Option<Instant>)>,
    /// The number of the next sleep.
    sleeps: u64,
}

#[cfg(any(feature = "test-util", all(loom, test)))]
impl ManualClock {
    /// A clock standing at the current instant.
    ///
    /// ```
    /// let clock = tickwheel::timer::ManualClock::new();
    /// # let _ = clock;
    /// ```
    pub fn new() -> Self {
        Self::with_wall_time(SystemTime::now())
    }

    /// A clock standing at the current instant, whose wall-clock time
    /// ([`Clock::wall_now`]) is `wall`: for tests of what happens across a
    /// restart (a later process is a clock with a later wall time).
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use tickwheel::timer::{Clock, ManualClock};
    ///
    /// let noon = SystemTime::UNIX_EPOCH + Duration::from_secs(12 * 3600);
    /// let clock = ManualClock::with_wall_time(noon);
    /// clock.advance(Duration::from_secs(60));
    /// assert_eq!(clock.wall_now(), noon + Duration::from_secs(60));
    /// ```
    pub fn with_wall_time(wall: SystemTime) -> Self {
        ManualClock {
            inner: Arc::new(Mutex::new(ManualState {
                now: Instant::now(),
                wall,
                sleepers: Vec::new(),
                asleep: Vec::new(),
                sleeps: 0,
            })),
        }
    }

    /// Moves the time forward and wakes every thread sleeping on the clock.
    /// Past the latest instant the platform holds (`Duration::MAX`, say),
    /// the clock stops there.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::{Clock, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let t0 = clock.now();
    /// clock.advance(Duration::from_millis(1));
    /// assert!(clock.now() > t0);
    /// ```
    pub fn advance(&self, by: Duration) {
        let sleepers = {
            let mut state = self.inner.lock();
            state.now = saturating_add(state.now, by, Instant::checked_add);
            state.wall = saturating_add(state.wall, by, SystemTime::checked_add);
            state.asleep.clear();
            state.sleepers.clone()
        };
        for thread in sleepers {
            thread.unpark();
        }
    }

    /// Moves the clock to the instant a thread sleeping on it waits for,
    /// as a perfect OS timer would wake it: no earlier, no later. Waits up
    /// to `patience` of real time for a thread to be asleep on the clock
    /// (the driver may be busy with a pass), then advances to the earliest
    /// deadline among the sleeping threads and returns it.
    ///
    /// Returns `None`, without moving the clock, if the threads asleep
    /// wait with no deadline (a timer with nothing pending), or if none
    /// fell asleep within `patience`. Meant for a test that schedules,
    /// then drives one timer this way: a schedule made meanwhile may want
    /// the driver earlier than the deadline it sleeps until, and this
    /// cannot know.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::timer::{Clock, ManualClock};
    /// use tickwheel::Timer;
    ///
    /// let clock = ManualClock::new();
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// let timer = Timer::builder().clock(clock.clone()).executor(tx).build()?;
    /// let start = clock.now();
    /// timer.with_slack(Duration::ZERO).schedule(Duration::from_micros(2_500), "now")?;
    /// timer.sync();
    /// // The driver may first wake where the wheel moves the timer closer
    /// // (its level's slot), then at its deadline.
    /// while let Some(woke_at) = clock.advance_to_next_wake(Duration::from_secs(5)) {
    ///     assert!(woke_at - start <= Duration::from_micros(2_500));
    /// }
    /// assert_eq!(clock.now() - start, Duration::from_micros(2_500));
    /// assert_eq!(rx.try_recv()?, "now");
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    #[cfg(not(all(loom, test)))]
    pub fn advance_to_next_wake(&self, patience: Duration) -> Option<Instant> {
        // Real time: the manual clock is the one standing still.
        let give_up = Instant::now() + patience;
        loop {
            {
                let state = self.inner.lock();
                if !state.asleep.is_empty() {
                    let wake = state.asleep.iter().filter_map(|&(_, until)| until).min()?;
                    let by = wake.saturating_duration_since(state.now);
                    drop(state);
                    self.advance(by);
                    return Some(wake);
                }
            }
            if Instant::now() >= give_up {
                return None;
            }
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}

#[cfg(any(feature = "test-util", all(loom, test)))]
impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

#[cfg(any(feature = "test-util", all(loom, test)))]
impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.inner.lock().now
    }

    fn wall_now(&self) -> SystemTime {
        self.inner.lock().wall
    }

    fn sleep_until(&self, deadline: Option<Instant>) {
        let sleep = {
            let mut state = self.inner.lock();
            if deadline.is_some_and(|deadline| deadline <= state.now) {
                return;
            }
            let me = thread::current();
            if !state.sleepers.iter().any(|t| t.id() == me.id()) {
                state.sleepers.push(me);
            }
            let sleep = state.sleeps;
            state.sleeps += 1;
            state.asleep.push((sleep, deadline));
            sleep
        };
        // An advance or an unpark between the unlock and here leaves the
        // park token set, so this returns at once.
        thread::park();
        self.inner
            .lock()
            .asleep
            .retain(|&(other, _)| other != sleep);
    }
}

#[cfg(any(feature = "test-util", all(loom, test)))]
/// `t + by`, or the latest time `add` reaches on the way there: steps as
/// large as fit, halving on each overflow (a few hundred at most).
fn saturating_add<I: Copy>(mut t: I, by: Duration, add: fn(&I, Duration) -> Option<I>) -> I {
    let (mut left, mut step) = (by, by);
    while !left.is_zero() && !step.is_zero() {
        let now = step.min(left);
        match add(&t, now) {
            Some(later) => (t, left) = (later, left - now),
            None => step /= 2,
        }
    }
    t
}
