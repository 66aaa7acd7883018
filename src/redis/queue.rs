//! [`Queue`]: the producer's and operator's side (schedule, cancel,
//! reschedule, dead letters, metrics) and its builder.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;
use std::time::SystemTime;

use super::client::{self, arg, bump, int, time_of, Shared};
use super::consumer::Consumer;
use super::outcome::{Cancelled, DeadLetter, Scheduled};
use super::resp::Value;
use super::{Metrics, QueueError, MAX_DUE_MICROS, MAX_ID, MAX_PAYLOAD};

/// A durable delayed-job queue on a Redis server: the producer's side.
/// Cloning it is cheap and shares its connections. See the [module
/// docs](super) for the guarantees.
///
/// ```no_run
/// use std::time::Duration;
/// use tickwheel::redis::{Cancelled, Queue};
///
/// let orders = Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
/// orders.schedule_in("order-17", Duration::from_secs(900), b"close 17")?;
/// // Paid in time:
/// assert!(matches!(orders.cancel("order-17")?, Cancelled::Cancelled(_)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Queue {
    pub(super) shared: Arc<Shared>,
}

impl core::fmt::Debug for Queue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Queue")
            .field("addr", &self.shared.client.addr)
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

impl Queue {
    /// Schedules job `id` at `due` (wall-clock time, compared with the
    /// Redis server's clock). Idempotent by id: a second schedule of a
    /// known id changes nothing and says [`Scheduled::Exists`].
    ///
    /// # Errors
    ///
    /// Bad input ([`QueueError::InvalidId`], [`QueueError::PayloadTooLarge`],
    /// [`QueueError::DueOutOfRange`]) before anything is sent; Redis
    /// unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// let due = std::time::SystemTime::now() + std::time::Duration::from_secs(900);
    /// q.schedule("order-17", due, b"close 17")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule(
        &self,
        id: &str,
        due: SystemTime,
        payload: &[u8],
    ) -> Result<Scheduled, QueueError> {
        let micros = micros_of(due)?;
        self.schedule_with(id, b"at", micros, payload)
    }

    /// Schedules job `id` to be due `delay` after now by the Redis
    /// server's clock (so producers with skewed clocks agree).
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// q.schedule_in("order-17", std::time::Duration::from_secs(900), b"close 17")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule_in(
        &self,
        id: &str,
        delay: Duration,
        payload: &[u8],
    ) -> Result<Scheduled, QueueError> {
        self.schedule_with(id, b"in", delay_micros(delay)?, payload)
    }

    fn schedule_with(
        &self,
        id: &str,
        kind: &[u8],
        micros: u64,
        payload: &[u8],
    ) -> Result<Scheduled, QueueError> {
        check_id(id)?;
        if payload.len() > MAX_PAYLOAD {
            return Err(QueueError::PayloadTooLarge { len: payload.len() });
        }
        let s = &self.shared;
        let micros = arg(micros);
        let reply = s.client.eval(
            &s.keys,
            &client::SCHEDULE,
            &[id.as_bytes(), payload, kind, &micros, &s.keys.channel],
        )?;
        self.scheduled(reply)
    }

    fn scheduled(&self, reply: Value) -> Result<Scheduled, QueueError> {
        let counters = &self.shared.client.counters;
        if let Value::Error(message) = reply {
            return Err(QueueError::Server(message));
        }
        let reply = reply.into_array().unwrap_or_default();
        match reply.as_slice() {
            [Value::Int(1), due] => {
                bump(&counters.scheduled, 1);
                Ok(Scheduled::Created {
                    due: time_of(due.as_int().unwrap_or(0)),
                })
            }
            _ => {
                bump(&counters.duplicates, 1);
                Ok(Scheduled::Exists)
            }
        }
    }

    /// Schedules many jobs, each `(id, delay, payload)`, in one round trip
    /// (a pipeline of the same script [`schedule_in`](Self::schedule_in)
    /// runs); one answer per job, in order. For bulk loads and bursts.
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule); bad input in any job refuses the
    /// whole batch before anything is sent.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// use std::time::Duration;
    /// let jobs = [("order-1", Duration::from_secs(900), &b"close 1"[..]), ("order-2", Duration::from_secs(900), &b"close 2"[..])];
    /// let done = q.schedule_many(&jobs)?;
    /// assert_eq!(done.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule_many(
        &self,
        jobs: &[(&str, Duration, &[u8])],
    ) -> Result<Vec<Scheduled>, QueueError> {
        let jobs: Result<Vec<_>, _> = jobs
            .iter()
            .map(|&(id, delay, payload)| Ok((id, &b"in"[..], delay_micros(delay)?, payload)))
            .collect();
        self.schedule_batch(&jobs?)
    }

    /// [`schedule_many`](Self::schedule_many) with due times (wall clock,
    /// compared with the server's) instead of delays.
    ///
    /// # Errors
    ///
    /// As [`schedule_many`](Self::schedule_many).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// let at = std::time::SystemTime::now() + std::time::Duration::from_secs(900);
    /// q.schedule_many_at(&[("order-1", at, &b"close 1"[..])])?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule_many_at(
        &self,
        jobs: &[(&str, SystemTime, &[u8])],
    ) -> Result<Vec<Scheduled>, QueueError> {
        let jobs: Result<Vec<_>, _> = jobs
            .iter()
            .map(|&(id, due, payload)| Ok((id, &b"at"[..], micros_of(due)?, payload)))
            .collect();
        self.schedule_batch(&jobs?)
    }

    fn schedule_batch(
        &self,
        jobs: &[(&str, &[u8], u64, &[u8])],
    ) -> Result<Vec<Scheduled>, QueueError> {
        let s = &self.shared;
        let mut lists = Vec::with_capacity(jobs.len());
        for &(id, kind, micros, payload) in jobs {
            check_id(id)?;
            if payload.len() > MAX_PAYLOAD {
                return Err(QueueError::PayloadTooLarge { len: payload.len() });
            }
            lists.push(alloc::vec![
                id.as_bytes().to_vec(),
                payload.to_vec(),
                kind.to_vec(),
                arg(micros),
                s.keys.channel.clone(),
            ]);
        }
        let replies = s.client.eval_many(&s.keys, &client::SCHEDULE, &lists)?;
        replies
            .into_iter()
            .map(|reply| self.scheduled(reply))
            .collect()
    }

    /// Cancels job `id`, and says who won: [`Cancelled::Cancelled`] (with
    /// the payload) if it will never be delivered. O(log n) in Redis.
    ///
    /// # Errors
    ///
    /// [`QueueError::InvalidId`]; Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// match q.cancel("order-17")? {
    ///     tickwheel::redis::Cancelled::Cancelled(_) => println!("will not run"),
    ///     other => println!("too late: {other:?}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(&self, id: &str) -> Result<Cancelled, QueueError> {
        check_id(id)?;
        let s = &self.shared;
        let reply = s
            .client
            .eval(&s.keys, &client::CANCEL, &[id.as_bytes()])?
            .into_array()
            .unwrap_or_default();
        let mut reply = reply.into_iter();
        let outcome = match reply.next().and_then(Value::into_bulk).as_deref() {
            Some(b"cancelled") => {
                bump(&s.client.counters.cancelled, 1);
                Cancelled::Cancelled(reply.next().and_then(Value::into_bulk).unwrap_or_default())
            }
            Some(b"in_flight") => Cancelled::InFlight,
            Some(b"acked") => Cancelled::Delivered,
            Some(b"ended") => Cancelled::Ended,
            _ => Cancelled::Unknown,
        };
        Ok(outcome)
    }

    /// Moves waiting job `id` to `due`; `false` if it is not waiting
    /// (unknown, in flight, dead-lettered or ended).
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// let later = std::time::SystemTime::now() + std::time::Duration::from_secs(1800);
    /// q.reschedule("order-17", later)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reschedule(&self, id: &str, due: SystemTime) -> Result<bool, QueueError> {
        let micros = micros_of(due)?;
        self.reschedule_with(id, b"at", micros)
    }

    /// Moves waiting job `id` to `delay` after now by the server's clock.
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// q.reschedule_in("order-17", std::time::Duration::from_secs(1800))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reschedule_in(&self, id: &str, delay: Duration) -> Result<bool, QueueError> {
        self.reschedule_with(id, b"in", delay_micros(delay)?)
    }

    fn reschedule_with(&self, id: &str, kind: &[u8], micros: u64) -> Result<bool, QueueError> {
        check_id(id)?;
        let s = &self.shared;
        let micros = arg(micros);
        let reply = s.client.eval(
            &s.keys,
            &client::RESCHEDULE,
            &[id.as_bytes(), kind, &micros, &s.keys.channel],
        )?;
        let moved = matches!(reply.into_array().as_deref(), Some([Value::Int(1), ..]));
        if moved {
            bump(&s.client.counters.rescheduled, 1);
        }
        Ok(moved)
    }

    /// Up to `limit` dead-lettered jobs, oldest first.
    ///
    /// # Errors
    ///
    /// Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// for dead in q.dead_letters(100)? {
    ///     println!("{} failed {} times", dead.id, dead.attempts);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dead_letters(&self, limit: usize) -> Result<Vec<DeadLetter>, QueueError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let s = &self.shared;
        let stop = arg(limit as u64 - 1);
        s.client.call(|conn| {
            let members = conn
                .query(&[b"ZRANGE", s.keys.dead(), b"0", &stop, b"WITHSCORES"])?
                .into_array()
                .unwrap_or_default();
            let mut out = Vec::new();
            for pair in members.chunks(2) {
                let [Value::Bulk(member), Value::Bulk(score)] = pair else {
                    continue;
                };
                let id = String::from_utf8_lossy(member.get(16..).unwrap_or_default()).into_owned();
                let at = parse_micros(score);
                let meta = conn.query(&[b"HGET", s.keys.jobs(), id.as_bytes()])?;
                let attempts = meta
                    .as_bulk()
                    .and_then(|m| m.split(|&b| b == b'|').nth(1))
                    .and_then(|n| core::str::from_utf8(n).ok()?.parse().ok())
                    .unwrap_or(0);
                let payload = conn
                    .query(&[b"HGET", s.keys.payload(), id.as_bytes()])?
                    .into_bulk()
                    .unwrap_or_default();
                out.push(DeadLetter {
                    id,
                    payload,
                    attempts,
                    at: time_of(at),
                });
            }
            Ok(out)
        })
    }

    /// Moves dead-lettered job `id` back to waiting, due now, with its
    /// attempts reset; `false` if it is not dead-lettered.
    ///
    /// # Errors
    ///
    /// [`QueueError::InvalidId`]; Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// for dead in q.dead_letters(100)? {
    ///     q.requeue(&dead.id)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn requeue(&self, id: &str) -> Result<bool, QueueError> {
        check_id(id)?;
        let s = &self.shared;
        let reply = s
            .client
            .eval(&s.keys, &client::REQUEUE, &[id.as_bytes(), &s.keys.channel])?;
        Ok(reply.as_int() == Some(1))
    }

    /// Jobs waiting or in flight, and dead-lettered: `(live, dead)`.
    ///
    /// # Errors
    ///
    /// Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// let (live, dead) = q.len()?;
    /// # let _ = (live, dead);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> Result<(u64, u64), QueueError> {
        let s = &self.shared;
        s.client.call(|conn| {
            let live = int(&conn.query(&[b"ZCARD", s.keys.due()])?)?;
            let dead = int(&conn.query(&[b"ZCARD", s.keys.dead()])?)?;
            Ok((live as u64, dead as u64))
        })
    }

    /// This process's counters for the queue (shared by its clones and
    /// consumers).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// println!("{} round trips", q.metrics().round_trips);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn metrics(&self) -> Metrics {
        Metrics::of(&self.shared.client.counters)
    }

    /// A consumer of this queue: see [`Consumer`].
    ///
    /// # Errors
    ///
    /// The wake-up timer's thread could not start.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// let consumer = q.consumer()?;
    /// # drop(consumer);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn consumer(&self) -> Result<Consumer, QueueError> {
        Consumer::new(Arc::clone(&self.shared))
    }
}

fn check_id(id: &str) -> Result<(), QueueError> {
    if id.is_empty() {
        return Err(QueueError::InvalidId("an id may not be empty"));
    }
    if id.len() > MAX_ID {
        return Err(QueueError::InvalidId("an id may be at most 512 bytes"));
    }
    Ok(())
}

fn micros_of(due: SystemTime) -> Result<u64, QueueError> {
    let micros = due
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_err(|_| QueueError::DueOutOfRange)?
        .as_micros();
    match u64::try_from(micros) {
        Ok(micros) if micros <= MAX_DUE_MICROS => Ok(micros),
        _ => Err(QueueError::DueOutOfRange),
    }
}

fn delay_micros(delay: Duration) -> Result<u64, QueueError> {
    // Added to the server's now inside the script: keep the sum exact.
    match u64::try_from(delay.as_micros()) {
        Ok(micros) if micros <= MAX_DUE_MICROS / 2 => Ok(micros),
        _ => Err(QueueError::DueOutOfRange),
    }
}

fn parse_micros(bytes: &[u8]) -> i64 {
    core::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .map_or(0, |f| f as i64)
}
