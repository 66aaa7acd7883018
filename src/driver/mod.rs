//! The std layer: [`Timer`], a tickless driver thread over sharded wheels.
//!
//! A `Timer` turns [`Wheel`]s into something a server or a job runner can
//! embed: any thread schedules, cancels and resets through a cloneable
//! handle; one driver thread owns the clock, sleeps until the next deadline,
//! and hands what fires to an [`Executor`].
//!
//! # Ground rules
//!
//! **Shards.** The timers live in `S` shards (a power of two, 4 per core by
//! default). A shard is a `Mutex` around one `Wheel` and its counters, and
//! every access to a wheel is under its shard's lock. Each thread schedules
//! into a *home* shard of its own (assigned round-robin at its first
//! schedule), so threads do not contend; a [`TimerHandle`] records its
//! shard, and cancel and reset lock that one. There is no global lock.
//!
//! **Time.** Wheels count ticks since the timer was built (1 ms by
//! default). A deadline rounds *up* to the next tick and the driver's "now"
//! rounds *down*, so a timer never fires before its deadline. Only the
//! driver moves a wheel's time.
//!
//! **Who wins, fire or cancel.** Both take the timer out of its wheel under
//! the shard lock. The driver collects a batch of due timers, unlocks, and
//! only then calls the executor; a `cancel` that finds the timer gone
//! returns `None` (fired or firing). So exactly one of them gets the value.
//! No user code (executors, tasks, value factories, hooks) ever runs under
//! an internal lock.
//!
//! **Waking the driver (no lost wake-ups).** `next_wake` is the tick the
//! driver has promised to wake by.
//!
//! - Driver: `scanning = true`, `next_wake = MAX`, then scan every shard
//!   under its lock (taking what is due and reading each
//!   `next_expiration`), then `scanning = false`, then
//!   `fetch_min(next_wake, next)` and sleep until the result.
//! - Scheduler: insert under the shard lock, unlock; if its deadline is
//!   below `next_wake`, `fetch_min` it and, if that lowered it and the
//!   driver is not `scanning`, unpark the driver.
//!
//! Why no wake-up is lost: if the driver's scan of the shard comes before
//! the insert, its `next_wake = MAX` happens before the scheduler's read
//! (through the shard's unlock and lock), so the scheduler lowers
//! `next_wake`; otherwise the scan sees the new timer. A scheduler that then
//! sees `scanning` has its `fetch_min` ordered before the driver's final
//! `fetch_min` (everything here is `SeqCst`, and the driver clears the flag
//! first), so the driver's wake tick already includes the new deadline and
//! no unpark is needed. One that sees the flag clear unparks; an unpark
//! before the driver parks leaves the park token set, so the sleep returns
//! at once. Skipping the unpark during scans matters: without it, a stream
//! of schedules arriving during each scan (when `next_wake` is `MAX`) woke
//! the driver for another scan, and another (3 M passes in one benchmark). With no timers the driver sleeps with no
//! deadline: zero wake-ups a second. The loom models in `tests/loom.rs`
//! check this protocol, cancel against fire, reset against fire, and
//! shutdown against schedule.
//!
//! **Shutdown.** `state` goes from running to stopping; schedulers read it
//! under the shard lock, so every schedule either lands before a shard is
//! drained (and is returned by the drain) or sees the state and gets its
//! value back in [`ScheduleError::Shutdown`].

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
mod clock;
mod error;
mod executor;
#[cfg(all(test, any(loom, feature = "test-util")))]
mod models;
mod stats;

use core::fmt;
use core::marker::PhantomData;
use core::panic::AssertUnwindSafe;
use core::time::Duration;
use std::panic::catch_unwind;
use std::time::Instant;

use crate::sync::{
    thread, Arc, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Mutex, Ordering, Thread,
};
use crate::{Geometry, Tick, TimerKey, Wheel};

#[cfg(any(feature = "test-util", all(loom, test)))]
pub use clock::ManualClock;
pub use clock::{Clock, SpinningClock, SystemClock};
pub use error::{BuildError, ScheduleError};
pub use executor::{Executor, Inline, Rejected, Task, ThreadPool};
pub use stats::{Lateness, Stats};

use stats::Recorder;

/// A fired timer as the std layer hands it over: its handle, its deadline
/// (rounded up to the tick) and its value.
///
/// ```
/// use tickwheel::driver::Expired;
///
/// fn on_fire(fired: Expired<String>) {
///     println!("{} was due at {:?}", fired.value, fired.deadline);
/// }
/// # let _ = on_fire;
/// ```
pub type Expired<T> = crate::Expired<T, TimerHandle, Instant>;

/// A handle to a scheduled timer: for [`Timer::cancel`] and
/// [`Timer::reset`]. `Copy`, 12 bytes.
///
/// A handle whose timer has fired (a one-shot) or been cancelled is stale:
/// `cancel` returns `None` and `reset` returns `false`, even if the slot was
/// reused (see [`TimerKey`] for the bound).
///
/// ```
/// use std::time::Duration;
/// use tickwheel::Timer;
///
/// let timer = Timer::new()?;
/// let handle = timer.schedule(Duration::from_secs(30), Box::new(|| ()))?;
/// assert!(timer.reset(handle, Duration::from_secs(60)));
/// assert!(timer.cancel(handle).is_some());
/// assert!(timer.cancel(handle).is_none());
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TimerHandle {
    key: TimerKey,
    shard: u32,
}

/// What a repeating timer does when runs were missed (the driver was busy
/// or the machine asleep and one or more deadlines passed before it could
/// run).
///
/// All three keep a fixed rate while nothing is missed: run `n` is due at
/// `first + n × period`, with no drift.
///
/// ```
/// use tickwheel::driver::MissedTicks;
///
/// assert_eq!(MissedTicks::default(), MissedTicks::Burst);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MissedTicks {
    /// Run every missed run, back to back, until caught up; the schedule
    /// stays `first + n × period`.
    #[default]
    Burst,
    /// Run once now, then continue `period` after this run: the schedule
    /// shifts later by the delay.
    Delay,
    /// Run once now, then skip to the next `first + n × period` still in the
    /// future: the schedule stays on its grid, missed runs are dropped.
    Skip,
}

/// One timer's payload inside a wheel.
enum Job<T> {
    Once(T),
    Repeat(Box<Repeat<T>>),
}

/// A repeating timer: how to make each run's value, and when the next run
/// is due.
struct Repeat<T> {
    make: alloc::sync::Arc<dyn Fn() -> T + Send + Sync>,
    cadence: Cadence,
}

