//! The job scheduler calls' work (`Queue::upsert_schedule`,
//! `remove_schedule`, `schedules`: `schedules.rs`): each a task on the
//! queue's I/O. The data and how runs are made are in `scheduler.rs`.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};

use super::keys::Token;
use super::link::Io;
use super::lua::lua;
use super::ops::{array, bytes, check_id, script_with_retry_flag};
use super::pending::Pending;
use super::scheduler::{
    cancel_runs, check_key, due_for_runs, hashes, make_runs, plan, read, run_id, text_int, Record,
    LAST_DUE,
};
use super::schedules::{ScheduleInfo, Upserted};
use super::shared::Shared;
use super::QueueError;
use crate::schedule::Schedule;

lua!(UPSERT, "schedule_upsert.lua", schedules);
lua!(REMOVE, "schedule_remove.lua", schedules);

/// `Queue::upsert_schedule`.
pub(super) fn upsert(
    s: &Shared,
    key: &str,
    schedule: &Schedule,
    payload: &[u8],
) -> Result<Pending<Upserted>, QueueError> {
    check_key(key)?;
    check_id(&run_id(key, u64::MAX, i64::MAX))?;
    super::ops::check_payload(payload)?;
    schedule.check()?;
    // Refused before anything is stored: a timetable that never runs again
    // (its instants all past, or past the latest due time) would store a
    // scheduler that makes nothing.
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let now = i64::try_from(since.as_micros()).unwrap_or(i64::MAX);
    match schedule.next_after(now) {
        None => {
            return Err(QueueError::InvalidSchedule(String::from(
                "the timetable has no instant to come",
            )))
        }
        Some(next) if next > LAST_DUE => return Err(QueueError::DueOutOfRange),
        Some(_) => {}
    }
    let (key, timetable, payload) = (key.to_string(), schedule.encode(), payload.to_vec());
    let schedule = schedule.clone();
    Ok(s.task(move |io, reply| async move {
        let answer = async {
            let token = Token::new();
            let keys = with_answer(&io, &token);
            let ttl = io.ctx.options.answer_ttl_ms();
            let reply = script_with_retry_flag(&io, &UPSERT, |again| {
                let mut cmd = UPSERT.command(&keys);
                cmd.arg(&key).arg(&timetable).arg(&payload);
                cmd.arg(token.bytes()).arg(u8::from(again)).arg(ttl);
                cmd.arg(Schedule::READABLE_KINDS);
                cmd
            })
            .await?;
            let items = array(reply)?;
            let malformed = || QueueError::Server(String::from("a malformed upsert reply"));
            let upserted = match items.first().and_then(super::ops::int) {
                Some(-1) => return Err(unreadable(&key)),
                Some(0) => Upserted::Unchanged,
                Some(1) => Upserted::Created,
                Some(2) => Upserted::Updated,
                _ => return Err(malformed()),
            };
            let record = items
                .get(1)
                .map(|v| bytes(v.clone()))
                .ok_or_else(malformed)?;
            // The version now, and the server's now.
            let (version, now) = match (
                items.get(2).and_then(text_int),
                items.get(3).and_then(text_int),
            ) {
                (Some(version), Some(now)) => (version as u64, now),
                _ => return Err(malformed()),
            };
            settle_superseded(&io, &key, items.get(4..).unwrap_or_default()).await?;
            // Runs owed: a new record's first ones, or an unchanged one's
            // that an earlier call, stopped after storing it, did not make
            // and no consumer has (the same ids, so nothing twice).
            let text = String::from_utf8_lossy(&record);
            let horizon = Record::parse(&text).ok_or_else(malformed)?.horizon;
            if due_for_runs(horizon, now) {
                let instants = plan(&schedule, horizon, now);
                make_runs(&io, &key, version, &instants, now).await?;
            }
            io.ctx.schedules_wake.notify_one();
            Ok(upserted)
        }
        .await;
        let _ = reply.send(answer);
    }))
}

