//! Durable, multi-node delayed jobs on Redis, woken exactly on time by a
//! [`Timer`](crate::Timer) (feature `redis`).
//!
//! Any number of processes schedule jobs through a [`Queue`] (or an
//! [`AsyncQueue`]); any number take them through a [`Consumer`] (or an
//! [`AsyncConsumer`]). Jobs live in Redis, so they outlive every process.
//! The client is [redis-rs](https://docs.rs/redis): a queue reaches any
//! server a URL names (`redis://`, `rediss://` over TLS, `redis+unix://`;
//! host names, database numbers, a password or an ACL user), a Redis
//! Cluster through its seed nodes ([`Queue::cluster_builder`]), or the
//! master Redis Sentinel names, followed through a failover
//! ([`Queue::sentinel_builder`]).
//!
//! A producer schedules a job by id; any consumer, in any process, gets
//! it once it is due by the server's clock, and acks it when done (it
//! needs a running Redis server):
//!
//! ```no_run
//! use std::time::Duration;
//! use tickwheel::redis::Queue;
//!
//! let orders = Queue::connect("redis://127.0.0.1:6379", "orders")?;
//! orders.schedule_in("order-17", Duration::from_secs(900), b"close 17")?;
//! let consumer = orders.consumer()?;
//! for job in consumer.fetch(10, Duration::from_secs(1))? {
//!     println!("{}: {}", job.id, String::from_utf8_lossy(&job.payload));
//!     consumer.ack(&job)?;
//! }
//! # Ok::<(), tickwheel::redis::QueueError>(())
//! ```
//!
//! # How it works
//!
//! A queue is six keys under one hash tag (`tw:{name}:…`, so a Redis
//! Cluster keeps them in one slot; a queue of several
//! [partitions](QueueBuilder::partitions) is that many such sets, under
//! `{name:0}`, `{name:1}`, … (salted where that spaces them evenly over
//! the slots), which a cluster spreads over its shards),
//! changed only by Lua scripts
//! (`src/redis/scripts/`, their data model in `common.lua`), each one
//! atomic:
//!
//! - `due`, a sorted set: each live job's member scored by the time
//!   something must next happen to it, in microseconds of the server's
//!   clock: its due time while it waits, its lease deadline while a
//!   consumer holds it. A member is an 8-byte sequence number (its first
//!   byte the job's rank: 255 minus its priority) and the id, so equal due
//!   times come out by priority, then first in, first out.
//! - `jobs`, a hash: each id's record (state, fencing token, attempt, due
//!   time, request tokens, payload), kept after the job ends for the
//!   retention, so scheduling is idempotent by id and cancel can say how
//!   it ended.
//! - `dead`, the dead letters; `ended`, the ended ids by end time, which
//!   every process trims on a schedule of its own.
//!
//! "Now" is the server's `TIME`, read inside the scripts, so nodes with
//! skewed clocks agree and **no job is delivered before its due time by
//! that clock**. Cancel and reschedule are O(log n): the id leads to the
//! record, the record to the member. A claim takes at most the batch size
//! of jobs whose time has come, oldest first: a waiting job is delivered
//! with a lease (its score becomes the lease deadline); a leased job whose
//! lease ran out is delivered again, or dead-lettered once it has had
//! `max_attempts` deliveries. Waking is described on [`Consumer`]'s claim
//! loop: a consumer sleeps on a tickwheel timer until the next job is due.
//!
//! # Connections and threads
//!
//! Each `connect` starts one I/O thread (or, with
//! [`QueueBuilder::runtime`], one task on the caller's tokio runtime) and
//! one multiplexed connection
//! (with a cluster, one per node it talks to); every clone, consumer and
//! async handle of that queue shares them, so a thousand concurrent
//! callers cost no thread and no connection of their own. Concurrent
//! schedules, cancels and acks share script calls (see `link.rs`). A
//! process's first consumer adds one pub/sub connection for wake-up
//! hints; each consumer adds one timer thread. So a queue with consumers
//! holds two connections (cluster: one per node, plus one).
//!
//! Blocking calls work from any thread, inside a runtime too: they park
//! the caller. A blocking call from a task of the queue's own runtime
//! ([`QueueBuilder::runtime`]) hands that worker's other tasks on
//! (`block_in_place`), which tokio refuses inside a `LocalSet`'s tasks:
//! there the call still answers, but tokio's refusal is a caught panic
//! (seen by the panic hook, and fatal under `panic = "abort"`), so use the
//! async calls in such tasks.
//!
//! # Guarantees
//!
//! - **At least once.** A job whose `schedule` returned `Ok` is stored in
//!   Redis (durable as far as Redis's persistence is: see below). It is
//!   delivered until a consumer acks it, it is cancelled, or it is
//!   dead-lettered. A consumer that dies or stalls mid-job loses its lease,
//!   and the job is delivered again when the lease runs out, so a job may
//!   run more than once; [`Delivery::attempt`] says which delivery this is.
//! - **Fencing.** Each delivery carries a token that only grows for the
//!   life of the id ([`Delivery::fence`]), requeues included: an ack, nack
//!   or extend from a delivery that no longer holds the job answers
//!   [`Acked::LeaseLost`] (or its like) and changes nothing, and a
//!   delivery acts only on its own queue ([`QueueError::WrongQueue`]).
//! - **Never early**, by the server's clock (due times round up to the
//!   microsecond); equal due times by priority ([`NewJob::priority`]),
//!   then in order; a priority never lets a job pass one due earlier.
//! - **Answers that stay true.** A call that fails on the way is retried
//!   with jittered backoff for the retry window (10 s by default), then
//!   reported as [`QueueError::Unavailable`]. Every attempt carries the
//!   call's request token, so a retry after a lost reply answers what the
//!   first attempt did: `Created`, `Cancelled(payload)`, `Retrying`,
//!   `Acked`; a claim's retry gets the same jobs back, without spending an
//!   attempt.
//! - **Outages.** Jobs found later than the misfire threshold (after Redis
//!   or every consumer was down) follow the [`MisfirePolicy`]: fire now,
//!   spread over a window, discard, or dead-letter.
//!
//! # Redis settings, and memory
//!
//! - `maxmemory-policy noeviction` (or `volatile-*`): an `allkeys-*`
//!   policy may evict the queue's keys and lose jobs, so `connect` refuses
//!   it unless [`QueueBuilder::allow_eviction`] says otherwise (on a
//!   cluster, every master's policy is read; replicas' are not, so set
//!   theirs alike, for the one a failover promotes).
//! - `appendonly yes` with `appendfsync always` for "Ok means on disk";
//!   `everysec` (Redis's default) may lose the last second of jobs if the
//!   machine, not just the process, crashes.
//! - Memory: a waiting job costs its payload, its id twice, and about
//!   240 bytes of Redis structures; an ended job keeps its id and about
//!   230 bytes for the retention (`docs/design.md` has the measurements).
//!   A cancel-heavy queue holds ended ids for `retention × cancels per
//!   second`: choose the retention for that.
//! - Failover of a master that was frozen (paused, cut off), not killed:
//!   until it learns it was replaced, the old master still takes writes,
//!   and Redis throws them away when it rejoins as a replica. Claims and
//!   acks it answered in that time are lost with them: their jobs are
//!   delivered again by the new master under the same fence (a hostile
//!   review saw 25–133 jobs run twice, behind Sentinel and on a Cluster).
//!   Redis's guard is `min-replicas-to-write 1` with a short
//!   `min-replicas-max-lag` on every master: a master that has lost its
//!   replicas then refuses writes, and the queue retries them on the new
//!   one. A master that was killed does not come back with writes of its
//!   own ([`QueueBuilder::replicas`] covers the schedules it had not yet
//!   passed on).
//!
//! [`MisfirePolicy`]: crate::persist::MisfirePolicy