#[derive(Debug, Clone, Copy)]
enum Cadence {
    /// Run `runs` is due at `base + runs × period` (ticks).
    Rate {
        base: Tick,
        runs: u64,
        period: u64,
        missed: MissedTicks,
    },
    /// The next run is due `delay` after the previous one finished; while a
    /// run is in progress the timer waits at `PARKED`, and `expected` says
    /// when the next run would be if the current one finished at once.
    #[cfg_attr(all(loom, test), allow(dead_code))]
    Delay { delay: u64, expected: Tick },
}

/// Where a fixed-delay timer waits while its run is in progress.
const PARKED: Tick = Tick::MAX;

impl Cadence {
    /// The deadline after the run due at `deadline` fires at `now`.
    fn next(&mut self, deadline: Tick, now: Tick) -> Tick {
        match self {
            Cadence::Rate {
                base,
                runs,
                period,
                missed,
            } => match missed {
                MissedTicks::Burst => {
                    *runs += 1;
                    base.saturating_add(runs.saturating_mul(*period))
                }
                MissedTicks::Skip => {
                    *runs = (now.saturating_sub(*base) / *period).saturating_add(1);
                    base.saturating_add(runs.saturating_mul(*period))
                }
                MissedTicks::Delay => {
                    // On time: stay on the grid. Late: restart it from now.
                    let on_grid = base.saturating_add((*runs + 1).saturating_mul(*period));
                    if on_grid > now {
                        *runs += 1;
                        on_grid
                    } else {
                        *base = now.saturating_add(*period);
                        *runs = 0;
                        *base
                    }
                }
            },
            Cadence::Delay { delay, expected } => {
                let _ = deadline;
                *expected = now.saturating_add(*delay);
                PARKED
            }
        }
    }

    /// A reset moved the next run to `deadline`: the grid restarts there.
    fn restart_at(&mut self, deadline: Tick) {
        match self {
            Cadence::Rate { base, runs, .. } => {
                *base = deadline;
                *runs = 0;
            }
            Cadence::Delay { expected, .. } => *expected = deadline,
        }
    }
}

/// Builds a [`Timer`]: tick, geometry, shards, `max_pending`, executor,
/// driver thread name, clock, and the hook for values that cannot be
/// delivered.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::driver::Inline;
/// use tickwheel::{Geometry, Timer};
///
/// let timer = Timer::builder()
///     .tick(Duration::from_micros(100))
///     .geometry(Geometry::DEFAULT)
///     .max_pending(1_000_000)
///     .thread_name("order-timeouts")
///     .executor(Inline)
///     .build()?;
/// # drop(timer);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub struct Builder<T, E> {
    tick: Duration,
    geometry: Geometry,
    shards: Option<usize>,
    max_pending: Option<usize>,
    thread_name: String,
    clock: alloc::sync::Arc<dyn Clock>,
    executor: E,
    on_undelivered: Option<UndeliveredHook<T>>,
    _values: PhantomData<fn(T)>,
}

type UndeliveredHook<T> = Box<dyn Fn(Undelivered<T>) + Send + Sync>;

/// A value the timer could not deliver, passed to the
/// [`on_undelivered`](Builder::on_undelivered) hook instead of being
/// dropped silently.
///
/// ```
/// use tickwheel::driver::{Undelivered, Why};
///
/// fn log(lost: Undelivered<String>) {
///     match lost.why {
///         Why::Rejected => eprintln!("executor refused {}", lost.fired.value),
///         Why::Dropped => eprintln!("timer dropped before {} fired", lost.fired.value),
///     }
/// }
/// # let _ = log;
/// ```
#[derive(Debug)]
pub struct Undelivered<T> {
    /// The timer, with its deadline and value.
    pub fired: Expired<T>,
    /// Why it was not delivered.
    pub why: Why,
}

/// Why a value was [`Undelivered`].
///
/// ```
/// assert_ne!(tickwheel::driver::Why::Rejected, tickwheel::driver::Why::Dropped);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Why {
    /// The executor refused it ([`Executor::execute`] returned `Err`).
    Rejected,
    /// The timer's last handle was dropped while it was pending (call
    /// [`Timer::shutdown`] to get pending values back instead).
    Dropped,
}

impl Builder<Task, ThreadPool> {
    fn new() -> Self {
        Builder {
            tick: Duration::from_millis(1),
            geometry: Geometry::DEFAULT,
            shards: None,
            max_pending: None,
            thread_name: String::from("tickwheel-driver"),
            clock: alloc::sync::Arc::new(SystemClock),
            executor: ThreadPool::default(),
            on_undelivered: None,
            _values: PhantomData,
        }
    }
}

