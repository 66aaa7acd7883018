//! What the Rust peers share: calls kept in flight, due-time plans, and the
//! tally of deliveries that lateness, loss and duplication are computed
//! from.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::future::Future;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use core::time::Duration;
use std::time::SystemTime;

use crate::stats::Usage;

/// Calls kept in flight by every producer (and by the parallel cancels).
pub(crate) const IN_FLIGHT: usize = 200;
/// Consumer tasks per peer, in this one process.
pub(crate) const CONSUMERS: usize = 4;
/// The payload of every job.
pub(crate) const PAYLOAD: &[u8] = b"order";

/// Runs `call(i)` for every `i` in `0..n`, with `in_flight` calls at a
/// time: that many tasks, each taking the next index when its call ends.
/// Runs `body` as a task of the bench's runtime, as a service runs a
/// request's handler, and waits for it: the calls one at a time start on a
/// worker thread, where a runtime's own I/O answers without a hand-off.
pub(crate) async fn in_task<F, T>(body: F) -> T
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    tokio::spawn(body).await.expect("the task panicked")
}

pub(crate) async fn lanes<F, Fut>(n: usize, in_flight: usize, call: F)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let call = Arc::new(call);
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..in_flight.min(n) {
        let (call, next) = (Arc::clone(&call), Arc::clone(&next));
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                call(i).await;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("a producer task panicked");
    }
}

/// The job ids to cancel: `count` of the `n` pending, every (n / count)th
/// from `offset`, in a scrambled order.
pub(crate) fn victims(n: usize, count: usize, offset: usize) -> Vec<usize> {
    let step = (n / count).max(1);
    let mut v: Vec<usize> = (0..count).map(|k| (k * step + offset) % n).collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

/// Microseconds since the Unix epoch.
pub(crate) fn micros(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .expect("after 1970")
        .as_micros() as u64
}

/// When each job `j<i>` is due: `start + window * i / n`.
pub(crate) struct Plan {
    pub(crate) start: SystemTime,
    pub(crate) window: Duration,
    pub(crate) due: Vec<SystemTime>,
}

impl Plan {
    /// `n` jobs due uniformly over `window`, the first `lead` from now.
    pub(crate) fn new(n: usize, window: Duration, lead: Duration) -> Plan {
        let start = SystemTime::now() + lead;
        let due = (0..n)
            .map(|i| start + window.mul_f64(i as f64 / n as f64))
            .collect();
        Plan { start, window, due }
    }

    pub(crate) fn jobs(&self) -> usize {
        self.due.len()
    }
}

/// Every delivery a run's consumers saw, by job index: how many times, and
/// when the first came (this machine's clock, µs since the epoch).
pub(crate) struct Tally {
    count: Vec<AtomicU32>,
    first: Vec<AtomicU64>,
    distinct: AtomicUsize,
}

impl Tally {
    pub(crate) fn new(n: usize) -> Tally {
        Tally {
            count: (0..n).map(|_| AtomicU32::new(0)).collect(),
            first: (0..n).map(|_| AtomicU64::new(0)).collect(),
            distinct: AtomicUsize::new(0),
        }
    }

    /// Records a delivery of `id` (`j<i>`) at `at` µs.
    pub(crate) fn record(&self, id: &str, at: u64) {
        let i: usize = id
            .strip_prefix('j')
            .and_then(|i| i.parse().ok())
            .filter(|&i| i < self.count.len())
            .unwrap_or_else(|| panic!("a delivery of an id never scheduled: {id:?}"));
        if self.count[i].fetch_add(1, Ordering::AcqRel) == 0 {
            self.first[i].store(at, Ordering::Relaxed);
            self.distinct.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Distinct jobs delivered so far.
    pub(crate) fn distinct(&self) -> usize {
        self.distinct.load(Ordering::Acquire)
    }

    /// Lateness of each first delivery against the plan, and the counts.
    pub(crate) fn summary(&self, plan: &Plan) -> Summary {
        let mut s = Summary {
            jobs: plan.jobs(),
            ..Summary::default()
        };
        for (i, due) in plan.due.iter().enumerate() {
            let count = self.count[i].load(Ordering::Acquire);
            if count == 0 {
                s.lost += 1;
                continue;
            }
            s.duplicated += count as usize - 1;
            let at = self.first[i].load(Ordering::Relaxed);
            let late = at as i64 - micros(*due) as i64;
            s.early += usize::from(late < 0);
            s.late_us.push(late);
            s.last = s.last.max(at);
        }
        s.late_us.sort_unstable();
        s
    }
}

/// What a lateness or burst run saw.
#[derive(Default)]
pub(crate) struct Summary {
    pub(crate) jobs: usize,
    /// Lateness of each job's first delivery, µs, sorted (negative: early).
    pub(crate) late_us: Vec<i64>,
    pub(crate) early: usize,
    pub(crate) lost: usize,
    pub(crate) duplicated: usize,
    /// The last first delivery, µs since the epoch.
    pub(crate) last: u64,
}

impl Summary {
    /// The nearest-rank `q` quantile of lateness, in ms.
    pub(crate) fn quantile_ms(&self, q: f64) -> f64 {
        if self.late_us.is_empty() {
            return f64::NAN;
        }
        let n = self.late_us.len();
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
        self.late_us[rank - 1] as f64 / 1000.0
    }

    /// Burst figures: jobs delivered per second from the first due time to
    /// the last delivery, and how long after the due window ended the last
    /// delivery came (ms).
    pub(crate) fn burst(&self, plan: &Plan) -> (f64, f64) {
        let start = micros(plan.start);
        let span = self.last.saturating_sub(start) as f64 / 1e6;
        let end = start + plan.window.as_micros() as u64;
        let after = (self.last as f64 - end as f64) / 1000.0;
        (self.late_us.len() as f64 / span, after)
    }
}

/// A lateness or burst run of one peer.
pub(crate) struct Run {
    pub(crate) summary: Summary,
    /// From before the peer connected to after its consumers stopped.
    pub(crate) usage: Usage,
    /// Redis commands by name over the same span (`INFO commandstats`).
    pub(crate) calls: BTreeMap<String, u64>,
    /// How long scheduling took, and the lead it had before the first due
    /// time, in seconds.
    pub(crate) scheduled_in: f64,
    pub(crate) lead: f64,
    /// Burst figures ([`Summary::burst`]).
    pub(crate) burst: (f64, f64),
    /// What the peer says of itself (tickwheel: `Queue::metrics`).
    pub(crate) note: Option<String>,
}

/// A blocking call (the harness's own `INFO`s) inside the runtime.
pub(crate) fn blocking<R>(f: impl FnOnce() -> R) -> R {
    tokio::task::block_in_place(f)
}

/// Waits until every job of `plan` was delivered, or a minute after the
/// last was due; then half a second more, to catch duplicates that follow.
pub(crate) async fn until_delivered(tally: &Tally, plan: &Plan) {
    let give_up = plan.start + plan.window + Duration::from_secs(60);
    while tally.distinct() < plan.jobs() && SystemTime::now() < give_up {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
}
