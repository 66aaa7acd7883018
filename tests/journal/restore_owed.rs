//! Fixed-rate runs owed at once (a grid that started before the timer's
//! tick 0: a restored job, or `schedule_repeating_at` in the past) across
//! a snapshot, and the catch-up cap within the threshold: each run that
//! was due is made up or reported, never dropped silently.

use core::time::Duration;

use tickwheel::persist::{MisfirePolicy, Outcome, PendingJob, Repeat, Snapshot};
use tickwheel::timer::{Clock, MissedTicks};

use crate::restore::{node, noon, MS, SEC};

/// A snapshot taken at noon of one fixed-rate job, first due at `due`.
fn repeating_job(due: std::time::SystemTime, period: Duration, value: u32) -> Snapshot<u32> {
    Snapshot {
        version: Snapshot::<u32>::VERSION,
        taken_at: noon(),
        jobs: vec![PendingJob {
            due,
            repeat: Some(Repeat {
                period,
                missed: MissedTicks::Burst,
            }),
            value,
        }],
    }
}

/// Today's bug: the snapshot dated such a job "now", so a restore made up
/// one run of eleven and moved the grid by half a period.
#[test]
fn owed_runs_and_their_grid_survive_a_snapshot() {
    let before = node(noon());
    let first = before.clock.now() - 10 * SEC - 500 * MS;
    before
        .timer
        .schedule_repeating_at(first, SEC, MissedTicks::Burst, || 5)
        .unwrap();
    let snapshot = before.timer.shutdown_snapshot();
    assert_eq!(snapshot.jobs.len(), 1);
    assert_eq!(snapshot.jobs[0].due, noon() - 10 * SEC - 500 * MS);

    let after = node(noon());
    let report = after
        .timer
        .restore(snapshot, &MisfirePolicy::default())
        .unwrap();
    assert!(matches!(report.outcomes[..], [Outcome::Scheduled(_)]));
    let fired: Vec<Duration> = after
        .run(1_600 * MS)
        .iter()
        .map(|&(at, _)| at.duration_since(noon()).unwrap())
        .collect();
    let mut want = vec![Duration::ZERO; 11];
    want.extend([500 * MS, 1_500 * MS]);
    assert_eq!(fired, want);
}

/// A restore owes a late job's runs; a snapshot taken before the driver
/// ran them hands every one of them to the next restore.
#[test]
fn runs_a_restore_owes_survive_the_next_snapshot() {
    let second = node(noon());
    second
        .timer
        .restore(
            repeating_job(noon() - 30 * SEC - 500 * MS, SEC, 7),
            &MisfirePolicy::default(),
        )
        .unwrap();
    let snapshot = second.timer.shutdown_snapshot();
    assert_eq!(snapshot.jobs[0].due, noon() - 30 * SEC - 500 * MS);
    let third = node(noon());
    third
        .timer
        .restore(snapshot, &MisfirePolicy::default())
        .unwrap();
    let fired = third.run(600 * MS);
    assert_eq!(fired.iter().filter(|&&(at, _)| at == noon()).count(), 31);
    assert_eq!(fired.last().unwrap().0, noon() + 500 * MS);
}

/// Today's bug: a job late within the threshold but more runs behind than
/// `max_catch_up` lost the rest and was reported `Scheduled`.
#[test]
fn runs_left_out_by_the_cap_are_reported_even_within_the_threshold() {
    let late = repeating_job(noon() - 30 * SEC, MS, 1);
    let after = node(noon());
    let report = after
        .timer
        .restore(late, &MisfirePolicy::default())
        .unwrap();
    assert!(
        matches!(
            report.outcomes[..],
            [Outcome::CaughtUp {
                missed: 30_001,
                made_up: 100,
                ..
            }]
        ),
        "{:?}",
        report.outcomes
    );
    let fired = after.run(Duration::ZERO);
    assert_eq!(fired.len(), 100);
    // Within the threshold and within the cap: every run, as it was.
    let few = repeating_job(noon() - 30 * SEC, SEC, 2);
    let other = node(noon());
    let report = other.timer.restore(few, &MisfirePolicy::default()).unwrap();
    assert!(matches!(report.outcomes[..], [Outcome::Scheduled(_)]));
    assert_eq!(other.run(Duration::ZERO).len(), 31);
}
