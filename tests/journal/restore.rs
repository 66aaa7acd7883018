//! Snapshots and restore (`src/persist/`): on manual clocks whose wall time
//! is set, so a "restart" is a new timer on a clock that is later by the
//! downtime. What fires is compared by wall time. The properties over random
//! jobs and downtimes are in `restore_props.rs`.

use core::time::Duration;
use std::time::SystemTime;

use crossbeam_channel::{Receiver, Sender};
use tickwheel::persist::{
    MisfirePolicy, OnMissed, Outcome, PendingJob, Repeat, RestoreFailure, Snapshot,
};
use tickwheel::timer::{Clock, Expired, ManualClock, MissedTicks};
use tickwheel::Timer;

pub(crate) const MS: Duration = Duration::from_millis(1);
pub(crate) const SEC: Duration = Duration::from_secs(1);

/// A timer on a manual clock standing at wall time `wall`, reporting each
/// fired value with the wall time it fired at.
pub(crate) struct Node {
    pub(crate) clock: ManualClock,
    pub(crate) timer: Timer<u32, FiredAt>,
    pub(crate) fired: Receiver<(SystemTime, u32)>,
}

pub(crate) struct FiredAt {
    clock: ManualClock,
    out: Sender<(SystemTime, u32)>,
}

impl tickwheel::timer::Executor<u32> for FiredAt {
    fn execute(&self, fired: Expired<u32>) -> Result<(), tickwheel::timer::Rejected<u32>> {
        self.out.send((self.clock.wall_now(), fired.value)).unwrap();
        Ok(())
    }
}

pub(crate) fn node(wall: SystemTime) -> Node {
    let clock = ManualClock::with_wall_time(wall);
    let (out, fired) = crossbeam_channel::unbounded();
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .executor(FiredAt {
            clock: clock.clone(),
            out,
        })
        .build()
        .unwrap();
    Node {
        clock,
        timer,
        fired,
    }
}

impl Node {
    /// Fires what is due now, then moves the clock `by` in 1 ms steps;
    /// returns what fired.
    pub(crate) fn run(&self, by: Duration) -> Vec<(SystemTime, u32)> {
        self.timer.sync();
        let steps = by.as_millis() as u64;
        for _ in 0..steps {
            self.clock.advance(MS);
            self.timer.sync();
        }
        self.fired.try_iter().collect()
    }
}

pub(crate) fn noon() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

/// With no downtime, a restored timer fires exactly what the original
/// would have, at the same wall times: one-shots and a fixed-rate job.
#[test]
fn a_restore_without_downtime_behaves_like_the_original() {
    let original = node(noon());
    original.timer.schedule(5 * MS, 1).unwrap();
    original.timer.schedule(40 * MS, 2).unwrap();
    let cancelled = original.timer.schedule(20 * MS, 3).unwrap();
    original.timer.cancel(cancelled);
    original
        .timer
        .schedule_repeating(3 * MS, 10 * MS, MissedTicks::Skip, || 9)
        .unwrap();
    let early = original.run(4 * MS);
    let snapshot = original.timer.snapshot();
    assert_eq!(snapshot.jobs.len(), 3);
    let restored = node(snapshot.taken_at);
    let report = restored
        .timer
        .restore(snapshot, &MisfirePolicy::default())
        .unwrap();
    assert!(report
        .outcomes
        .iter()
        .all(|o| matches!(o, Outcome::Scheduled(_))));
    let want = original.run(60 * MS);
    let got = restored.run(60 * MS);
    assert_eq!(early, [(noon() + 3 * MS, 9)]);
    assert_eq!(got, want);
    assert_eq!(
        want.iter().map(|&(_, v)| v).collect::<Vec<_>>(),
        [1, 9, 9, 9, 2, 9, 9, 9]
    );
}

/// Outcomes, what fired (wall time, value), dead letters, restart time.
type Outage = (Vec<Outcome>, Vec<(SystemTime, u32)>, Vec<u32>, SystemTime);

