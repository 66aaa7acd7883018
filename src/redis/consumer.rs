//! [`Consumer`]: takes due jobs with a lease, acks and nacks them, and
//! sleeps until the next job is due on a tickwheel [`Timer`].
//!
//! # Waking exactly, without polling storms
//!
//! Every claim's reply carries the server's time and the earliest time
//! anything is next due (a job's due time, or a lease running out). The
//! consumer arms a [`Timer`] at that moment, translated to its own clock
//! through the offset the same reply measured, and sleeps on a channel.
//! Three things send to it: the timer when it fires; a subscriber thread
//! that forwards the wake-up hints producers publish when they schedule a
//! job earlier than any other; and the consumer itself after a claim that
//! filled its batch (more may be due, for another waiting thread). Hints
//! can be lost (a dropped connection, a restarted server), so a sleeping
//! consumer also polls, at a jittered interval of about a second, with one
//! `ZRANGE`: a lost hint costs one poll interval, never a stall. Idle, a
//! consumer sends about one command per poll interval.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use core::time::Duration;
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;

use super::client::{self, arg, bump, jitter, time_of, Shared};
use super::hints::{listen, Wake};
use super::outcome::{Acked, Delivery, Nacked};
use super::resp::Value;
use super::QueueError;
use crate::timer::{Timer, TimerHandle};

/// Takes due jobs from a [`Queue`](super::Queue). `Send + Sync`: several threads may
/// call [`fetch`](Self::fetch) on one consumer.
///
/// ```no_run
/// use std::time::Duration;
/// use tickwheel::redis::Queue;
///
/// let orders = Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
/// let consumer = orders.consumer()?;
/// loop {
///     for job in consumer.fetch(10, Duration::from_secs(5))? {
///         println!("close order {}", job.id);
///         consumer.ack(&job)?;
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Consumer {
    shared: Arc<Shared>,
    wake_tx: Sender<Wake>,
    wake_rx: Receiver<Wake>,
    timer: Timer<Wake, Sender<Wake>>,
    armed: Mutex<Option<(TimerHandle, i64)>>,
    /// Server microseconds minus local wall-clock microseconds.
    offset: AtomicI64,
    stop: Arc<AtomicBool>,
    subscriber: Option<JoinHandle<()>>,
}

impl core::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Consumer")
            .field("addr", &self.shared.client.addr)
            .finish_non_exhaustive()
    }
}

