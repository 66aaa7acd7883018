//! Durable, multi-node delayed jobs on a Redis server, woken exactly on
//! time by a [`Timer`](crate::Timer) (feature `redis`).
//!
//! Any number of processes schedule jobs through a [`Queue`]; any number
//! take them through a [`Consumer`]. Jobs live in Redis, so they outlive
//! every process, and the client speaks RESP over a `TcpStream` itself (no
//! client crate).
//!
//! # How it works
//!
//! A queue is eight keys under one hash tag (`tw:{name}:…`, so a Redis
//! Cluster keeps them in one slot), changed only by Lua scripts
//! (`src/redis/scripts/`), each one atomic:
//!
//! - `due`, a sorted set: each live job's member scored by the time
//!   something must next happen to it, in microseconds of the server's
//!   clock: its due time while it waits, its lease deadline while a
//!   consumer holds it. A member is a 16-hex-digit sequence number and the
//!   id, so equal due times come out first in, first out.
//! - `jobs` (id to state, attempt, due time and member) and `payload`.
//! - `dead`, the dead letters; `ended` and `ended_at`, the ids of ended jobs
//!   for the retention window (idempotency, and cancel's answer).
//!
//! "Now" is the server's `TIME`, read inside each script, so nodes with
//! skewed clocks agree and **no job is delivered before its due time by
//! that clock**. Scheduling is idempotent by id. Cancel and reschedule are
//! O(log n): the id leads to the member, the member to the sorted set.
//! A claim takes at most the batch size of jobs whose time has come,
//! oldest first: a waiting job is delivered with a lease (its score becomes
//! the lease deadline); a leased job whose lease ran out is delivered again,
//! or dead-lettered once it has had `max_attempts` deliveries. Waking is
//! described on [`Consumer`].
//!
//! # Guarantees
//!
//! - **At least once.** A job whose `schedule` returned `Ok` is stored in
//!   Redis (durable as far as Redis's persistence is: see below). It is
//!   delivered until a consumer acks it, it is cancelled, or it is
//!   dead-lettered. A consumer that dies or stalls mid-job loses its lease,
//!   and the job is delivered again when the lease runs out, so a job may
//!   run more than once; [`Delivery::attempt`] says which delivery this is,
//!   and an ack after the lease ran out says [`Acked::LeaseLost`].
//! - **Never early**, by the server's clock; equal due times in order.
//! - **Outages.** Jobs found later than the misfire threshold (after Redis
//!   or every consumer was down) follow the [`MisfirePolicy`]: fire now,
//!   spread over a window, discard, or dead-letter.
//! - **Failures are retried.** A lost connection is redialled with
//!   jittered backoff for the retry window (10 s by default), counted in
//!   [`Metrics`], and then reported as [`QueueError::Unavailable`]; every
//!   call is safe to repeat.
//!
//! # Redis settings
//!
//! - `maxmemory-policy noeviction`: an evicting server silently loses jobs.
//! - `appendonly yes` with `appendfsync always` for "Ok means on disk";
//!   `everysec` (Redis's default) may lose the last second of jobs if the
//!   machine, not just the process, crashes.
//!
//! [`MisfirePolicy`]: crate::persist::MisfirePolicy

mod builder;
mod client;
mod consumer;
mod error;
mod hints;
#[cfg(feature = "serde")]
mod json;
mod outcome;
mod queue;
mod resp;

pub use builder::QueueBuilder;
pub use consumer::Consumer;
pub use error::QueueError;
pub use outcome::{Acked, Cancelled, DeadLetter, Delivery, Nacked, Scheduled};
pub use queue::Queue;

use crate::timer::Lateness;

/// The longest job id, in bytes.
pub const MAX_ID: usize = 512;
/// The largest payload, in bytes (16 MiB).
pub const MAX_PAYLOAD: usize = 16 << 20;
/// The latest due time, in microseconds since the Unix epoch (2^53, in
/// the year 2255): Redis scores are exact integers up to there.
pub const MAX_DUE_MICROS: u64 = 1 << 53;

/// A snapshot of one process's counters for a queue, from
/// [`Queue::metrics`].
///
/// ```
/// fn report(m: &tickwheel::redis::Metrics) {
///     println!("{} delivered, p99 lateness {:?}", m.delivered, m.lateness.quantile(0.99));
/// }
/// # let _ = report;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Jobs this process scheduled (new ids).
    pub scheduled: u64,
    /// Schedules refused because the id was known.
    pub duplicates: u64,
    /// Cancels that won.
    pub cancelled: u64,
    /// Reschedules that moved a job.
    pub rescheduled: u64,
    /// Deliveries, first ones and redeliveries. A claim promotes a due job
    /// and hands it to this process in one step, so this also counts
    /// promotions.
    pub delivered: u64,
    /// Redeliveries, after a lease ran out.
    pub redelivered: u64,
    /// Acks.
    pub acked: u64,
    /// Nacks that will retry.
    pub retried: u64,
    /// Jobs dead-lettered by this process's claims and nacks.
    pub dead_lettered: u64,
    /// Missed jobs discarded by the misfire policy.
    pub discarded: u64,
    /// Missed jobs spread over the window by the misfire policy.
    pub spread: u64,
    /// Acks and nacks that came after the lease ran out.
    pub lease_lost: u64,
    /// Requests sent to Redis.
    pub round_trips: u64,
    /// Failed attempts (each retried, until the retry window ends).
    pub failures: u64,
    /// Connections dialled.
    pub dials: u64,
    /// Reconciliation polls.
    pub polls: u64,
    /// Wake-up hints received.
    pub hints: u64,
    /// Lateness of deliveries: the server's time at the claim minus the
    /// due time.
    pub lateness: Lateness,
}

impl Metrics {
    fn of(c: &client::Counters) -> Metrics {
        use core::sync::atomic::Ordering::Relaxed;
        Metrics {
            scheduled: c.scheduled.load(Relaxed),
            duplicates: c.duplicates.load(Relaxed),
            cancelled: c.cancelled.load(Relaxed),
            rescheduled: c.rescheduled.load(Relaxed),
            delivered: c.delivered.load(Relaxed),
            redelivered: c.redelivered.load(Relaxed),
            acked: c.acked.load(Relaxed),
            retried: c.retried.load(Relaxed),
            dead_lettered: c.dead_lettered.load(Relaxed),
            discarded: c.discarded.load(Relaxed),
            spread: c.spread.load(Relaxed),
            lease_lost: c.lease_lost.load(Relaxed),
            round_trips: c.round_trips.load(Relaxed),
            failures: c.failures.load(Relaxed),
            dials: c.dials.load(Relaxed),
            polls: c.polls.load(Relaxed),
            hints: c.hints.load(Relaxed),
            lateness: c.lateness.snapshot(),
        }
    }
}
