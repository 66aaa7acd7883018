//! [`QueueBuilder`]: where the queue lives and its options, checked when
//! it connects.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;

use super::async_queue::AsyncQueue;
use super::counters::Counters;
use super::link::Ctx;
use super::options::Options;
use super::queue::Queue;
use super::server::{Reach, Target};
use super::shared::Shared;
use super::QueueError;
use crate::persist::{MisfirePolicy, OnMissed};

/// Builds a [`Queue`]: the server's URL (or a cluster's nodes), the queue's
/// name, and its options.
///
/// ```no_run
/// use std::time::Duration;
/// use tickwheel::persist::{MisfirePolicy, OnMissed};
/// use tickwheel::redis::Queue;
///
/// let orders = Queue::builder("redis://app:secret@redis.internal:6379/2", "orders")
///     .lease(Duration::from_secs(30))
///     .max_attempts(5)
///     .misfire(&MisfirePolicy::<()>::default().on_missed(OnMissed::Spread(Duration::from_secs(60))))?
///     .connect()?;
/// # drop(orders);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct QueueBuilder {
    target: Result<Target, QueueError>,
    name: String,
    pub(super) options: Options,
    tls: Option<redis::TlsCertificates>,
    runtime: Option<tokio::runtime::Handle>,
}

impl Queue {
    /// A builder for the queue `name` on the server at `url`:
    ///
    /// - `redis://[[user]:password@]host[:port][/db]`, TCP; `host` may be
    ///   a name (`localhost`, `redis.internal`) or an address;
    /// - `rediss://…`, the same over TLS (the system's roots, or the
    ///   certificates given to [`QueueBuilder::tls_root_certificate`]);
    /// - `redis+unix:///path/to/redis.sock[?db=n&user=u&pass=p]`.
    ///
    /// A user and password log in as that ACL user; a password alone
    /// answers `requirepass`. A URL that does not parse is reported by
    /// [`connect`](QueueBuilder::connect).
    ///
    /// ```
    /// let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:6380/0", "orders");
    /// # drop(b);
    /// ```
    pub fn builder(url: &str, name: &str) -> QueueBuilder {
        QueueBuilder::new(Target::single(url), name)
    }

    /// A builder for the queue `name` on a Redis Cluster reached through
    /// any of `nodes` (URLs as for [`builder`](Queue::builder), all
    /// `redis://` or all `rediss://`: a mix is a [`QueueError::Connect`]).
    /// redis-rs's cluster client follows `MOVED` and `ASK` and refreshes
    /// the slot map; each script runs on one node (one hash tag).
    ///
    /// ```
    /// let b = tickwheel::redis::Queue::cluster_builder(
    ///     &["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"],
    ///     "orders",
    /// );
    /// # drop(b);
    /// ```
    pub fn cluster_builder(nodes: &[&str], name: &str) -> QueueBuilder {
        QueueBuilder::new(Target::cluster(nodes), name)
    }

    /// The queue `name` on the server at `url`, with default options.
    ///
    /// # Errors
    ///
    /// As [`QueueBuilder::connect`].
    ///
    /// ```no_run
    /// let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// # drop(q);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn connect(url: &str, name: &str) -> Result<Queue, QueueError> {
        Queue::builder(url, name).connect()
    }
}

impl QueueBuilder {
    pub(super) fn new(target: Result<Target, QueueError>, name: &str) -> QueueBuilder {
        QueueBuilder {
            target,
            name: name.to_string(),
            options: Options::default(),
            tls: None,
            runtime: None,
        }
    }

    /// How long a consumer holds a delivered job before it is delivered
    /// again: from 1 ms to [`MAX_LEASE`](super::MAX_LEASE) (24 h; a longer
    /// job extends its lease). Default 30 s.
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q");
    /// let b = b.lease(std::time::Duration::from_secs(60));
    /// # drop(b);
    /// ```
    pub fn lease(mut self, lease: Duration) -> Self {
        self.options.lease = lease;
        self
    }

