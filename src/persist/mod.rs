//! Restart safety: a [`Snapshot`] of every pending job in wall-clock time,
//! [`Timer::restore`](crate::Timer::restore) with a [`MisfirePolicy`] for
//! jobs that fell due while the process was down, and [`DurableTimer`],
//! whose jobs survive a crash through an fsync'd journal (`durable.rs`,
//! the file in `journal.rs`, its format in `format.rs`), one-shot or
//! recurring (job schedulers, `schedulers.rs`).
//!
//! A `Timer` keeps deadlines as `Instant`s, which mean nothing in the next
//! process. A snapshot converts each one to `SystemTime` through the
//! timer's [`Clock`](crate::timer::Clock) (`now` and `wall_now` read
//! together), so it survives a restart and can be stored (feature `serde`
//! derives `Serialize` and `Deserialize`). Restoring converts back with the
//! new timer's clock, and decides what to do with every job that is now
//! overdue:
//!
//! - late by at most the policy's **threshold** (60 s by default, Quartz's
//!   `misfireThreshold`): scheduled as it was, so it fires at once (a
//!   `Burst` job more than `max_catch_up` runs behind is reported as
//!   missed, since runs are left out);
//! - later than that, **missed**: a one-shot job follows
//!   [`OnMissed`] (fire now, spread over a window, discard, dead-letter, or
//!   reschedule through a function); a fixed-rate job follows its own
//!   `MissedTicks`, with at most `max_catch_up` missed runs made up
//!   (`MissedTicks::Burst` makes up each one; `Skip` and `Delay`, one).
//!
//! Every job comes out of `restore` scheduled, discarded on purpose, or
//! handed back (dead letters, and everything not yet restored when an
//! error stops it): nothing is lost silently. The report says which.
//!
//! Only values that can be copied and stored are persisted: snapshots need
//! `T: Clone`, so closures ([`Task`](crate::timer::Task)) and fixed-delay
//! timers, which run closures, are not covered.
//!
//! ```
//! use std::time::Duration;
//! use tickwheel::persist::{MisfirePolicy, Snapshot};
//! use tickwheel::Timer;
//!
//! let (before, _fired) = Timer::with_channel()?;
//! before.schedule(Duration::from_secs(900), "close order 17")?;
//! let snapshot: Snapshot<&str> = before.shutdown_snapshot();
//! // ... the process restarts ...
//! let (after, _fired) = Timer::with_channel()?;
//! let report = after.restore(snapshot, &MisfirePolicy::default())?;
//! assert_eq!(report.outcomes.len(), 1);
//! assert_eq!(after.pending(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod compaction;
mod crc32;
mod decode;
mod durable;
mod epoch;
mod error;
#[cfg(test)]
mod faults;
mod folded;
mod format;
mod handle;
mod job;
mod journal;
mod journaled_job;
mod keyed;
mod keys;
mod lock;
mod misfire_policy;
mod outcome;
mod payload;
mod pending_job;
#[cfg(feature = "metrics")]
mod published;
mod recurring;
mod repeat;
mod replay;
mod restore;
mod schedulers;
mod snapshot;
mod summary;
mod turns;
mod upkeep;

pub use decode::Damage;
pub use durable::DurableTimer;
pub use error::{JournalError, RestoreError, RestoreFailure};
pub use handle::{DurableHandle, Found, Recovery};
pub use journal::SyncPolicy;
pub use journaled_job::JournaledJob;
pub use keyed::KeyedJob;
pub use misfire_policy::{MisfirePolicy, OnMissed, Reschedule};
pub use outcome::{Outcome, RestoreReport};
pub use payload::Payload;
pub use pending_job::PendingJob;
pub use recurring::JournaledSchedule;
pub use repeat::Repeat;
pub use schedulers::ScheduledRun;
pub use snapshot::Snapshot;
pub use summary::JournalSummary;

/// The largest encoded value a [`DurableTimer`] journals: 16 MiB less a
/// record's 21 bytes of kind, id and due time. `schedule` refuses a larger
/// one with [`ScheduleErrorKind::TooLarge`](crate::timer::ScheduleErrorKind::TooLarge)
/// and hands it back, so every record written can be read back.
///
/// ```
/// assert_eq!(tickwheel::persist::MAX_PAYLOAD, (16 << 20) - 21);
/// ```
pub const MAX_PAYLOAD: usize = format::MAX_PAYLOAD;

/// The longest key of a keyed job
/// ([`DurableTimer::schedule_keyed`]), in bytes.
///
/// ```
/// assert_eq!(tickwheel::persist::MAX_KEY, 4096);
/// ```
pub const MAX_KEY: usize = format::MAX_KEY;
