//! The std layer: [`Timer`], a tickless driver thread over sharded wheels.
//!
//! A `Timer` turns [`Wheel`](crate::Wheel)s into something a server or a
//! job runner can embed: any thread schedules, cancels and resets through
//! a cloneable handle; one driver thread owns the clock, sleeps until the
//! next deadline, and hands what fires to an [`Executor`].
//!
//! | file | owns |
//! |------|------|
//! | `api.rs` | [`Timer`]: schedule, cancel, reset, shutdown |
//! | `inspect.rs`, `passes.rs` | queries on a handle, pending count, stats, `sync`, and the driver's pass counter it waits on |
//! | `builder.rs` | [`Builder`]: settings, checks, start-up |
//! | `periodic.rs` | fixed-rate and fixed-delay scheduling, and the fixed-delay run protocol |
//! | `job.rs` | what a wheel entry holds; a repeating timer's cadence (state table) |
//! | `shard.rs` | the shared state: shards, lifecycle (state table), ground rules of locking |
//! | `slack.rs` | `Timer::with_slack`, slack classes, and when the driver wakes for them |
//! | `latency.rs` | how late the OS wakes the driver, learned: the lead of those wake-ups |
//! | `driver.rs` | the driver loop and the wake-up protocol |
//! | `owner.rs` | stopping: the last handle stops the driver |
//! | `time.rs` | `Instant` ↔ tick conversion, and its rounding rules |
//! | `clock.rs` | [`Clock`] and the clocks that come with the crate |
//! | `executor.rs`, `pool.rs` | [`Executor`], the provided executors, [`Undelivered`] values |
//! | `stats.rs`, `error.rs` | [`Stats`], errors |
//! | `sleep.rs`, `filed.rs`, `dropped.rs`, `timeout.rs`, `interval.rs` | feature `async`: `Sleep` and the protocol between the driver and a task, what a sleep shares with its timer, the batch that cancels dropped sleeps' timers, `Timeout`, `Interval` |
//! | `export.rs` | what the persistence layer reads out: unfired timers, the clock |
//! | `sync.rs` | the one facade over std and loom primitives |
//!
//! Guarantees, each stated where it is implemented: a timer never fires
//! before its deadline (`time.rs`); fire and cancel never both win, and no
//! user code runs under an internal lock (`shard.rs`); no wake-up is lost
//! (`driver.rs`); fixed-delay runs never overlap (`periodic.rs`); every
//! value is delivered, cancelled, handed back or reported (`owner.rs`,
//! [`Builder::on_undelivered`]). `models.rs` model-checks the cross-thread
//! protocols under loom.

mod api;
mod builder;
mod clock;
mod driver;
#[cfg(feature = "async")]
mod dropped;
mod error;
mod executor;
mod export;
#[cfg(feature = "async")]
mod filed;
mod inspect;
#[cfg(feature = "async")]
mod interval;
mod job;
mod latency;
#[cfg(all(test, any(loom, feature = "test-util")))]
mod models;
mod owner;
mod passes;
mod periodic;
mod pool;
mod shard;
mod slack;
#[cfg(feature = "async")]
mod sleep;
pub(crate) mod stats;
mod sync;
mod time;
#[cfg(feature = "async")]
mod timeout;

use std::time::Instant;

use crate::TimerKey;

pub use api::Timer;
pub use builder::{delay_queue, Builder, DelayQueue, DEFAULT_SLACK};
#[cfg(any(feature = "test-util", all(loom, test)))]
pub use clock::ManualClock;
pub use clock::{Clock, SpinningClock, SystemClock};
pub use error::{BuildError, ScheduleError, ScheduleErrorKind};
pub use executor::{Executor, Inline, Rejected, Task, Undelivered, Why};
#[cfg(feature = "async")]
pub use interval::Interval;
pub(crate) use job::Unfired;
pub use job::{Factory, MissedTicks};
pub use pool::ThreadPool;
#[cfg(feature = "async")]
pub use sleep::Sleep;
pub use stats::{Lateness, Stats};
#[cfg(feature = "async")]
pub use timeout::{Elapsed, Timeout};

/// The receiving end of a delay queue made by [`Timer::with_channel`]
/// (crossbeam-channel's receiver, re-exported so you need not name the
/// crate).
///
/// ```
/// use std::time::Duration;
/// use tickwheel::timer::Receiver;
/// use tickwheel::Timer;
///
/// let (queue, ready): (_, Receiver<&str>) = Timer::with_channel()?;
/// queue.schedule(Duration::from_millis(1), "due")?;
/// assert_eq!(ready.recv()?, "due");
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub use crossbeam_channel::Receiver;

/// A fired timer as the std layer hands it over: its handle, its deadline
/// (rounded up to the tick) and its value.
///
/// ```
/// use tickwheel::timer::Expired;
///
/// fn on_fire(fired: Expired<String>) {
///     println!("{} was due at {:?}", fired.value, fired.deadline);
/// }
/// # let _ = on_fire;
/// ```
pub type Expired<T> = crate::Expired<T, TimerHandle, Instant>;

/// A handle to a scheduled timer: for [`Timer::cancel`], [`Timer::reset`]
/// and the queries. `Copy`, 12 bytes.
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
/// let handle = timer.run_after(Duration::from_secs(30), || ())?;
/// assert!(timer.reset(handle, Duration::from_secs(60)));
/// assert!(timer.cancel(handle).is_some());
/// assert!(timer.cancel(handle).is_none());
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TimerHandle {
    key: TimerKey,
    shard: u16,
    /// The timer's slack class (`slack.rs`).
    class: u16,
}