mod async_consumer;
mod async_queue;
mod batched;
mod builder;
mod claimer;
mod consumer;
mod counters;
mod dead_letters;
mod error;
mod held;
mod hints;
mod job_info;
#[cfg(feature = "serde")]
mod json;
mod keys;
mod knowledge;
mod lanes;
mod link;
mod listing;
mod lua;
mod metrics;
mod new_job;
mod ops;
mod options;
mod outage;
mod outcome;
mod partitions;
mod pending;
mod queue;
mod release;
mod retention;
mod round;
mod run_plan;
mod schedule_calls;
mod scheduler;
mod schedules;
mod sentinel;
mod server;
mod shared;

pub use crate::schedule::{InvalidSchedule, Missed, Schedule};
pub use async_consumer::AsyncConsumer;
pub use async_queue::AsyncQueue;
pub use builder::QueueBuilder;
pub use consumer::Consumer;
pub use error::QueueError;
pub use job_info::{JobInfo, JobState};
pub use listing::{Cursor, Listed, Page};
pub use metrics::Metrics;
pub use new_job::NewJob;
pub use outcome::{Acked, Cancelled, DeadLetter, Delivery, Nacked, Scheduled};
pub use queue::Queue;
pub use scheduler::MAX_SCHEDULE_KEY;
pub use schedules::{ScheduleInfo, Upserted};

use core::time::Duration;