impl<T: Send + 'static, E: Executor<T>> Builder<T, E> {
    /// The tick: the resolution of deadlines, which round up to it. Default
    /// 1 ms; at least 1 µs (100 µs and up is practical).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let builder = tickwheel::Timer::builder().tick(Duration::from_micros(250));
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// The shape of each shard's wheel. Default [`Geometry::DEFAULT`].
    ///
    /// ```
    /// let g = tickwheel::Geometry::new(4, 4).unwrap();
    /// let builder = tickwheel::Timer::builder().geometry(g);
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn geometry(mut self, geometry: Geometry) -> Self {
        self.geometry = geometry;
        self
    }

    /// Number of shards, rounded up to a power of two (1 to 1024). Default:
    /// 4 per available core.
    ///
    /// ```
    /// let builder = tickwheel::Timer::builder().shards(8);
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// Refuse to hold more than `max` pending timers: a schedule over the
    /// limit returns [`ScheduleError::Full`] with its value. Costs one
    /// shared atomic per schedule, cancel and fire.
    ///
    /// ```
    /// let builder = tickwheel::Timer::builder().max_pending(10_000);
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn max_pending(mut self, max: usize) -> Self {
        self.max_pending = Some(max);
        self
    }

    /// The driver thread's name. Default `tickwheel-driver`.
    ///
    /// ```
    /// let builder = tickwheel::Timer::builder().thread_name("timeouts");
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.thread_name = name.into();
        self
    }

    /// The clock. Default [`SystemClock`].
    ///
    /// ```
    /// let builder = tickwheel::Timer::builder().clock(tickwheel::driver::SystemClock);
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = alloc::sync::Arc::new(clock);
        self
    }

    /// Where fired timers go; this also fixes the value type `V`. Default: a
    /// [`ThreadPool`] of two workers running [`Task`]s.
    ///
    /// ```
    /// use tickwheel::driver::Inline;
    /// let builder = tickwheel::Timer::builder().executor(Inline);
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn executor<V: Send + 'static, X: Executor<V>>(self, executor: X) -> Builder<V, X> {
        Builder {
            tick: self.tick,
            geometry: self.geometry,
            shards: self.shards,
            max_pending: self.max_pending,
            thread_name: self.thread_name,
            clock: self.clock,
            executor,
            on_undelivered: None,
            _values: PhantomData,
        }
    }

    /// Called with every value the timer cannot deliver: refused by the
    /// executor, or still pending when the last handle is dropped. Runs on
    /// the thread that found it (the driver, or the one dropping the
    /// timer), never under a lock. Without a hook such values are counted
    /// in [`Stats::rejected`] (if refused) and dropped.
    ///
    /// ```
    /// use tickwheel::driver::Task;
    ///
    /// let builder = tickwheel::Timer::builder()
    ///     .on_undelivered(|lost: tickwheel::driver::Undelivered<Task>| eprintln!("{:?}", lost.why));
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn on_undelivered(mut self, hook: impl Fn(Undelivered<T>) + Send + Sync + 'static) -> Self {
        self.on_undelivered = Some(Box::new(hook));
        self
    }

    /// Starts the executor and the driver thread.
    ///
    /// # Errors
    ///
    /// [`BuildError`] if the tick or shard count is out of range, or a
    /// thread cannot be spawned.
    ///
    /// ```
    /// let timer = tickwheel::Timer::builder().build()?;
    /// # drop(timer);
    /// # Ok::<(), tickwheel::driver::BuildError>(())
    /// ```
    pub fn build(self) -> Result<Timer<T, E>, BuildError> {
        if self.tick < Duration::from_micros(1) {
            return Err(BuildError::Tick(self.tick));
        }
        let shards = match self.shards {
            Some(n) if n == 0 || n > 1024 => return Err(BuildError::Shards(n)),
            Some(n) => n.next_power_of_two(),
            None => default_shards(),
        };
        self.executor.start()?;
        let origin = self.clock.now();
        let shared = Arc::new(Shared {
            shards: (0..shards)
                .map(|_| ShardCell {
                    lock: Mutex::new(Shard {
                        wheel: Wheel::with_geometry(self.geometry),
                        scheduled: 0,
                        cancelled: 0,
                    }),
                    pending: AtomicUsize::new(0),
                })
                .collect(),
            next_wake: AtomicU64::new(0),
            scanning: AtomicBool::new(true),
            state: AtomicU8::new(RUNNING),
            driver: Mutex::new(None),
            clock: self.clock,
            origin,
            tick_nanos: u64::try_from(self.tick.as_nanos()).unwrap_or(u64::MAX),
            executor: self.executor,
            max_pending: self.max_pending,
            reserved: AtomicUsize::new(0),
            recorder: Recorder::default(),
            on_undelivered: self.on_undelivered,
            passes: Passes::default(),
        });
        let driver = {
            let shared = Arc::clone(&shared);
            spawn_driver(self.thread_name, move || drive(&shared))?
        };
        Ok(Timer {
            owner: Arc::new(Owner {
                shared,
                driver: Mutex::new(Some(driver)),
            }),
        })
    }
}

#[cfg(not(all(loom, test)))]
fn default_shards() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores * 4).next_power_of_two().min(1024)
}

#[cfg(all(loom, test))]
fn default_shards() -> usize {
    1
}

#[cfg(not(all(loom, test)))]
fn spawn_driver(
    name: String,
    body: impl FnOnce() + Send + 'static,
) -> Result<thread::JoinHandle<()>, BuildError> {
    Ok(thread::Builder::new().name(name).spawn(body)?)
}

#[cfg(all(loom, test))]
fn spawn_driver(
    _name: String,
    body: impl FnOnce() + Send + 'static,
) -> Result<thread::JoinHandle<()>, BuildError> {
    Ok(thread::spawn(body))
}

impl<T, E> fmt::Debug for Builder<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("tick", &self.tick)
            .field("geometry", &self.geometry)
            .field("shards", &self.shards)
            .field("max_pending", &self.max_pending)
            .field("thread_name", &self.thread_name)
            .finish_non_exhaustive()
    }
}

/// A timer service: a driver thread, a clock and an executor over sharded
/// timing wheels. Cloneable, `Send + Sync`; schedule, cancel and reset from
/// any thread.
///
/// `T` is the value each timer carries and `E` the [`Executor`] that
/// receives it when it fires. The default, from [`Timer::new`], runs boxed
/// closures ([`Task`]) on a small [`ThreadPool`]. [`Timer::with_channel`]
/// makes a pull-style delay queue. See the [module docs](self) for how it
/// works.
///
/// Dropping the last handle stops the driver and joins its thread. Timers
/// still pending then go to the [`on_undelivered`](Builder::on_undelivered)
/// hook, or are dropped; [`shutdown`](Timer::shutdown) returns them instead.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::Timer;
///
/// let timer = Timer::new()?;
/// let (done, finished) = std::sync::mpsc::channel();
///
/// // A connection timeout, pushed back on activity.
/// let idle = timer.schedule(Duration::from_secs(30), Box::new(|| println!("idle: close")))?;
/// timer.reset(idle, Duration::from_secs(30));
///
/// // A delayed job.
/// timer.schedule(Duration::from_millis(5), Box::new(move || done.send(()).unwrap()))?;
/// finished.recv_timeout(Duration::from_secs(5))?;
///
/// // Stop, and get back what never fired.
/// let unfired = timer.shutdown();
/// assert_eq!(unfired.len(), 1);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub struct Timer<T: Send + 'static = Task, E: Executor<T> = ThreadPool> {
    owner: Arc<Owner<T, E>>,
}

impl Timer {
    /// A timer with a 1 ms tick that runs [`Task`]s on a two-thread pool.
    ///
    /// # Errors
    ///
    /// [`BuildError::Spawn`] if the driver or a worker thread cannot be
    /// spawned.
    ///
    /// ```
    /// let timer = tickwheel::Timer::new()?;
    /// # drop(timer);
    /// # Ok::<(), tickwheel::driver::BuildError>(())
    /// ```
    pub fn new() -> Result<Self, BuildError> {
        Builder::new().build()
    }

    /// A [`Builder`] starting from the defaults of [`Timer::new`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::builder().tick(Duration::from_millis(10)).build()?;
    /// # drop(timer);
    /// # Ok::<(), tickwheel::driver::BuildError>(())
    /// ```
    pub fn builder() -> Builder<Task, ThreadPool> {
        Builder::new()
    }
}