    /// Deliveries a job gets before it is dead-lettered: a `nack` or a
    /// lease that runs out counts as a failed one. From 1 to 1,000,000;
    /// default 5.
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q");
    /// let b = b.max_attempts(3);
    /// # drop(b);
    /// ```
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.options.max_attempts = attempts;
        self
    }

    /// What happens to jobs found later than the policy's threshold (after
    /// Redis or every consumer was down): fire now (the default), spread
    /// over a window, discard, or dead-letter. Threshold and window: at
    /// most a year.
    ///
    /// # Errors
    ///
    /// [`QueueError::Config`] for `OnMissed::Reschedule`, whose function
    /// cannot run inside Redis.
    ///
    /// ```
    /// use tickwheel::persist::{MisfirePolicy, OnMissed};
    /// # let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q");
    /// let b = b.misfire(&MisfirePolicy::<()>::default().on_missed(OnMissed::DeadLetter))?;
    /// # drop(b);
    /// # Ok::<(), tickwheel::redis::QueueError>(())
    /// ```
    pub fn misfire<T>(mut self, policy: &MisfirePolicy<T>) -> Result<Self, QueueError> {
        self.options.threshold = policy.threshold_value();
        (self.options.on_missed, self.options.window) = match policy.on_missed {
            OnMissed::FireNow => ("fire", Duration::ZERO),
            OnMissed::Spread(window) => ("spread", window),
            OnMissed::Discard => ("discard", Duration::ZERO),
            OnMissed::DeadLetter => ("dead", Duration::ZERO),
            _ => {
                return Err(QueueError::Config(
                    "OnMissed::Reschedule runs a function in the process; the Redis queue supports FireNow, Spread, Discard and DeadLetter",
                ))
            }
        };
        Ok(self)
    }

    /// How long an ended job's id is remembered, so that scheduling it
    /// again is refused and a cancel can say how it ended: at most ten
    /// years; default 24 h. Every process forgets older ids on a schedule
    /// of its own, within the retention plus an eighth of it (10 ms to
    /// 10 s); the module docs say what memory this costs. Under a
    /// retention shorter than a retry can take ([`retry`](Self::retry)'s
    /// window, twice its I/O timeout and 5 s), a schedule retried after a
    /// lost reply, its job run and forgotten meanwhile, makes it again.
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q");
    /// let b = b.retention(std::time::Duration::from_secs(3600)); // an hour
    /// ```
    pub fn retention(mut self, retention: Duration) -> Self {
        self.options.retention = retention;
        self
    }

    /// Splits the queue into `partitions` partitions (default 1, at most
    /// 1,024), each a whole queue under a hash tag of its own (`{name:k}`,
    /// or `{name:k.s}` with a salt that spaces the partitions evenly over
    /// the cluster's slots), so that a Redis Cluster spreads them evenly
    /// over its shards: one queue can then use every shard's core and
    /// memory, and a shard's failover touches only its partitions. A job
    /// lives in the partition of its id (the FNV-1a hash of the id, modulo
    /// the count), so every call about one job is still one script on one
    /// slot, and an id is still unique in the queue; priorities order jobs
    /// due at the same time within a partition. A consumer claims from
    /// every partition with due jobs (see [`Consumer`](super::Consumer));
    /// `len`, the listings, dead letters, `requeue` and `purge_dead` cover
    /// them all.
    ///
    /// The count is part of the queue: the first `connect` stores it, a
    /// builder without `partitions` takes the stored count (one for a new
    /// queue), and one with another count is refused ([`QueueError::Connect`]),
    /// since ids would change partition, as is one named like a partition (`name:k`). Pick at
    /// least as many partitions as the cluster has shards, a few times
    /// more to spread evenly; each costs an idle consumer one poll per
    /// poll interval. On a single server partitions gain nothing. A
    /// consumer claims from its partitions in rounds, and a round waits
    /// for its slowest partition: a shard that answers nothing for the
    /// retry window ([`retry`](Self::retry)) holds up the consumers of
    /// every partition for that long and one attempt more (a failover
    /// takes about the cluster's node timeout).
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q");
    /// let b = b.partitions(12);
    /// # drop(b);
    /// ```
    pub fn partitions(mut self, partitions: u16) -> Self {
        self.options.partitions = Some(partitions);
        self
    }

    /// Makes every schedule wait until `replicas` replicas of the server
    /// have the job (Redis's `WAIT`), at most `timeout`: a schedule that
    /// answers then survives the master's death and a replica's promotion.
    /// If fewer confirm in time, the call fails with
    /// [`QueueError::NotReplicated`] (the job is on the master; scheduling
    /// the same id again is safe). Default 0: a schedule answers once the
    /// master has the job, and a failover can lose what the replicas had
    /// not received yet (on loopback, well under a millisecond of
    /// writes). At most 16 replicas, and a timeout from 1 ms to 60 s,
    /// shorter than the I/O timeout ([`retry`](Self::retry)).
    ///
    /// The waits run on a connection of their own, so a slow replica holds
    /// up schedules only, never claims, acks or cancels. On a Redis Cluster
    /// the wait rides the schedule's pipeline to its partition's master and
    /// counts that master's replicas: every shard needs `replicas` of them.
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q");
    /// let b = b.replicas(1, std::time::Duration::from_millis(500));
    /// # drop(b);
    /// ```
    pub fn replicas(mut self, replicas: u32, timeout: Duration) -> Self {
        self.options.replicas = replicas;
        self.options.replica_timeout = timeout;
        self
    }

    /// The most jobs one claim delivers: from 1 to
    /// [`MAX_BATCH`](super::MAX_BATCH); default 100.
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q");
    /// let b = b.batch(500);
    /// # drop(b);
    /// ```
    pub fn batch(mut self, jobs: usize) -> Self {
        self.options.batch = jobs;
        self
    }

    /// The reconciliation poll's interval, from 1 ms to 1 h (default 1 s;
    /// each gap is this plus up to a quarter more, at random, so consumers
    /// do not poll in step): a lost wake-up hint costs at most 1.25 of
    /// these, and an idle consumer sends at most one command per interval.
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q");
    /// let b = b.poll_interval(std::time::Duration::from_millis(500));
    /// # drop(b);
    /// ```
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.options.poll = every;
        self
    }

    /// Whether consumers subscribe to wake-up hints (default `true`).
    /// Without them (a proxy that does not pass pub/sub, say), a consumer
    /// learns of a job scheduled earlier than any it knew only at its
    /// next poll.
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q");
    /// let b = b.hints(false);
    /// # drop(b);
    /// ```
    pub fn hints(mut self, on: bool) -> Self {
        self.options.hints = on;
        self
    }

    /// How late past a job's due time a sleeping consumer may wake, so
    /// that jobs due close together are claimed together: at most 1 s,
    /// default 1 ms; zero claims at each due time. At 1,000 jobs a second
    /// 20 ms costs Redis the CPU per job of a 100 ms ZSET poller at a p99
    /// of 22 ms (1 ms: 2.2–2.7× its CPU; docs/benchmarks.md, run B13).
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q");
    /// let cheaper = b.wake_slack(std::time::Duration::from_millis(20));
    /// # drop(cheaper);
    /// ```
    pub fn wake_slack(mut self, slack: Duration) -> Self {
        self.options.wake_slack = slack;
        self
    }

    /// How long a call keeps retrying (default 10 s, at most 1 h; it returns
    /// [`QueueError::Unavailable`] at its first failure past that, so up to
    /// 0.5 s of backoff and three I/O timeouts later), and how long each
    /// request may wait for its reply or connection (default 2 s, 1 ms–10 min).
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q");
    /// use std::time::Duration;
    /// let b = b.retry(Duration::from_secs(30), Duration::from_secs(1));
    /// # drop(b);
    /// ```
    pub fn retry(mut self, retry_for: Duration, io_timeout: Duration) -> Self {
        self.options.retry_for = retry_for;
        self.options.io_timeout = io_timeout;
        self
    }

    /// Connects even if the server's `maxmemory-policy` may evict the
    /// queue's keys (`allkeys-*`), which `connect` refuses by default: an
    /// evicted key loses jobs, or lets an acked id run again. The policy
    /// read is reported by [`Queue::eviction_policy`]. Behind Sentinel the
    /// same holds for every master the queue follows after a failover:
    /// without this, calls answer [`QueueError::EvictingServer`](super::QueueError::EvictingServer)
    /// while Sentinel names one that may evict.
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q");
    /// let b = b.allow_eviction(true); // a cache-only test server, say
    /// # drop(b);
    /// ```
    pub fn allow_eviction(mut self, allow: bool) -> Self {
        self.options.allow_eviction = allow;
        self
    }

    /// Trusts the CA certificates in `pem` for `rediss://` (instead of the
    /// system's roots): a private CA, or a test's own.
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("rediss://127.0.0.1:1", "q");
    /// let ca = b"-----BEGIN CERTIFICATE-----\n...".to_vec(); // std::fs::read("ca.crt")?
    /// let b = b.tls_root_certificate(ca);
    /// # drop(b);
    /// ```
    pub fn tls_root_certificate(mut self, pem: Vec<u8>) -> Self {
        self.tls.get_or_insert_with(no_certificates).root_cert = Some(pem);
        self
    }

    /// Presents this client certificate and key (PEM) to a server that
    /// asks for one (`tls-auth-clients yes`).
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("rediss://127.0.0.1:1", "q");
    /// let (cert, key) = (b"...".to_vec(), b"...".to_vec()); // client.crt, client.key
    /// let b = b.tls_client_certificate(cert, key);
    /// # drop(b);
    /// ```
    pub fn tls_client_certificate(mut self, cert_pem: Vec<u8>, key_pem: Vec<u8>) -> Self {
        self.tls.get_or_insert_with(no_certificates).client_tls = Some(redis::ClientTlsConfig {
            client_cert: cert_pem,
            client_key: key_pem,
        });
        self
    }

    /// Runs the queue's I/O as a task on this multi-thread tokio runtime
    /// instead of a thread of its own (the default, for any executor or none).
    ///
    /// For a tokio service: a call made from that runtime's tasks and its
    /// answer then cross no thread, which saves two wake-ups of a parked
    /// thread per call (20–50 µs a call on a 2-core VM), and a schedule,
    /// cancel or ack with nothing waiting ahead of it sends its own script
    /// call, costing the client what a plain redis-rs call does. Same
    /// connection count. A call from outside the runtime's tasks (its
    /// `block_on`, another thread) gains less or nothing. The queue lives
    /// as long as the runtime: once it shuts down (a blocking call from a
    /// task's drop during the shutdown included), every call answers
    /// [`QueueError::Unavailable`]. A call whose future is dropped finishes
    /// on the runtime. A blocking call from a worker moves its other tasks
    /// (the I/O among them) to a blocking thread while it waits
    /// (`block_in_place`): more at once than `max_blocking_threads` stall
    /// the runtime, so use the async calls there.
    ///
    /// [`connect`](Self::connect) refuses a current-thread runtime with
    /// [`QueueError::Config`]: a blocking call on its only thread would
    /// wait on itself. The runtime needs its I/O and time drivers
    /// (`enable_all`, as `#[tokio::main]` builds it); without them the
    /// connect fails with [`QueueError::Unavailable`].
    ///
    /// ```
    /// let service = tokio::runtime::Runtime::new()?; // or `Handle::current()`
    /// let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:6380", "orders")
    ///     .runtime(service.handle().clone());
    /// # drop(b);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn runtime(mut self, runtime: tokio::runtime::Handle) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Checks the options, connects, and checks the server: that it
    /// answers, accepts the credentials, and does not evict keys.
    ///
    /// # Errors
    ///
    /// [`QueueError::Config`] for options out of range, or a queue name
    /// that is empty or holds braces; [`QueueError::Connect`] for a URL
    /// that does not parse, unreadable certificates, or refused
    /// credentials; [`QueueError::EvictingServer`];
    /// [`QueueError::Unavailable`] if the server does not answer within
    /// the retry window.
    ///
    /// ```
    /// let err = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q")
    ///     .lease(std::time::Duration::ZERO)
    ///     .connect()
    ///     .unwrap_err();
    /// assert!(err.to_string().contains("lease"));
    /// ```
    pub fn connect(self) -> Result<Queue, QueueError> {
        let (shared, ready) = self.start()?;
        ready.wait()?;
        Ok(Queue::started(shared))
    }

    /// [`connect`](Self::connect) for async code: the future connects
    /// without blocking the executor, under any runtime.
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), tickwheel::redis::QueueError> {
    /// let orders = tickwheel::redis::Queue::builder("redis://127.0.0.1:6380", "orders")
    ///     .connect_async()
    ///     .await?;
    /// # drop(orders);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect_async(self) -> Result<AsyncQueue, QueueError> {
        let (shared, ready) = self.start()?;
        ready.await?;
        Ok(Queue::started(shared).to_async())
    }

    fn start(self) -> Result<(Arc<Shared>, super::pending::Pending<()>), QueueError> {
        self.options.check()?;
        if self.name.is_empty() || self.name.contains(['{', '}']) {
            return Err(QueueError::Config(
                "a queue name must be non-empty, without braces",
            ));
        }
        let flavor = self.runtime.as_ref().map(|r| r.runtime_flavor());
        if flavor.is_some_and(|f| f != tokio::runtime::RuntimeFlavor::MultiThread) {
            let why = "the queue's runtime must be a multi-thread tokio runtime";
            return Err(QueueError::Config(why));
        }
        let target = self.target?;
        let identity: Arc<str> = Arc::from(format!("{}@{}", self.name, target.describe()));
        let (hints, _) = tokio::sync::broadcast::channel(256);
        let ctx = Ctx {
            name: self.name.clone(),
            parts: std::sync::OnceLock::new(),
            reach: Reach {
                target,
                tls: self.tls,
                io_timeout: self.options.io_timeout,
            },
            options: self.options,
            counters: Counters::new(&self.name),
            identity,
            hints,
            hints_started: core::sync::atomic::AtomicBool::new(false),
            schedules_started: core::sync::atomic::AtomicBool::new(false),
            schedules_wake: tokio::sync::Notify::new(),
            policy: std::sync::OnceLock::new(),
            trim_wake: std::sync::OnceLock::new(),
        };
        Shared::start(ctx, self.runtime)
    }
}

fn no_certificates() -> redis::TlsCertificates {
    redis::TlsCertificates {
        client_tls: None,
        root_cert: None,
    }
}
