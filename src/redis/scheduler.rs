//! Job schedulers: recurring jobs kept in Redis, whose runs are ordinary
//! jobs of the queue.
//!
//! # Data
//!
//! A scheduler is a key, a timetable ([`Schedule`]) and a payload, kept in
//! two hashes under the queue's own tag (`tw:{name}:schedules`, key →
//! record, and `tw:{name}:schedule-payloads`, key → payload). A record is
//! its version (one more at each change), its *horizon* (µs: runs exist
//! for the timetable's instants up to it) and the timetable. The run of
//! version `v` for instant `t` is the job `schedule/<key>/<v>/<t>` (t in
//! µs since the epoch), due at `t`: an id fixed by the instant, so however
//! many consumers make it, one job exists, and a run that ended stays
//! ended (ids are kept for the queue's retention, and a horizon never goes
//! back). A change of timetable or payload is a new version: its runs are
//! new ids, so an instant whose old run already ran runs again under the
//! new version only if both timetables hold it and the old run had not
//! been cancelled (it was in flight, or past).
//!
//! # Making runs ahead
//!
//! Runs are made ahead, by the consumers: each consumer process keeps one
//! task (started with its first consumer) that reads every record and the
//! server's clock in one call and, for each scheduler whose horizon is
//! less than half the lookahead (1 s) ahead, makes the runs of the
//! instants up to two seconds ahead (at least the next one, however far:
//! a daily run is made a day ahead), then moves the horizon up to the last
//! of them if the version is still the same (never back). Two consumers
//! that race make the same ids (the second is told `Exists`), and the
//! horizon ends past every run either made. The
//! task sleeps until the earliest horizon less half the lookahead, at most
//! a minute (so a scheduler made elsewhere is found), and wakes early when
//! a consumer of this process is handed a run (its scheduler may have
//! been made elsewhere, or changed). `upsert_schedule` makes the first
//! runs itself, so a new scheduler runs on time with no consumer awake.
//!
//! # Missed runs
//!
//! Instants more than a second past when the task looks (no consumer ran
//! to make their runs) are missed, and follow the scheduler's [`Missed`]:
//! none runs, one run for the latest, or each (1,000 a look). Those runs,
//! and the past ones still within the grace, are due when they are made,
//! in order (their ids still name their instants), so the queue's misfire
//! policy, which would find them late, leaves them alone. A run made
//! before the outage and overdue after it is an ordinary job: the queue's
//! misfire policy (`QueueBuilder::misfire`) decides it, as for any job.
//!
//! # Changing and removing
//!
//! An upsert whose timetable or payload differs bumps the version, sets the
//! horizon to now and cancels the old timetable's runs still waiting (those
//! of its latest 1,000 instants up to its horizon, overdue ones included; a
//! run in flight finishes); an identical upsert changes nothing
//! (`Upserted::Unchanged`). Removing cancels the same way, and keeps the
//! key's version, so a key added again goes on from it: its runs never
//! take the ids of those the removal cancelled, which the queue remembers
//! as ended. A consumer that was making runs of the old version meanwhile
//! finds its horizon move refused for the version, and cancels the runs it
//! made. A timetable with no instant left (a finite cron one, run out)
//! makes nothing and is not looked at again until it changes.
//!
//! Both calls keep their answer for a retry of the same call, so a retry
//! after a lost reply answers what the first attempt did and does the
//! rest of its work. And neither leaves work undone if it fails half-way
//! (Redis gone after the script, before the cancels): a changed or removed
//! record stays in `schedule-superseded` until its runs are cancelled,
//! and every later upsert or removal of the key cancels them first; an
//! upsert that finds its scheduler unchanged still makes the runs it is
//! owed if none were made ahead (an earlier call stopped after storing
//! it).

use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::batched::{CancelJob, ScheduleJob};
use super::lanes::run_direct;
use super::link::{jitter, Ctx, Io};
use super::lua::lua;
use super::ops::{array, bytes};
use super::QueueError;
use crate::event::event;
use crate::schedule::{Missed, Schedule};

lua!(ADVANCE, "schedule_advance.lua");
lua!(READ, "schedule_read.lua");