impl Consumer {
    pub(super) fn new(shared: Arc<Shared>) -> Result<Consumer, QueueError> {
        let (wake_tx, wake_rx) = crossbeam_channel::unbounded();
        let timer = Timer::builder()
            .shards(1)
            .executor(wake_tx.clone())
            .build()
            .map_err(|_| QueueError::Config("the wake-up timer could not start"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let subscriber = if shared.options.hints {
            let shared = Arc::clone(&shared);
            let stop = Arc::clone(&stop);
            let tx = wake_tx.clone();
            let thread = std::thread::Builder::new()
                .name(String::from("tickwheel-redis-hints"))
                .spawn(move || listen(&shared, &tx, &stop))
                .map_err(|_| QueueError::Config("the hint thread could not start"))?;
            Some(thread)
        } else {
            None
        };
        Ok(Consumer {
            shared,
            wake_tx,
            wake_rx,
            timer,
            armed: Mutex::new(None),
            offset: AtomicI64::new(0),
            stop,
            subscriber,
        })
    }

    /// Takes up to `max` due jobs, waiting up to `timeout` for one to fall
    /// due; an empty vector if none did. Each comes with a lease (the
    /// queue's `lease`): ack or nack it before it runs out, or it is
    /// delivered again.
    ///
    /// # Errors
    ///
    /// Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// # let consumer = q.consumer()?;
    /// let jobs = consumer.fetch(1, std::time::Duration::from_secs(1))?;
    /// # let _ = jobs;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fetch(&self, max: usize, timeout: Duration) -> Result<Vec<Delivery>, QueueError> {
        let give_up = Instant::now() + timeout;
        let max = max.clamp(1, self.shared().options.batch);
        loop {
            let (jobs, next) = self.claim(max)?;
            if !jobs.is_empty() {
                if jobs.len() == max {
                    // More may be due: let another waiting thread look.
                    let _ = self.wake_tx.send(Wake::Due);
                }
                return Ok(jobs);
            }
            if let Some(next) = next {
                self.arm(next);
            }
            if !self.sleep(give_up)? {
                return Ok(Vec::new());
            }
        }
    }

    /// Sleeps until something may be due (`true`) or `give_up` (`false`).
    fn sleep(&self, give_up: Instant) -> Result<bool, QueueError> {
        let mut poll_at = Instant::now() + jitter(self.shared().options.poll);
        loop {
            let until = poll_at.min(give_up);
            match self.wake_rx.recv_deadline(until) {
                Ok(Wake::Due) => return Ok(true),
                Ok(Wake::Hint(at)) => {
                    bump(&self.shared().client.counters.hints, 1);
                    if at <= self.server_now() {
                        return Ok(true);
                    }
                    self.arm(at);
                }
                Err(RecvTimeoutError::Timeout) if Instant::now() >= give_up => return Ok(false),
                Err(_) => {
                    // The reconciliation poll: one ZRANGE.
                    let s = self.shared();
                    bump(&s.client.counters.polls, 1);
                    let head = s.client.call(|conn| {
                        conn.query(&[b"ZRANGE", s.keys.due(), b"0", b"0", b"WITHSCORES"])
                    })?;
                    if let Some(at) = first_score(&head) {
                        if at <= self.server_now() {
                            return Ok(true);
                        }
                        self.arm(at);
                    }
                    poll_at = Instant::now() + jitter(s.options.poll);
                }
            }
        }
    }

    /// Runs the claim script: the jobs it delivered, and when the next is
    /// due (server microseconds).
    fn claim(&self, max: usize) -> Result<(Vec<Delivery>, Option<i64>), QueueError> {
        let s = self.shared();
        let o = &s.options;
        let (max, lease, attempts) = (
            arg(max as u64),
            arg(micros(o.lease)),
            arg(o.max_attempts.into()),
        );
        let (threshold, window, retention) = (
            arg(micros(o.threshold)),
            arg(micros(o.window)),
            arg(micros(o.retention)),
        );
        let keys = s.keys.refs();
        let mut sent = 0;
        let reply = s.client.call(|conn| {
            sent = wall_micros();
            conn.eval(
                &client::CLAIM,
                &keys,
                &[
                    &max,
                    &lease,
                    &attempts,
                    &threshold,
                    o.on_missed.as_bytes(),
                    &window,
                    &retention,
                ],
            )
        })?;
        let received = wall_micros();
        let reply = reply.into_array().unwrap_or_default();
        let ints: Vec<i64> = reply.iter().take(5).filter_map(Value::as_int).collect();
        let [now, next, dead, discarded, spread] = ints[..] else {
            return Err(QueueError::Server(String::from("unexpected claim reply")));
        };
        // The server read its clock about halfway through the round trip.
        self.offset
            .store(now - (sent + received) / 2, Ordering::Relaxed);
        let c = &s.client.counters;
        bump(&c.dead_lettered, dead as u64);
        bump(&c.discarded, discarded as u64);
        bump(&c.spread, spread as u64);
        let mut jobs = Vec::new();
        let mut rest = reply.into_iter().skip(5);
        while let (Some(id), Some(payload), Some(attempt), Some(due)) =
            (rest.next(), rest.next(), rest.next(), rest.next())
        {
            let due = due.as_int().unwrap_or(now);
            let attempt = attempt.as_int().unwrap_or(1) as u32;
            c.lateness
                .record(Duration::from_micros((now - due).max(0) as u64));
            bump(&c.delivered, 1);
            if attempt > 1 {
                bump(&c.redelivered, 1);
            }
            jobs.push(Delivery {
                id: String::from_utf8_lossy(&id.into_bulk().unwrap_or_default()).into_owned(),
                payload: payload.into_bulk().unwrap_or_default(),
                attempt,
                due: time_of(due),
            });
        }
        Ok((jobs, (next >= 0).then_some(next)))
    }

    /// Completes a delivered job.
    ///
    /// # Errors
    ///
    /// Redis unreachable for the retry window (the job is then delivered
    /// again when its lease runs out).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// # let consumer = q.consumer()?;
    /// for job in consumer.fetch(1, std::time::Duration::from_secs(1))? {
    ///     consumer.ack(&job)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ack(&self, job: &Delivery) -> Result<Acked, QueueError> {
        let s = self.shared();
        let attempt = arg(job.attempt.into());
        let reply = s
            .client
            .eval(&s.keys, &client::ACK, &[job.id.as_bytes(), &attempt])?;
        Ok(self.acked(&reply))
    }

    fn acked(&self, reply: &Value) -> Acked {
        let counters = &self.shared().client.counters;
        match reply.as_int() {
            Some(1) | Some(2) => {
                bump(&counters.acked, 1);
                Acked::Acked
            }
            _ => {
                bump(&counters.lease_lost, 1);
                Acked::LeaseLost
            }
        }
    }