/// A snapshot of jobs due during a 10-minute outage, restored under each
/// policy for missed one-shots.
fn outage(policy: MisfirePolicy<u32>) -> Outage {
    let before = node(noon());
    for (value, due) in [(1, 10 * SEC), (2, 20 * SEC), (3, 30 * SEC)] {
        before.timer.schedule(due, value).unwrap();
    }
    // Due 30 s after the restart: not missed.
    before.timer.schedule(630 * SEC, 4).unwrap();
    let snapshot = before.timer.shutdown_snapshot();
    let restart = noon() + 600 * SEC;
    let after = node(restart);
    let report = after.timer.restore(snapshot, &policy).unwrap();
    let fired = after.run(Duration::from_secs(0) + 100 * MS);
    let dead: Vec<u32> = report.dead_letters.iter().map(|j| j.value).collect();
    (report.outcomes, fired, dead, restart)
}

#[test]
fn missed_one_shots_fire_now() {
    let (outcomes, fired, dead, restart) = outage(MisfirePolicy::default());
    assert!(matches!(
        outcomes[..],
        [
            Outcome::FiredNow(_),
            Outcome::FiredNow(_),
            Outcome::FiredNow(_),
            Outcome::Scheduled(_)
        ]
    ));
    // At once, in due order.
    assert_eq!(fired, [(restart, 1), (restart, 2), (restart, 3)]);
    assert!(dead.is_empty());
}

