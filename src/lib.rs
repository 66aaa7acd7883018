//! A hierarchical hashed timing wheel, for programs that juggle many timers.
//!
//! - **[`Wheel<T>`]**, the core: `#![no_std]` + `alloc`, no clock, no
//!   threads. Time is an abstract [`Tick`]; insert, cancel and reset are O(1)
//!   (amortized: see the cost table of [`Wheel`]) through generational
//!   [`TimerKey`]s; timers expire in deadline order,
//!   first in first out on ties; a jump of any size costs only the timers it
//!   touches. Firmware can drive it from a tick interrupt and ask
//!   [`Wheel::next_expiration`] how long it may sleep. The algorithm is
//!   documented in [`wheel`].
//! - **`Timer`** (feature `std`), the service built on it: a tickless
//!   driver thread with a monotonic clock, sharded wheels that any thread
//!   schedules into without a global lock, and an `Executor` that receives
//!   what fires (inline, a thread pool, a channel, a closure). See the
//!   `timer` module.
//!
//! ```
//! use tickwheel::Wheel;
//!
//! let mut wheel = Wheel::new();
//! let idle = wheel.insert(30_000, "close idle connection");
//! let order = wheel.insert(15 * 60_000, "close unpaid order");
//!
//! wheel.advance(10_000).for_each(drop);
//! wheel.reset(idle, 10_000 + 30_000); // a packet arrived
//! wheel.cancel(order); // the order was paid
//!
//! let fired: Vec<_> = wheel.advance(60_000).map(|e| (e.deadline, e.value)).collect();
//! assert_eq!(fired, [(40_000, "close idle connection")]);
//! ```
//!
//! With the `std` feature, the same on the wall clock:
//!
#![cfg_attr(feature = "std", doc = "```")]
#![cfg_attr(not(feature = "std"), doc = "```ignore")]
//! use std::time::Duration;
//! use tickwheel::Timer;
//!
//! let (timer, expired) = Timer::with_channel()?; // a delay queue
//! let idle = timer.schedule(Duration::from_millis(30), "close idle connection")?;
//! let order = timer.schedule(Duration::from_millis(5), "close unpaid order")?;
//! timer.reset(idle, Duration::from_millis(40)); // a packet arrived
//! assert_eq!(expired.recv()?, "close unpaid order");
//! assert_eq!(timer.cancel(order), None); // too late: it fired
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Cargo features
//!
//! - `std` (default): `Timer`, its driver thread, executors and clocks;
//!   `persist` (snapshots, restore, and `DurableTimer`'s journal, locked by
//!   `fs4`); `schedule`. The core does not need it; build with
//!   `default-features = false` for `no_std` targets (an allocator is
//!   required).
//! - `async`: `Timer::sleep`, `sleep_until`, `timeout`, `timeout_at`,
//!   `interval` and `interval_at`, futures and a `futures_core::Stream` for
//!   any executor, woken by the timer's driver. No runtime crate.
//! - `test-util`: `ManualClock` and `Timer::sync`, for deterministic tests of
//!   code that uses a `Timer`.
//! - `serde`: `Serialize` and `Deserialize` for the `persist` snapshot types
//!   (and `MissedTicks`), so snapshots can be stored across restarts; with
//!   `redis`, JSON payloads for the queue.
//! - `redis`: the `redis` module, durable delayed jobs shared by many
//!   processes on a Redis server, each consumer woken by a `Timer`.
//! - `tracing`: events for operators through the `tracing` facade: the
//!   Redis queue's retries and unreachable server, dead letters, misfires
//!   and lost leases; the journal's damage and failed writes. Each event
//!   names its queue or journal.
//! - `metrics`: counters, histograms and gauges through the `metrics`
//!   facade, for any exporter (Prometheus, StatsD, OpenTelemetry): the
//!   timer's fires, cancels and lateness, the journal's, the Redis
//!   queue's. Each names its timer, journal or queue; the list is in the
//!   `metrics` module.
//! - `admin`: the `tickwheel-admin` binary, an operator's tool for a Redis
//!   queue or a journal (implies `redis`).
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod error;
#[cfg(feature = "std")]
mod event;
mod key;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
// Without the feature: only the `metric!` macro, which compiles to nothing.
#[cfg(all(feature = "std", not(feature = "metrics")))]
mod metrics;
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod persist;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
// redis-rs needs Rust 1.88, and so does this feature.
#[clippy::msrv = "1.88"]
pub mod redis;
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod schedule;
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod timer;
pub mod wheel;

pub use error::{CapacityError, GeometryError};
pub use key::TimerKey;
#[cfg(feature = "std")]
pub use timer::Timer;
pub use wheel::{Expired, Geometry, Wheel};

/// A point in time, in the wheel's abstract ticks (a millisecond, a
/// scheduler quantum, a hardware timer period: whatever the caller drives it
/// with).
///
/// ```
/// let tick: tickwheel::Tick = 1_000;
/// let mut wheel = tickwheel::Wheel::new();
/// wheel.insert(tick, ());
/// ```
pub type Tick = u64;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
