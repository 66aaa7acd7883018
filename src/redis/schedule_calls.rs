//! The job scheduler calls' work (`Queue::upsert_schedule`,
//! `remove_schedule`, `schedules`: `schedules.rs`): each a task on the
//! queue's I/O. The data and how runs are made are in `scheduler.rs`.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};

use super::lua::lua;
use super::ops::{array, bytes, check_id};
use super::pending::Pending;
use super::scheduler::{
    cancel_runs, check_key, hashes, make_runs, plan, read, run_id, text_int, Record, LAST_DUE,
};
use super::schedules::{ScheduleInfo, Upserted};
use super::shared::Shared;
use super::QueueError;
use crate::schedule::Schedule;

lua!(UPSERT, "schedule_upsert.lua");
lua!(REMOVE, "schedule_remove.lua");

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
            let mut cmd = UPSERT.command(&hashes(&io.ctx));
            cmd.arg(&key).arg(&timetable).arg(&payload);
            let items = array(io.script(&UPSERT, &cmd).await?)?;
            let what = items.first().and_then(super::ops::int).unwrap_or(-1);
            let old = items
                .get(1)
                .map(|v| String::from_utf8_lossy(&bytes(v.clone())).into_owned());
            let upserted = match what {
                0 => return Ok(Upserted::Unchanged),
                1 => Upserted::Created,
                2 => Upserted::Updated,
                _ => return Err(QueueError::Server(String::from("a malformed upsert reply"))),
            };
            // The new version, and the server's now: the new horizon.
            let (version, now) = match (
                items.get(2).and_then(text_int),
                items.get(3).and_then(text_int),
            ) {
                (Some(version), Some(now)) => (version as u64, now),
                _ => return Err(QueueError::Server(String::from("a malformed upsert reply"))),
            };
            if let Some(old) = old.as_deref().and_then(Record::parse) {
                cancel_runs(&io, &key, &old).await?;
            }
            let instants = plan(&schedule, now, now);
            make_runs(&io, &key, version, now, &instants).await?;
            io.ctx.schedules_wake.notify_one();
            Ok(upserted)
        }
        .await;
        let _ = reply.send(answer);
    }))
}

/// `Queue::remove_schedule`: whether there was one.
pub(super) fn remove(s: &Shared, key: &str) -> Result<Pending<bool>, QueueError> {
    check_key(key)?;
    let key = key.to_string();
    Ok(s.task(move |io, reply| async move {
        let answer = async {
            let mut cmd = REMOVE.command(&hashes(&io.ctx));
            cmd.arg(&key);
            let reply = io.script(&REMOVE, &cmd).await?;
            if matches!(reply, redis::Value::Nil) {
                return Ok(false);
            }
            let items = array(reply)?;
            let old = items
                .first()
                .map(|v| String::from_utf8_lossy(&bytes(v.clone())).into_owned());
            if let Some(record) = old.as_deref().and_then(Record::parse) {
                cancel_runs(&io, &key, &record).await?;
            }
            Ok(true)
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
