//! The connection side of the queue: a pool of RESP connections to one
//! server, retried with jittered backoff, the queue's key names, its
//! scripts, and its counters. No user code runs here.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::hash::{BuildHasher, Hasher};
use core::net::SocketAddr;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use std::collections::hash_map::RandomState;
use std::time::{Instant, SystemTime};

use parking_lot::Mutex;

use super::resp::{Connection, RespError, Script, Value};
use super::QueueError;
use crate::timer::stats::LatenessCounter;

macro_rules! script {
    ($file:literal) => {
        Script::new(concat!(
            include_str!("scripts/common.lua"),
            include_str!(concat!("scripts/", $file))
        ))
    };
}

pub(super) static SCHEDULE: Script = script!("schedule.lua");
pub(super) static CLAIM: Script = script!("claim.lua");
pub(super) static ACK: Script = script!("ack.lua");
pub(super) static NACK: Script = script!("nack.lua");
pub(super) static CANCEL: Script = script!("cancel.lua");
pub(super) static RESCHEDULE: Script = script!("reschedule.lua");
pub(super) static REQUEUE: Script = script!("requeue.lua");
pub(super) static EXTEND: Script = script!("extend.lua");

/// The queue's keys, in the order every script takes them (see
/// `scripts/common.lua`), all under one hash tag so that a Redis Cluster
/// keeps them in one slot; and its wake-up channel.
pub(super) struct Keys {
    pub(super) all: [Vec<u8>; 8],
    pub(super) channel: Vec<u8>,
}

impl Keys {
    pub(super) fn new(queue: &str) -> Keys {
        let key = |suffix: &str| format!("tw:{{{queue}}}:{suffix}").into_bytes();
        Keys {
            all: [
                key("due"),
                key("jobs"),
                key("payload"),
                key("dead"),
                key("ended"),
                key("ended_at"),
                key("seq"),
                key("spread"),
            ],
            channel: key("wake"),
        }
    }

    pub(super) fn refs(&self) -> [&[u8]; 8] {
        let mut out: [&[u8]; 8] = [&[]; 8];
        for (out, key) in out.iter_mut().zip(&self.all) {
            *out = key;
        }
        out
    }

    pub(super) fn due(&self) -> &[u8] {
        &self.all[0]
    }

    pub(super) fn jobs(&self) -> &[u8] {
        &self.all[1]
    }

    pub(super) fn payload(&self) -> &[u8] {
        &self.all[2]
    }

    pub(super) fn dead(&self) -> &[u8] {
        &self.all[3]
    }
}

/// Counters behind [`Metrics`](super::Metrics).
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) scheduled: AtomicU64,
    pub(super) duplicates: AtomicU64,
    pub(super) cancelled: AtomicU64,
    pub(super) rescheduled: AtomicU64,
    pub(super) delivered: AtomicU64,
    pub(super) redelivered: AtomicU64,
    pub(super) acked: AtomicU64,
    pub(super) retried: AtomicU64,
    pub(super) dead_lettered: AtomicU64,
    pub(super) discarded: AtomicU64,
    pub(super) spread: AtomicU64,
    pub(super) lease_lost: AtomicU64,
    pub(super) round_trips: AtomicU64,
    pub(super) failures: AtomicU64,
    pub(super) dials: AtomicU64,
    pub(super) polls: AtomicU64,
    pub(super) hints: AtomicU64,
    pub(super) lateness: LatenessCounter,
}

pub(super) fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

/// Connections to one server, shared by every thread of a queue.
pub(super) struct Client {
    pub(super) addr: SocketAddr,
    idle: Mutex<Vec<Connection>>,
    pub(super) io_timeout: Duration,
    pub(super) retry_for: Duration,
    pub(super) counters: Counters,
}

impl Client {
    pub(super) fn new(addr: SocketAddr, io_timeout: Duration, retry_for: Duration) -> Client {
        Client {
            addr,
            idle: Mutex::new(Vec::new()),
            io_timeout,
            retry_for,
            counters: Counters::default(),
        }
    }

    pub(super) fn dial(&self) -> Result<Connection, RespError> {
        bump(&self.counters.dials, 1);
        Connection::connect(self.addr, self.io_timeout)
    }