/// The ids of runs start with this; the rest is `<key>/<instant µs>`.
pub(super) const RUN_PREFIX: &str = "schedule/";
/// How far ahead runs are made.
const LOOKAHEAD: i64 = 2_000_000;
/// An instant found later than this is missed.
use crate::schedule::MISSED_AFTER_MICROS as GRACE;
/// Most runs made for one scheduler at one look.
const MAX_RUNS: usize = 1_000;
/// The longest sleep of the task: a scheduler made elsewhere is found
/// within it.
const REREAD: Duration = Duration::from_secs(60);
/// A scheduler's key: at most this many bytes (its runs' ids must fit).
///
/// ```
/// use tickwheel::redis::{MAX_ID, MAX_SCHEDULE_KEY};
///
/// // A run's id is `schedule/<key>/<version>/<instant µs>`.
/// let id = format!("schedule/{}/{}/{}", "k".repeat(MAX_SCHEDULE_KEY), u64::MAX, i64::MAX);
/// assert!(id.len() <= MAX_ID);
/// ```
///
/// A longer key is refused before anything is sent:
///
/// ```no_run
/// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
/// use std::time::Duration;
/// use tickwheel::redis::{QueueError, Schedule, MAX_SCHEDULE_KEY};
///
/// let every_minute = Schedule::every(Duration::from_secs(60));
/// q.upsert_schedule(&"k".repeat(MAX_SCHEDULE_KEY), &every_minute, b"")?;
/// let err = q.upsert_schedule(&"k".repeat(MAX_SCHEDULE_KEY + 1), &every_minute, b"").unwrap_err();
/// assert!(matches!(err, QueueError::InvalidSchedule(_)));
/// # Ok::<(), QueueError>(())
/// ```
pub const MAX_SCHEDULE_KEY: usize = 200;

/// A record: version, horizon (µs) and timetable text.
pub(super) struct Record<'a> {
    pub(super) version: u64,
    pub(super) horizon: i64,
    pub(super) timetable: &'a str,
}