    /// Acks many delivered jobs in one round trip; one answer per job, in
    /// order.
    ///
    /// # Errors
    ///
    /// As [`ack`](Self::ack).
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// # let consumer = q.consumer()?;
    /// let jobs = consumer.fetch(100, std::time::Duration::from_secs(1))?;
    /// // ... run them ...
    /// consumer.ack_all(&jobs)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ack_all(&self, jobs: &[Delivery]) -> Result<Vec<Acked>, QueueError> {
        let s = self.shared();
        let lists: Vec<Vec<Vec<u8>>> = jobs
            .iter()
            .map(|job| alloc::vec![job.id.as_bytes().to_vec(), arg(job.attempt.into())])
            .collect();
        let replies = s.client.eval_many(&s.keys, &client::ACK, &lists)?;
        Ok(replies.iter().map(|reply| self.acked(reply)).collect())
    }

    /// Extends the lease of a job still being worked on to `lease` from
    /// now (the server's clock), so a long job is not delivered again
    /// meanwhile; `false` if the lease was already lost.
    ///
    /// # Errors
    ///
    /// Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// # let consumer = q.consumer()?;
    /// for job in consumer.fetch(1, std::time::Duration::from_secs(1))? {
    ///     // A slow job: keep the lease alive while it runs.
    ///     consumer.extend(&job, std::time::Duration::from_secs(60))?;
    ///     consumer.ack(&job)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn extend(&self, job: &Delivery, lease: Duration) -> Result<bool, QueueError> {
        let s = self.shared();
        let (attempt, lease) = (arg(job.attempt.into()), arg(micros(lease)));
        let reply = s.client.eval(
            &s.keys,
            &client::EXTEND,
            &[job.id.as_bytes(), &attempt, &lease],
        )?;
        let kept = reply.as_int() == Some(1);
        if !kept {
            bump(&s.client.counters.lease_lost, 1);
        }
        Ok(kept)
    }

    /// Gives a delivered job back, to be delivered again after `delay`, or
    /// dead-lettered if it has had its attempts.
    ///
    /// # Errors
    ///
    /// Redis unreachable for the retry window.
    ///
    /// ```no_run
    /// # let q = tickwheel::redis::Queue::connect("127.0.0.1:6380".parse()?, "orders")?;
    /// # let consumer = q.consumer()?;
    /// for job in consumer.fetch(1, std::time::Duration::from_secs(1))? {
    ///     consumer.nack(&job, std::time::Duration::from_secs(30))?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn nack(&self, job: &Delivery, delay: Duration) -> Result<Nacked, QueueError> {
        let s = self.shared();
        let (attempt, delay, max) = (
            arg(job.attempt.into()),
            arg(micros(delay)),
            arg(s.options.max_attempts.into()),
        );
        let reply = s.client.eval(
            &s.keys,
            &client::NACK,
            &[job.id.as_bytes(), &attempt, &delay, &max],
        )?;
        let c = &s.client.counters;
        Ok(match reply.as_int() {
            Some(1) => {
                bump(&c.retried, 1);
                Nacked::Retrying
            }
            Some(2) => {
                bump(&c.dead_lettered, 1);
                Nacked::DeadLettered
            }
            _ => {
                bump(&c.lease_lost, 1);
                Nacked::LeaseLost
            }
        })
    }

    fn shared(&self) -> &Shared {
        &self.shared
    }

    fn server_now(&self) -> i64 {
        wall_micros() + self.offset.load(Ordering::Relaxed)
    }

    /// Arms the wake-up timer at server time `at`, unless it is armed
    /// earlier already.
    fn arm(&self, at: i64) {
        let mut armed = self.armed.lock();
        if let Some((handle, when)) = *armed {
            if when <= at && self.timer.is_pending(handle) {
                return;
            }
            self.timer.cancel(handle);
        }
        let wait = Duration::from_micros((at - self.server_now()).max(0) as u64);
        *armed = self
            .timer
            .schedule(wait, Wake::Due)
            .ok()
            .map(|handle| (handle, at));
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(subscriber) = self.subscriber.take() {
            let _ = subscriber.join();
        }
    }
}

fn first_score(head: &Value) -> Option<i64> {
    let Value::Array(items) = head else {
        return None;
    };
    let score = items.get(1)?.as_bulk()?;
    let score: f64 = core::str::from_utf8(score).ok()?.parse().ok()?;
    Some(score as i64)
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn wall_micros() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}