/// The longest job id, in bytes.
///
/// ```no_run
/// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
/// use std::time::Duration;
/// use tickwheel::redis::{QueueError, MAX_ID};
///
/// let hour = Duration::from_secs(3600);
/// q.schedule_in(&"x".repeat(MAX_ID), hour, b"")?;
/// // Refused before anything is sent.
/// let err = q.schedule_in(&"x".repeat(MAX_ID + 1), hour, b"").unwrap_err();
/// assert!(matches!(err, QueueError::InvalidId(_)));
/// # Ok::<(), QueueError>(())
/// ```
pub const MAX_ID: usize = 512;
/// The largest payload, in bytes (16 MiB).
///
/// ```no_run
/// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
/// use std::time::Duration;
/// use tickwheel::redis::{QueueError, MAX_PAYLOAD};
///
/// let hour = Duration::from_secs(3600);
/// q.schedule_in("big", hour, &vec![0; MAX_PAYLOAD])?;
/// // Refused before anything is sent.
/// let err = q.schedule_in("too-big", hour, &vec![0; MAX_PAYLOAD + 1]).unwrap_err();
/// assert!(matches!(err, QueueError::PayloadTooLarge { len } if len == MAX_PAYLOAD + 1));
/// # Ok::<(), QueueError>(())
/// ```
pub const MAX_PAYLOAD: usize = 16 << 20;
/// The latest due time, in microseconds since the Unix epoch (2^53, in
/// the year 2255): Redis scores are exact integers up to there.
///
/// ```
/// use tickwheel::redis::MAX_DUE_MICROS;
///
/// // A score (an f64) holds every microsecond up to the limit, not past it.
/// assert_eq!(MAX_DUE_MICROS as f64 as u64, MAX_DUE_MICROS);
/// assert_ne!((MAX_DUE_MICROS + 1) as f64 as u64, MAX_DUE_MICROS + 1);
/// ```
///
/// A later due time is refused before anything is sent:
///
/// ```no_run
/// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
/// use std::time::{Duration, UNIX_EPOCH};
/// use tickwheel::redis::{QueueError, MAX_DUE_MICROS};
///
/// let last = UNIX_EPOCH + Duration::from_micros(MAX_DUE_MICROS);
/// q.schedule("last", last, b"")?;
/// let err = q.schedule("later", last + Duration::from_micros(1), b"").unwrap_err();
/// assert!(matches!(err, QueueError::DueOutOfRange));
/// # Ok::<(), QueueError>(())
/// ```
pub const MAX_DUE_MICROS: u64 = 1 << 53;
/// The longest lease, and the longest lease extension (24 h).
///
/// A longer lease is refused before the queue connects:
///
/// ```
/// use std::time::Duration;
/// use tickwheel::redis::{Queue, QueueError, MAX_LEASE};
///
/// assert_eq!(MAX_LEASE, Duration::from_secs(24 * 3600));
/// let err = Queue::builder("redis://127.0.0.1:1", "orders")
///     .lease(MAX_LEASE + Duration::from_millis(1))
///     .connect()
///     .unwrap_err();
/// assert!(matches!(err, QueueError::Config(_)));
/// ```
pub const MAX_LEASE: Duration = Duration::from_secs(24 * 3600);
/// The longest retry delay of a `nack` (365 days).
///
/// ```no_run
/// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
/// # let consumer = q.consumer()?;
/// use std::time::Duration;
/// use tickwheel::redis::{QueueError, MAX_RETRY_DELAY};
///
/// for job in consumer.fetch(1, Duration::from_secs(1))? {
///     // Refused before anything is sent; the job stays delivered.
///     let err = consumer.nack(&job, MAX_RETRY_DELAY + Duration::from_secs(1)).unwrap_err();
///     assert!(matches!(err, QueueError::Argument(_)));
///     consumer.nack(&job, MAX_RETRY_DELAY)?;
/// }
/// # Ok::<(), QueueError>(())
/// ```
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(365 * 24 * 3600);
/// The most jobs one claim delivers (`QueueBuilder::batch`).
///
/// A larger batch is refused before the queue connects:
///
/// ```
/// use tickwheel::redis::{Queue, QueueError, MAX_BATCH};
///
/// let err = Queue::builder("redis://127.0.0.1:1", "orders")
///     .batch(MAX_BATCH + 1)
///     .connect()
///     .unwrap_err();
/// assert!(matches!(err, QueueError::Config(_)));
/// ```
pub const MAX_BATCH: usize = 1000;
/// The most entries one listing returns (`Queue::dead_letters`).
///
/// ```no_run
/// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
/// use tickwheel::redis::{QueueError, MAX_PAGE};
///
/// let page = q.dead(MAX_PAGE, None)?;
/// assert!(page.jobs.len() <= MAX_PAGE);
/// // A larger page is refused before anything is sent.
/// assert!(matches!(q.dead(MAX_PAGE + 1, None), Err(QueueError::Argument(_))));
/// // `dead_letters` reads at most `MAX_PAGE` instead.
/// assert!(q.dead_letters(usize::MAX)?.len() <= MAX_PAGE);
/// # Ok::<(), QueueError>(())
/// ```
pub const MAX_PAGE: usize = 1000;
// The argument errors of pages and purges say this number in words.
const _: () = assert!(MAX_PAGE == 1000);