#[test]
fn missed_one_shots_spread_over_the_window_in_due_order() {
    let policy = MisfirePolicy::default().on_missed(OnMissed::Spread(30 * MS));
    let (outcomes, fired, _, restart) = outage(policy);
    let slots: Vec<SystemTime> = outcomes[..3]
        .iter()
        .map(|o| match o {
            Outcome::Spread(_, at) => *at,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(slots, [restart, restart + 10 * MS, restart + 20 * MS]);
    let values: Vec<u32> = fired.iter().map(|&(_, v)| v).collect();
    assert_eq!(values, [1, 2, 3]);
    for ((at, _), slot) in fired.iter().zip(&slots) {
        assert_eq!(at, slot);
    }
}

#[test]
fn missed_one_shots_can_be_discarded_or_handed_back() {
    let (outcomes, fired, dead, _) = outage(MisfirePolicy::default().on_missed(OnMissed::Discard));
    assert_eq!(outcomes[..3], [Outcome::Discarded; 3]);
    assert!(fired.is_empty() && dead.is_empty());
    let (outcomes, fired, dead, _) =
        outage(MisfirePolicy::default().on_missed(OnMissed::DeadLetter));
    assert_eq!(outcomes[..3], [Outcome::DeadLettered; 3]);
    assert!(fired.is_empty());
    assert_eq!(dead, [1, 2, 3]);
}

#[test]
fn missed_one_shots_can_be_rescheduled_by_a_function() {
    let later =
        alloc::sync::Arc::new(|job: &PendingJob<u32>, now: SystemTime| now + job.value * 7 * MS);
    let (outcomes, fired, _, restart) =
        outage(MisfirePolicy::default().on_missed(OnMissed::Reschedule(later)));
    assert!(matches!(outcomes[0], Outcome::Rescheduled(_, at) if at == restart + 7 * MS));
    assert_eq!(
        fired,
        [
            (restart + 7 * MS, 1),
            (restart + 14 * MS, 2),
            (restart + 21 * MS, 3)
        ]
    );
    // A function that panics hands its job back (the panic once left
    // `restore` with the snapshot consumed); the other jobs go on.
    let picky = alloc::sync::Arc::new(|job: &PendingJob<u32>, now: SystemTime| {
        assert_ne!(job.value, 2, "no time for job 2");
        now + MS
    });
    let (outcomes, fired, dead, _) =
        outage(MisfirePolicy::default().on_missed(OnMissed::Reschedule(picky)));
    assert_eq!((outcomes[1], dead), (Outcome::DeadLettered, alloc::vec![2]));
    assert_eq!(fired.iter().map(|f| f.1).collect::<Vec<_>>(), [1, 3]);
}

/// Late by less than the threshold is not missed: it fires at once even
/// under a policy that would discard missed jobs.
#[test]
fn jobs_late_within_the_threshold_just_fire() {
    let policy = MisfirePolicy::default()
        .threshold(Duration::from_secs(15 * 60))
        .on_missed(OnMissed::Discard);
    let (outcomes, fired, _, restart) = outage(policy);
    assert!(outcomes.iter().all(|o| matches!(o, Outcome::Scheduled(_))));
    assert_eq!(fired.len(), 3);
    assert!(fired.iter().all(|&(at, _)| at == restart));
}

/// Today's bug: a 1 ms job down for 60 days (more than 2^32 periods)
/// made up one run while the report said five, and both Burst and Skip
/// left the `due + n × period` grid. Also at the far end of `SystemTime`:
/// a job due three centuries before the epoch.
#[test]
fn catching_up_past_two_to_the_32_periods_stays_exact_and_on_the_grid() {
    let sixty_days = Duration::from_secs(60 * 86_400);
    let centuries = Duration::from_secs(300 * 365 * 86_400);
    for (due, down) in [
        (noon(), sixty_days),
        (SystemTime::UNIX_EPOCH - centuries, centuries),
    ] {
        for (missed, want_now) in [(MissedTicks::Burst, 5), (MissedTicks::Skip, 1)] {
            let job = PendingJob {
                due,
                repeat: Some(Repeat { period: MS, missed }),
                value: 7,
            };
            let snapshot = Snapshot {
                version: Snapshot::<u32>::VERSION,
                taken_at: due,
                jobs: vec![job],
            };
            // On a grid point: the run due now is one of the missed.
            let restart = due + down + MS;
            let after = node(restart);
            let report = after
                .timer
                .restore(snapshot, &MisfirePolicy::default().max_catch_up(5))
                .unwrap();
            let periods = down.as_nanos() / MS.as_nanos();
            match report.outcomes[..] {
                [Outcome::CaughtUp {
                    missed: m, made_up, ..
                }] => {
                    assert_eq!(u128::from(m), periods + 2, "{missed:?}");
                    assert_eq!(made_up, want_now, "{missed:?}");
                }
                ref other => panic!("{missed:?}: {other:?}"),
            }
            assert!(periods > u128::from(u32::MAX));
            let at_once = after.run(Duration::ZERO);
            assert_eq!(at_once.len() as u64, want_now, "{missed:?}: {at_once:?}");
            // Then the grid: the next run a period after the restart.
            let next = after.run(MS);
            assert_eq!(next.len(), 1, "{missed:?}: {next:?}");
            assert_eq!(next[0].0, restart + MS, "{missed:?}");
        }
    }
}

/// At `SystemTime`'s far past a 1 ns job is more than 2^64 runs behind.
/// Today's bug: the count saturated, the grid's start landed 584 years
/// after `due` (still long past), and the timer made up runs forever.
#[test]
fn catching_up_from_the_far_past_of_system_time_ends() {
    let far = Duration::from_secs(i64::MAX as u64 - 4_000_000_000);
    let (done, finished) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        for (missed, want_now) in [(MissedTicks::Burst, 5), (MissedTicks::Skip, 1)] {
            let due = SystemTime::UNIX_EPOCH - far;
            let job = PendingJob {
                due,
                repeat: Some(Repeat {
                    period: Duration::from_nanos(1),
                    missed,
                }),
                value: 7,
            };
            let snapshot = Snapshot {
                version: Snapshot::<u32>::VERSION,
                taken_at: due,
                jobs: vec![job],
            };
            let after = node(noon());
            let policy = MisfirePolicy::default().max_catch_up(5);
            let report = after.timer.restore(snapshot, &policy).unwrap();
            let Outcome::CaughtUp {
                missed: m, made_up, ..
            } = report.outcomes[0]
            else {
                panic!("{:?}", report.outcomes);
            };
            assert_eq!((m, made_up), (u64::MAX, want_now), "{missed:?}");
            assert_eq!(after.run(Duration::ZERO).len() as u64, want_now);
            // Then one run per tick at most: the grid starts now.
            let next = after.run(MS).len();
            assert!((1..=1_001).contains(&next), "{missed:?}: {next}");
        }
        done.send(()).unwrap();
    });
    finished
        .recv_timeout(Duration::from_secs(60))
        .expect("the catch-up never ended");
}

