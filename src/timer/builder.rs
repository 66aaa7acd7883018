//! Making a [`Timer`]: [`Builder`] with every setting, checked, and the
//! start of its driver thread; and the shortcut `Timer::new`
//! (`Timer::with_channel` is in `delay_queue.rs`).

use alloc::boxed::Box;
use alloc::string::String;
use core::any::Any;
use core::fmt;
use core::marker::PhantomData;
use core::time::Duration;

use super::clock::{Clock, SystemClock};
use super::driver::drive;
use super::error::BuildError;
use super::executor::{Executor, Task, Undelivered, UndeliveredHook};
use super::owner::Owner;
use super::passes::Passes;
use super::pool::ThreadPool;
use super::shard::{ShardCell, Shared, Wheels, RUNNING};
use super::slack::Classes;
use super::stats::Counters;
#[cfg(feature = "metrics")]
use super::stats::TimerMetrics;
use super::sync::{thread, Arc, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Mutex};
use super::time::TimeSource;
use super::Timer;
use crate::Geometry;

/// The slack of a [`Timer`]'s timers unless it is told otherwise
/// ([`Builder::slack`], [`Timer::with_slack`]): 1 ms, what a 1 ms tick
/// used to give. Each such timer fires within 1 ms after its deadline, and
/// the driver wakes about once a millisecond for all of them.
///
/// ```
/// use tickwheel::timer::DEFAULT_SLACK;
///
/// let timer = tickwheel::Timer::new()?;
/// assert_eq!(timer.slack(), DEFAULT_SLACK);
/// # Ok::<(), tickwheel::timer::BuildError>(())
/// ```
pub const DEFAULT_SLACK: Duration = Duration::from_millis(1);

/// The widest slack: one hour. A longer one ([`Builder::slack`],
/// [`Timer::with_slack`]) is this: a window is there to batch wake-ups,
/// and a slack of `Duration::MAX` would let a lone timer wait for ever.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::timer::MAX_SLACK;
///
/// let timer = tickwheel::Timer::new()?;
/// assert_eq!(timer.with_slack(Duration::MAX).slack(), MAX_SLACK);
/// # Ok::<(), tickwheel::timer::BuildError>(())
/// ```
pub const MAX_SLACK: Duration = Duration::from_secs(3600);

/// Builds a [`Timer`]: tick, default slack, geometry, shards,
/// `max_pending`, executor, driver thread name, clock, and the hook for
/// values that cannot be delivered.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::timer::Inline;
/// use tickwheel::{Geometry, Timer};
///
/// let timer = Timer::builder()
///     .tick(Duration::from_micros(100))
///     .slack(Duration::from_millis(5))
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
    slack: Duration,
    geometry: Geometry,
    shards: Option<usize>,
    max_pending: Option<usize>,
    thread_name: String,
    /// Whether the driver learns its wake-up lead (`slack.rs`, the rule).
    learn_lead: bool,
    clock: alloc::sync::Arc<dyn Clock>,
    executor: E,
    on_undelivered: Option<UndeliveredHook<T>>,
    /// A hook was set for a value type that `executor` then changed:
    /// `build` refuses rather than drop it silently.
    lost_hook: bool,
    /// What the timer publishes through `metrics`: `None` registers the
    /// `tickwheel_timer_*` family under the thread name at `build`.
    #[cfg(feature = "metrics")]
    metrics: Option<TimerMetrics>,
    _values: PhantomData<fn(T)>,
}

impl Builder<Task, ThreadPool> {
    pub(super) fn new() -> Self {
        Builder {
            tick: Duration::from_micros(1),
            slack: DEFAULT_SLACK,
            geometry: Geometry::DEFAULT,
            shards: None,
            max_pending: None,
            thread_name: String::from("tickwheel-driver"),
            learn_lead: true,
            clock: alloc::sync::Arc::new(SystemClock),
            executor: ThreadPool::default(),
            on_undelivered: None,
            lost_hook: false,
            #[cfg(feature = "metrics")]
            metrics: None,
            _values: PhantomData,
        }
    }
}

