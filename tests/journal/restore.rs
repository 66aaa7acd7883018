//! Snapshots and restore (`src/persist/`): on manual clocks whose wall time
//! is set, so a "restart" is a new timer on a clock that is later by the
//! downtime. What fires is compared by wall time.

use core::time::Duration;
use std::time::SystemTime;

use crossbeam_channel::{Receiver, Sender};
use proptest::prelude::*;
use tickwheel::persist::{
    MisfirePolicy, OnMissed, Outcome, PendingJob, Repeat, RestoreFailure, Snapshot,
};
use tickwheel::timer::{Clock, Expired, ManualClock, MissedTicks};
use tickwheel::Timer;

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);

/// A timer on a manual clock standing at wall time `wall`, reporting each
/// fired value with the wall time it fired at.
struct Node {
    clock: ManualClock,
    timer: Timer<u32, FiredAt>,
    fired: Receiver<(SystemTime, u32)>,
}

struct FiredAt {
    clock: ManualClock,
    out: Sender<(SystemTime, u32)>,
}

impl tickwheel::timer::Executor<u32> for FiredAt {
    fn execute(&self, fired: Expired<u32>) -> Result<(), tickwheel::timer::Rejected<u32>> {
        self.out.send((self.clock.wall_now(), fired.value)).unwrap();
        Ok(())
    }
}

fn node(wall: SystemTime) -> Node {
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
    fn run(&self, by: Duration) -> Vec<(SystemTime, u32)> {
        self.timer.sync();
        let steps = by.as_millis() as u64;
        for _ in 0..steps {
            self.clock.advance(MS);
            self.timer.sync();
        }
        self.fired.try_iter().collect()
    }
}