impl<'a> Record<'a> {
    pub(super) fn parse(text: &'a str) -> Option<Record<'a>> {
        let mut parts = text.splitn(3, '\n');
        Some(Record {
            version: parts.next()?.parse().ok()?,
            horizon: parts.next()?.parse().ok()?,
            timetable: parts.next()?,
        })
    }
}

/// The schedulers' records, their payloads, the last version of each
/// key ever removed (so that a key added again never makes the ids of
/// runs its removal cancelled, which the queue remembers as ended), and
/// the records changed or removed whose runs are not yet known cancelled
/// (`<key>\n<version>` → record).
pub(super) fn hashes(ctx: &Ctx) -> [String; 4] {
    let name = &ctx.name;
    [
        alloc::format!("tw:{{{name}}}:schedules"),
        alloc::format!("tw:{{{name}}}:schedule-payloads"),
        alloc::format!("tw:{{{name}}}:schedule-versions"),
        alloc::format!("tw:{{{name}}}:schedule-superseded"),
    ]
}

/// The latest due time a run can have (`MAX_DUE_MICROS`): a timetable's
/// instants past it are as good as none.
pub(super) const LAST_DUE: i64 = super::MAX_DUE_MICROS as i64;

/// The first instant of `schedule` after `t` that a run can be made for.
fn next_instant(schedule: &Schedule, t: i64) -> Option<i64> {
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

pub(super) fn check_key(key: &str) -> Result<(), QueueError> {
    if key.is_empty() || key.len() > MAX_SCHEDULE_KEY {
        return Err(QueueError::InvalidSchedule(alloc::format!(
            "a scheduler's key must be 1 to {MAX_SCHEDULE_KEY} bytes"
        )));
    }
    Ok(())
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

/// Makes the runs of `instants` (oldest first, as [`plan`] gives them)
/// for scheduler `key` at server time `now`, and moves its horizon up to
/// the last of them. A missed instant's run is due just before `now` (see
/// [`due_of`]).
pub(super) async fn make_runs(
    io: &Io,
    key: &str,
    version: u64,
    instants: &[i64],
    now: i64,
) -> Result<(), QueueError> {
    let Some(&last) = instants.last() else {
        return Ok(());
    };
    let [records, payloads, ..] = hashes(&io.ctx);
    let mut get = redis::cmd("HGET");
    get.arg(&payloads).arg(key);
    let payload = bytes(io.query(&get).await?);
    let runs = due_of(instants, now)
        .map(|(t, due)| ScheduleJob::run(run_id(key, version, t), due, &payload))
        .collect::<Result<Vec<_>, _>>()?;
    run_direct(io, runs).await?;
    let mut cmd = ADVANCE.command(&[records]);
    cmd.arg(key).arg(version).arg(last);
    let moved = io.script(&ADVANCE, &cmd).await?;
    if super::ops::int(&moved) == Some(-1) {
        // Changed or removed while these were made: the upsert or removal
        // cancelled the runs it knew of, not these.
        let stale = instants
            .iter()
            .map(|&t| CancelJob::new(run_id(key, version, t)))
            .collect();
        run_direct(io, stale).await?;
    }
    Ok(())
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
fn due_of(instants: &[i64], now: i64) -> impl Iterator<Item = (i64, i64)> + '_ {
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

/// Cancels the runs of a changed or removed scheduler's `record` still
/// waiting, the record superseded at server time `at`: those of its
/// latest [`MAX_RUNS`] instants up to the furthest any maker of it may
/// have made, overdue ones included (consumers down or behind leave runs
/// waiting past their time; they were once left to run after the
/// removal). That is past its horizon if a maker made runs and then
/// failed to move the horizon: a maker plans up to the lookahead past its
/// clock, which read no later than `at`, and at least one instant.
pub(super) async fn cancel_runs(
    io: &Io,
    key: &str,
    record: &Record<'_>,
    at: i64,
) -> Result<(), QueueError> {
    let Some(schedule) = Schedule::decode(record.timetable) else {
        return Ok(());
    };
    let furthest = schedule
        .next_after(record.horizon)
        .unwrap_or(record.horizon)
        .max(at.saturating_add(LOOKAHEAD))
        .max(record.horizon);
    let ids = schedule
        .latest(furthest, MAX_RUNS)
        .into_iter()
        .map(|t| CancelJob::new(run_id(key, record.version, t)))
        .collect();
    run_direct(io, ids).await
}

/// A whole number a script answered, as an integer or as text.
pub(super) fn text_int(value: &redis::Value) -> Option<i64> {
    super::ops::int(value).or_else(|| {
        core::str::from_utf8(&bytes(value.clone()))
            .ok()?
            .parse()
            .ok()
    })
}

/// Reads every scheduler and the server's clock: (now, [(key, record)]).
pub(super) async fn read(io: &Io) -> Result<(i64, Vec<(String, String)>), QueueError> {
    let [records, ..] = hashes(&io.ctx);
    let cmd = READ.command(&[records]);
    let mut items = array(io.script(&READ, &cmd).await?)?.into_iter();
    let wrong = || QueueError::Server(String::from("a malformed scheduler read"));
    let now = String::from_utf8(bytes(items.next().ok_or_else(wrong)?))
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(wrong)?;
    let mut all = Vec::new();
    while let (Some(key), Some(record)) = (items.next(), items.next()) {
        let key = String::from_utf8_lossy(&bytes(key)).into_owned();
        let record = String::from_utf8_lossy(&bytes(record)).into_owned();
        all.push((key, record));
    }
    Ok((now, all))
}

/// One look: makes what every scheduler needs. Answers the server's clock
/// at the read, and when the next look is due (server µs), if any
/// scheduler exists.
async fn look(io: &Io) -> Result<(i64, Option<i64>), QueueError> {
    let (now, all) = read(io).await?;
    let mut next_look: Option<i64> = None;
    let mut failed = false;
    for (key, text) in &all {
        let Some(record) = Record::parse(text) else {
            continue;
        };
        let Some(schedule) = Schedule::decode(record.timetable) else {
            // A timetable this build cannot read (a cron one without
            // feature `cron`): another process may.
            continue;
        };
        let mut horizon = record.horizon;
        if due_for_runs(horizon, now) {
            let instants = plan(&schedule, horizon, now);
            if let Err(err) = make_runs(io, key, record.version, &instants, now).await {
                // This scheduler waits for the next look; the others go on.
                event!(
                    warn,
                    "job schedulers: could not make a scheduler's runs",
                    queue = io.ctx.identity,
                    key = key,
                    error = err
                );
                failed = true;
                continue;
            }
            horizon = instants.last().copied().unwrap_or(horizon);
            if instants.len() == MAX_RUNS {
                // More to make: look again at once.
                horizon = now;
            }
        }
        if next_instant(&schedule, horizon).is_none() {
            // Its timetable has no instant left: nothing to look for (the
            // next look came at once, for good, and every consumer
            // process busy-looped against Redis).
            continue;
        }
        let due = horizon - LOOKAHEAD / 2;
        next_look = Some(next_look.map_or(due, |n| n.min(due)));
    }
    if failed {
        return Err(QueueError::Server(String::from(
            "some job schedulers' runs could not be made",
        )));
    }
    Ok((now, next_look))
}

/// The task of a consumer process that makes the runs of every scheduler
/// of the queue ahead of time (see the module docs).
pub(super) async fn keep(io: Io) {
    let ctx = alloc::sync::Arc::clone(&io.ctx);
    let mut backoff = Duration::from_millis(100);
    loop {
        let started = Instant::now();
        let sleep = match look(&io).await {
            Ok((now, next)) => {
                backoff = Duration::from_millis(100);
                // The clock was read before the reply arrived, so waiting
                // the difference from the call's start is never late by
                // the server's clock.
                next.map_or(REREAD, |next| {
                    Duration::from_micros(u64::try_from(next - now).unwrap_or(0))
                })
                .saturating_sub(started.elapsed())
            }
            Err(err) => {
                event!(
                    warn,
                    "job schedulers: could not make runs; trying again",
                    queue = ctx.identity,
                    error = err
                );
                backoff = (backoff * 2).min(Duration::from_secs(5));
                jitter(backoff)
            }
        };
        tokio::select! {
            () = tokio::time::sleep(sleep.min(REREAD)) => {}
            () = ctx.schedules_wake.notified() => {}
        }
    }
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