impl<T: Send + 'static> Timer<T, crossbeam_channel::Sender<T>> {
    /// A delay queue: values come out of the returned receiver once their
    /// deadline has passed, in deadline order (the JDK `DelayQueue` /
    /// Redisson `RDelayedQueue` use).
    ///
    /// # Errors
    ///
    /// [`BuildError::Spawn`] if the driver thread cannot be spawned.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let (queue, ready) = tickwheel::Timer::with_channel()?;
    /// queue.schedule(Duration::from_millis(20), "second")?;
    /// queue.schedule(Duration::from_millis(10), "first")?;
    /// assert_eq!(ready.recv()?, "first");
    /// assert_eq!(ready.recv()?, "second");
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn with_channel() -> Result<(Self, crossbeam_channel::Receiver<T>), BuildError> {
        let (sender, receiver) = crossbeam_channel::unbounded();
        let timer = Timer::builder().executor(sender).build()?;
        Ok((timer, receiver))
    }
}

impl<T: Send + 'static, E: Executor<T>> Timer<T, E> {
    /// Schedules `value` to fire after `delay`. The deadline rounds up to
    /// the tick, so it never fires early.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::Full`] over `max_pending`, [`ScheduleError::Shutdown`]
    /// after shutdown; both hand `value` back.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// let handle = timer.schedule(Duration::from_secs(900), Box::new(|| println!("close order")))?;
    /// # let _ = handle;
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn schedule(&self, delay: Duration, value: T) -> Result<TimerHandle, ScheduleError<T>> {
        let shared = &self.owner.shared;
        let deadline = shared.deadline_after(delay);
        shared
            .insert(deadline, Job::Once(value))
            .map_err(|err| err.map(Job::into_once))
    }

    /// Schedules `value` to fire at `deadline` (an instant of this timer's
    /// clock; one in the past fires at once).
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule).
    ///
    /// ```
    /// # use std::time::{Duration, Instant};
    /// let timer = tickwheel::Timer::new()?;
    /// timer.schedule_at(Instant::now() + Duration::from_secs(1), Box::new(|| ()))?;
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn schedule_at(
        &self,
        deadline: Instant,
        value: T,
    ) -> Result<TimerHandle, ScheduleError<T>> {
        let shared = &self.owner.shared;
        let deadline = shared.tick_at(deadline);
        shared
            .insert(deadline, Job::Once(value))
            .map_err(|err| err.map(Job::into_once))
    }

    /// Schedules a repeating timer: the first run after `first_delay`, then
    /// every `period` at a fixed rate (run `n` is due at
    /// `first + n × period`, no drift); `missed` says what happens when runs
    /// fall behind. `make` produces each run's value (outside any lock).
    ///
    /// The handle stays valid across runs; [`cancel`](Self::cancel) stops
    /// all future runs (a run already handed to the executor finishes) and
    /// returns one more value from `make`.
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule), handing `make` back as a boxed
    /// factory.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::driver::{Expired, MissedTicks};
    /// use tickwheel::Timer;
    ///
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let tx = std::sync::Mutex::new(tx);
    /// let timer = Timer::builder()
    ///     .executor(move |fired: Expired<&'static str>| tx.lock().unwrap().send(fired.value).unwrap())
    ///     .build()?;
    /// let beat = timer.schedule_repeating(
    ///     Duration::from_millis(1),
    ///     Duration::from_millis(1),
    ///     MissedTicks::Skip,
    ///     || "heartbeat",
    /// ).map_err(|e| e.to_string())?;
    /// assert_eq!(rx.recv()?, "heartbeat");
    /// assert_eq!(rx.recv()?, "heartbeat");
    /// timer.cancel(beat);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn schedule_repeating(
        &self,
        first_delay: Duration,
        period: Duration,
        missed: MissedTicks,
        make: impl Fn() -> T + Send + Sync + 'static,
    ) -> Result<TimerHandle, ScheduleError<Factory<T>>> {
        let shared = &self.owner.shared;
        let first = shared.deadline_after(first_delay);
        let job = Job::Repeat(Box::new(Repeat {
            make: alloc::sync::Arc::new(make),
            cadence: Cadence::Rate {
                base: first,
                runs: 0,
                period: shared.ticks_in(period),
                missed,
            },
        }));
        shared
            .insert(first, job)
            .map_err(|err| err.map(Job::into_factory))
    }

    /// Cancels a timer. Returns its value if it will never fire (for a
    /// repeating timer: no future run will; the value comes from its
    /// factory), or `None` if it has fired or is firing (a one-shot), or the
    /// handle is stale. Fire and cancel never both win.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// let refund = timer.schedule(Duration::from_secs(60), Box::new(|| println!("refund")))?;
    /// assert!(timer.cancel(refund).is_some()); // paid: no refund
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn cancel(&self, handle: TimerHandle) -> Option<T> {
        let shared = &self.owner.shared;
        let cell = shared.shards.get(handle.shard as usize)?;
        let job = {
            let mut shard = cell.lock.lock();
            let job = shard.wheel.cancel(handle.key)?;
            shard.cancelled += 1;
            cell.pending.store(shard.wheel.len(), Ordering::Relaxed);
            job
        };
        shared.release_reservation(1);
        match job {
            Job::Once(value) => Some(value),
            Job::Repeat(repeat) => Some((repeat.make)()),
        }
    }

    /// Moves a pending timer's next run to `delay` from now (for a
    /// repeating timer, its schedule restarts there). Returns `false` if the
    /// handle is stale (fired, cancelled, or never valid here).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// let idle = timer.schedule(Duration::from_secs(30), Box::new(|| ()))?;
    /// assert!(timer.reset(idle, Duration::from_secs(30))); // a packet arrived
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn reset(&self, handle: TimerHandle, delay: Duration) -> bool {
        let shared = &self.owner.shared;
        let Some(cell) = shared.shards.get(handle.shard as usize) else {
            return false;
        };
        let deadline = shared.deadline_after(delay);
        {
            let mut shard = cell.lock.lock();
            match shard.wheel.get_mut(handle.key) {
                None => return false,
                Some(Job::Repeat(repeat)) => repeat.cadence.restart_at(deadline),
                Some(Job::Once(_)) => {}
            }
            shard.wheel.reset(handle.key, deadline);
        }
        shared.wake_if_earlier(deadline);
        true
    }

    /// Number of timers pending (scheduled, and neither fired nor
    /// cancelled). Read without locking.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// timer.schedule(Duration::from_secs(60), Box::new(|| ()))?;
    /// assert_eq!(timer.pending(), 1);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn pending(&self) -> usize {
        self.owner
            .shared
            .shards
            .iter()
            .map(|cell| cell.pending.load(Ordering::Relaxed))
            .sum()
    }

    /// A snapshot of the counters and the lateness distribution. Cheap: it
    /// reads atomics and briefly locks each shard for its counts.
    ///
    /// ```
    /// let timer = tickwheel::Timer::new()?;
    /// assert_eq!(timer.stats().fired, 0);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn stats(&self) -> Stats {
        let shared = &self.owner.shared;
        let (mut scheduled, mut cancelled) = (0, 0);
        for cell in shared.shards.iter() {
            let shard = cell.lock.lock();
            scheduled += shard.scheduled;
            cancelled += shard.cancelled;
        }
        let recorder = &shared.recorder;
        Stats {
            pending: self.pending(),
            scheduled,
            fired: recorder.fired.load(Ordering::Relaxed),
            cancelled,
            rejected: recorder.rejected.load(Ordering::Relaxed),
            panicked: recorder.panicked.load(Ordering::Relaxed) + shared.executor.panics(),
            wakeups: shared.passes.started.load(Ordering::Relaxed),
            lateness: recorder.snapshot(),
        }
    }

    /// Waits until the driver has made a full pass that began after this
    /// call: everything due at the clock's current time has been handed to
    /// the executor (and, for executors that run on the driver thread, has
    /// run). For deterministic tests with a `ManualClock`; feature
    /// `test-util`.
    ///
    /// Returns at once if the timer has been shut down.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::driver::{Expired, ManualClock};
    /// use tickwheel::Timer;
    ///
    /// let clock = ManualClock::new();
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// let timer = Timer::builder().clock(clock.clone()).executor(tx).build()?;
    /// timer.schedule(Duration::from_millis(5), "due at 5 ms")?;
    /// clock.advance(Duration::from_millis(4));
    /// timer.sync();
    /// assert!(rx.try_recv().is_err()); // not early
    /// clock.advance(Duration::from_millis(1));
    /// timer.sync();
    /// assert_eq!(rx.try_recv()?, "due at 5 ms");
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    #[cfg(all(feature = "test-util", not(all(loom, test))))]
    pub fn sync(&self) {
        let shared = &self.owner.shared;
        let target = shared.passes.started.load(Ordering::SeqCst) + 1;
        shared.unpark_driver();
        let mut completed = shared
            .passes
            .completed
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // The unpark above guarantees a new pass; the timeout only lets the
        // loop notice a shutdown, after which no pass completes.
        while *completed < target && shared.state.load(Ordering::SeqCst) == RUNNING {
            completed = shared
                .passes
                .done
                .wait_timeout(completed, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Stops the driver and returns every timer that has not fired, as
    /// `(deadline, value)`, deadline rounded up to the tick. (A repeating
    /// timer appears once, with its next run's deadline and a value from
    /// its factory.) Runs already handed to the executor are not waited
    /// for. Later schedules fail with [`ScheduleError::Shutdown`]; a second
    /// `shutdown` returns nothing.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::new()?;
    /// timer.schedule(Duration::from_secs(60), Box::new(|| ()))?;
    /// let unfired = timer.shutdown();
    /// assert_eq!(unfired.len(), 1);
    /// assert!(timer.schedule(Duration::ZERO, Box::new(|| ())).unwrap_err().is_shutdown());
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn shutdown(&self) -> Vec<(Instant, T)> {
        self.owner.stop(STOPPING)
    }

    /// Like [`shutdown`](Self::shutdown), but first fires everything already
    /// due and waits until the executor has finished all it was handed
    /// ([`Executor::flush`]). Returns the timers still in the future.
    ///
    /// "Due" is judged as always: by the tick that has fully passed. A timer
    /// whose deadline (rounded up to the tick) lies in the current tick is
    /// not due yet and comes back in the returned list, not fired.
    ///
    /// ```
    /// # use std::time::{Duration, Instant};
    /// let timer = tickwheel::Timer::new()?;
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let past = Instant::now() - Duration::from_millis(5);
    /// timer.schedule_at(past, Box::new(move || tx.send("ran").unwrap()))?;
    /// timer.schedule(Duration::from_secs(60), Box::new(|| ()))?;
    /// let future = timer.shutdown_graceful();
    /// assert_eq!(future.len(), 1);
    /// assert_eq!(rx.try_recv()?, "ran");
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn shutdown_graceful(&self) -> Vec<(Instant, T)> {
        self.owner.stop(FINISHING)
    }
}

impl<E: Executor<Task>> Timer<Task, E> {
    /// Runs `task` every `period` at a fixed rate, the first time after
    /// `first_delay` (a [`schedule_repeating`](Self::schedule_repeating) for
    /// closures).
    ///
    /// # Errors
    ///
    /// As [`schedule_repeating`](Self::schedule_repeating).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use tickwheel::driver::MissedTicks;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let beats = Arc::new(AtomicUsize::new(0));
    /// let counter = Arc::clone(&beats);
    /// let heartbeat = timer
    ///     .every(Duration::ZERO, Duration::from_millis(1), MissedTicks::Skip, move || {
    ///         counter.fetch_add(1, Ordering::Relaxed);
    ///     })
    ///     .map_err(|e| e.to_string())?;
    /// while beats.load(Ordering::Relaxed) < 3 {
    ///     std::thread::sleep(Duration::from_millis(1));
    /// }
    /// timer.cancel(heartbeat);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn every(
        &self,
        first_delay: Duration,
        period: Duration,
        missed: MissedTicks,
        task: impl Fn() + Send + Sync + 'static,
    ) -> Result<TimerHandle, ScheduleError<Factory<Task>>> {
        let task = alloc::sync::Arc::new(task);
        self.schedule_repeating(first_delay, period, missed, move || {
            let task = alloc::sync::Arc::clone(&task);
            Box::new(move || task()) as Task
        })
    }

    /// Runs `task` repeatedly with a fixed *delay*: the first time after
    /// `first_delay`, then each time `delay` after the previous run
    /// *finished*. Runs never overlap; a slow run pushes the next one back.
    /// The handle stays valid; [`cancel`](Self::cancel) stops future runs.
    ///
    /// # Errors
    ///
    /// As [`schedule_repeating`](Self::schedule_repeating).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let polls = Arc::new(AtomicUsize::new(0));
    /// let counter = Arc::clone(&polls);
    /// let poller = timer
    ///     .with_fixed_delay(Duration::ZERO, Duration::from_millis(1), move || {
    ///         counter.fetch_add(1, Ordering::Relaxed);
    ///     })
    ///     .map_err(|e| e.to_string())?;
    /// while polls.load(Ordering::Relaxed) < 3 {
    ///     std::thread::sleep(Duration::from_millis(1));
    /// }
    /// timer.cancel(poller);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    #[cfg(not(all(loom, test)))]
    pub fn with_fixed_delay(
        &self,
        first_delay: Duration,
        delay: Duration,
        task: impl Fn() + Send + Sync + 'static,
    ) -> Result<TimerHandle, ScheduleError<Factory<Task>>> {
        let shared = &self.owner.shared;
        let first = shared.deadline_after(first_delay);
        let delay = shared.ticks_in(delay);
        // Each run re-arms the timer when it finishes; it learns its own
        // handle once the insert below has made one.
        let me: alloc::sync::Arc<std::sync::OnceLock<TimerHandle>> = alloc::sync::Arc::default();
        let weak = Arc::downgrade(shared);
        let task = alloc::sync::Arc::new(task);
        let make = {
            let me = alloc::sync::Arc::clone(&me);
            move || {
                let task = alloc::sync::Arc::clone(&task);
                let weak = weak.clone();
                let me = alloc::sync::Arc::clone(&me);
                Box::new(move || {
                    task();
                    if let (Some(shared), Some(&handle)) = (weak.upgrade(), me.get()) {
                        shared.rearm_after_run(handle, delay);
                    }
                }) as Task
            }
        };
        let job = Job::Repeat(Box::new(Repeat {
            make: alloc::sync::Arc::new(make),
            cadence: Cadence::Delay {
                delay,
                expected: first,
            },
        }));
        let handle = shared
            .insert(first, job)
            .map_err(|err| err.map(Job::into_factory))?;
        let _ = me.set(handle);
        Ok(handle)
    }
}

impl<T: Send + 'static, E: Executor<T>> Clone for Timer<T, E> {
    fn clone(&self) -> Self {
        Timer {
            owner: Arc::clone(&self.owner),
        }
    }
}

