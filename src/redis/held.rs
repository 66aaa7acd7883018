//! The jobs this process holds, as the gauge `tickwheel_queue_held_jobs`
//! (feature `metrics`; without it nothing is kept).
//!
//! A job is held from its delivery to one of this process's consumers
//! until it is acked, nacked or released (whatever the answer: a lost
//! lease is not held either), or its lease ends by the local clock (a
//! delivery dropped unsettled is in flight on the server until then, and
//! is redelivered after). Waiting and in-flight jobs share one sorted set
//! on the server, so a queue-wide in-flight count would cost a command per
//! claim and per ack; this one costs none. Summed over the processes of a
//! queue (`sum(tickwheel_queue_held_jobs)`), it is the queue's jobs in
//! flight to live consumers.
//!
//! Each handle of a queue (every `connect` and its clones' shared state)
//! adds its own count to the gauge, which the process's handles share.
//!
//! Expired leases are pruned at most every 100 ms, when the set changes
//! or a claim round or `len()` refreshes it, so the gauge can lag a lease's
//! end by that much, or, on a consumer that has stopped claiming, until
//! the next refresh.

use core::time::Duration;

#[cfg(feature = "metrics")]
use alloc::string::String;
#[cfg(feature = "metrics")]
use std::collections::HashMap;
#[cfg(feature = "metrics")]
use std::time::Instant;

#[cfg(feature = "metrics")]
use parking_lot::Mutex;

/// How often expired leases are looked for.
#[cfg(feature = "metrics")]
const PRUNE_EVERY: Duration = Duration::from_millis(100);

/// The jobs held by this process's consumers (module docs).
#[derive(Debug)]
pub(super) struct Held {
    #[cfg(feature = "metrics")]
    state: Mutex<State>,
    #[cfg(feature = "metrics")]
    gauge: ::metrics::Gauge,
}

#[cfg(feature = "metrics")]
#[derive(Debug, Default)]
struct State {
    /// Per job id: the fence of the delivery held, and its lease's end.
    leases: HashMap<String, (u64, Instant)>,
    /// When expired leases were last pruned.
    pruned: Option<Instant>,
    /// This handle's part of the gauge: every handle of a queue in the
    /// process adds its own to the one gauge, so none overwrites another.
    shown: usize,
}

impl Held {
    /// Nothing held; `gauge` shows the count (feature `metrics`).
    #[cfg(feature = "metrics")]
    pub(super) fn new(gauge: ::metrics::Gauge) -> Held {
        Held {
            state: Mutex::new(State::default()),
            gauge,
        }
    }

    #[cfg(not(feature = "metrics"))]
    pub(super) fn new() -> Held {
        Held {}
    }

    /// Delivery `fence` of job `id` was handed out with a lease of `lease`.
    pub(super) fn take(&self, _id: &str, _fence: u64, _lease: Duration) {
        #[cfg(feature = "metrics")]
        self.change(|leases, now| {
            let end = now.checked_add(_lease).unwrap_or(now);
            leases.insert(String::from(_id), (_fence, end));
        });
    }

    /// Delivery `fence` of job `id` was acked, nacked or released: no
    /// longer held (a later delivery of the job to this process is kept).
    pub(super) fn settle(&self, _id: &str, _fence: u64) {
        #[cfg(feature = "metrics")]
        self.change(|leases, _| {
            if leases.get(_id).is_some_and(|&(held, _)| held <= _fence) {
                leases.remove(_id);
            }
        });
    }

    /// Delivery `fence` of job `id` had its lease extended by `lease` from
    /// now.
    pub(super) fn extend(&self, _id: &str, _fence: u64, _lease: Duration) {
        #[cfg(feature = "metrics")]
        self.change(|leases, now| {
            if let Some(held) = leases.get_mut(_id).filter(|held| held.0 == _fence) {
                held.1 = now.checked_add(_lease).unwrap_or(now);
            }
        });
    }

    /// Drops the leases that have ended, and shows the count.
    pub(super) fn refresh(&self) {
        #[cfg(feature = "metrics")]
        self.change(|_, _| {});
    }

    #[cfg(feature = "metrics")]
    fn change(&self, f: impl FnOnce(&mut HashMap<String, (u64, Instant)>, Instant)) {
        let now = Instant::now();
        let (count, shown) = {
            let mut state = self.state.lock();
            f(&mut state.leases, now);
            if state.pruned.is_none_or(|at| now >= at + PRUNE_EVERY) {
                state.leases.retain(|_, &mut (_, end)| end > now);
                state.pruned = Some(now);
            }
            let count = state.leases.len();
            (count, core::mem::replace(&mut state.shown, count))
        };
        // Outside the lock: a recorder is user code. Changes add up in any
        // order, where a `set` from another handle would overwrite.
        self.show(count as f64 - shown as f64);
    }

    #[cfg(feature = "metrics")]
    fn show(&self, change: f64) {
        if change > 0.0 {
            self.gauge.increment(change);
        } else if change < 0.0 {
            self.gauge.decrement(-change);
        }
    }
}

#[cfg(feature = "metrics")]
impl Drop for Held {
    /// A handle that goes takes its part of the gauge with it.
    fn drop(&mut self) {
        let shown = core::mem::take(&mut self.state.get_mut().shown);
        self.show(-(shown as f64));
    }
}
