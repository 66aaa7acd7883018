//! A journal's metric handles (feature `metrics`; the names and what each
//! counts are in `crate::metrics`), registered when it is opened and
//! labelled with its path. Updated only where no lock of the journal or
//! of its timer is held.

use ::metrics::{Counter, Gauge};

use super::Outcome;
use crate::metrics::{
    Labels, JOURNAL_CANCELLED, JOURNAL_COMPACTIONS, JOURNAL_COMPACTION_FAILURES, JOURNAL_DAMAGED,
    JOURNAL_DAMAGED_BYTES, JOURNAL_FIRED, JOURNAL_LATENESS, JOURNAL_MISFIRES, JOURNAL_RESCHEDULED,
    JOURNAL_RESTORED, JOURNAL_SCHEDULED, JOURNAL_SIZE, JOURNAL_UNDECODABLE, JOURNAL_WRITE_ERRORS,
};
use crate::timer::stats::TimerMetrics;

pub(super) struct JournalMetrics {
    labels: Labels,
    pub(super) scheduled: Counter,
    pub(super) cancelled: Counter,
    pub(super) rescheduled: Counter,
    pub(super) restored: Counter,
    pub(super) damaged: Counter,
    pub(super) damaged_bytes: Counter,
    pub(super) undecodable: Counter,
    pub(super) write_errors: Counter,
    pub(super) compactions: Counter,
    pub(super) compaction_failures: Counter,
    pub(super) size: Gauge,
}

impl JournalMetrics {
    /// The journal's metrics, labelled `journal = name`.
    pub(super) fn register(name: &str) -> JournalMetrics {
        let labels = Labels::new("journal", name);
        JournalMetrics {
            scheduled: labels.counter(&JOURNAL_SCHEDULED),
            cancelled: labels.counter(&JOURNAL_CANCELLED),
            rescheduled: labels.counter(&JOURNAL_RESCHEDULED),
            restored: labels.counter(&JOURNAL_RESTORED),
            damaged: labels.counter(&JOURNAL_DAMAGED),
            damaged_bytes: labels.counter(&JOURNAL_DAMAGED_BYTES),
            undecodable: labels.counter(&JOURNAL_UNDECODABLE),
            write_errors: labels.counter(&JOURNAL_WRITE_ERRORS),
            compactions: labels.counter(&JOURNAL_COMPACTIONS),
            compaction_failures: labels.counter(&JOURNAL_COMPACTION_FAILURES),
            size: labels.gauge(&JOURNAL_SIZE),
            labels,
        }
    }

    /// What the journal's timer publishes: its runs and their lateness,
    /// under the journal's names; nothing else (the journal counts its
    /// own schedules and cancels, which the timer's would mix with the
    /// jobs restored at open).
    pub(super) fn timer(&self) -> TimerMetrics {
        TimerMetrics {
            fired: self.labels.counter(&JOURNAL_FIRED),
            lateness: self.labels.histogram(&JOURNAL_LATENESS),
            ..TimerMetrics::default()
        }
    }

    /// Counts what `open` did with the jobs it found pending: those
    /// restored, and those missed, by what the misfire policy did.
    pub(super) fn restored<'a>(&self, outcomes: impl IntoIterator<Item = &'a Outcome>) {
        const OUTCOMES: [&str; 6] = [
            "fired_now",
            "spread",
            "rescheduled",
            "discarded",
            "dead_lettered",
            "caught_up",
        ];
        let mut restored = 0;
        let mut missed = [0u64; OUTCOMES.len()];
        for outcome in outcomes {
            restored += u64::from(outcome.handle().is_some());
            let which = match outcome {
                Outcome::Scheduled(_) => continue,
                Outcome::FiredNow(_) => 0,
                Outcome::Spread(..) => 1,
                Outcome::Rescheduled(..) => 2,
                Outcome::Discarded => 3,
                Outcome::DeadLettered => 4,
                Outcome::CaughtUp { .. } => 5,
            };
            missed[which] += 1;
        }
        self.restored.increment(restored);
        for (outcome, n) in OUTCOMES.into_iter().zip(missed) {
            // Registered here, once an outcome has happened.
            if n > 0 {
                self.labels
                    .and("outcome", outcome)
                    .counter(&JOURNAL_MISFIRES)
                    .increment(n);
            }
        }
    }
}
