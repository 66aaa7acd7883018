//! Properties of restore over random jobs, downtimes and policies, on the
//! manual-clock nodes of `restore.rs`: every job fires as its misfire
//! policy or its `MissedTicks` says, and nothing else fires.

use core::time::Duration;
use std::time::SystemTime;

use proptest::prelude::*;
use tickwheel::persist::{MisfirePolicy, OnMissed, PendingJob};
use tickwheel::timer::MissedTicks;

use crate::restore::{node, noon, MS};

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
