//! Metrics through the [`metrics`](https://docs.rs/metrics/0.24) facade
//! (feature `metrics`): counters, histograms and two gauges that any
//! `metrics` exporter publishes (Prometheus, StatsD, OpenTelemetry, …).
//!
//! Install a recorder (an exporter's) **before** building a `Timer`,
//! opening a `DurableTimer` or connecting a `Queue`: each registers its
//! metrics once, with the recorder in force at that moment (the global
//! one, or a local one set with `metrics::with_local_recorder`), and
//! updates those handles from then on, from any thread. A timer built
//! with no recorder installed publishes nothing, at the cost of a
//! branch per update.
//!
//! ```
//! use metrics_util::debugging::{DebugValue, DebuggingRecorder};
//! use std::time::Duration;
//!
//! let recorder = DebuggingRecorder::new();
//! let snapshot = recorder.snapshotter();
//! let timer = metrics::with_local_recorder(&recorder, || {
//!     tickwheel::Timer::builder().thread_name("timeouts").build()
//! })?;
//! let job = timer.run_after(Duration::from_secs(60), || ())?;
//! timer.cancel(job);
//! let cancelled = snapshot.snapshot().into_vec().into_iter().find_map(|(key, _, _, value)| {
//!     let key = key.key();
//!     let named = key.name() == "tickwheel_timer_cancelled_total"
//!         && key.labels().any(|l| l.key() == "timer" && l.value() == "timeouts");
//!     match value {
//!         DebugValue::Counter(n) if named => Some(n),
//!         _ => None,
//!     }
//! });
//! assert_eq!(cancelled, Some(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Names start with `tickwheel_`; counters end in `_total`, durations are
//! in seconds (`_seconds`, an `f64` with the recorder's resolution, finer
//! than [`Lateness`](crate::timer::Lateness)'s doubling buckets), sizes
//! in bytes (`_bytes`). Each metric carries one label naming what it
//! counts for, and misfires one more (`outcome`).
//!
//! # `Timer`
//!
//! Label `timer`: the driver thread's name
//! ([`Builder::thread_name`](crate::timer::Builder::thread_name), by
//! default `tickwheel-driver`; give timers distinct names to tell them
//! apart). The counters are those of [`Stats`](crate::timer::Stats); the
//! timers inside a `DurableTimer` and a Redis consumer publish none of
//! these (the journal has its own, below).
//!
//! | name | kind | what |
//! |------|------|------|
//! | `tickwheel_timer_scheduled_total` | counter | timers accepted (`Stats::scheduled`; a repeating timer once, async sleeps included) |
//! | `tickwheel_timer_fired_total` | counter | runs handed to the executor, and sleeps woken (`Stats::fired`) |
//! | `tickwheel_timer_cancelled_total` | counter | timers removed by a cancel, and sleeps dropped before their deadline (`Stats::cancelled`) |
//! | `tickwheel_timer_rejected_total` | counter | runs the executor refused (`Stats::rejected`) |
//! | `tickwheel_timer_dropped_total` | counter | values dropped because nobody could take them (`Stats::dropped`) |
//! | `tickwheel_timer_panicked_total` | counter | panics of tasks, value factories, executors and hooks (`Stats::panicked`); a thread pool's task panics are added at the driver's next wake-up |
//! | `tickwheel_timer_in_window_total` | counter | runs handed over inside `[deadline, deadline + slack]` (`Stats::in_window`) |
//! | `tickwheel_timer_overshoot_total` | counter | runs handed over after their window closed (`Stats::overshoot.count()`) |
//! | `tickwheel_timer_early_total` | counter | runs handed over before their deadline by the timer's clock: none unless the clock went back (`Stats::early`) |
//! | `tickwheel_timer_wakeups_total` | counter | the driver's passes over the wheels (`Stats::wakeups`) |
//! | `tickwheel_timer_lateness_seconds` | histogram | per run: hand-off time − deadline (rounded up to the tick) |
//!
//! No gauge: the pending count lives in per-shard counters, and a gauge
//! kept current would add a shared write to every schedule and cancel
//! (or go stale while the driver sleeps). Read
//! [`Timer::pending`](crate::Timer::pending) when you export, and set a
//! gauge of your own.
//!
//! # `persist::DurableTimer`
//!
//! Label `journal`: the journal's path as given to `open`.
//!
//! | name | kind | what |
//! |------|------|------|
//! | `tickwheel_journal_scheduled_total` | counter | jobs scheduled (`schedule`, `schedule_keyed`) |
//! | `tickwheel_journal_cancelled_total` | counter | cancels that won (`cancel`, `cancel_key`) |
//! | `tickwheel_journal_rescheduled_total` | counter | resets that moved a job (`reset`, `reset_key`) |
//! | `tickwheel_journal_fired_total` | counter | jobs handed to the handler |
//! | `tickwheel_journal_lateness_seconds` | histogram | per job run: hand-off time − due time (rounded up to the tick) |
//! | `tickwheel_journal_restored_total` | counter | jobs found pending at `open` and scheduled again (missed ones included) |
//! | `tickwheel_journal_misfires_total` | counter | jobs found missed at `open`, with label `outcome`: `fired_now`, `spread`, `rescheduled`, `discarded`, `dead_lettered` (the [`MisfirePolicy`](crate::persist::MisfirePolicy)'s doing) |
//! | `tickwheel_journal_damaged_total` | counter | damaged or torn stretches skipped at `open` ([`Recovery::damage`](crate::persist::Recovery::damage)) |
//! | `tickwheel_journal_damaged_bytes_total` | counter | their bytes |
//! | `tickwheel_journal_undecodable_total` | counter | payloads that no longer decoded at `open` (written off) |
//! | `tickwheel_journal_write_errors_total` | counter | records that could not be written or synced where no caller could be told (`DurableTimer::write_errors`) |
//! | `tickwheel_journal_compactions_total` | counter | compactions, the one at `open` included |
//! | `tickwheel_journal_compaction_failures_total` | counter | compactions that failed at run time (`DurableTimer::compaction_failures`) |
//! | `tickwheel_journal_size_bytes` | gauge | the file's size after its last append or compaction |
//!
//! # `redis::Queue` and its consumers
//!
//! Label `queue`: the queue's name, as given to the builder. One
//! process's view, as [`Queue::metrics`](crate::redis::Queue::metrics)
//! (feature `redis`): each process publishes what it did.
//!
//! | name | kind | what |
//! |------|------|------|
//! | `tickwheel_queue_scheduled_total` | counter | jobs scheduled (new ids) |
//! | `tickwheel_queue_duplicates_total` | counter | schedules refused because the id was known |
//! | `tickwheel_queue_cancelled_total` | counter | cancels that won |
//! | `tickwheel_queue_rescheduled_total` | counter | reschedules that moved a job |
//! | `tickwheel_queue_delivered_total` | counter | deliveries (claims), redeliveries included |
//! | `tickwheel_queue_redelivered_total` | counter | deliveries after a job's first attempt (its lease ran out, or it was nacked) |
//! | `tickwheel_queue_acked_total` | counter | acks (a repeated ack of one delivery once) |
//! | `tickwheel_queue_retried_total` | counter | nacks that will retry |
//! | `tickwheel_queue_dead_lettered_total` | counter | jobs dead-lettered by this process's claims and nacks |
//! | `tickwheel_queue_misfire_discarded_total` | counter | missed jobs discarded by the misfire policy |
//! | `tickwheel_queue_misfire_spread_total` | counter | missed jobs spread over the window by the misfire policy |
//! | `tickwheel_queue_lease_lost_total` | counter | acks, nacks and extends from deliveries that no longer held the job |
//! | `tickwheel_queue_released_total` | counter | claimed jobs handed back unspent (their fetch had gone) |
//! | `tickwheel_queue_trimmed_total` | counter | ended ids forgotten after the retention |
//! | `tickwheel_queue_round_trips_total` | counter | requests sent to Redis |
//! | `tickwheel_queue_failures_total` | counter | failed attempts (each retried until the retry window ends) |
//! | `tickwheel_queue_dials_total` | counter | connections dialled |
//! | `tickwheel_queue_claims_total` | counter | claims run |
//! | `tickwheel_queue_polls_total` | counter | reconciliation polls |
//! | `tickwheel_queue_hints_total` | counter | wake-up hints received |
//! | `tickwheel_queue_lateness_seconds` | histogram | per delivery: the server's time at the claim − the due time |
//! | `tickwheel_queue_live_jobs` | gauge | jobs waiting or in flight, as the last `len()` of this process found |
//! | `tickwheel_queue_dead_jobs` | gauge | dead letters, as the last `len()` of this process found |
//! | `tickwheel_queue_held_jobs` | gauge | jobs this process's consumers hold: delivered, not yet acked, nacked or released, lease not over |
//!
//! The live and dead gauges cost no round trip of their own: they are set
//! from the answer of [`Queue::len`](crate::redis::Queue::len) (one
//! pipeline of two `ZCARD`s), so they are as fresh as the last call; call
//! it as often as you want them fresh (on each scrape, say). Waiting and
//! in flight are one sorted set on the server, so a queue-wide in-flight
//! count would cost a command per claim and per ack; instead each process
//! counts the jobs its consumers hold, at no round trip: summed over the
//! processes (`sum(tickwheel_queue_held_jobs)` in PromQL) it is the jobs
//! in flight to live consumers, and live minus that sum is about the jobs
//! waiting. A delivery dropped without an ack stays held until its lease
//! ends (as on the server); expired leases leave the count within 100 ms
//! of a claim round, an ack or a `len()`.
//!
//! # What it costs
//!
//! Each update is a call on a handle registered once, after every
//! internal lock is released, and no update makes a Redis round trip or
//! a system call of its own. A handle from no recorder is a no-op.
//! Without the feature nothing is compiled in.