impl<T: Send + 'static, E: Executor<T>> fmt::Debug for Timer<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shared = &self.owner.shared;
        f.debug_struct("Timer")
            .field("tick", &Duration::from_nanos(shared.tick_nanos))
            .field("shards", &shared.shards.len())
            .field("pending", &self.pending())
            .field(
                "running",
                &(shared.state.load(Ordering::Relaxed) == RUNNING),
            )
            .finish_non_exhaustive()
    }
}

/// A repeating timer's value factory, handed back by a refused
/// [`Timer::schedule_repeating`].
///
/// ```
/// use std::time::Duration;
/// use tickwheel::driver::{Factory, MissedTicks};
/// use tickwheel::Timer;
///
/// let (timer, _rx) = Timer::with_channel()?;
/// timer.shutdown();
/// let err = timer
///     .schedule_repeating(Duration::ZERO, Duration::from_secs(1), MissedTicks::Skip, || "ping")
///     .unwrap_err();
/// let make: Factory<&str> = err.into_inner(); // the factory comes back
/// assert_eq!(make(), "ping");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Factory<T> = Box<dyn Fn() -> T + Send + Sync>;

impl<T> Job<T> {
    fn into_once(self) -> T {
        match self {
            Job::Once(value) => value,
            Job::Repeat(_) => unreachable!("a one-shot schedule made a repeating job"),
        }
    }

