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
//! | `priority.rs` | `Timer::with_priority`: the order of timers due at the same tick |
//! | `latency.rs` | how late the OS wakes the driver, learned: the lead of those wake-ups |
//! | `driver.rs` | the driver loop and the wake-up protocol |
//! | `owner.rs` | stopping: the last handle stops the driver |
//! | `time.rs` | `Instant` ↔ tick conversion, and its rounding rules |
//! | `clock.rs` | [`Clock`] and the clocks that come with the crate |
//! | `executor.rs`, `pool.rs` | [`Executor`], the provided executors, [`Undelivered`] values |
//! | `stats.rs`, `error.rs` | [`Stats`], errors |
//! | `handle.rs`, `expired.rs` | [`TimerHandle`], [`Expired`] |
//! | `futures/` | feature `async`, a layer of its own: `Sleep` and the protocol between the driver and a task (`sleep.rs`), what a sleep shares with its timer (`filed.rs`), the batch that cancels dropped sleeps' timers (`dropped.rs`), `Timeout`, `Interval` |
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
//!
//! Any thread schedules through a handle; the driver thread hands each
//! value to the executor (here a channel) at its deadline, never before:
//!
//! ```
//! use std::time::{Duration, Instant};
//! use tickwheel::Timer;
//!
//! let (timer, expired) = Timer::with_channel()?;
//! let handle = timer.clone();
//! let start = Instant::now();
//! std::thread::spawn(move || handle.schedule(Duration::from_millis(20), "from another thread"))
//!     .join()
//!     .unwrap()?;
//! assert_eq!(expired.recv()?, "from another thread");
//! assert!(start.elapsed() >= Duration::from_millis(20));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod api;
mod builder;
mod clock;
mod delay_queue;
mod driver;
mod error;
mod executor;
mod expired;
mod export;
#[cfg(feature = "async")]
mod futures;
mod hand_off;
mod handle;
mod in_hand;
mod inspect;
mod job;
mod latency;
#[cfg(all(test, any(loom, feature = "test-util")))]
mod models;
mod owner;
mod passes;
mod periodic;
mod pool;
mod priority;
mod shard;
mod slack;
pub(crate) mod stats;
mod sync;
mod time;
mod unwind;

pub use api::Timer;
pub use builder::{Builder, DEFAULT_SLACK, MAX_SLACK};
#[cfg(any(feature = "test-util", all(loom, test)))]
pub use clock::ManualClock;
pub use clock::{Clock, SpinningClock, SystemClock};
pub use delay_queue::{delay_queue, DelayQueue};
pub use error::{BuildError, ScheduleError, ScheduleErrorKind};
pub use executor::{Executor, Inline, Rejected, Task, Undelivered, Why};
pub use expired::Expired;
#[cfg(feature = "async")]
pub use futures::{Elapsed, Interval, Sleep, Timeout};
pub use handle::TimerHandle;
pub(crate) use job::Unfired;
pub use job::{Factory, MissedTicks};
pub use pool::ThreadPool;
pub use stats::{Lateness, Stats};

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