/// Runs its statements with feature `metrics` only: they update handles
/// that exist only then. Without the feature they are not compiled, so
/// they cost nothing.
macro_rules! metric {
    ($($body:tt)*) => {{
        #[cfg(feature = "metrics")]
        {
            $($body)*
        }
    }};
}
pub(crate) use metric;

#[cfg(feature = "metrics")]
pub(crate) use registry::*;

/// The families (name, kind, unit, help) and their registration: the one
/// place that knows the names the docs above list.
#[cfg(feature = "metrics")]
mod registry {
    use alloc::vec::Vec;

    use ::metrics::{Counter, Gauge, Histogram, Key, KeyName, Label, Level, Metadata};
    use ::metrics::{SharedString, Unit};

    /// A metric's kind.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Kind {
        Counter,
        Gauge,
        Histogram,
    }

    /// One metric: its name, kind, unit and the help text exporters show.
    #[derive(Debug)]
    pub(crate) struct Family {
        pub(crate) name: &'static str,
        pub(crate) kind: Kind,
        unit: Unit,
        help: &'static str,
    }

    macro_rules! families {
        ($($(#[$attr:meta])* $ident:ident: $kind:ident, $unit:ident, $name:literal, $help:literal;)*) => {
            $(
                $(#[$attr])*
                pub(crate) const $ident: Family = Family {
                    name: $name,
                    kind: Kind::$kind,
                    unit: Unit::$unit,
                    help: $help,
                };
            )*
            /// Every family, for the test that holds the docs to them.
            #[cfg(test)]
            pub(crate) const ALL: &[Family] = &[$($ident),*];
        };
    }

    families! {
        TIMER_SCHEDULED: Counter, Count, "tickwheel_timer_scheduled_total", "Timers accepted.";
        TIMER_FIRED: Counter, Count, "tickwheel_timer_fired_total", "Runs handed to the executor, and sleeps woken.";
        TIMER_CANCELLED: Counter, Count, "tickwheel_timer_cancelled_total", "Timers cancelled.";
        TIMER_REJECTED: Counter, Count, "tickwheel_timer_rejected_total", "Runs the executor refused.";
        TIMER_DROPPED: Counter, Count, "tickwheel_timer_dropped_total", "Values dropped because nobody could take them.";
        TIMER_PANICKED: Counter, Count, "tickwheel_timer_panicked_total", "Panics of tasks, value factories, executors and hooks.";
        TIMER_IN_WINDOW: Counter, Count, "tickwheel_timer_in_window_total", "Runs handed over inside their window.";
        TIMER_OVERSHOOT: Counter, Count, "tickwheel_timer_overshoot_total", "Runs handed over after their window closed.";
        TIMER_EARLY: Counter, Count, "tickwheel_timer_early_total", "Runs handed over before their deadline (a clock that went back).";
        TIMER_WAKEUPS: Counter, Count, "tickwheel_timer_wakeups_total", "Driver passes over the wheels.";
        TIMER_LATENESS: Histogram, Seconds, "tickwheel_timer_lateness_seconds", "Hand-off time minus deadline, per run.";

        JOURNAL_SCHEDULED: Counter, Count, "tickwheel_journal_scheduled_total", "Jobs scheduled.";
        JOURNAL_CANCELLED: Counter, Count, "tickwheel_journal_cancelled_total", "Cancels that won.";
        JOURNAL_RESCHEDULED: Counter, Count, "tickwheel_journal_rescheduled_total", "Resets that moved a job.";
        JOURNAL_FIRED: Counter, Count, "tickwheel_journal_fired_total", "Jobs handed to the handler.";
        JOURNAL_LATENESS: Histogram, Seconds, "tickwheel_journal_lateness_seconds", "Hand-off time minus due time, per job run.";
        JOURNAL_RESTORED: Counter, Count, "tickwheel_journal_restored_total", "Jobs found pending at open and scheduled again.";
        JOURNAL_MISFIRES: Counter, Count, "tickwheel_journal_misfires_total", "Jobs found missed at open, by what the misfire policy did.";
        JOURNAL_DAMAGED: Counter, Count, "tickwheel_journal_damaged_total", "Damaged stretches skipped at open.";
        JOURNAL_DAMAGED_BYTES: Counter, Bytes, "tickwheel_journal_damaged_bytes_total", "Bytes of damaged stretches skipped at open.";
        JOURNAL_UNDECODABLE: Counter, Count, "tickwheel_journal_undecodable_total", "Payloads that no longer decoded at open.";
        JOURNAL_WRITE_ERRORS: Counter, Count, "tickwheel_journal_write_errors_total", "Records that could not be written or synced.";
        JOURNAL_COMPACTIONS: Counter, Count, "tickwheel_journal_compactions_total", "Compactions, the one at open included.";
        JOURNAL_COMPACTION_FAILURES: Counter, Count, "tickwheel_journal_compaction_failures_total", "Compactions that failed at run time.";
        JOURNAL_SIZE: Gauge, Bytes, "tickwheel_journal_size_bytes", "The journal file's size.";

        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_SCHEDULED: Counter, Count, "tickwheel_queue_scheduled_total", "Jobs scheduled (new ids).";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_DUPLICATES: Counter, Count, "tickwheel_queue_duplicates_total", "Schedules refused because the id was known.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_CANCELLED: Counter, Count, "tickwheel_queue_cancelled_total", "Cancels that won.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_RESCHEDULED: Counter, Count, "tickwheel_queue_rescheduled_total", "Reschedules that moved a job.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_DELIVERED: Counter, Count, "tickwheel_queue_delivered_total", "Deliveries, redeliveries included.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_REDELIVERED: Counter, Count, "tickwheel_queue_redelivered_total", "Deliveries after a job's first attempt (a lease ran out, or a nack).";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_ACKED: Counter, Count, "tickwheel_queue_acked_total", "Acks.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_RETRIED: Counter, Count, "tickwheel_queue_retried_total", "Nacks that will retry.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_DEAD_LETTERED: Counter, Count, "tickwheel_queue_dead_lettered_total", "Jobs dead-lettered.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_DISCARDED: Counter, Count, "tickwheel_queue_misfire_discarded_total", "Missed jobs discarded by the misfire policy.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_SPREAD: Counter, Count, "tickwheel_queue_misfire_spread_total", "Missed jobs spread by the misfire policy.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_LEASE_LOST: Counter, Count, "tickwheel_queue_lease_lost_total", "Acks, nacks and extends from deliveries that no longer held the job.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_RELEASED: Counter, Count, "tickwheel_queue_released_total", "Claimed jobs handed back unspent.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_TRIMMED: Counter, Count, "tickwheel_queue_trimmed_total", "Ended ids forgotten after the retention.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_ROUND_TRIPS: Counter, Count, "tickwheel_queue_round_trips_total", "Requests sent to Redis.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_FAILURES: Counter, Count, "tickwheel_queue_failures_total", "Failed attempts.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_DIALS: Counter, Count, "tickwheel_queue_dials_total", "Connections dialled.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_CLAIMS: Counter, Count, "tickwheel_queue_claims_total", "Claims run.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_POLLS: Counter, Count, "tickwheel_queue_polls_total", "Reconciliation polls.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_HINTS: Counter, Count, "tickwheel_queue_hints_total", "Wake-up hints received.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_LATENESS: Histogram, Seconds, "tickwheel_queue_lateness_seconds", "Server time at the claim minus due time, per delivery.";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_LIVE: Gauge, Count, "tickwheel_queue_live_jobs", "Jobs waiting or in flight, at the last len().";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_DEAD: Gauge, Count, "tickwheel_queue_dead_jobs", "Dead letters, at the last len().";
        #[cfg_attr(not(feature = "redis"), allow(dead_code))]
        QUEUE_HELD: Gauge, Count, "tickwheel_queue_held_jobs", "Jobs this process's consumers hold: delivered, not yet settled, lease not over.";
    }

    static METADATA: Metadata<'static> =
        Metadata::new("tickwheel", Level::INFO, Some(module_path!()));

    /// The labels that name one timer, journal or queue, to register its
    /// metrics under.
    #[derive(Debug, Clone)]
    pub(crate) struct Labels(Vec<Label>);

    impl Labels {
        /// One label, `key = value`.
        pub(crate) fn new(key: &'static str, value: &str) -> Labels {
            Labels(alloc::vec![Label::new(
                key,
                alloc::string::String::from(value)
            )])
        }

        /// These labels and `key = value`.
        pub(crate) fn and(&self, key: &'static str, value: &'static str) -> Labels {
            let mut labels = self.0.clone();
            labels.push(Label::from_static_parts(key, value));
            Labels(labels)
        }

        fn key(&self, family: &Family, kind: Kind) -> Key {
            debug_assert_eq!(family.kind, kind, "{} is a {:?}", family.name, family.kind);
            Key::from_parts(family.name, self.0.clone())
        }

        /// Describes and registers a counter with the current recorder.
        pub(crate) fn counter(&self, family: &Family) -> Counter {
            let key = self.key(family, Kind::Counter);
            ::metrics::with_recorder(|r| {
                r.describe_counter(name(family), Some(family.unit), help(family));
                r.register_counter(&key, &METADATA)
            })
        }

        /// Describes and registers a gauge with the current recorder.
        pub(crate) fn gauge(&self, family: &Family) -> Gauge {
            let key = self.key(family, Kind::Gauge);
            ::metrics::with_recorder(|r| {
                r.describe_gauge(name(family), Some(family.unit), help(family));
                r.register_gauge(&key, &METADATA)
            })
        }

        /// Describes and registers a histogram with the current recorder.
        pub(crate) fn histogram(&self, family: &Family) -> Histogram {
            let key = self.key(family, Kind::Histogram);
            ::metrics::with_recorder(|r| {
                r.describe_histogram(name(family), Some(family.unit), help(family));
                r.register_histogram(&key, &METADATA)
            })
        }
    }

    fn name(family: &Family) -> KeyName {
        KeyName::from_const_str(family.name)
    }

    fn help(family: &Family) -> SharedString {
        SharedString::const_str(family.help)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// The module docs list every family, with its kind, and nothing
        /// else; names follow the rules the docs state.
        #[test]
        fn the_docs_list_every_metric_with_its_kind() {
            let docs = include_str!("metrics.rs");
            let rows: Vec<(&str, &str)> = docs
                .lines()
                .filter_map(|line| line.strip_prefix("//! | `tickwheel_"))
                .map(|row| {
                    let mut cells = row.split(" | ");
                    let name = cells.next().unwrap().trim_end_matches('`');
                    (name, cells.next().unwrap())
                })
                .collect();
            assert_eq!(rows.len(), ALL.len(), "{rows:?}");
            for family in ALL {
                let short = family.name.strip_prefix("tickwheel_").unwrap();
                let kind = match family.kind {
                    Kind::Counter => "counter",
                    Kind::Gauge => "gauge",
                    Kind::Histogram => "histogram",
                };
                assert!(
                    rows.contains(&(short, kind)),
                    "{} undocumented",
                    family.name
                );
                assert!(family
                    .name
                    .bytes()
                    .all(|b| b == b'_' || b.is_ascii_lowercase()));
                match family.kind {
                    Kind::Counter => assert!(family.name.ends_with("_total"), "{}", family.name),
                    _ => assert!(!family.name.ends_with("_total"), "{}", family.name),
                }
                match family.unit {
                    Unit::Seconds => assert!(family.name.ends_with("_seconds")),
                    Unit::Bytes => assert!(family.name.contains("_bytes")),
                    _ => assert!(
                        !family.name.contains("_seconds") && !family.name.contains("_bytes")
                    ),
                }
            }
        }
    }
}
