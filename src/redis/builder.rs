//! [`QueueBuilder`]: a queue's options, checked when it connects.

use alloc::string::{String, ToString};
use alloc::sync::Arc;
use core::net::SocketAddr;
use core::time::Duration;

use super::client::{Client, Keys, Options, Shared};
use super::queue::Queue;
use super::QueueError;
use crate::persist::{MisfirePolicy, OnMissed};

/// Builds a [`Queue`].
///
/// ```no_run
/// use std::time::Duration;
/// use tickwheel::persist::{MisfirePolicy, OnMissed};
/// use tickwheel::redis::Queue;
///
/// let orders = Queue::builder("127.0.0.1:6380".parse()?, "orders")
///     .lease(Duration::from_secs(30))
///     .max_attempts(5)
///     .misfire(&MisfirePolicy::<()>::default().on_missed(OnMissed::Spread(Duration::from_secs(60))))?
///     .connect()?;
/// # drop(orders);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct QueueBuilder {
    pub(super) addr: SocketAddr,
    pub(super) name: String,
    pub(super) options: Options,
    pub(super) io_timeout: Duration,
    pub(super) retry_for: Duration,
}

impl QueueBuilder {
    /// How long a consumer holds a delivered job before it is delivered
    /// again (default 30 s).
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("127.0.0.1:1".parse().unwrap(), "q");
    /// let b = b.lease(std::time::Duration::from_secs(60));
    /// # drop(b);
    /// ```
    pub fn lease(mut self, lease: Duration) -> Self {
        self.options.lease = lease;
        self
    }

    /// Deliveries a job gets before it is dead-lettered: a `nack` or a
    /// lease that runs out counts as a failed one (default 5).
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("127.0.0.1:1".parse().unwrap(), "q");
    /// let b = b.max_attempts(3);
    /// # drop(b);
    /// ```
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.options.max_attempts = attempts;
        self
    }

    /// What happens to jobs found later than the policy's threshold (after
    /// Redis or every consumer was down): fire now (the default), spread
    /// over a window, discard, or dead-letter.
    ///
    /// # Errors
    ///
    /// [`QueueError::Config`] for `OnMissed::Reschedule`, whose function
    /// cannot run inside Redis.
    ///
    /// ```
    /// use tickwheel::persist::{MisfirePolicy, OnMissed};
    /// # let b = tickwheel::redis::Queue::builder("127.0.0.1:1".parse().unwrap(), "q");
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
    /// again is refused and a cancel can say it was delivered (default
    /// 24 h).
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("127.0.0.1:1".parse().unwrap(), "q");
    /// let b = b.retention(std::time::Duration::from_secs(3600));
    /// # drop(b);
    /// ```
    pub fn retention(mut self, retention: Duration) -> Self {
        self.options.retention = retention;
        self
    }

    /// The most jobs one script call delivers or moves (default 100).
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("127.0.0.1:1".parse().unwrap(), "q");
    /// let b = b.batch(500);
    /// # drop(b);
    /// ```
    pub fn batch(mut self, jobs: usize) -> Self {
        self.options.batch = jobs;
        self
    }

    /// The reconciliation poll's mean interval (default 1 s, jittered by
    /// ±50 %): a lost wake-up hint costs at most one of these.
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("127.0.0.1:1".parse().unwrap(), "q");
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
    /// # let b = tickwheel::redis::Queue::builder("127.0.0.1:1".parse().unwrap(), "q");
    /// let b = b.hints(false);
    /// # drop(b);
    /// ```
    pub fn hints(mut self, on: bool) -> Self {
        self.options.hints = on;
        self
    }

    /// How long a call keeps retrying a lost connection before it returns
    /// [`QueueError::Unavailable`] (default 10 s), and the timeout of each
    /// read and write (default 2 s).
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("127.0.0.1:1".parse().unwrap(), "q");
    /// use std::time::Duration;
    /// let b = b.retry(Duration::from_secs(30), Duration::from_secs(1));
    /// # drop(b);
    /// ```
    pub fn retry(mut self, retry_for: Duration, io_timeout: Duration) -> Self {
        self.retry_for = retry_for;
        self.io_timeout = io_timeout;
        self
    }

    /// Checks the options and that the server answers.
    ///
    /// # Errors
    ///
    /// [`QueueError::Config`] for a zero lease, attempts or batch, or a
    /// queue name that is empty or holds braces; [`QueueError::Unavailable`]
    /// if the server does not answer within the retry window.
    ///
    /// ```
    /// let err = tickwheel::redis::Queue::builder("127.0.0.1:1".parse()?, "q")
    ///     .lease(std::time::Duration::ZERO)
    ///     .connect()
    ///     .unwrap_err();
    /// assert!(err.to_string().contains("lease"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn connect(self) -> Result<Queue, QueueError> {
        let o = &self.options;
        if o.lease < Duration::from_millis(1) {
            return Err(QueueError::Config("the lease must be at least 1 ms"));
        }
        if o.max_attempts == 0 || o.batch == 0 || o.poll.is_zero() {
            return Err(QueueError::Config(
                "max attempts, batch and poll interval must not be zero",
            ));
        }
        if self.name.is_empty() || self.name.contains(['{', '}']) {
            return Err(QueueError::Config(
                "a queue name must be non-empty, without braces",
            ));
        }
        let shared = Shared {
            client: Client::new(self.addr, self.io_timeout, self.retry_for),
            keys: Keys::new(&self.name),
            options: self.options,
        };
        shared.client.call(|conn| conn.query(&[b"PING"]))?;
        Ok(Queue {
            shared: Arc::new(shared),
        })
    }
}

impl Queue {
    /// A builder for the queue `name` on the server at `addr`.
    ///
    /// ```
    /// let b = tickwheel::redis::Queue::builder("127.0.0.1:6380".parse().unwrap(), "orders");
    /// # drop(b);
    /// ```
    pub fn builder(addr: SocketAddr, name: &str) -> QueueBuilder {
        QueueBuilder {
            addr,
            name: name.to_string(),
            options: Options {
                lease: Duration::from_secs(30),
                max_attempts: 5,
                threshold: Duration::from_secs(60),
                on_missed: "fire",
                window: Duration::ZERO,
                retention: Duration::from_secs(24 * 3600),
                batch: 100,
                poll: Duration::from_secs(1),
                hints: true,
            },
            io_timeout: Duration::from_secs(2),
            retry_for: Duration::from_secs(10),
        }
    }

    /// The queue `name` on the server at `addr`, with default options.
    ///
    /// # Errors
    ///
    /// As [`QueueBuilder::connect`].
    ///
    /// ```no_run
    /// let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// # drop(q);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn connect(addr: SocketAddr, name: &str) -> Result<Queue, QueueError> {
        Queue::builder(addr, name).connect()
    }
}