    fn into_factory(self) -> Factory<T>
    where
        T: 'static,
    {
        match self {
            Job::Repeat(repeat) => {
                let make = repeat.make;
                Box::new(move || make())
            }
            Job::Once(_) => unreachable!("a repeating schedule made a one-shot job"),
        }
    }
}

impl<T> ScheduleError<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> ScheduleError<U> {
        match self {
            ScheduleError::Full(v) => ScheduleError::Full(f(v)),
            ScheduleError::Shutdown(v) => ScheduleError::Shutdown(f(v)),
        }
    }
}

// ---- shared state -------------------------------------------------------

/// `Shared::state` values.
const RUNNING: u8 = 0;
/// Graceful shutdown: the driver fires what is due, then exits.
const FINISHING: u8 = 1;
/// The driver exits at its next check.
const STOPPING: u8 = 2;

struct Shard<T> {
    wheel: Wheel<Job<T>>,
    scheduled: u64,
    cancelled: u64,
}

/// A shard and its pending count (kept beside the lock so `pending()`
/// needs no lock). Aligned to its own cache lines so that threads working
/// on neighbouring shards do not share a line.
#[repr(align(128))]
struct ShardCell<T> {
    lock: Mutex<Shard<T>>,
    pending: AtomicUsize,
}

struct Shared<T, E> {
    shards: Box<[ShardCell<T>]>,
    /// The tick the driver will wake by (see the module docs).
    next_wake: AtomicU64,
    /// The driver is scanning the shards: its wake tick will include any
    /// deadline lowered into `next_wake` meanwhile.
    scanning: AtomicBool,
    state: AtomicU8,
    /// The driver thread, for unparking; set by the driver as it starts.
    driver: Mutex<Option<Thread>>,
    clock: alloc::sync::Arc<dyn Clock>,
    origin: Instant,
    tick_nanos: u64,
    executor: E,
    max_pending: Option<usize>,
    /// Pending timers counted against `max_pending` (only when it is set).
    reserved: AtomicUsize,
    recorder: Recorder,
    on_undelivered: Option<UndeliveredHook<T>>,
    passes: Passes,
}

/// Counts the driver's passes over the shards: started ones (wake-ups) and
/// the last one completed, so that `Timer::sync` can wait for a pass that
/// began after it was called.
#[derive(Debug, Default)]
struct Passes {
    started: AtomicU64,
    #[cfg(all(feature = "test-util", not(all(loom, test))))]
    completed: std::sync::Mutex<u64>,
    #[cfg(all(feature = "test-util", not(all(loom, test))))]
    done: std::sync::Condvar,
}

impl Passes {
    fn start(&self) -> u64 {
        self.started.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn complete(&self, pass: u64) {
        #[cfg(all(feature = "test-util", not(all(loom, test))))]
        {
            *self.completed.lock().unwrap_or_else(|e| e.into_inner()) = pass;
            self.done.notify_all();
        }
        let _ = pass;
    }
}

impl<T: Send + 'static, E: Executor<T>> Shared<T, E> {
    /// Nanoseconds from the origin to `instant` (0 before it), saturating:
    /// `u64` nanoseconds last 584 years, and `u64` division is several
    /// times cheaper than `u128`.
    #[inline]
    fn nanos_since_origin(&self, instant: Instant) -> u64 {
        let since = instant.saturating_duration_since(self.origin);
        since
            .as_secs()
            .checked_mul(1_000_000_000)
            .and_then(|nanos| nanos.checked_add(u64::from(since.subsec_nanos())))
            .unwrap_or(u64::MAX)
    }