    /// Runs `op` on a pooled connection. A broken connection is dropped
    /// and the call retried, with jittered backoff, until `retry_for` has
    /// passed; so is a server that is loading its data or busy. Every
    /// operation is idempotent, so a retry after a lost reply is safe.
    pub(super) fn call<R>(
        &self,
        mut op: impl FnMut(&mut Connection) -> Result<R, RespError>,
    ) -> Result<R, QueueError> {
        let started = Instant::now();
        let mut backoff = Duration::from_millis(2);
        loop {
            let pooled = self.idle.lock().pop();
            let attempt = match pooled {
                Some(conn) => Ok(conn),
                None => self.dial(),
            };
            let last = match attempt {
                Ok(mut conn) => {
                    bump(&self.counters.round_trips, 1);
                    match op(&mut conn) {
                        Ok(value) => {
                            self.idle.lock().push(conn);
                            return Ok(value);
                        }
                        Err(RespError::Server(message)) if !transient(&message) => {
                            self.idle.lock().push(conn);
                            return Err(QueueError::Server(message));
                        }
                        Err(err) => {
                            if !err.is_fatal() {
                                self.idle.lock().push(conn);
                            }
                            err.to_string()
                        }
                    }
                }
                Err(err) => err.to_string(),
            };
            bump(&self.counters.failures, 1);
            if started.elapsed() >= self.retry_for {
                return Err(QueueError::Unavailable(last));
            }
            std::thread::sleep(jitter(backoff));
            backoff = (backoff * 2).min(Duration::from_millis(500));
        }
    }

    /// Runs a script with the queue's keys.
    pub(super) fn eval(
        &self,
        keys: &Keys,
        script: &Script,
        args: &[&[u8]],
    ) -> Result<Value, QueueError> {
        let keys = keys.refs();
        self.call(|conn| conn.eval(script, &keys, args))
    }
}

impl Client {
    /// Runs `script` once per argument list, pipelined: one write, one
    /// round trip. Reloads the script and runs them all again if the server
    /// has lost it (every script is safe to repeat).
    pub(super) fn eval_many(
        &self,
        keys: &Keys,
        script: &Script,
        arg_lists: &[Vec<Vec<u8>>],
    ) -> Result<Vec<Value>, QueueError> {
        if arg_lists.is_empty() {
            return Ok(Vec::new());
        }
        self.call(|conn| {
            for _ in 0..2 {
                let sha1 = conn.sha1_of(script)?.into_bytes();
                let cmds: Vec<Vec<Vec<u8>>> = arg_lists
                    .iter()
                    .map(|args| {
                        let mut cmd = Vec::with_capacity(3 + keys.all.len() + args.len());
                        cmd.push(b"EVALSHA".to_vec());
                        cmd.push(sha1.clone());
                        cmd.push(arg(keys.all.len() as u64));
                        cmd.extend(keys.all.iter().cloned());
                        cmd.extend(args.iter().cloned());
                        cmd
                    })
                    .collect();
                let replies = conn.pipeline(&cmds)?;
                let lost = replies
                    .iter()
                    .any(|r| matches!(r, Value::Error(e) if e.starts_with("NOSCRIPT")));
                if !lost {
                    return Ok(replies);
                }
                conn.load(script)?;
            }
            Err(RespError::Server(String::from("NOSCRIPT after a reload")))
        })
    }
}

/// Errors a server gives while it cannot serve yet, worth a retry.
fn transient(message: &str) -> bool {
    ["LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "CLUSTERDOWN"]
        .iter()
        .any(|prefix| message.starts_with(prefix))
}

/// `base` scaled by a random factor in [0.5, 1.5).
pub(super) fn jitter(base: Duration) -> Duration {
    let random = RandomState::new().build_hasher().finish();
    let factor = 0.5 + (random >> 11) as f64 / (1u64 << 53) as f64;
    base.mul_f64(factor)
}

/// Microseconds as an argument.
pub(super) fn arg(n: u64) -> Vec<u8> {
    n.to_string().into_bytes()
}

pub(super) fn int(value: &Value) -> Result<i64, RespError> {
    value
        .as_int()
        .ok_or_else(|| RespError::Protocol(String::from("expected an integer in a script reply")))
}

/// The settings shared by a queue's producers and consumers.
#[derive(Debug, Clone)]
pub(super) struct Options {
    pub(super) lease: Duration,
    pub(super) max_attempts: u32,
    pub(super) threshold: Duration,
    pub(super) on_missed: &'static str,
    pub(super) window: Duration,
    pub(super) retention: Duration,
    pub(super) batch: usize,
    pub(super) poll: Duration,
    pub(super) hints: bool,
}

/// What a queue's clones and consumers share.
pub(super) struct Shared {
    pub(super) client: Client,
    pub(super) keys: Keys,
    pub(super) options: Options,
}

pub(super) fn time_of(micros: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_micros(micros.max(0) as u64)
}