/// A fixed-rate job that missed 600 runs makes up at most `max_catch_up`
/// of them (Burst), or one (Skip), and then stays on its grid.
#[test]
fn missed_periodic_runs_are_capped_and_stay_on_the_grid() {
    for (missed, cap, want_now) in [
        (MissedTicks::Burst, 5, 5),
        (MissedTicks::Skip, 5, 1),
        (MissedTicks::Delay, 5, 1),
    ] {
        let job = PendingJob {
            due: noon(),
            repeat: Some(Repeat {
                period: SEC,
                missed,
            }),
            value: 7,
        };
        let snapshot = Snapshot {
            version: Snapshot::<u32>::VERSION,
            taken_at: noon(),
            jobs: vec![job],
        };
        // Down for 599.5 s: runs at 0, 1, ..., 599 s were due.
        let restart = noon() + Duration::from_millis(599_500);
        let after = node(restart);
        let report = after
            .timer
            .restore(snapshot, &MisfirePolicy::default().max_catch_up(cap))
            .unwrap();
        match report.outcomes[..] {
            [Outcome::CaughtUp {
                missed: 600,
                made_up,
                ..
            }] => assert_eq!(made_up, want_now, "{missed:?}"),
            ref other => panic!("{missed:?}: {other:?}"),
        }
        let at_once = after.run(MS);
        assert_eq!(at_once.len() as u64, want_now, "{missed:?}");
        let next = after.run(SEC);
        let grid = noon() + 600 * SEC;
        let want_next = match missed {
            // Delay restarts a period after the run it made up.
            MissedTicks::Delay => restart + SEC,
            _ => grid,
        };
        assert_eq!(next.len(), 1, "{missed:?}: {next:?}");
        assert_eq!(next[0].0, want_next, "{missed:?}");
    }
}

#[test]
fn a_snapshot_of_another_version_is_refused_and_handed_back() {
    let after = node(noon());
    let snapshot = Snapshot {
        version: 2,
        taken_at: noon(),
        jobs: vec![PendingJob {
            due: noon(),
            repeat: None,
            value: 1,
        }],
    };
    let err = after
        .timer
        .restore(snapshot, &MisfirePolicy::default())
        .unwrap_err();
    assert_eq!(err.reason, RestoreFailure::Version { found: 2 });
    assert_eq!(err.remaining.len(), 1);
    assert_eq!(after.timer.pending(), 0);
}

/// A timer that refuses mid-way (here: shut down) stops the restore; every
/// job not restored comes back untouched.
#[test]
fn a_refused_restore_hands_back_every_remaining_job() {
    let before = node(noon());
    for value in 0..5 {
        before.timer.schedule(SEC, value).unwrap();
    }
    let snapshot = before.timer.shutdown_snapshot();
    let after = node(noon());
    after.timer.shutdown();
    let err = after
        .timer
        .restore(snapshot, &MisfirePolicy::default())
        .unwrap_err();
    assert!(matches!(err.reason, RestoreFailure::Schedule(_)));
    let mut left: Vec<u32> = err.remaining.iter().map(|j| j.value).collect();
    left.sort_unstable();
    assert_eq!(left, [0, 1, 2, 3, 4]);
    assert!(err.restored.outcomes.is_empty());
}

#[test]
fn snapshots_round_trip_through_serde_and_bad_input_is_an_error() {
    let before = node(noon());
    before.timer.schedule(SEC, 1).unwrap();
    before
        .timer
        .schedule_repeating(SEC, 2 * SEC, MissedTicks::Burst, || 2)
        .unwrap();
    let snapshot = before.timer.snapshot();
    let json = serde_json::to_string(&snapshot).unwrap();
    let back: Snapshot<u32> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, snapshot);
    // Not a snapshot at all, or a truncated one: a clear error.
    assert!(serde_json::from_str::<Snapshot<u32>>("{\"orders\": []}").is_err());
    assert!(serde_json::from_str::<Snapshot<u32>>(&json[..json.len() / 2]).is_err());
    // A deadline before the epoch cannot be written.
    let ancient = Snapshot {
        version: Snapshot::<u32>::VERSION,
        taken_at: noon(),
        jobs: vec![PendingJob {
            due: SystemTime::UNIX_EPOCH - SEC,
            repeat: None,
            value: 1,
        }],
    };
    let err = serde_json::to_string(&ancient).unwrap_err();
    assert!(err.to_string().contains("UNIX_EPOCH"), "{err}");
}
