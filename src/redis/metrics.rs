//! A snapshot of one process's counters for a queue.

use super::counters::Counters;
use crate::timer::Lateness;

/// A snapshot of one process's counters for a queue, from
/// [`Queue::metrics`](super::Queue::metrics).
///
/// ```
/// fn report(m: &tickwheel::redis::Metrics) {
///     println!("{} delivered, p99 lateness {:?}", m.delivered, m.lateness.quantile(0.99));
/// }
/// # let _ = report;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Jobs this process scheduled (new ids). This includes the runs of
    /// job schedulers that it made ahead, as a consumer process or in an
    /// upsert.
    pub scheduled: u64,
    /// Schedules refused because the id was known. This includes a job
    /// scheduler's run that another process had already made.
    pub duplicates: u64,
    /// Cancels that won. This includes the runs that this process
    /// cancelled for a job scheduler changed or removed.
    pub cancelled: u64,
    /// Reschedules that moved a job.
    pub rescheduled: u64,
    /// Deliveries, first ones and redeliveries. A claim promotes a due job
    /// and hands it to this process in one step, so this also counts
    /// promotions. It counts claims: a job claimed for a fetch that had
    /// gone is also in [`released`](Self::released), and counted here
    /// again when claimed anew, so `delivered − released` reached callers.
    pub delivered: u64,
    /// Deliveries after a job's first attempt: its lease ran out, or it
    /// was nacked (a requeue starts again at the first attempt).
    pub redelivered: u64,
    /// Acks (a repeated ack of one delivery counts once).
    pub acked: u64,
    /// Nacks that will retry.
    pub retried: u64,
    /// Jobs dead-lettered by this process's claims and nacks.
    pub dead_lettered: u64,
    /// Missed jobs discarded by the misfire policy.
    pub discarded: u64,
    /// Missed jobs spread over the window by the misfire policy.
    pub spread: u64,
    /// Acks, nacks and extends from deliveries that no longer held the job.
    pub lease_lost: u64,
    /// Jobs claimed for a fetch that had gone, handed back unspent.
    pub released: u64,
    /// Ended ids this process forgot after the retention.
    pub trimmed: u64,
    /// Requests sent to Redis (script calls, commands, pipelines).
    pub round_trips: u64,
    /// Failed attempts (each retried, until the retry window ends).
    pub failures: u64,
    /// Connections this crate dialled: the queue's at connect, a new
    /// master's after a Sentinel failover, and hint subscriptions.
    /// redis-rs's own redials of a dropped connection are not counted;
    /// [`failures`](Self::failures) counts the attempts that failed meanwhile.
    pub dials: u64,
    /// Claims run.
    pub claims: u64,
    /// Reconciliation polls.
    pub polls: u64,
    /// Wake-up hints received (and resyncs after a resubscription).
    pub hints: u64,
    /// Lateness of deliveries: the server's time at the claim minus the
    /// due time.
    pub lateness: Lateness,
}

impl Metrics {
    pub(super) fn of(c: &Counters) -> Metrics {
        use core::sync::atomic::Ordering::Relaxed;
        Metrics {
            scheduled: c.scheduled.load(Relaxed),
            duplicates: c.duplicates.load(Relaxed),
            cancelled: c.cancelled.load(Relaxed),
            rescheduled: c.rescheduled.load(Relaxed),
            delivered: c.delivered.load(Relaxed),
            redelivered: c.redelivered.load(Relaxed),
            acked: c.acked.load(Relaxed),
            retried: c.retried.load(Relaxed),
            dead_lettered: c.dead_lettered.load(Relaxed),
            discarded: c.discarded.load(Relaxed),
            spread: c.spread.load(Relaxed),
            lease_lost: c.lease_lost.load(Relaxed),
            released: c.released.load(Relaxed),
            trimmed: c.trimmed.load(Relaxed),
            round_trips: c.round_trips.load(Relaxed),
            failures: c.failures.load(Relaxed),
            dials: c.dials.load(Relaxed),
            claims: c.claims.load(Relaxed),
            polls: c.polls.load(Relaxed),
            hints: c.hints.load(Relaxed),
            lateness: c.lateness.snapshot(),
        }
    }
}