fn noon() -> SystemTime {
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random one-shot jobs (some cancelled), a snapshot, a restart after a
    /// random downtime, under each policy for missed jobs: every job fires
    /// exactly as the policy says (at once, spread over the window in due
    /// order, at the time a function picks, discarded, or handed back; the
    /// rest at their own due time), and nothing else fires.
    #[test]
    fn restored_one_shots_follow_the_policy(
        dues in proptest::collection::vec(1u32..400, 1..24),
        cancel in proptest::collection::vec(any::<bool>(), 24),
        downtime in 0u32..300,
        threshold in 0u32..100,
        how in 0u8..5,
        window in 1u32..200,
    ) {
        let before = node(noon());
        let mut live = Vec::new();
        for (value, &due) in dues.iter().enumerate() {
            let handle = before.timer.schedule(due * MS, value as u32).unwrap();
            if cancel[value] {
                prop_assert!(before.timer.cancel(handle).is_some());
            } else {
                live.push((value as u32, due));
            }
        }
        let snapshot = before.timer.snapshot();
        let restart = noon() + downtime * MS;
        let after = node(restart);
        // Reschedule: each missed job `value % 7` × 10 ms after the restart.
        let later = |job: &PendingJob<u32>, now: SystemTime| now + (job.value % 7) * 10 * MS;
        let on_missed = match how {
            0 => OnMissed::FireNow,
            1 => OnMissed::Discard,
            2 => OnMissed::DeadLetter,
            3 => OnMissed::Spread(window * MS),
            _ => OnMissed::Reschedule(alloc::sync::Arc::new(later)),
        };
        let policy = MisfirePolicy::default().threshold(threshold * MS).on_missed(on_missed);
        let report = after.timer.restore(snapshot, &policy).unwrap();
        let fired = after.run(500 * MS);
        let mut want = Vec::new();
        let mut dead_want = Vec::new();
        let mut missed_jobs = Vec::new();
        for &(value, due) in &live {
            let at = noon() + due * MS;
            let missed = downtime > due + threshold;
            if !missed {
                // Due later, or late within the threshold: its own time,
                // or at once.
                want.push((at.max(restart), value));
            } else {
                match how {
                    0 => want.push((restart, value)),
                    1 => {}
                    2 => dead_want.push(value),
                    3 => missed_jobs.push((due, value)),
                    _ => want.push((restart + (value % 7) * 10 * MS, value)),
                }
            }
        }
        // Spread: the k-th of n missed jobs in due order at
        // restart + window × k / n, rounded up to the 1 ms tick.
        missed_jobs.sort_unstable();
        let n = missed_jobs.len() as u64;
        let window_ns = u64::from(window) * 1_000_000;
        let slots: Vec<SystemTime> = (0..n)
            .map(|k| restart + Duration::from_millis((window_ns * k / n).div_ceil(1_000_000)))
            .collect();
        let spread_values: Vec<u32> = missed_jobs.iter().map(|&(_, v)| v).collect();
        let (mut spread_got, mut got): (Vec<_>, Vec<_>) =
            fired.iter().copied().partition(|(_, v)| spread_values.contains(v));
        // The wheel fires in deadline order, FIFO by schedule order on ties;
        // jobs with equal times may come in any order: compare sorted.
        got.sort();
        want.sort();
        prop_assert_eq!(got, want);
        // Spread jobs take exactly the slots, and in due order: a job due
        // earlier never fires after one due later.
        spread_got.sort();
        let got_slots: Vec<SystemTime> = spread_got.iter().map(|&(at, _)| at).collect();
        prop_assert_eq!(got_slots, slots);
        let due_of = |v: u32| missed_jobs.iter().find(|&&(_, x)| x == v).unwrap().0;
        for pair in spread_got.windows(2) {
            prop_assert!(due_of(pair[0].1) <= due_of(pair[1].1) || pair[0].0 == pair[1].0);
        }
        let mut dead: Vec<u32> = report.dead_letters.iter().map(|j| j.value).collect();
        dead.sort_unstable();
        prop_assert_eq!(dead, dead_want);
        prop_assert_eq!(report.outcomes.len(), live.len());
    }

    /// A fixed-rate job (first run `first` ms after noon, every `period`
    /// ms), a snapshot, a restart after `downtime` ms: for 300 ms the
    /// restored timer runs it as its `MissedTicks` says. With no run
    /// missed, on the original grid; Burst makes up at most `cap` missed
    /// runs at once, then keeps the grid; Skip makes up one, then keeps
    /// the grid; Delay makes up one, then runs a period after it.
    #[test]
    fn restored_fixed_rate_jobs_follow_their_missed_ticks(
        first in 1u32..200,
        period in 5u32..60,
        downtime in 0u32..400,
        cap in 1u64..6,
        missed in 0u8..3,
    ) {
        let missed = [MissedTicks::Burst, MissedTicks::Skip, MissedTicks::Delay][missed as usize];
        let before = node(noon());
        before
            .timer
            .schedule_repeating(first * MS, period * MS, missed, || 9)
            .unwrap();
        let snapshot = before.timer.snapshot();
        let restart = noon() + downtime * MS;
        let after = node(restart);
        let policy = MisfirePolicy::default().max_catch_up(cap);
        after.timer.restore(snapshot, &policy).unwrap();
        let fired: Vec<u32> = after
            .run(300 * MS)
            .iter()
            .map(|&(at, _)| at.duration_since(noon()).unwrap().as_millis() as u32)
            .collect();
        let end = downtime + 300;
        // Runs due by the restart: at `first`, and one per whole period since.
        let overdue = if downtime >= first { (downtime - first) / period + 1 } else { 0 };
        let (made_up, next_on_grid) = match missed {
            MissedTicks::Burst => (overdue.min(cap as u32), first + overdue * period),
            MissedTicks::Skip => (overdue.min(1), first + overdue * period),
            MissedTicks::Delay if overdue > 0 => (1, downtime + period),
            MissedTicks::Delay => (0, first),
        };
        let mut want = vec![downtime; made_up as usize];
        let mut at = next_on_grid;
        while at <= end {
            want.push(at);
            at += period;
        }
        prop_assert_eq!(fired, want);
    }
}
