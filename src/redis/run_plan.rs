//! Which runs a job scheduler makes, and when each is due: the pure part
//! of `scheduler.rs` (whose docs state the algorithm), on µs since the
//! epoch, without Redis.

use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::schedule::{Missed, Schedule};

/// The ids of runs start with this; the rest is `<key>/<instant µs>`.
pub(super) const RUN_PREFIX: &str = "schedule/";
/// How far ahead runs are made.
pub(super) const LOOKAHEAD: i64 = 2_000_000;
/// An instant found later than this is missed.
use crate::schedule::MISSED_AFTER_MICROS as GRACE;
/// Most runs made for one scheduler at one look.
pub(super) const MAX_RUNS: usize = 1_000;

/// The latest due time a run can have (`MAX_DUE_MICROS`): a timetable's
/// instants past it are as good as none.
pub(super) const LAST_DUE: i64 = super::MAX_DUE_MICROS as i64;

/// The first instant of `schedule` after `t` that a run can be made for.
pub(super) fn next_instant(schedule: &Schedule, t: i64) -> Option<i64> {
    schedule.next_after(t).filter(|&next| next <= LAST_DUE)
}

/// The id of the run of version `version` of scheduler `key` for instant
/// `t` (µs).
pub(super) fn run_id(key: &str, version: u64, t: i64) -> String {
    alloc::format!("{RUN_PREFIX}{key}/{version}/{t}")
}

/// The scheduler and instant of a run's id; `None` for any other id.
pub(super) fn parse_run(id: &str) -> Option<(&str, SystemTime)> {
    let rest = id.strip_prefix(RUN_PREFIX)?;
    let (rest, t) = rest.rsplit_once('/')?;
    let (key, version) = rest.rsplit_once('/')?;
    version.parse::<u64>().ok()?;
    let t: u64 = t.parse().ok()?;
    Some((key, UNIX_EPOCH + Duration::from_micros(t)))
}

/// The instants whose runs to make now, for a scheduler made up to
/// `horizon`, at server time `now`: the missed ones as its policy says,
/// then those up to the lookahead, at least one still to come.
pub(super) fn plan(schedule: &Schedule, horizon: i64, now: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let missed_before = now - GRACE;
    let mut t = horizon;
    if schedule
        .next_after(t)
        .is_some_and(|next| next < missed_before)
    {
        match schedule.missed_policy() {
            Missed::Skip => t = t.max(missed_before - 1),
            Missed::RunOnce => {
                if let Some(last) = schedule.last_before(horizon, missed_before) {
                    out.push(last);
                    t = last;
                }
            }
            Missed::RunAll => {
                while let Some(next) = schedule.next_after(t).filter(|&n| n < missed_before) {
                    out.push(next);
                    t = next;
                    if out.len() == MAX_RUNS {
                        return out;
                    }
                }
            }
        }
        t = t.max(missed_before - 1);
    }
    while let Some(next) = next_instant(schedule, t) {
        if next > now + LOOKAHEAD && out.last().is_some_and(|&last| last > now) {
            break;
        }
        out.push(next);
        t = next;
        if out.len() == MAX_RUNS {
            break;
        }
    }
    out
}

/// Whether a scheduler made up to `horizon` needs runs made at server
/// time `now`: its horizon is less than half the lookahead ahead.
pub(super) fn due_for_runs(horizon: i64, now: i64) -> bool {
    horizon - LOOKAHEAD / 2 <= now
}

/// Each of `instants` (oldest first) with the due time of its run, made
/// at server time `now`: its instant; but when some are missed (more than
/// the grace past), each one already past is due a microsecond of its own
/// just before `now`, in order (never before its instant). Due at its
/// instant, a missed run that the scheduler's `Missed` policy asked for
/// was found late by the claim, and a queue whose misfire policy discards
/// or dead-letters late jobs did that to it; the past ones still within
/// the grace go with them, so that none passes an older missed one. Their
/// ids still name their instants (`Delivery::schedule`).
pub(super) fn due_of(instants: &[i64], now: i64) -> impl Iterator<Item = (i64, i64)> + '_ {
    let missed = instants.first().is_some_and(|&t| t < now - GRACE);
    // At most `MAX_RUNS` and a second's worth: a millisecond or so.
    let past = if missed {
        instants.iter().filter(|&&t| t <= now).count() as i64
    } else {
        0
    };
    instants.iter().zip(0..).map(move |(&t, i)| {
        if i < past {
            (t, (now - past + i).max(t))
        } else {
            (t, t)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000;

    #[test]
    fn runs_are_made_up_to_the_lookahead_and_missed_ones_follow_the_policy() {
        let every = Schedule::every(Duration::from_secs(1));
        // Up to date: the instants up to two seconds ahead.
        assert_eq!(plan(&every, 100 * S, 100 * S + 1), [101 * S, 102 * S]);
        // A daily run: the next one, however far.
        let daily = Schedule::every(Duration::from_secs(86_400));
        assert_eq!(plan(&daily, 0, 100 * S), [86_400 * S]);
        // Five minutes down.
        let (horizon, now) = (100 * S, 400 * S + 500_000);
        let skip = every.clone().missed(Missed::Skip);
        assert_eq!(plan(&skip, horizon, now), [400 * S, 401 * S, 402 * S]);
        let once = every.clone().missed(Missed::RunOnce);
        assert_eq!(
            plan(&once, horizon, now),
            [399 * S, 400 * S, 401 * S, 402 * S]
        );
        let all = every.clone().missed(Missed::RunAll);
        let runs = plan(&all, horizon, now);
        assert_eq!(runs.len(), 302);
        assert_eq!((runs[0], runs[301]), (101 * S, 402 * S));
        // A year of a 10 ms schedule: capped, the rest at the next look.
        let fast = Schedule::every(Duration::from_millis(10)).missed(Missed::RunAll);
        assert_eq!(plan(&fast, 0, 365 * 86_400 * S).len(), MAX_RUNS);
        let fast_once = Schedule::every(Duration::from_millis(10));
        assert_eq!(plan(&fast_once, 0, 365 * 86_400 * S).len(), 302);
    }

    #[test]
    fn missed_runs_are_due_just_before_now_in_order() {
        let now = 400 * S;
        let got: Vec<_> = due_of(&[100 * S, 200 * S, 399 * S + 1, 401 * S], now).collect();
        assert_eq!(
            got,
            [
                (100 * S, now - 3),
                (200 * S, now - 2),
                (399 * S + 1, now - 1),
                (401 * S, 401 * S)
            ]
        );
        // An instant at `now` itself stays at it, after the others.
        let got: Vec<_> = due_of(&[100 * S, now], now).collect();
        assert_eq!(got, [(100 * S, now - 2), (now, now)]);
        // None missed: every run due at its instant.
        let got: Vec<_> = due_of(&[399 * S + 1, 401 * S], now).collect();
        assert_eq!(got, [(399 * S + 1, 399 * S + 1), (401 * S, 401 * S)]);
    }

    #[test]
    fn run_ids_name_their_scheduler_and_instant() {
        let id = run_id("close/unpaid", 3, 1_700_000_000 * S);
        assert_eq!(id, "schedule/close/unpaid/3/1700000000000000");
        let (key, at) = parse_run(&id).unwrap();
        assert_eq!(key, "close/unpaid");
        assert_eq!(at, UNIX_EPOCH + Duration::from_secs(1_700_000_000));
        assert_eq!(parse_run("order-17"), None);
        assert_eq!(parse_run("schedule/x/1/notanumber"), None);
        assert_eq!(parse_run("schedule/x/1"), None);
    }
}
