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
use std::time::Instant;

use super::batched::{CancelJob, ScheduleJob};
use super::lanes::run_direct;
use super::link::{jitter, Ctx, Io};
use super::lua::lua;
use super::ops::{array, bytes};
pub(super) use super::run_plan::{due_for_runs, parse_run, plan, run_id, LAST_DUE, RUN_PREFIX};
use super::run_plan::{due_of, next_instant, LOOKAHEAD, MAX_RUNS};
use super::QueueError;
use crate::event::event;
use crate::schedule::Schedule;

lua!(ADVANCE, "schedule_advance.lua");
lua!(READ, "schedule_read.lua");

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

pub(super) fn check_key(key: &str) -> Result<(), QueueError> {
    if key.is_empty() || key.len() > MAX_SCHEDULE_KEY {
        return Err(QueueError::InvalidSchedule(alloc::format!(
            "a scheduler's key must be 1 to {MAX_SCHEDULE_KEY} bytes"
        )));
    }
    Ok(())
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