/// Cancels the runs of scheduler `key`'s superseded records, given as
/// (field, record) pairs, and forgets each once its runs are cancelled: a
/// call that stopped half-way leaves them for the next one, and a build
/// that cannot read a record's timetable leaves it for one that can.
async fn settle_superseded(io: &Io, key: &str, pairs: &[redis::Value]) -> Result<(), QueueError> {
    let [.., superseded] = hashes(&io.ctx);
    for pair in pairs.chunks_exact(2) {
        // When it was superseded, then the record.
        let value = String::from_utf8_lossy(&bytes(pair[1].clone())).into_owned();
        let parsed = value
            .split_once('\n')
            .and_then(|(at, record)| Some((at.parse().ok()?, Record::parse(record)?)));
        if let Some((at, record)) = parsed {
            if Schedule::decode(record.timetable).is_none() {
                // Its runs are unknown here: left for a build that reads it.
                continue;
            }
            cancel_runs(io, key, &record, at).await?;
        }
        let mut forget = redis::cmd("HDEL");
        forget.arg(&superseded).arg(bytes(pair[0].clone()));
        io.query(&forget).await?;
    }
    Ok(())
}

/// A change or removal refused: the scheduler's timetable is one this
/// build cannot read, so it could not cancel the runs made for it.
fn unreadable(key: &str) -> QueueError {
    QueueError::InvalidSchedule(alloc::format!(
        "scheduler `{key}` has a timetable this build cannot read (a cron one without \
         feature `cron`), so it could not cancel its runs: change or remove it from a \
         build that reads it"
    ))
}

/// The schedulers' hashes, then this call's answer key (under the same
/// tag), for the scripts that keep an answer for a retry.
fn with_answer(io: &Io, token: &Token) -> Vec<String> {
    let mut keys = hashes(&io.ctx).to_vec();
    keys.push(alloc::format!("tw:{{{}}}:ans:{}", io.ctx.name, token.hex()));
    keys
}

/// `Queue::remove_schedule`: whether there was one.
pub(super) fn remove(s: &Shared, key: &str) -> Result<Pending<bool>, QueueError> {
    check_key(key)?;
    let key = key.to_string();
    Ok(s.task(move |io, reply| async move {
        let answer = async {
            let token = Token::new();
            let keys = with_answer(&io, &token);
            let ttl = io.ctx.options.answer_ttl_ms();
            let reply = script_with_retry_flag(&io, &REMOVE, |again| {
                let mut cmd = REMOVE.command(&keys);
                cmd.arg(&key)
                    .arg(token.bytes())
                    .arg(u8::from(again))
                    .arg(ttl)
                    .arg(Schedule::READABLE_KINDS);
                cmd
            })
            .await?;
            let items = array(reply)?;
            let answer = items.first().and_then(super::ops::int);
            if answer == Some(-1) {
                return Err(unreadable(&key));
            }
            let there = answer == Some(1);
            settle_superseded(&io, &key, items.get(1..).unwrap_or_default()).await?;
            Ok(there)
        }
        .await;
        let _ = reply.send(answer);
    }))
}

/// `Queue::schedules`: every scheduler, by key.
pub(super) fn list(s: &Shared) -> Pending<Vec<ScheduleInfo>> {
    s.task(move |io, reply| async move {
        let answer = read(&io).await.map(|(_, all)| {
            let mut out: Vec<ScheduleInfo> = all
                .iter()
                .filter_map(|(key, text)| {
                    let record = Record::parse(text)?;
                    let timetable = Schedule::decode(record.timetable).map_or_else(
                        || String::from("(a timetable this build cannot read)"),
                        |s| s.describe(),
                    );
                    Some(ScheduleInfo {
                        key: key.clone(),
                        timetable,
                        version: record.version,
                        made_until: UNIX_EPOCH
                            + Duration::from_micros(u64::try_from(record.horizon).unwrap_or(0)),
                    })
                })
                .collect();
            out.sort_by(|a, b| a.key.cmp(&b.key));
            out
        });
        let _ = reply.send(answer);
    })
}