impl<T: Send + 'static, E: Executor<T>> Builder<T, E> {
    /// The tick: the resolution of deadlines, which round up to it. Default
    /// 1 µs, from 1 µs to 1 hour, else [`build`](Self::build) fails with
    /// [`BuildError::Tick`].
    ///
    /// The tick is not what sets how often the driver wakes: the
    /// [`slack`](Self::slack) does. A fine tick costs little (about 60 ns
    /// more per timer in the wheel at 1 µs than at 1 ms, `docs/benchmarks.md`)
    /// and lets timers with little slack fire on time. A coarser tick
    /// suits a timer whose deadlines are all far and loose.
    ///
    /// A coarse tick adds to the slack, it does not replace it: a deadline
    /// first rounds up to the tick, then the timer may fire up to the
    /// slack after that. With `tick(1 ms)` and the default 1 ms slack a
    /// timer may fire up to 2 ms after the deadline asked for, where a
    /// 1 ms tick alone (before slack existed) meant up to 1 ms. With a
    /// coarse tick, set [`slack`](Self::slack) to what you can accept on
    /// top of it, `Duration::ZERO` included.
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

    /// The default slack: how late after its deadline a timer may fire, so
    /// that the driver can fire many with one wake-up. Each timer fires
    /// inside `[deadline, deadline + slack]` unless the driver is starved;
    /// [`Timer::with_slack`] gives a handle with another slack. Default
    /// [`DEFAULT_SLACK`], 1 ms; rounded down to whole ticks, so a slack
    /// below one tick is zero, and at most [`MAX_SLACK`] (no error: the
    /// window only narrows).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let timer = tickwheel::Timer::builder().slack(Duration::from_millis(10)).build()?;
    /// assert_eq!(timer.slack(), Duration::from_millis(10));
    /// # Ok::<(), tickwheel::timer::BuildError>(())
    /// ```
    #[must_use]
    pub fn slack(mut self, slack: Duration) -> Self {
        self.slack = slack;
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
    /// limit returns a [`ScheduleError`](super::ScheduleError) of kind `Full` with its value. Costs one
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

    /// Whether the driver learns how late the OS wakes it and wakes that
    /// much before a window closes (the default), or always wakes a fixed
    /// min(slack / 8, 20 µs) before. Learning keeps timers inside their
    /// windows on a loaded machine, but when the OS is later than the slack
    /// every timer gets a wake-up of its own: a timer whose slack is there
    /// to batch wake-ups (to claim many due jobs in one call, say) rather
    /// than to bound lateness may want it off. The Redis consumer's timer
    /// turns it off.
    ///
    /// ```
    /// let builder = tickwheel::Timer::builder().learn_lead(false);
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn learn_lead(mut self, learn: bool) -> Self {
        self.learn_lead = learn;
        self
    }

    /// The driver thread's name. Default `tickwheel-driver`. A name with a
    /// NUL byte makes [`build`](Self::build) fail with
    /// [`BuildError::ThreadName`].
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
    /// let builder = tickwheel::Timer::builder().clock(tickwheel::timer::SystemClock);
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = alloc::sync::Arc::new(clock);
        self
    }

    /// Where fired timers go; this also fixes the value type `V`. Default: a
    /// [`ThreadPool`] of two workers running [`Task`]s, started with the
    /// first task.
    ///
    /// ```
    /// use tickwheel::timer::Inline;
    /// let builder = tickwheel::Timer::builder().executor(Inline);
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn executor<V: Send + 'static, X: Executor<V>>(self, executor: X) -> Builder<V, X> {
        // A hook set before keeps working if the value type stays; one for
        // another type cannot take the new values, and `build` says so.
        let (on_undelivered, lost_hook) =
            match self.on_undelivered.map(|h| Box::new(h) as Box<dyn Any>) {
                None => (None, self.lost_hook),
                Some(hook) => hook
                    .downcast::<UndeliveredHook<V>>()
                    .map_or((None, true), |hook| (Some(*hook), self.lost_hook)),
            };
        Builder {
            tick: self.tick,
            slack: self.slack,
            geometry: self.geometry,
            shards: self.shards,
            max_pending: self.max_pending,
            thread_name: self.thread_name,
            learn_lead: self.learn_lead,
            clock: self.clock,
            executor,
            on_undelivered,
            lost_hook,
            #[cfg(feature = "metrics")]
            metrics: self.metrics,
            _values: PhantomData,
        }
    }

    /// Publishes `metrics` instead of the `tickwheel_timer_*` family: for
    /// the timers inside a `DurableTimer` (the journal's own) and a Redis
    /// consumer (none).
    #[cfg(feature = "metrics")]
    pub(crate) fn publish(mut self, metrics: TimerMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Called with every value the timer cannot deliver: refused by the
    /// executor, or still pending when the last handle is dropped. Runs on
    /// the thread that found it (the driver, or the one dropping the
    /// timer), never under a lock; if it panics, the panic is counted in
    /// [`Stats::panicked`](super::Stats::panicked) and the value in [`Stats::dropped`](super::Stats::dropped).
    ///
    /// Without a hook such values are dropped (their `Drop` runs) and
    /// counted in [`Stats::dropped`](super::Stats::dropped). Values still pending when the last
    /// handle is dropped can then not be observed at all: set a hook, or
    /// call [`Timer::shutdown`] first to get them back. Set before
    /// [`executor`](Self::executor), the hook stays if the value type does;
    /// if the executor changes it, [`build`](Self::build) refuses with
    /// [`BuildError::UndeliveredHook`]. A hook that holds a handle of its
    /// own timer (to schedule a refused value again) keeps that timer
    /// running after every other handle is gone: stop it with
    /// [`Timer::shutdown`] when done.
    ///
    /// ```
    /// use tickwheel::timer::Task;
    ///
    /// let builder = tickwheel::Timer::builder()
    ///     .on_undelivered(|lost: tickwheel::timer::Undelivered<Task>| eprintln!("{:?}", lost.why));
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn on_undelivered(mut self, hook: impl Fn(Undelivered<T>) + Send + Sync + 'static) -> Self {
        self.on_undelivered = Some(Box::new(hook));
        self.lost_hook = false;
        self
    }

    /// Starts the executor and the driver thread.
    ///
    /// # Errors
    ///
    /// [`BuildError`] if the tick or shard count is out of range, the
    /// thread name holds a NUL, an `on_undelivered` hook was set for the
    /// value type an `executor` then changed, or a thread cannot be
    /// spawned.
    ///
    /// ```
    /// let timer = tickwheel::Timer::builder().build()?;
    /// # drop(timer);
    /// # Ok::<(), tickwheel::timer::BuildError>(())
    /// ```
    pub fn build(self) -> Result<Timer<T, E>, BuildError> {
        if self.thread_name.contains('\0') {
            return Err(BuildError::ThreadName(self.thread_name));
        }
        if self.lost_hook {
            return Err(BuildError::UndeliveredHook);
        }
        let time = TimeSource::new(self.clock, self.tick).map_err(BuildError::Tick)?;
        let slack = time.slack_ticks(self.slack);
        let classes = Classes::new(slack, time.slack_ticks(Classes::MAX_LEAD));
        if !self.learn_lead {
            classes.keep_fixed_lead();
        }
        let class = classes.class_of(slack);
        let shards = match self.shards {
            Some(n) if n == 0 || n > 1024 => return Err(BuildError::Shards(n)),
            Some(n) => n.next_power_of_two(),
            None => default_shards(),
        };
        self.executor.start()?;
        let executor = Arc::new(self.executor);
        let shared = Arc::new(Shared {
            shards: (0..shards)
                .map(|_| ShardCell::new(Wheels::new(self.geometry)))
                .collect(),
            next_wake: AtomicU64::new(0),
            scanning: AtomicBool::new(true),
            state: AtomicU8::new(RUNNING),
            driver: Mutex::new(None),
            time,
            classes,
            executor: PhantomData,
            max_pending: self.max_pending,
            reserved: AtomicUsize::new(0),
            #[cfg(not(feature = "metrics"))]
            counters: Counters::default(),
            #[cfg(feature = "metrics")]
            counters: Counters::publishing(
                self.metrics
                    .unwrap_or_else(|| TimerMetrics::register(&self.thread_name)),
            ),
            on_undelivered: self.on_undelivered,
            passes: Passes::default(),
            in_hand: super::in_hand::InHand::new(),
            handing: AtomicUsize::new(0),
        });
        let driver = {
            let shared = Arc::clone(&shared);
            let executor = Arc::clone(&executor);
            thread::Builder::new()
                .name(self.thread_name)
                .spawn(move || drive(&shared, &*executor))?
        };
        Ok(Timer {
            owner: Arc::new(Owner {
                shared,
                executor,
                driver: Mutex::new(Some(driver)),
            }),
            class,
            priority: 0,
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

impl<T, E> fmt::Debug for Builder<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("tick", &self.tick)
            .field("slack", &self.slack)
            .field("geometry", &self.geometry)
            .field("shards", &self.shards)
            .field("max_pending", &self.max_pending)
            .field("thread_name", &self.thread_name)
            .finish_non_exhaustive()
    }
}

impl Timer {
    /// A timer with a 1 µs tick and [`DEFAULT_SLACK`] that runs [`Task`]s
    /// on a two-thread pool.
    ///
    /// # Errors
    ///
    /// [`BuildError::Spawn`] if the driver or a worker thread cannot be
    /// spawned.
    ///
    /// ```
    /// let timer = tickwheel::Timer::new()?;
    /// # drop(timer);
    /// # Ok::<(), tickwheel::timer::BuildError>(())
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
    /// # Ok::<(), tickwheel::timer::BuildError>(())
    /// ```
    pub fn builder() -> Builder<Task, ThreadPool> {
        Builder::new()
    }
}