    /// Ticks from the origin to `instant`, rounded up.
    #[inline]
    fn tick_at(&self, instant: Instant) -> Tick {
        self.nanos_since_origin(instant).div_ceil(self.tick_nanos)
    }

    /// The tick of `delay` from now, rounded up.
    #[inline]
    fn deadline_after(&self, delay: Duration) -> Tick {
        let now = self.nanos_since_origin(self.clock.now());
        let delay = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        now.saturating_add(delay).div_ceil(self.tick_nanos)
    }

    /// Whole ticks in `period`, rounded up, at least one.
    fn ticks_in(&self, period: Duration) -> u64 {
        let ticks = period.as_nanos().div_ceil(u128::from(self.tick_nanos));
        u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
    }

    /// The current tick, rounded down: every tick up to it has fully passed.
    #[inline]
    fn now_tick(&self) -> Tick {
        self.nanos_since_origin(self.clock.now()) / self.tick_nanos
    }

    /// The instant a tick starts (far in the future if it overflows).
    fn instant_of(&self, tick: Tick) -> Instant {
        let nanos = u128::from(tick) * u128::from(self.tick_nanos);
        let far = Duration::from_secs(u64::MAX / 4);
        let offset = u64::try_from(nanos).map_or(far, Duration::from_nanos);
        self.origin
            .checked_add(offset)
            .or_else(|| self.origin.checked_add(far))
            .unwrap_or(self.origin)
    }

    fn insert(&self, deadline: Tick, job: Job<T>) -> Result<TimerHandle, ScheduleError<Job<T>>> {
        if let Some(max) = self.max_pending {
            if self.reserved.fetch_add(1, Ordering::Relaxed) >= max {
                self.reserved.fetch_sub(1, Ordering::Relaxed);
                return Err(ScheduleError::Full(job));
            }
        }
        let index = home_shard(self.shards.len());
        let cell = &self.shards[index];
        let key = {
            let mut shard = cell.lock.lock();
            if self.state.load(Ordering::SeqCst) != RUNNING {
                drop(shard);
                self.release_reservation(1);
                return Err(ScheduleError::Shutdown(job));
            }
            match shard.wheel.try_insert(deadline, job) {
                Ok(key) => {
                    shard.scheduled += 1;
                    cell.pending.store(shard.wheel.len(), Ordering::Relaxed);
                    key
                }
                Err(full) => {
                    drop(shard);
                    self.release_reservation(1);
                    return Err(ScheduleError::Full(full.into_inner()));
                }
            }
        };
        self.wake_if_earlier(deadline);
        Ok(TimerHandle {
            key,
            shard: index as u32,
        })
    }

    /// After filing a timer at `deadline` (and unlocking): make sure the
    /// driver wakes by then. See the module docs for why this is enough;
    /// the plain load keeps the common case (a later deadline) free of
    /// writes to the shared line.
    #[inline]
    fn wake_if_earlier(&self, deadline: Tick) {
        if deadline < self.next_wake.load(Ordering::SeqCst)
            && deadline < self.next_wake.fetch_min(deadline, Ordering::SeqCst)
            && !self.scanning.load(Ordering::SeqCst)
        {
            self.unpark_driver();
        }
    }

    fn unpark_driver(&self) {
        if let Some(driver) = self.driver.lock().as_ref() {
            driver.unpark();
        }
    }

