//! The counters behind [`Metrics`](super::Metrics): atomics bumped by the
//! I/O thread and the handles, read as one snapshot. With feature
//! `metrics` each one also feeds its metric (names in `crate::metrics`),
//! registered at `connect` and labelled with the queue's name; nothing in
//! this module holds a lock (the held jobs' gauge, in `held.rs`, does).

use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;

use super::held::Held;
use crate::metrics::metric;
use crate::timer::stats::LatenessCounter;

/// One count, and its metric.
#[derive(Debug)]
pub(super) struct Count {
    n: AtomicU64,
    #[cfg(feature = "metrics")]
    metric: ::metrics::Counter,
}

impl Count {
    pub(super) fn load(&self, order: Ordering) -> u64 {
        self.n.load(order)
    }
}

/// The lateness of deliveries, and its metric (in seconds).
#[derive(Debug)]
pub(super) struct Lateness {
    counter: LatenessCounter,
    #[cfg(feature = "metrics")]
    metric: ::metrics::Histogram,
}

impl Lateness {
    pub(super) fn record(&self, late: Duration) {
        self.counter.record(late);
        metric!(self.metric.record(late.as_secs_f64()));
    }

    pub(super) fn snapshot(&self) -> crate::timer::Lateness {
        self.counter.snapshot()
    }
}

/// The jobs `len()` found, as gauges (feature `metrics`): set from its
/// answer, so they cost no round trip of their own.
#[derive(Debug)]
pub(super) struct Sizes {
    #[cfg(feature = "metrics")]
    live: ::metrics::Gauge,
    #[cfg(feature = "metrics")]
    dead: ::metrics::Gauge,
}

impl Sizes {
    pub(super) fn set(&self, (_live, _dead): (u64, u64)) {
        metric!({
            self.live.set(_live as f64);
            self.dead.set(_dead as f64);
        });
    }
}

macro_rules! counters {
    ($($field:ident: $family:ident,)*) => {
        #[derive(Debug)]
        pub(super) struct Counters {
            $(pub(super) $field: Count,)*
            pub(super) lateness: Lateness,
            pub(super) sizes: Sizes,
            pub(super) held: Held,
        }

        impl Counters {
            /// The counters of queue `_name`, registering their metrics.
            pub(super) fn new(_name: &str) -> Counters {
                #[cfg(feature = "metrics")]
                let labels = crate::metrics::Labels::new("queue", _name);
                Counters {
                    $($field: Count {
                        n: AtomicU64::new(0),
                        #[cfg(feature = "metrics")]
                        metric: labels.counter(&crate::metrics::$family),
                    },)*
                    lateness: Lateness {
                        counter: LatenessCounter::default(),
                        #[cfg(feature = "metrics")]
                        metric: labels.histogram(&crate::metrics::QUEUE_LATENESS),
                    },
                    sizes: Sizes {
                        #[cfg(feature = "metrics")]
                        live: labels.gauge(&crate::metrics::QUEUE_LIVE),
                        #[cfg(feature = "metrics")]
                        dead: labels.gauge(&crate::metrics::QUEUE_DEAD),
                    },
                    #[cfg(feature = "metrics")]
                    held: Held::new(labels.gauge(&crate::metrics::QUEUE_HELD)),
                    #[cfg(not(feature = "metrics"))]
                    held: Held::new(),
                }
            }
        }
    };
}

counters! {
    scheduled: QUEUE_SCHEDULED,
    duplicates: QUEUE_DUPLICATES,
    cancelled: QUEUE_CANCELLED,
    rescheduled: QUEUE_RESCHEDULED,
    delivered: QUEUE_DELIVERED,
    redelivered: QUEUE_REDELIVERED,
    acked: QUEUE_ACKED,
    retried: QUEUE_RETRIED,
    dead_lettered: QUEUE_DEAD_LETTERED,
    discarded: QUEUE_DISCARDED,
    spread: QUEUE_SPREAD,
    lease_lost: QUEUE_LEASE_LOST,
    released: QUEUE_RELEASED,
    trimmed: QUEUE_TRIMMED,
    round_trips: QUEUE_ROUND_TRIPS,
    failures: QUEUE_FAILURES,
    dials: QUEUE_DIALS,
    polls: QUEUE_POLLS,
    claims: QUEUE_CLAIMS,
    hints: QUEUE_HINTS,
}

pub(super) fn bump(counter: &Count, by: u64) {
    if by > 0 {
        counter.n.fetch_add(by, Ordering::Relaxed);
        metric!(counter.metric.increment(by));
    }
}