    fn release_reservation(&self, n: usize) {
        if self.max_pending.is_some() {
            self.reserved.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// A fixed-delay run finished: due again `delay` ticks from now, unless
    /// it was cancelled (or reset) meanwhile.
    #[cfg(not(all(loom, test)))]
    fn rearm_after_run(&self, handle: TimerHandle, delay: u64) {
        let Some(cell) = self.shards.get(handle.shard as usize) else {
            return;
        };
        let deadline = self.now_tick().saturating_add(delay);
        {
            let mut shard = cell.lock.lock();
            let parked = shard.wheel.deadline(handle.key) == Some(PARKED);
            match shard.wheel.get_mut(handle.key) {
                Some(Job::Repeat(repeat)) if parked => repeat.cadence.restart_at(deadline),
                _ => return,
            }
            shard.wheel.reset(handle.key, deadline);
        }
        self.wake_if_earlier(deadline);
    }

    /// Hands a value that cannot be delivered to the hook, or drops it.
    fn undelivered(&self, fired: Expired<T>, why: Why) {
        match &self.on_undelivered {
            Some(hook) => {
                if catch_unwind(AssertUnwindSafe(|| hook(Undelivered { fired, why }))).is_err() {
                    self.recorder.panicked.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => drop(fired),
        }
    }

    /// Takes every timer out of every shard, as `(deadline, value)`. Value
    /// factories run after the locks are released.
    fn drain_all(&self) -> Vec<(Instant, T)> {
        let mut jobs = Vec::new();
        for cell in self.shards.iter() {
            let mut shard = cell.lock.lock();
            jobs.extend(shard.wheel.drain());
            cell.pending.store(0, Ordering::Relaxed);
        }
        self.release_reservation(jobs.len());
        jobs.into_iter()
            .filter_map(|(deadline, job)| {
                let (deadline, value) = match job {
                    Job::Once(value) => (deadline, value),
                    Job::Repeat(repeat) => {
                        let deadline = match repeat.cadence {
                            Cadence::Delay { expected, .. } if deadline == PARKED => expected,
                            _ => deadline,
                        };
                        match catch_unwind(AssertUnwindSafe(|| (repeat.make)())) {
                            Ok(value) => (deadline, value),
                            Err(_) => {
                                self.recorder.panicked.fetch_add(1, Ordering::Relaxed);
                                return None;
                            }
                        }
                    }
                };
                Some((self.instant_of(deadline), value))
            })
            .collect()
    }
}

/// The shard a thread schedules into: its own, assigned round-robin the
/// first time it schedules (so threads rarely share one).
#[cfg(not(all(loom, test)))]
fn home_shard(shards: usize) -> usize {
    use core::cell::Cell;
    use core::sync::atomic::AtomicUsize as StdAtomicUsize;
    static NEXT: StdAtomicUsize = StdAtomicUsize::new(0);
    std::thread_local!(static HOME: Cell<usize> = const { Cell::new(usize::MAX) });
    let home = HOME.with(|home| {
        if home.get() == usize::MAX {
            home.set(NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed));
        }
        home.get()
    });
    home & (shards - 1)
}

/// loom models run one shard.
#[cfg(all(loom, test))]
fn home_shard(_shards: usize) -> usize {
    0
}

// ---- the driver thread --------------------------------------------------

/// Most timers taken out of one shard per lock hold, so a burst of expiries
/// never keeps a shard locked for long.
const BATCH: usize = 256;

/// A due timer taken out of its wheel, waiting (outside the lock) to be
/// handed over.
struct Fire<T> {
    handle: TimerHandle,
    deadline: Tick,
    work: Work<T>,
}

enum Work<T> {
    Value(T),
    Make(alloc::sync::Arc<dyn Fn() -> T + Send + Sync>),
}

fn drive<T: Send + 'static, E: Executor<T>>(shared: &Shared<T, E>) {
    *shared.driver.lock() = Some(thread::current());
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        // Announce a scan: deadlines lowered into `next_wake` from here on
        // are picked up by this pass's final `fetch_min`.
        shared.scanning.store(true, Ordering::SeqCst);
        shared.next_wake.store(Tick::MAX, Ordering::SeqCst);
        let state = shared.state.load(Ordering::SeqCst);
        if state == STOPPING {
            return;
        }
        let pass = shared.passes.start();
        let now = shared.now_tick();
        let mut next = Tick::MAX;
        for (index, cell) in shared.shards.iter().enumerate() {
            loop {
                let more = {
                    let mut shard = cell.lock.lock();
                    collect(&mut shard.wheel, index as u32, now, &mut batch);
                    cell.pending.store(shard.wheel.len(), Ordering::Relaxed);
                    let more = batch.len() == BATCH;
                    if !more {
                        next = next.min(shard.wheel.next_expiration().unwrap_or(Tick::MAX));
                    }
                    more
                };
                deliver(shared, &mut batch);
                if !more {
                    break;
                }
            }
        }
        shared.passes.complete(pass);
        if state == FINISHING {
            return;
        }
        // Clear the flag before the final `fetch_min`: a scheduler that
        // still sees it set has lowered `next_wake` before this read.
        shared.scanning.store(false, Ordering::SeqCst);
        let wake = next.min(shared.next_wake.fetch_min(next, Ordering::SeqCst));
        if wake <= shared.now_tick() {
            continue;
        }
        let deadline = (wake != Tick::MAX).then(|| shared.instant_of(wake));
        shared.clock.sleep_until(deadline);
    }
}

/// Takes due timers out of `wheel` (one-shots) or re-arms them in place
/// (repeating), up to the batch size. Runs under the shard lock: no user
/// code here.
fn collect<T>(wheel: &mut Wheel<Job<T>>, shard: u32, now: Tick, batch: &mut Vec<Fire<T>>) {
    wheel.set_now(now);
    while batch.len() < BATCH {
        let Some((key, deadline)) = wheel.peek() else {
            return;
        };
        let handle = TimerHandle { key, shard };
        let work = match wheel.get_mut(key) {
            Some(Job::Repeat(repeat)) => {
                let next = repeat.cadence.next(deadline, now);
                let make = alloc::sync::Arc::clone(&repeat.make);
                wheel.reset(key, next);
                Work::Make(make)
            }
            Some(Job::Once(_)) => match wheel.cancel(key) {
                Some(Job::Once(value)) => Work::Value(value),
                _ => unreachable!("the peeked one-shot is gone"),
            },
            None => unreachable!("a peeked key is stale"),
        };
        batch.push(Fire {
            handle,
            deadline,
            work,
        });
    }
}

/// Hands a batch to the executor, outside every lock.
fn deliver<T: Send + 'static, E: Executor<T>>(shared: &Shared<T, E>, batch: &mut Vec<Fire<T>>) {
    if batch.is_empty() {
        return;
    }
    let mut one_shots = 0;
    for fire in batch.drain(..) {
        let value = match fire.work {
            Work::Value(value) => {
                one_shots += 1;
                value
            }
            Work::Make(make) => match catch_unwind(AssertUnwindSafe(|| make())) {
                Ok(value) => value,
                Err(_) => {
                    shared.recorder.panicked.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            },
        };
        let deadline = shared.instant_of(fire.deadline);
        shared
            .recorder
            .lateness(shared.clock.now().saturating_duration_since(deadline));
        shared.recorder.fired.fetch_add(1, Ordering::Relaxed);
        let fired = Expired {
            key: fire.handle,
            deadline,
            value,
        };
        match catch_unwind(AssertUnwindSafe(|| shared.executor.execute(fired))) {
            Ok(Ok(())) => {}
            Ok(Err(Rejected(fired))) => {
                shared.recorder.rejected.fetch_add(1, Ordering::Relaxed);
                shared.undelivered(fired, Why::Rejected);
            }
            Err(_) => {
                shared.recorder.panicked.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    shared.release_reservation(one_shots);
}

// ---- ownership: the last handle stops the driver ------------------------

/// Owned by every `Timer` clone; dropping the last one stops the driver.
struct Owner<T: Send + 'static, E: Executor<T>> {
    shared: Arc<Shared<T, E>>,
    driver: Mutex<Option<thread::JoinHandle<()>>>,
}

impl<T: Send + 'static, E: Executor<T>> Owner<T, E> {
    /// Moves the state to `how` (if still running), stops and joins the
    /// driver, and returns what never fired. Only the first call does
    /// anything; later ones return nothing.
    fn stop(&self, how: u8) -> Vec<(Instant, T)> {
        let shared = &self.shared;
        if shared
            .state
            .compare_exchange(RUNNING, how, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Vec::new();
        }
        shared.unpark_driver();
        let driver = self.driver.lock().take();
        if let Some(driver) = driver {
            // A task running inline can stop the timer from the driver
            // thread itself; the driver then exits after this batch.
            if driver.thread().id() != thread::current().id() {
                let _ = driver.join();
            }
        }
        if how == FINISHING {
            shared.executor.flush();
        }
        shared.drain_all()
    }
}

impl<T: Send + 'static, E: Executor<T>> Drop for Owner<T, E> {
    fn drop(&mut self) {
        for (deadline, value) in self.stop(STOPPING) {
            let fired = Expired {
                key: TimerHandle {
                    key: DROPPED_KEY,
                    shard: u32::MAX,
                },
                deadline,
                value,
            };
            self.shared.undelivered(fired, Why::Dropped);
        }
    }
}

/// The handle reported for timers handed to the hook at drop: they have no
/// timer left to cancel in.
const DROPPED_KEY: TimerKey = match TimerKey::from_bits(u64::MAX) {
    Some(key) => key,
    None => unreachable!(),
};
